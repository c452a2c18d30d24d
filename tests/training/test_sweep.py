import json

import pytest
from click.testing import CliRunner
from conftest import AlphaBeta

from fabricsim.errors import FabricsimError
from fabricsim.training import parallel as P
from fabricsim.training.models import MODELS
from fabricsim.training.sweep import scaling, scaling_wall
from fabricsim.training.variants import variant


def fake(topo):
    return AlphaBeta(domain=int(topo.features["gpus_per_domain"]))


def test_default_batch_is_about_4m_tokens_and_tokens_per_s_grows():
    template = P.Parallelism(tp=8, pp=1, micro_batch=1, global_batch=0)
    res = scaling(MODELS["llama3-8b"], "dgx-h100", [8, 16, 32, 64], template, comm_factory=fake)
    tps = [r.tokens_per_s for r in res]
    assert all(b >= a for a, b in zip(tps, tps[1:]))
    assert [r.parallelism.global_batch for r in res] == [512] * 4  # 4M tokens of 8,192-token sequences
    assert scaling_wall(res).gpus is None


def test_strong_scaling_hits_a_wall():
    template = P.Parallelism(tp=8, pp=1, micro_batch=1, global_batch=16)
    slow = lambda topo: AlphaBeta(domain=8, inter=2e9)  # noqa: E731  a starved network
    res = scaling(MODELS["llama3-8b"], "dgx-h100", [8, 16, 32, 64, 128], template, comm_factory=slow)
    wall = scaling_wall(res)
    assert wall.gpus is not None and wall.gpus < 128
    assert len(wall.marginal) == 4 and wall.efficiency[0] == 1.0


def test_default_layout_per_count():
    res = scaling(MODELS["gpt3-175b"], "dgx-h100", [256, 512], comm_factory=fake)
    assert all(r.parallelism.tp == 8 and r.parallelism.pp > 1 for r in res)


def test_search_keeps_the_fastest_fitting_layout():
    model = MODELS["gpt3-175b"]
    found = scaling(model, "dgx-h100", [256], comm_factory=fake, search=True)[0]
    default = scaling(model, "dgx-h100", [256], comm_factory=fake)[0]
    batch = default.parallelism.global_batch  # the search holds the default layout's global batch
    every = [scaling(model, "dgx-h100", [256], P.Parallelism(tp=par.tp, pp=par.pp, vp=par.vp, global_batch=batch),
                     comm_factory=fake)[0] for par in P.fitting_layouts(model, 256, 8, 80e9, interleaved=True)]
    assert len(every) > 3 and found.tokens_per_s == max(r.tokens_per_s for r in every) >= default.tokens_per_s
    assert found.parallelism.global_batch == batch
    fixed = scaling(model, "dgx-h100", [256], comm_factory=fake, search=True, tp=8)[0]
    assert fixed.parallelism.tp == 8 and fixed.tokens_per_s <= found.tokens_per_s


def test_search_covers_expert_parallel_sizes_and_times_every_fitting_layout():
    """Every layout the search may pick runs on the engine (groups split NVL72 racks evenly), EP included."""
    from fabricsim.training.comm import engine_comm_model
    from fabricsim.training.step import step_time
    from fabricsim.training.sweep import cluster_topology, topology_gpu

    model = MODELS["mixtral-8x7b"]
    topo = cluster_topology("gb200-nvl72", 144)
    comm, gpu = engine_comm_model(topo), topology_gpu(topo)
    fits = P.fitting_layouts(model, 144, 72, gpu.hbm_bytes)
    assert {p.ep for p in fits} >= {1, 2, 8}
    assert all(step_time(model, p, gpu, comm).tokens_per_s > 0 for p in fits)
    assert P.default_parallelism(model, 144, 72, gpu.hbm_bytes).ep == 1  # Megatron's default


