"""nccl-tests without GPUs: its command line, the NCCL environment variables that change results, and its
output (text and -J JSON) for a simulated run. The binaries themselves are `fabricsim.cli.nccltests`."""
