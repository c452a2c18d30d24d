"""An error building a cluster file's topology (a fabric its switches cannot hold, a speed no link runs) names
the file, as the file's own field checks do, from every command that reads a cluster file."""

from __future__ import annotations

import pytest

import fabricsim as fs
from fabricsim.cli.main import main
from fabricsim.errors import FabricsimError
from fabricsim.topology import load_cluster, load_spec, save_cluster


@pytest.fixture
def too_big(tmp_path):
    """A DGX H100 file of 100,000 nodes: more NIC ports than a 3-level fat tree of its switches holds."""
    from dataclasses import replace

    path = tmp_path / "big.yaml"
    save_cluster(replace(load_spec("dgx-h100"), nodes=100_000), path)
    return str(path)


def test_python_callers_see_the_file(too_big):
    for build in (load_cluster, fs.cluster):
        with pytest.raises(FabricsimError, match=rf"^{too_big}: 800000 NIC ports exceed a 3-level fat tree"):
            build(too_big)


@pytest.mark.parametrize("argv", [
    ["topo", "show", "{}"],
    ["perf", "all_reduce", "-c", "{}"],
    ["train", "--model", "gpt3-5b", "--cluster", "{}", "--gpus", "800000"],
    ["nccl-tests", "all_reduce_perf", "-g", "8"],
])
def test_commands_name_the_file(capsys, monkeypatch, too_big, argv):
    monkeypatch.setenv("FABRICSIM_CLUSTER", too_big)
    if argv[0] == "nccl-tests":
        monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "100000")
    assert main([a.format(too_big) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {too_big}: ") and "NIC ports exceed" in err and len(err.splitlines()) == 1


def test_a_jobs_file_names_its_cluster_file(capsys, tmp_path, too_big):
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text("cluster: big.yaml\njobs:\n  - {name: a, gpus: 8, collective: all_reduce, size: 1G}\n")
    assert main(["jobs", str(jobs)]) == 2
    assert "big.yaml: 800000 NIC ports exceed" in capsys.readouterr().err


def test_a_preset_names_no_file(capsys):
    assert main(["topo", "show", "dgx-h100", "--nodes", "100000"]) == 2
    assert capsys.readouterr().err.startswith("error: 800000 NIC ports exceed")