def test_default_layout_is_the_first_that_fits():
    model = MODELS["gpt3-175b"]
    fits = P.fitting_layouts(model, 256, 8, 80e9)
    assert P.default_parallelism(model, 256, 8, 80e9) == fits[0]
    assert [(p.pp, p.tp) for p in fits] == sorted((p.pp, p.tp) for p in fits)


def test_variants_change_the_spec():
    from fabricsim.topology import load_spec

    spec = load_spec("dgx-h100", gpus=16)
    assert variant(spec, "pcie").scaleup == "pcie"
    assert variant(spec, "xdr").nic_gbps == 800
    assert variant(spec, "nvl72").domain_size == 72
    assert variant(spec, "sharp").sharp != spec.sharp
    assert variant(spec, "routing").routing == "adaptive" and variant(variant(spec, "routing"), "routing").routing == "ecmp"
    assert variant(spec, "no-gpudirect").gpudirect is False
    with pytest.raises(FabricsimError, match="unknown compare variant"):
        variant(spec, "warp-drive")


def test_nvl72_of_a_gpu_no_nvswitch_speaks_names_the_option():
    from fabricsim.topology import load_spec

    with pytest.raises(FabricsimError, match=r"no NVSwitch in the catalog has nvlink1 ports for an NVL72 of P100: "
                                             r"drop 'nvl72' from compare$"):
        variant(load_spec("dgx1-p100"), "nvl72")


def test_xdr_on_ethernet_is_two_400g_ports_of_a_connectx8_and_builds():
    from dataclasses import replace

    from fabricsim.topology import build, load_spec

    roce = replace(load_spec("dgx-h100", gpus=16), fabric="roce", nic="cx7-eth", leaf_switch="sn5600",
                   spine_switch="sn5600")
    xdr = variant(roce, "xdr")
    assert (xdr.nic, xdr.nic_gbps, xdr.nic_ports) == ("cx8-eth", 400.0, 2)
    assert build(xdr).n_gpus == 16


