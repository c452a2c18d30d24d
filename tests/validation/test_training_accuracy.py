import json
from dataclasses import replace

import pytest

from fabricsim.calibration_data import default_path
from fabricsim.errors import FabricsimError
from fabricsim.training.comm import engine_comm_model
from fabricsim.validation.calibration import load_rows
from fabricsim.validation.training import calibration_rows, format_rows, group_summary, median_error, p90_error
from tests.conftest import REPORTS

pytestmark = pytest.mark.costly  # seconds of work in one file: collected first (tests/conftest.py)

MEASUREMENTS = default_path()
TARGET_MEDIAN, TARGET_P90 = 10.0, 25.0  # issue 14: over every training row, dense and MoE, Hopper and Blackwell


def _unpublished(row: dict) -> bool:
    """A row whose source publishes neither the architecture (the model name has none in fabricsim) nor a number
    fabricsim could compare: nothing to predict."""
    return not any(row.get(k) for k in ("tokens_per_s_per_gpu", "tflops_per_gpu", "mfu"))


@pytest.mark.skipif(not MEASUREMENTS.exists(), reason=f"calibration data not found at {MEASUREMENTS}")
def test_calibration_rows_with_engine_meet_target():
    rows = calibration_rows(MEASUREMENTS, engine_comm_model)
    REPORTS.append("fabricsim validate --training (training throughput vs published runs, engine-timed communication)\n"
                   + format_rows(rows))
    source = {r["id"]: r for r in load_rows(MEASUREMENTS) if r.get("kind") == "training"}
    assert len(rows) == len(source)
    for r in rows:  # every row runs; one publishes nothing to compare, and says so (it is not refused)
        assert not r.skipped, (r.id, r.skipped)
        assert (r.error_pct is None) == bool(r.unmeasured) == _unpublished(source[r.id]), r.id
    assert median_error(rows) <= TARGET_MEDIAN
    assert p90_error(rows) <= TARGET_P90
    groups = {g for g, *_ in group_summary(rows)}
    assert {"dense hopper fp8", "moe hopper fp8-block", "dense blackwell nvfp4", "moe blackwell-ultra mxfp8"} <= groups


def test_skips_say_why_and_bad_lines_error(tmp_path):
    f = tmp_path / "m.jsonl"
    row = {"id": "x", "kind": "training", "model": "GPT 462B", "hardware": {"gpu": "H100-SXM", "total_gpus": 8}}
    f.write_text(json.dumps(row) + "\n" + json.dumps({"kind": "collective"}) + "\n")
    rows = calibration_rows(f, comm_factory=lambda topo: None)
    assert len(rows) == 1 and "no throughput number" in rows[0].unmeasured and "architecture" in rows[0].unmeasured
    assert "no measurement x: " in format_rows(rows + [replace(rows[0], id="y", unmeasured="", predicted=1.0,
                                                               measured=1.0, metric="MFU", group="g")])
    with pytest.raises(FabricsimError, match="no calibration row"):
        median_error(rows)
    f.write_text("{not json\n")
    with pytest.raises(FabricsimError, match="line 1"):
        calibration_rows(f, comm_factory=lambda topo: None)


