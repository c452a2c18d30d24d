"""The public Python API (`import fabricsim as fs`): lazy, returns data, prints nothing, short reprs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import fabricsim as fs
from fabricsim.topology import load_spec, save_cluster

FIXTURES = Path(__file__).resolve().parents[1] / "reports" / "fixtures"
SRC = Path(fs.__file__).parent


def test_import_fabricsim_stays_light():
    code = ("import sys, fabricsim; print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('numpy', 'fabricsim', 'click', 'yaml')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['fabricsim']"


def test_names_load_on_first_use():
    assert {"cluster", "perf", "compare", "train", "sizes", "PerfResult"} <= set(dir(fs))
    assert fs.perf is fs.api.perf
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        fs.nope  # noqa: B018


def test_partial_node_keeps_the_hardware_and_uses_the_first_ranks():
    c = fs.cluster("dgx-h100", gpus=4)
    assert (c.n_gpus, c.total_gpus, c.partial, list(c.ranks)) == (4, 8, True, [0, 1, 2, 3])
    assert repr(c) == "Cluster('dgx-h100': ranks 0-3 of 8 H100, 1 node)"
    assert c.summary()["ranks"] == "0-3" and c.summary()["gpus"] == 8
    with pytest.raises(ValueError):
        c.ranks[0] = 5  # read-only
    rack = fs.cluster("gb200-nvl72", gpus=8)
    assert (rack.n_gpus, rack.total_gpus) == (8, 72)


def test_gpus_over_nodes_spreads_evenly():
    c = fs.cluster("dgx-h100", nodes=2, gpus=8)
    assert fs.api.rank_ranges(c.ranks) == "0-3,8-11"
    assert repr(c) == "Cluster('dgx-h100': ranks 0-3,8-11 of 16 H100, 2 nodes)"
    assert not fs.cluster("dgx-h100", nodes=2, gpus=16).partial


@pytest.mark.parametrize("kwargs, match", [
    (dict(gpus=12), "not a multiple of 8 GPUs per node"),
    (dict(nodes=2, gpus=9), "must be a positive multiple of 2"),
    (dict(nodes=2, gpus=32), "16 GPUs per node, but dgx-h100 has 8 per node: use gpus up to 16"),
    (dict(routing="random"), "unknown routing"),
])
def test_sizes_that_cannot_run_say_why(kwargs, match):
    with pytest.raises(fs.FabricsimError, match=match):
        fs.cluster("dgx-h100", **kwargs)


def test_yaml_cluster_runs_part_of_a_node(tmp_path):
    path = tmp_path / "c.yaml"
    save_cluster(load_spec("dgx-h100", nodes=2), path)
    assert fs.cluster(path, gpus=2).n_gpus == 2 and fs.cluster(path, gpus=16).n_gpus == 16
    with pytest.raises(fs.FabricsimError, match="sized by its 'nodes' field"):
        fs.cluster(path, gpus=24)


def test_a_spec_builds_too():
    spec = load_spec("dgx-h100", nodes=2)
    assert fs.cluster(spec).total_gpus == 16 and fs.cluster(spec, gpus=4).n_gpus == 4
    with pytest.raises(fs.FabricsimError, match=r"replace\(spec, nodes=...\)"):
        fs.cluster(spec, nodes=4)


def test_perf_rows_carry_the_nccl_tests_figures_and_the_pick(capsys):
    seen = []
    r = fs.perf(fs.cluster("dgx-h100", gpus=4), "all_gather", fs.sizes("1M", "64M", factor=8),
                progress=lambda done, total: seen.append((done, total)))
    assert seen == [(0, 3), (1, 3), (2, 3), (3, 3)]
    assert [row.size_bytes for row in r.rows] == [1 << 20, 8 << 20, 64 << 20]
    assert all(row.count == row.size_bytes // 4 // 4 for row in r.rows)  # 4 ranks, float
    last = r.rows[-1]
    assert last.bound in ("latency-bound", "bandwidth-bound") and last.bottleneck and last.channels > 0
    rec = r.to_records()[-1]
    assert {"size_bytes", "time_us", "algbw_GBps", "busbw_GBps", "algo", "proto", "channels", "bound",
            "bottleneck"} <= set(rec)
    assert r.meta()["gpus"] == 4 and r.meta()["cluster_gpus"] == 8 and r.meta()["ranks"] == "0-3"
    assert capsys.readouterr() == ("", "")


def test_nccl_cost_model_on_a_partial_node():
    r = fs.perf("dgx-h100", "all_reduce", "1G", cost_model="nccl")
    part = fs.perf(fs.cluster("dgx-h100", gpus=2), "all_reduce", "1G", cost_model="nccl")
    assert r.level == part.level == "" and r.rows[0].bound is None
    assert part.rows[0].busbw != r.rows[0].busbw


def test_to_pandas_is_a_dataframe_and_names_the_extra_when_missing(monkeypatch):
    pandas = pytest.importorskip("pandas")
    r = fs.perf("dgx-h100", "all_reduce", ["1M", "1G"])
    df = r.to_pandas()
    assert isinstance(df, pandas.DataFrame) and list(df["size_bytes"]) == [1 << 20, 1 << 30]
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(fs.FabricsimError, match=r"pip install 'fabricsim\[pandas\]'"):
        r.to_pandas()


def test_reprs_are_short():
    r = fs.perf(fs.cluster("superpod-h100", gpus=1024), "all_reduce", "1G")
    assert repr(r) == ("PerfResult(all_reduce on superpod-h100, 1,024 GPUs, 1 size 1 GiB, cost model fabricsim, "
                       f"peak busbw {r.rows[0].busbw / 1e9:.1f} GB/s)")
    assert len(repr(r.picks[0])) < 2000 and len(repr(r.picks[0].result)) < 300  # the engine Result printed 656 KB


def test_explain_uses_one_spelling_and_keeps_fabricsims_reason():
    rows = fs.perf("dgx-h100", "all_reduce", ["1M", "1G"]).explain()
    assert [e.fabricsim_pick for e in rows] == [e.nccl_pick for e in rows]  # e.g. nvls/simple both sides
    assert all(e.same_pick and e.reason.startswith("same pick; fabricsim is") for e in rows)
    assert "(nvlink4)" in rows[1].reason and all("(nvlink4, " not in e.reason for e in rows)  # the technology once
    assert "llMaxBws" in rows[0].reason  # at 1 MiB ring/ll is held by NCCL's LL cap, not by a link (Result.limiter)
    sendrecv = fs.perf(fs.cluster("dgx-h100", nodes=2), "sendrecv", "1G").explain()[0]
    assert sendrecv.nccl_pick is None and "fabricsim is bandwidth-bound: bottleneck" in sendrecv.reason
    with pytest.raises(fs.FabricsimError, match="cost_model='fabricsim'"):
        fs.perf("dgx-h100", "all_reduce", "1G", cost_model="nccl").explain()


@pytest.mark.parametrize("kwargs, match", [
    (dict(cost_model="nccl", level="flow"), "NCCL's cost model has no engine"),
    (dict(cost_model="nccl", library="all"), "does not price"),
    (dict(cost_model="tuning"), "unknown cost model"),
    (dict(algo="collnet"), "set 'sharp: true'"),
    (dict(dtype="float128"), "unknown data type"),
])
def test_options_that_do_not_apply_are_errors(kwargs, match):
    with pytest.raises(fs.FabricsimError, match=match):
        fs.perf("dgx-h100", "all_reduce", "1G", **kwargs)


def test_forcing_pat_with_several_gpus_per_node_runs_with_a_note():
    r = fs.perf(fs.cluster("dgx-h100", nodes=2), "all_gather", "1G", algo="pat")
    assert r.rows[0].algo == "pat" and r.notes and "one GPU per node" in r.notes[0]
    assert not fs.perf(fs.cluster("dgx-h100", nodes=2, gpus=2), "all_gather", "1G", algo="pat").notes


def test_compare_returns_data_and_a_figure(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    c = fs.cluster("dgx-h100", nodes=10)
    scored = fs.compare(FIXTURES / "v2_17_all_reduce_10n_mpi.log", c, level="analytical")
    assert scored.summary.rows == len(scored.rows) == 5 and scored.meta["gpus"] == 80
    assert repr(scored).startswith("CompareResult(all_reduce log vs dgx-h100 (80 GPUs), 5 sizes")
    assert len(scored.to_records()) == 5
    fig = scored.figure()
    assert [ax.get_yscale() for ax in fig.axes] == ["log", "log"]  # busbw and time panels
    assert capsys.readouterr() == ("", "")
    with pytest.raises(fs.FabricsimError, match="use gpus=80"):
        fs.compare(FIXTURES / "v2_17_all_reduce_10n_mpi.log", "dgx-h100")


class FixedComm:
    """Every collective takes 1 ms: the API's bookkeeping is under test here, not the engine."""

    def time(self, collective, groups, nbytes):
        return 1e-3