def test_cli_table_json_and_plot(tmp_path, monkeypatch):
    from fabricsim.cli import train as cli_train
    from fabricsim.training import comm

    monkeypatch.setattr(comm, "engine_comm_model", fake)
    runner = CliRunner()
    out = runner.invoke(cli_train.train, ["--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8,16",
                                          "--tp", "8", "--plot", str(tmp_path / "p.png")])
    assert out.exit_code == 0, out.output
    assert "tokens/s" in out.output and "scaling wall" in out.output and "where the step goes" in out.output
    assert (tmp_path / "p.png").stat().st_size > 1000
    out = runner.invoke(cli_train.train, ["--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8,16",
                                          "--format", "json", "--compare", "xdr"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert set(data) == {"baseline", "xdr"} and len(data["xdr"]["results"]) == 2
    first = data["baseline"]["results"][0]
    assert {"global_batch", "micro_batches", "memory_per_gpu", "tflops_per_gpu_by_convention"} <= set(first)
    assert first["memory_per_gpu"]["total_GB"] > 0
    out = runner.invoke(cli_train.train, ["--model", "llama3-70b", "--cluster", "dgx-h100", "--gpus", "64", "--search",
                                          "--pp", "2", "--format", "json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["baseline"]["results"][0]["layout"].split()[1].startswith("pp2")


def test_default_global_batch_is_fixed_across_counts_and_printed(monkeypatch):
    """Issue 12 item 7: the default batch is the smallest count's and stays, so compute per GPU shrinks."""
    res = scaling(MODELS["llama3-8b"], "dgx-h100", [8, 64, 512], comm_factory=fake)
    assert len({r.parallelism.global_batch for r in res}) == 1
    assert res[0].tokens_per_s / 8 > res[-1].tokens_per_s / 512
    assert all(r.parallelism.global_batch % (r.parallelism.micro_batch * r.parallelism.dp) == 0 for r in res)


def test_a_count_that_cannot_run_is_a_row_with_its_reason():
    """Issue 12 item 9: Mixtral does not fit one DGX H100; 64 and 512 GPUs still run."""
    from fabricsim.training.sweep import Refused, scaling_runs

    runs = scaling_runs(MODELS["mixtral-8x7b"], "dgx-h100", [8, 64, 512], comm_factory=fake)
    assert isinstance(runs[0], Refused) and runs[0].n_gpus == 8 and "GB over" in runs[0].reason
    assert [r.n_gpus for r in runs[1:]] == [64, 512] and all(r.tokens_per_s > 0 for r in runs[1:])
    with pytest.raises(FabricsimError, match="^8 GPUs: no Megatron layout"):
        scaling(MODELS["mixtral-8x7b"], "dgx-h100", [8, 64], comm_factory=fake)


def test_compare_variants_run_per_count():
    """Issue 12 item 8: SHARP on a preset and NVL72 at 576 and 1000 GPUs run (a partial NVL72 domain is fine)."""
    from fabricsim.training.runs import train_sweep

    sweep = train_sweep("llama3-70b", "superpod-h100", [512, 4096], compare=["sharp"], comm_factory=fake)
    assert all(r.tokens_per_s > 0 for r in sweep.runs["sharp"]) and not sweep.failed
    from fabricsim.training.sweep import Refused

    sweep = train_sweep("llama3-70b", "superpod-h100", [576, 1000], compare=["nvl72"], comm_factory=fake)
    for label in ("baseline", "nvl72"):
        ran, refused = sweep.runs[label]
        assert ran.n_gpus == 576 and ran.tokens_per_s > 0
        assert isinstance(refused, Refused) and refused.n_gpus == 1000 and "global batch 576" in refused.reason
    sweep = train_sweep("llama3-70b", "superpod-h100", [576, 1008], compare=["nvl72"], tp=8, global_batch=2016,
                        comm_factory=fake)
    assert [r.n_gpus for r in sweep.runs["nvl72"]] == [576, 1008]
    assert all(r.tokens_per_s > 0 for r in sweep.runs["nvl72"])


def test_run_file_sets_options_and_the_command_line_wins(tmp_path):
    from fabricsim.cli import train as cli_train
    from fabricsim.training import comm

    f = tmp_path / "run.yaml"
    f.write_text("model: llama3-8b\ncluster: dgx-h100\ngpus: [8, 16]\ntp: 4\nrecompute: full\ntp_overlap: false\n")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(comm, "engine_comm_model", fake)
        out = CliRunner().invoke(cli_train.train, ["--run", str(f), "--tp", "2", "--format", "json"])
    assert out.exit_code == 0, out.output
    first = json.loads(out.output)["baseline"]["results"][0]
    assert first["layout"].startswith("tp2 ") and first["recompute"] == "full"
    f.write_text("tp: 4\nwarp: 9\n")
    out = CliRunner().invoke(cli_train.train, ["--run", str(f), "--model", "llama3-8b", "--cluster", "dgx-h100",
                                               "--gpus", "8"])
    assert isinstance(out.exception, FabricsimError) and "unknown option(s) warp" in str(out.exception)


def test_wall_explanation_names_what_gets_exposed_first():
    from fabricsim.training.sweep import explain_wall

    template = P.Parallelism(tp=8, pp=1, micro_batch=1, global_batch=16)
    slow = lambda topo: AlphaBeta(domain=8, inter=2e9)  # noqa: E731  a starved network
    res = scaling(MODELS["llama3-8b"], "dgx-h100", [8, 16, 32, 64, 128], template, comm_factory=slow)
    exposed = explain_wall(res)
    assert [e.group for e in exposed][:2] == ["tp", "dp"]  # in the order they cross 5% of the step
    tp, dp = exposed[:2]
    assert tp.gpus == 8 and "already at 8 GPUs" in tp.text(8)  # TP without overlap is exposed from the start
    assert dp.gpus == 16 and dp.shares[0] < 0.05 <= dp.shares[1] and "dp:" in dp.collective
    assert "from 16 GPUs" in dp.text(8)


def test_pcie_and_dgx1_presets_run_without_efficiency_and_warn(monkeypatch):
    """Issue 12 item 10: no published figure for Ada / Volta: Hopper's, with a warning."""
    from fabricsim.training.runs import train_sweep

    for cluster in ("pcie-l40s-8", "dgx1-v100"):
        sweep = train_sweep("llama2-7b", cluster, [8], comm_factory=fake)
        assert sweep.runs["baseline"][0].tokens_per_s > 0
        assert any("no published training efficiency" in w for w in sweep.warnings)


def test_cli_errors_are_fabricsim_errors():
    from fabricsim.cli.train import train

    out = CliRunner().invoke(train, ["--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8,x"])
    assert isinstance(out.exception, FabricsimError) and "comma-separated list of GPU counts" in str(out.exception)
    out = CliRunner().invoke(train, ["--model", "llama3-70b", "--cluster", "dgx-h100", "--gpus", "8", "--tp", "3"])
    assert isinstance(out.exception, FabricsimError) and "tp" in str(out.exception)
    out = CliRunner().invoke(train, ["--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--search", "--dp", "1"])
    assert isinstance(out.exception, FabricsimError) and "drop --dp" in str(out.exception)


def test_a_yaml_cluster_is_a_template_the_sweep_resizes(tmp_path):
    from fabricsim.topology import load_spec, save_cluster

    path = tmp_path / "c.yaml"
    save_cluster(load_spec("dgx-h100", nodes=1), path)
    res = scaling(MODELS["llama3-8b"], str(path), [8, 16], comm_factory=fake)
    assert [r.n_gpus for r in res] == [8, 16]


@pytest.mark.parametrize("args,match", [
    (("--efficiency", "1e-300"), "between 0.01 and 1"),
    (("--plot", "/nonexistent-dir/x.png"), "directory does not exist"),
    (("--cp", "2", "--seq", "7"), "even sequence length"),
])
def test_train_input_errors(args, match):
    from fabricsim.cli.train import train

    out = CliRunner().invoke(train, ["--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "16", *args])
    assert isinstance(out.exception, FabricsimError) and match in str(out.exception)


def test_llama3_405b_published_layout_runs_and_says_where_the_step_goes(monkeypatch):
    """Issue 14: `train --model llama3-405b --cluster superpod-h100 --gpus 8192,16384 --tp 8 --pp 16 --seq 8192`."""
    from fabricsim.cli import train as cli_train
    from fabricsim.training import comm

    monkeypatch.setattr(comm, "engine_comm_model", fake)
    out = CliRunner().invoke(cli_train.train, ["--model", "llama3-405b", "--cluster", "superpod-h100", "--gpus",
                                               "8192,16384", "--tp", "8", "--pp", "16", "--seq", "8192"])
    assert out.exit_code == 0, out.output
    assert "tp8 pp16 dp64" in out.output and "tp8 pp16 dp128" in out.output
    assert "where the step goes" in out.output and "bubble" in out.output and "memory" in out.output
    assert "scaling wall" in out.output and "exposed as GPUs are added" in out.output


def test_a_cluster_file_run_at_other_gpu_counts_says_it_was_resized(tmp_path):
    from fabricsim.topology import load_spec, save_cluster
    from fabricsim.training.runs import train_sweep

    path = tmp_path / "two.yaml"
    save_cluster(load_spec("dgx-h100", nodes=2), path)
    assert not [w for w in train_sweep("llama3-8b", str(path), [16], tp=8).warnings if "resized" in w]
    (said,) = [w for w in train_sweep("llama3-8b", str(path), [8, 16], tp=8).warnings if "resized" in w]
    assert said == ("dgx-h100 has 16 GPUs (2 nodes of 8); train sets its node count to fit each GPU count, so 8 GPUs "
                    "ran on a resized copy")
    assert not [w for w in train_sweep("llama3-8b", "dgx-h100", [8, 16], tp=8).warnings if "resized" in w]