def test_row_settings_follow_each_source():
    from fabricsim.validation import training as V

    assert [V._precision(t) for t in ("NVFP4", "MXFP8", "FP8 (per footnote; 1x128/128x128 blockwise)", "amp_fp8",
                                      "amp_bf16", "")] == ["nvfp4", "mxfp8", "fp8-block", "fp8", "bf16", "bf16"]
    assert V._model_key("DeepSeekV3 (dropless)") == "deepseek-v3" and V._model_key("GPT OSS 120B") == "gpt-oss-120b"
    assert V._model_key("GPT-3 175B (slightly >175B, vocab 131072)") == "gpt3-175b-v131k"
    row = {"id": "train-narayanan-1t", "source": "arXiv:2104.04473", "model": "GPT 1T (1008B)", "precision": None}
    par = V._layout(row, 3072, "gpt-1t", V._framework(row))
    assert (par.tp, par.pp, par.global_batch, par.recompute, par.zero) == (8, 64, 3072, "full", 0)
    row = {"id": "x", "source": "github:NVIDIA/Megatron-LM README.md", "global_batch": 1152, "precision": None}
    assert V._layout(row, 96, "gpt3-175b-v131k", V._framework(row))["tp_overlap"] is True  # no layout: searched
    row = {"id": "m", "framework": "Megatron-Bridge/Megatron-Core", "tp": 2, "pp": 4, "vp": 5, "cp": 1, "dp": 8,
           "fsdp": 0, "micro_batch": 1, "global_batch": 256, "precision": "NVFP4", "hardware": {"gpu": "GB200"}}
    par = V._layout(row, 64, "llama3-70b", V._framework(row))
    assert not par.tp_overlap and not par.grad_fp32 and par.precision == "nvfp4" and par.zero == 1


def test_bridge_rows_run_as_their_configs_set():
    from fabricsim.validation import training as V

    gpt_oss = {"id": "g", "framework": "Megatron-Bridge/Megatron-Core", "tp": 1, "pp": 1, "cp": 1, "dp": 64, "ep": 8,
               "fsdp": 0, "micro_batch": 4, "global_batch": 1280, "precision": "BF16"}
    for gpu, recompute, dispatcher in (("GB300", "none", "alltoall"), ("B300", "none", "hybridep"),
                                       ("B200", "layernorm,moe_act", "hybridep"), ("H100-SXM", "layernorm,moe_act", "alltoall")):
        par = V._layout(dict(gpt_oss, hardware={"gpu": gpu}), 64, "gpt-oss-120b", "megatron-bridge")
        assert (par.recompute, par.dispatcher) == (recompute, dispatcher), gpu
    llama = {"id": "l", "framework": "Megatron-Bridge/Megatron-Core", "tp": 1, "pp": 1, "cp": 1, "dp": 64, "vp": None,
             "fsdp": 0, "micro_batch": 2, "global_batch": 256, "precision": "NVFP4", "hardware": {"gpu": "GB300"}}
    par = V._layout(llama, 64, "llama3-70b", "megatron-bridge")
    assert (par.tp, par.pp, par.vp, par.dp, par.micro_batch, par.zero, par.recompute) == (1, 4, 5, 16, 1, 1, "none")
    fields, note = V._config_layout(llama, "llama3-70b", "nvfp4")
    assert fields["pp"] == 4 and "pp 1" in note and "micro_batch 2" in note
    assert V._config_layout(dict(llama, hardware={"gpu": "GB200"}), "llama3-70b", "nvfp4") == ({}, "")


def test_json_output_carries_what_the_text_says(tmp_path):
    """`validate --training --format json` keeps the group, layout, note and why a row has no measurement."""
    from click.testing import CliRunner

    from fabricsim.cli.main import cli

    f = tmp_path / "m.jsonl"
    f.write_text(json.dumps({"id": "x", "kind": "training", "model": "GPT 462B",
                             "hardware": {"gpu": "H100-SXM", "total_gpus": 8}}) + "\n")
    out = CliRunner().invoke(cli, ["validate", "--training", "--data", str(f), "--format", "json"])
    assert out.exit_code == 0, out.output
    (row,) = json.loads(out.output[out.output.index("["):])
    assert {"group", "layout", "note", "unmeasured", "memory_gb", "hbm_gb"} <= set(row)
    assert "no throughput number" in row["unmeasured"] and row["error_pct"] is None


def test_p90_is_never_below_the_median_on_small_groups():
    from fabricsim.validation.training import CalibrationRow

    rows = [CalibrationRow(f"r{i}", "MFU", 1.0, 1.0 + e / 100, group="g") for i, e in enumerate((10.0, 20.0))]
    assert median_error(rows) == pytest.approx(15.0) and p90_error(rows) == pytest.approx(19.0)
