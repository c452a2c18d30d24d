"""fabricsim.multijob: several jobs on one fabric (`fabricsim jobs`): the jobs file (`spec`), which GPUs each job
gets (`placement`), each job's iteration as the engine's phases (`workload`), the run alone and together with its
report figures (`run`), and its Perfetto trace (`trace`). Sits beside training: it uses the tuner and the training
step to say what each job communicates, and `engine.coflows` to share the fabric between them."""
