"""`fabricsim validate --data`: malformed measurement files are one clear error (or a skip with the reason), never a
traceback or a silently wrong number."""

from __future__ import annotations

import copy
import json

import pytest

from fabricsim.cli.main import main
from fabricsim.errors import FabricsimError
from fabricsim.validation.training import calibration_rows
from fabricsim.validation.calibration import cases, load_rows

COLL = {"id": "x", "kind": "collective",
        "hardware": {"desc": "1 node x 8 H100", "gpu": "H100-SXM", "gpus_per_node": 8, "nodes": 1, "total_gpus": 8,
                     "scaleup": "nvlink4-nvswitch", "scaleout": "none"},
        "collective": "all_reduce", "size_bytes": 33554432, "busbw_GBps": 400.0, "time_us": 160.0,
        "algo_env": None, "notes": "", "nccl_version": "2.21.5", "trust": "high"}
TRAIN = {"id": "t", "kind": "training",
         "hardware": {"gpu": "H100-SXM", "gpus_per_node": 8, "nodes": 8, "total_gpus": 64},
         "model": "GPT3-5B", "tp": 1, "pp": 1, "dp": 64, "cp": 1, "ep": None, "vp": 1, "fsdp": None, "seq": 2048,
         "global_batch": 2048, "micro_batch": 4, "precision": "FP8", "tokens_per_s_per_gpu": 22521, "notes": ""}


def changed(base: dict, path: str, value=...) -> dict:
    """A copy of base with the dotted field set to value (deleted when value is ...)."""
    row = copy.deepcopy(base)
    *parents, key = path.split(".")
    d = row
    for k in parents:
        d = d[k]
    if value is ...:
        del d[key]
    else:
        d[key] = value
    return row


def write(tmp_path, *lines) -> str:
    f = tmp_path / "m.jsonl"
    f.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return str(f)


def cli_error(capsys, *args) -> str:
    """Run fabricsim; it must exit 2 with one 'error:' line and no traceback."""
    assert main(list(args)) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    return err[len("error: "):].strip()


@pytest.mark.parametrize("line", ["null", "42", '"s"', "[1]"])
def test_a_line_that_is_not_an_object_is_named(tmp_path, capsys, line):
    f = write(tmp_path, COLL, line)
    assert cli_error(capsys, "validate", "--data", f).startswith(f"{f}:2: line 2 is not a JSON object")


@pytest.mark.parametrize("path, value, expect", [
    ("hardware", ..., "field 'hardware' is missing: it must be a mapping"),
    ("hardware", "H100", "field 'hardware' is 'H100': it must be a mapping"),
    ("collective", ..., "field 'collective' is missing"),
    ("collective", "frob", "field 'collective' is 'frob': it must be one of 'all_gather', 'all_reduce'"),
    ("hardware.gpu", ..., "field 'hardware.gpu' is missing"),
    ("hardware.nodes", "ten", "field 'hardware.nodes' is 'ten': it must be a whole number from 1 to 2,147,483,647"),
    ("hardware.nodes", None, "field 'hardware.nodes' is null: it must be a whole number from 1"),
    ("hardware.nodes", 0, "field 'hardware.nodes' is 0"),
    ("hardware.gpus_per_node", 0, "field 'hardware.gpus_per_node' is 0"),
    ("size_bytes", "32M", "field 'size_bytes' is '32M': it must be a whole number from 1 to 281,474,976,710,656"),
    ("size_bytes", 1e25, "field 'size_bytes' is 1e+25"),
    ("size_bytes", 10 ** 25, "field 'size_bytes' is 10000000000000000000000000"),
    ("size_bytes", 0, "field 'size_bytes' is 0"),
    ("busbw_GBps", "fast", "field 'busbw_GBps' is 'fast': it must be a number from 0 to 1e+18"),
    ("busbw_GBps", -10, "field 'busbw_GBps' is -10: it must be a number from 0"),
    ("busbw_GBps", float("nan"), "field 'busbw_GBps' is nan"),
    ("hardware.desc", 5, "field 'hardware.desc' is 5: it must be text"),
    ("notes", 5, "field 'notes' is 5: it must be text"),
    ("algo_env", 5, "field 'algo_env' is 5: it must be text"),
    ("algo_env", "FROB", "field 'algo_env' is 'FROB': unknown algorithm 'FROB'"),
    ("nccl_version", 229, "field 'nccl_version' is 229: it must be text"),
])
def test_a_bad_field_names_file_line_row_and_field(tmp_path, capsys, path, value, expect):
    f = write(tmp_path, COLL, changed(COLL, path, value))
    assert cli_error(capsys, "validate", "--data", f).startswith(f"{f}:2: row 'x': {expect}")


def test_negative_time_is_an_error_not_a_negative_percentage(tmp_path, capsys):
    f = write(tmp_path, changed(changed(COLL, "busbw_GBps", None), "time_us", -3))
    assert "field 'time_us' is -3: it must be a number from 0" in cli_error(capsys, "validate", "--data", f)


def test_zero_busbw_and_time_is_skipped_with_the_reason(tmp_path):
    preds, skipped = cases(load_rows(write(tmp_path, changed(changed(COLL, "busbw_GBps", 0), "time_us", 0))))
    assert not preds and skipped[0].reason == "the row has neither a busbw nor a time above zero"