def test_train_returns_data(monkeypatch):
    monkeypatch.setattr("fabricsim.training.comm.engine_comm_model", lambda topo: FixedComm())
    ticks = []
    t = fs.train("llama3-8b", "dgx-h100", [8, 12, 16], tp=8, compare=["xdr"],
                 progress=lambda done, total: ticks.append((done, total)))
    assert list(t.runs) == ["baseline", "xdr"] and not t.failed
    assert repr(t) == "TrainResult(llama3-8b on dgx-h100, GPUs 8,12,16, variants xdr, 2 counts refused)"
    records = t.to_records()
    assert [(r["variant"], r["gpus"]) for r in records] == [("baseline", 8), ("baseline", 12), ("baseline", 16),
                                                            ("xdr", 8), ("xdr", 12), ("xdr", 16)]
    assert "multiple of 8" in records[1]["error"] and [r.n_gpus for r in t.ran("xdr")] == [8, 16]
    assert ticks[0] == (0, 6) and ticks[-1] == (6, 6) and all(total == 6 for _, total in ticks)
    pytest.importorskip("matplotlib")
    fig = t.figure()
    tok, mfu = fig.axes
    assert fig.texts[0].get_text().startswith("llama3-8b on dgx-h100")
    assert list(tok.get_xticks()) == [8, 12, 16] and mfu.get_ylim()[0] == 0
    labels = [text.get_text() for text in tok.get_legend().get_texts()]
    assert labels == ["baseline", "xdr", "ideal scaling from 8 GPUs"]


