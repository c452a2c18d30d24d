"""Sweeps on Ray: a local Ray cluster started here (`ray.init(num_cpus=2)`) gives the local pool's bytes, and a Ray
worker killed mid-sweep loses and duplicates no point. Kept to two tests: starting Ray takes seconds."""

from __future__ import annotations

import importlib.util
import os
import signal
import sys
import time

import pytest

from fabricsim import sweeps
from fabricsim.sweeps import run
from tests.sweeps.helpers import cmdline, descendants, write_sweep

# Ray is looked for, not imported, when the file is collected: every xdist worker collects every file, one runs it
pytestmark = [pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                                 reason="the ray extra is not installed (pip install 'fabricsim[ray]')"),
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the kill test reads Linux's /proc"),
              pytest.mark.costly]  # starting Ray takes seconds: collected first (tests/conftest.py)


@pytest.fixture(scope="module")
def local_ray():
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    d = tmp_path_factory.mktemp("pool")
    plan = sweeps.load(write_sweep(d))
    run.run(plan, d / "r.parquet", workers=2)
    return plan, (d / "r.parquet").read_bytes()


def test_ray_writes_the_pools_bytes(local_ray, reference, tmp_path):
    plan, expected = reference
    done = run.run(plan, tmp_path / "r.parquet", ray=True)
    assert (done.backend, done.computed, done.failed) == ("ray", 16, 0)
    assert (tmp_path / "r.parquet").read_bytes() == expected


def test_a_ray_worker_killed_mid_sweep_loses_and_duplicates_nothing(local_ray, reference, tmp_path):
    plan, expected = reference
    killed = []

    def kill_one(done: int, total: int, failed: int) -> None:
        # a task of this sweep takes milliseconds: right after one finishes, Ray may not have titled the worker that
        # takes the next (ray::run_task), so look again for up to 2 s while tasks remain, not only at this instant
        deadline = time.monotonic() + 2.0
        while done >= 2 and done < total and not killed and time.monotonic() < deadline:
            busy = [p for p in descendants(os.getpid()) if cmdline(p).startswith("ray::run_task")]
            if busy:
                os.kill(busy[0], signal.SIGKILL)
                killed.append(busy[0])
            else:
                time.sleep(0.005)

    done = run.run(plan, tmp_path / "r.parquet", ray=True, task_points=1, progress=kill_one)
    assert killed, "no Ray worker running a task was found to kill"
    assert (done.total, done.computed, done.failed) == (16, 16, 0)  # Ray ran the killed task again
    assert (tmp_path / "r.parquet").read_bytes() == expected
