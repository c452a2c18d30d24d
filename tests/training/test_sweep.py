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


def test_variants_change_the_spec():
    from fabricsim.topology import load_spec

    spec = load_spec("dgx-h100", gpus=16)
    assert variant(spec, "pcie").scaleup == "pcie"
    assert variant(spec, "xdr").nic_gbps == 800
    assert variant(spec, "nvl72").domain_size == 72
    assert variant(spec, "sharp").sharp != spec.sharp
    assert variant(spec, "no-gpudirect").gpudirect is False
    with pytest.raises(FabricsimError, match="--compare"):
        variant(spec, "warp-drive")


def test_cli_table_json_and_plot(tmp_path, monkeypatch):
    from fabricsim.cli import train as cli_train

    monkeypatch.setattr(cli_train, "scaling", lambda *a, **k: scaling(*a, comm_factory=fake, **k))
    runner = CliRunner()
    out = runner.invoke(cli_train.train, ["--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8,16",
                                          "--tp", "8", "--plot", str(tmp_path / "p.png")])
    assert out.exit_code == 0, out.output
    assert "tokens/s" in out.output and "scaling wall" in out.output
    assert (tmp_path / "p.png").stat().st_size > 1000
    out = runner.invoke(cli_train.train, ["--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8,16",
                                          "--format", "json", "--compare", "xdr"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert set(data) == {"baseline", "xdr"} and len(data["xdr"]["results"]) == 2


def test_cli_errors_are_fabricsim_errors():
    from fabricsim.cli.train import train

    out = CliRunner().invoke(train, ["--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8,x"])
    assert isinstance(out.exception, FabricsimError) and "comma-separated list of GPU counts" in str(out.exception)
    out = CliRunner().invoke(train, ["--model", "llama3-70b", "--cluster", "dgx-h100", "--gpus", "8", "--tp", "3"])
    assert isinstance(out.exception, FabricsimError) and "tp" in str(out.exception)
