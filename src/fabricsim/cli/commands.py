"""The subcommands `fabricsim` offers, one module each, imported only when the command runs.

Each entry is 'module:attribute' of a click command; a new command is one line here.
"""

from __future__ import annotations

COMMANDS: dict[str, str] = {
    "calibrate": "fabricsim.cli.calibrate:calibrate",
    "compare": "fabricsim.cli.compare:compare",
    "doctor": "fabricsim.cli.doctor:doctor",
    "jobs": "fabricsim.cli.jobs:jobs",
    "nccl-tests": "fabricsim.cli.nccltests:nccl_tests",
    "perf": "fabricsim.cli.perf:perf",
    "report": "fabricsim.cli.report:report",
    "schema": "fabricsim.cli.schema:schema",
    "sweep": "fabricsim.cli.sweep:sweep",
    "topo": "fabricsim.cli.topo:topo",
    "trace": "fabricsim.cli.trace:trace",
    "train": "fabricsim.cli.train:train",
    "validate": "fabricsim.cli.validate:validate",
    "verify": "fabricsim.cli.verify:verify",
    "whatif": "fabricsim.cli.whatif:whatif",
}
