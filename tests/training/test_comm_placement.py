"""Where a job's ranks sit on NVL72 racks, and groups that split their domains unevenly."""

import numpy as np

from fabricsim.training.comm import engine_comm_model, even_proxy
from fabricsim.training.sweep import cluster_topology, job_placement, nvl72_segment


def test_nvl72_jobs_take_equal_tray_segments_per_rack():
    """Megatron-Bridge's executor asks SLURM for --segment = the largest divisor of the node count up to 18."""
    assert nvl72_segment(16, 18) == 16 and nvl72_segment(64, 18) == 16 and nvl72_segment(250, 18) == 10
    topo = cluster_topology("gb200-nvl72", 256)
    assert topo.n_gpus == 4 * 72
    gpus = job_placement(topo, 256)
    assert gpus.tolist()[:2] == [0, 1] and gpus[64] == 72 and gpus[-1] == 3 * 72 + 63
    domains = np.asarray(topo.gpu_domain)[gpus]
    assert np.bincount(domains).tolist() == [64, 64, 64, 64]
    assert job_placement(cluster_topology("gb200-nvl72", 144), 144) is None  # whole racks: rank r on GPU r
    assert job_placement(cluster_topology("dgx-h100", 16), 16) is None


def test_uneven_groups_are_timed_as_an_even_proxy():
    topo = cluster_topology("gb200-nvl72", 144)
    groups = np.array([np.arange(40, 104)])  # 32 GPUs of rack 0 and 32 of rack 1: even
    assert even_proxy(topo, groups) is None
    groups = np.array([np.arange(60, 124)])  # 12 + 52: uneven
    proxy = even_proxy(topo, groups)
    assert len(proxy) == 64 and np.bincount(np.asarray(topo.gpu_domain)[proxy]).tolist() == [32, 32]
    comm = engine_comm_model(topo)
    assert comm.time("all_gather", groups, 1 << 26) > 0 and "proxy" in comm.last_detail