def test_null_text_fields_are_empty(tmp_path):
    row = changed(changed(changed(COLL, "notes", None), "hardware.desc", None), "algo_env", None)
    (case,), _ = cases(load_rows(write(tmp_path, row)))
    assert case.algos is None and case.measured == 400.0 and case.size_bytes == 33554432


@pytest.mark.parametrize("content", [b"", b"\n  \n"])
def test_a_file_without_rows_is_an_error(tmp_path, capsys, content):
    f = tmp_path / "m.jsonl"
    f.write_bytes(content)
    assert cli_error(capsys, "validate", "--data", str(f)) == (f"{f} has no rows: give a measurements.jsonl file with "
                                                               "one JSON object per line")


def test_binary_file_is_not_utf8(tmp_path, capsys):
    f = tmp_path / "binary.jsonl"
    f.write_bytes(b"\xff\xfe bin\n")
    expect = f"{f} is not UTF-8 text: give a JSONL file (one JSON object per line)"
    assert cli_error(capsys, "validate", "--data", str(f)) == expect
    assert "not UTF-8" in cli_error(capsys, "validate", "--training", "--data", str(f))


def test_json_summary_of_skipped_rows_has_no_nan(tmp_path, capsys):
    f = write(tmp_path, {"id": "p", "kind": "p2p"})
    assert main(["validate", "--data", f, "--format", "json"]) == 0
    out = capsys.readouterr().out
    assert "NaN" not in out and json.loads(out)["summary"][-1]["median"] is None


@pytest.mark.parametrize("path, value, expect", [
    ("tp", 0, "field 'tp' is 0: it must be a whole number from 1"),
    ("tp", "one", "field 'tp' is 'one'"),
    ("seq", 0, "field 'seq' is 0"),
    ("tokens_per_s_per_gpu", -1, "field 'tokens_per_s_per_gpu' is -1: it must be a number from 0"),
    ("hardware.total_gpus", 0, "field 'hardware.total_gpus' is 0"),
    ("hardware", [], "field 'hardware' is []: it must be a mapping"),
])
def test_training_bad_field_is_an_error(tmp_path, capsys, path, value, expect):
    f = write(tmp_path, changed(TRAIN, path, value))
    assert cli_error(capsys, "validate", "--training", "--data", f).startswith(f"{f}:1: row 't': {expect}")


@pytest.mark.parametrize("path, value, reason", [
    ("precision", "int4", "precision 'int4' is not modelled: fabricsim times bf16, fp8, fp8-block, mxfp8, nvfp4"),
    ("dp", 3, "tp*pp*cp*dp = 1*1*1*3 does not match the 64 GPUs"),
])
def test_training_rows_it_cannot_score_are_skipped_with_the_reason(tmp_path, path, value, reason):
    (row,) = calibration_rows(write(tmp_path, changed(TRAIN, path, value)), comm_factory=lambda topo: None)
    assert row.predicted is None and row.error_pct is None
    assert row.skipped.startswith(reason)


def test_a_training_row_without_a_measurement_is_not_a_refusal(tmp_path):
    """tokens_per_s_per_gpu gone and no tflops_per_gpu or mfu to fall back to: nothing to compare, said as such."""
    (row,) = calibration_rows(write(tmp_path, changed(TRAIN, "tokens_per_s_per_gpu", None)), comm_factory=lambda topo: None)
    assert row.predicted is None and not row.skipped
    assert row.unmeasured.startswith("the row publishes no throughput number")


def test_training_all_skipped_says_why(tmp_path, capsys):
    f = write(tmp_path, changed(TRAIN, "precision", "int4"))
    msg = cli_error(capsys, "validate", "--training", "--data", f)
    assert msg.startswith("no calibration row could be compared (skipped t: precision 'int4' is not modelled")


def test_a_valid_row_is_still_scored(tmp_path):
    with pytest.raises(FabricsimError, match="has no rows"):
        load_rows(write(tmp_path))
    (case,), skipped = cases(load_rows(write(tmp_path, COLL, {"id": "p", "kind": "p2p"})))
    assert case.ranks == tuple(range(8)) and case.metric == "busbw" and case.nccl_version == (2, 21, 5)
    assert skipped[0].id == "p"


def test_unknown_keys_and_kinds_are_named_with_the_fix(tmp_path, capsys):
    f = write(tmp_path, {**COLL, "busbw_GBPS": 1.0})
    assert "unknown key 'busbw_GBPS' (did you mean 'busbw_GBps'?)" in cli_error(capsys, "validate", "--data", f)
    f = write(tmp_path, changed(COLL, "hardware.gpus", 8))
    assert "unknown key 'hardware.gpus' (did you mean 'gpu'?)" in cli_error(capsys, "validate", "--data", f)
    f = write(tmp_path, changed(COLL, "kind", "colective"))
    assert cli_error(capsys, "validate", "--data", f).endswith(
        "row 'x': field 'kind' is 'colective': it must be one of collective, p2p, training")


def test_the_calibration_files_follow_their_schemas():
    from fabricsim.calibration_data import default_path
    from fabricsim.validation.calibration import LogEntry

    path = default_path()
    if not path.exists():
        pytest.skip(f"no calibration data at {path} (set FABRICSIM_CALIBRATION)")
    assert {r["kind"] for r in load_rows(path)} == {"collective", "p2p", "training"}
    index = path.parent / "logs" / "index.jsonl"
    if index.exists():
        assert all(r["log"] for r in load_rows(index, LogEntry))
