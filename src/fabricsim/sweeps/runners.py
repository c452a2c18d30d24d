"""Where tasks run: a local process pool (the default, standard library only) or Ray (`fabricsim[ray]`), which
is the engine for more than one machine. Each runner yields (task index, rows) as tasks finish, in any order; the
driver puts rows in point order, so both give the same file.

A task whose worker dies (killed, out of memory) runs again: Ray retries it itself (`max_retries`); the pool,
whose executor breaks when a worker dies, is started again and the unfinished tasks resubmitted. A task whose
workers died `ATTEMPTS` times is given back as failed rows saying so, and the sweep goes on.
"""

from __future__ import annotations

import os
from collections import Counter, deque
from collections.abc import Iterator, Sequence
from typing import Any

from fabricsim.errors import FabricsimError
from fabricsim.sweeps.compute import lost_rows, run_task

ATTEMPTS = 3  # runs of a task whose worker died, before its points are recorded as failed
IN_FLIGHT_PER_WORKER = 2  # tasks handed out per worker: enough to keep it busy, few enough to stream results

Results = Iterator[tuple[int, list[dict]]]


def default_workers() -> int:
    """The CPUs this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


# Python's forkserver and spawn start methods import the driver's main script again in every worker process
# (docs.python.org/3/library/multiprocessing.html, "Safe importing of main module").
UNGUARDED = ("a script that runs a sweep at its top level must guard it with `if __name__ == '__main__':`: each "
             "worker process imports the script again (Python multiprocessing, 'Safe importing of main module')")


def check_driver() -> None:
    """Refuse to run a sweep inside a worker process: that is a script without the main guard, imported again."""
    import multiprocessing
    import sys

    # a worker runs the driver's script as '__mp_main__' (multiprocessing.spawn._fixup_main_from_path); in the driver
    # that name is the main module itself (multiprocessing/__init__.py aliases it)
    importing = sys.modules.get("__mp_main__", sys.modules.get("__main__")) is not sys.modules.get("__main__")
    if multiprocessing.parent_process() is not None or importing:
        raise FabricsimError(f"a sweep was started inside a sweep worker process: {UNGUARDED}")


def _died(attempts: int) -> str:
    return (f"its worker process died {attempts} times (killed, or out of memory): rerun the sweep to try again "
            "(--retry-failed), or give the workers more memory")


def pool(tasks: Sequence[dict], workers: int) -> Results:
    """Run `tasks` on `workers` local processes (forkserver: workers start from a clean process with fabricsim
    loaded, whatever threads the driver has)."""
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["fabricsim.sweeps.compute"])
    queue, strikes = deque(range(len(tasks))), Counter[int]()
    while queue:
        executor = ProcessPoolExecutor(max_workers=workers, mp_context=ctx)
        running: dict[Any, int] = {}
        broken = False
        try:
            try:
                executor.submit(os.getpid).result()  # workers that cannot start fail here, before any task is charged
            except BrokenProcessPool:
                raise FabricsimError(f"the sweep's worker processes died as they started; {UNGUARDED}") from None
            while (queue and not broken) or running:
                while queue and not broken and len(running) < IN_FLIGHT_PER_WORKER * workers:
                    try:
                        running[executor.submit(run_task, tasks[queue[0]])] = queue[0]
                    except BrokenProcessPool:  # a worker died since the last wait: submit to the next pool
                        broken = True
                        break
                    queue.popleft()
                if not running:
                    break
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    i = running.pop(future)
                    try:
                        rows = future.result()
                    except BrokenProcessPool:
                        broken = True
                        strikes[i] += 1
                        if strikes[i] < ATTEMPTS:
                            queue.appendleft(i)
                        else:
                            yield i, lost_rows(tasks[i], _died(strikes[i]))
                        continue
                    yield i, rows
        finally:
            executor.shutdown(wait=True, cancel_futures=True)


def ray_available() -> bool:
    from importlib.util import find_spec

    return find_spec("ray") is not None


def ray(tasks: Sequence[dict], workers: int | None) -> Results:
    """Run `tasks` as Ray tasks: on the cluster RAY_ADDRESS names, on the one this process already joined, or on a
    local one started here with `workers` CPUs (and shut down at the end)."""
    try:
        import ray as ray_module
    except ImportError:
        raise FabricsimError("--ray needs Ray: pip install 'fabricsim[ray]' (or run on the local pool: drop --ray "
                             "and unset RAY_ADDRESS)") from None
    import logging

    started = not ray_module.is_initialized()
    if started:
        local = not os.environ.get("RAY_ADDRESS")
        ray_module.init(num_cpus=workers if local else None, include_dashboard=False, log_to_driver=False,
                        logging_level=logging.ERROR, configure_logging=True)
    try:
        remote = ray_module.remote(max_retries=ATTEMPTS - 1, retry_exceptions=False)(run_task)
        cpus = int(ray_module.cluster_resources().get("CPU", 1))
        window = IN_FLIGHT_PER_WORKER * (min(cpus, workers) if workers and not started else cpus)
        queue, running = deque(range(len(tasks))), {}
        while queue or running:
            while queue and len(running) < window:
                i = queue.popleft()
                running[remote.remote(tasks[i])] = i
            ready, _ = ray_module.wait(list(running), num_returns=1)
            for ref in ready:
                i = running.pop(ref)
                try:
                    rows = ray_module.get(ref)
                except (ray_module.exceptions.WorkerCrashedError, ray_module.exceptions.NodeDiedError,
                        ray_module.exceptions.OutOfMemoryError):
                    rows = lost_rows(tasks[i], _died(ATTEMPTS))
                yield i, rows
    finally:
        if started:
            ray_module.shutdown()