def test_a_variant_that_cannot_run_stays_in_the_plot_legend():
    pytest.importorskip("matplotlib")
    from fabricsim.reports.training_plot import figure

    fig = figure("m on c", {"baseline": [FakeStep(8, 1e5, 0.4), FakeStep(64, 7e5, 0.35)], "sharp": [FakeStep(8)]},
                 {}, {"sharp": "set levels to 3 or 'auto'"})
    labels = [text.get_text() for text in fig.axes[0].get_legend().get_texts()]
    assert labels == ["baseline", "ideal scaling from 8 GPUs", "sharp: not run (set levels to 3 or 'auto')"]


class FakeStep:
    def __init__(self, n_gpus, tokens_per_s=None, mfu_bf16=None):
        self.n_gpus = n_gpus
        if tokens_per_s is not None:
            self.tokens_per_s, self.mfu_bf16 = tokens_per_s, mfu_bf16


def test_train_takes_a_cluster_but_not_part_of_one(monkeypatch):
    monkeypatch.setattr("fabricsim.training.comm.engine_comm_model", lambda topo: FixedComm())
    assert fs.train("llama3-8b", fs.cluster("dgx-h100"), [8], tp=8).cluster == "dgx-h100"
    adaptive = fs.train("llama3-8b", fs.cluster("dgx-h100", routing="adaptive"), [16], tp=8)
    assert adaptive.cluster == "dgx-h100"
    with pytest.raises(fs.FabricsimError, match="train sizes the cluster for each GPU count itself"):
        fs.train("llama3-8b", fs.cluster("dgx-h100", gpus=4), [4])


def test_library_code_never_picks_a_matplotlib_backend():
    for path in SRC.rglob("*.py"):
        text = path.read_text()
        assert "matplotlib.use(" not in text and "import pyplot" not in text and "matplotlib.pyplot" not in text, path


def test_perf_follows_the_nccl_release_asked_for():
    c = fs.cluster("dgx-h100", nodes=2)
    old, new = fs.perf(c, "all_reduce", "1G", nccl_version="2.17"), fs.perf(c, "all_reduce", "1G")
    assert (old.nccl, new.nccl) == ("NCCL 2.17.1", "NCCL 2.30.7") and old.meta()["nccl"] == "NCCL 2.17.1"
    assert new.rows[0].algo == "nvls_tree" and old.rows[0].algo != "nvls_tree"  # NVLSTree arrived in 2.18.1
    with pytest.raises(fs.FabricsimError, match="not major.minor"):
        fs.perf(c, "all_reduce", "1G", nccl_version="latest")


@pytest.mark.parametrize("call, match", [
    (lambda: fs.cluster("dgx-h100", gpus="8"), r"^gpus='8': give a whole number of GPUs, e.g. gpus=8$"),
    (lambda: fs.cluster("dgx-h100", nodes=2.0), r"^nodes=2.0: give a whole number of nodes, e.g. nodes=8$"),
    (lambda: fs.perf(fs.cluster("dgx-h100"), "all_reduce", "1M", env="NCCL_BUFFSIZE=1"),
     r"^env='NCCL_BUFFSIZE=1': give the run's NCCL environment as a mapping of variable to value"),
    (lambda: fs.compare(FIXTURES / "v2_17_all_reduce_10n_mpi.log", fs.cluster("dgx-h100", nodes=10),
                        env=["NCCL_P2P_DISABLE"]), r"^env=\['NCCL_P2P_DISABLE'\]: give the run's NCCL environment"),
    (lambda: fs.calibrate([FIXTURES / "v2_17_all_reduce_10n_mpi.log"], "dgx-h100", env="x"),
     r"^env='x': give the run's NCCL environment"),
])
def test_arguments_of_the_wrong_type_are_fabricsim_errors(call, match):
    with pytest.raises(fs.FabricsimError, match=match):
        call()


def test_a_numpy_count_sizes_a_preset():
    np = pytest.importorskip("numpy")
    assert fs.cluster("dgx-h100", nodes=np.int64(2)).n_gpus == 16
