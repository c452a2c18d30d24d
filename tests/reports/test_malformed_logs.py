"""`fabricsim compare` on malformed nccl-tests logs: a skipped row with the reason or one clear error; never a
traceback, a nan / inf in the table, NaN / Infinity in the JSON, or advice that cannot work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from fabricsim.cli.compare import compare
from fabricsim.errors import FabricsimError
from fabricsim.reports.nccltests_log import parse_nccl_tests
from fabricsim.topology import save_cluster
from fabricsim.topology.presets import preset_spec

FIX = Path(__file__).parent / "fixtures"
HEADER = """# Collective test starting: all_reduce_perf
# nranks {nranks}
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
"""
ROW = "{size:>12} {count:>13}     float     sum      -1 {time:>8}   52.43   91.75       0    20.10   52.17   91.30       0\n"
SIZES = (1048576, 4194304, 16777216)


def log_text(first_time: str = "20.00", nranks: int = 8, first_size: int = SIZES[0]) -> str:
    rows = [ROW.format(size=first_size, count=first_size // 4, time=first_time)]
    rows += [ROW.format(size=s, count=s // 4, time="40.00") for s in SIZES[1:]]
    return HEADER.format(nranks=nranks) + "".join(rows)


def write(tmp_path, text: str | bytes) -> str:
    f = tmp_path / "run.log"
    (f.write_bytes if isinstance(text, bytes) else f.write_text)(text)
    return str(f)


def run(path: str, *args: str):
    return CliRunner().invoke(compare, [path, "--cluster", "dgx-h100", "--level", "analytical", *args])


def fails(path: str, *args: str) -> str:
    result = run(path, *args)
    assert isinstance(result.exception, FabricsimError), result.output + repr(result.exception)
    assert "\n" not in str(result.exception)
    return str(result.exception)


def no_nan(constant: str):
    raise AssertionError(f"JSON output contains {constant}")


@pytest.mark.parametrize("bad", ["inf", "nan", "-20.00", "-inf"])
def test_non_finite_or_negative_time_is_a_skipped_row(tmp_path, bad):
    f = write(tmp_path, log_text(first_time=bad))
    out = run(f).output
    assert f"# skipped size {SIZES[0]} B: non-finite or negative time/bandwidth" in out
    assert "# rows 2:" in out and "nan" not in out.replace("non-finite", "") and "inf" not in out
    doc = json.loads(run(f, "--format", "json").output, parse_constant=no_nan)
    assert [r["size_bytes"] for r in doc["rows"]] == list(SIZES[1:])
    assert doc["skipped"] == [{"size_bytes": SIZES[0], "reason": "non-finite or negative time/bandwidth"}]
    assert len(json.loads(run(f, "--placement", "in", "--format", "json").output)["rows"]) == 3  # in-place is fine


def test_infinite_bandwidth_is_a_skipped_row(tmp_path):
    f = write(tmp_path, log_text().replace("52.43   91.75", "  inf   91.75", 1))
    assert "non-finite or negative time/bandwidth" in run(f).output


def test_only_malformed_rows_is_an_error(tmp_path):
    text = HEADER.format(nranks=8) + ROW.format(size=SIZES[0], count=SIZES[0] // 4, time="nan")
    assert "no row of the log has data and an out-of-place time" in fails(write(tmp_path, text))


def test_overflowing_size_is_a_clear_error(tmp_path):
    big = 99999999999999999999999
    msg = fails(write(tmp_path, log_text(first_size=big)))
    assert msg.startswith(f"run.log: the log has a row of size {big} B, beyond any buffer fabricsim compares")


def test_non_utf8_log_is_a_clear_error(tmp_path):
    msg = fails(write(tmp_path, b"\x00\xff\x10binary" + bytes(range(128, 256))))
    assert "is not UTF-8 text" in msg and msg.startswith("nccl-tests log ")


@pytest.mark.parametrize("line", ["# nranks 0", "node01:1:1 [0] NCCL INFO comm 0x5 rank 0 nRanks 0 nNodes 1"])
def test_less_than_one_rank_is_a_malformed_log(tmp_path, line):
    text = log_text().replace("# nranks 8", line)
    assert "nranks 0: a run has at least one rank, so the log is malformed" in fails(write(tmp_path, text))


def test_rank_count_below_one_node_runs_on_a_partial_node(tmp_path):
    log = write(tmp_path, log_text(nranks=7))
    assert fails(log, "--gpus", "16") == "the log ran on 7 ranks but dgx-h100 --gpus 16 has 16 GPUs: use --gpus 7"
    assert run(log, "--gpus", "7").exit_code == 0


def test_rank_count_across_nodes_spreads_the_ranks_evenly(tmp_path):
    log = write(tmp_path, log_text(nranks=12))
    assert fails(log).endswith("has 8 GPUs: use --nodes 2 --gpus 12 (6 GPUs on each of 2 nodes)")
    assert run(log, "--nodes", "2", "--gpus", "12").exit_code == 0


def test_rank_count_no_size_of_a_rack_preset_can_match(tmp_path):
    result = CliRunner().invoke(compare, [write(tmp_path, log_text(nranks=100)), "--cluster", "gb200-nvl72"])
    assert str(result.exception) == ("the log ran on 100 ranks but gb200-nvl72 has 72 GPUs; gb200-nvl72 comes in whole "
                                     "units of 72 GPUs, so no size runs 100 ranks: use a cluster whose GPU count "
                                     "equals the log's ranks (a YAML cluster with 100 GPUs)")


def test_rank_count_a_preset_size_matches(tmp_path):
    assert fails(write(tmp_path, log_text(nranks=16))).endswith("has 8 GPUs: use --gpus 16")
    assert run(write(tmp_path, log_text(nranks=16)), "--gpus", "16").exit_code == 0


def test_rank_count_for_a_yaml_cluster(tmp_path):
    yaml = tmp_path / "c.yaml"
    save_cluster(preset_spec("dgx-h100", nodes=1), yaml)
    log = write(tmp_path, log_text(nranks=16))
    result = CliRunner().invoke(compare, [log, "--cluster", str(yaml), "--level", "analytical"])
    assert str(result.exception).endswith(f"has 8 GPUs: set nodes: 2 in {yaml}")
    result = CliRunner().invoke(compare, [write(tmp_path, log_text(nranks=12)), "--cluster", str(yaml)])
    assert str(result.exception).endswith(f"set nodes and gpus_per_node in {yaml} so that they multiply to 12")
    result = CliRunner().invoke(compare, [write(tmp_path, log_text(nranks=7)), "--cluster", str(yaml)])
    assert str(result.exception).endswith("has 8 GPUs: add --gpus 7 (the first 7 GPUs of one node)")


@pytest.mark.parametrize("old, new, expect", [
    ("20.00", "abc", "nccl-tests log line 6: 'abc' is not a number where the header expects one"),
    ("sum      -1    20.00", "sum       x    20.00", "nccl-tests log line 6: root 'x' is not a rank number"),
])
def test_a_bad_token_names_the_log_line(old, new, expect):
    with pytest.raises(FabricsimError) as err:
        parse_nccl_tests(log_text().replace(old, new, 1))
    assert str(err.value).startswith(expect)


def test_json_log_with_nan_or_bad_types(tmp_path):
    doc = json.loads((FIX / "v2_19_all_reduce.json").read_text())
    doc["results"][0]["out_of_place"]["time"] = float("nan")
    out = run(write(tmp_path, json.dumps(doc)), "--format", "json").output
    parsed = json.loads(out, parse_constant=no_nan)
    assert parsed["skipped"][0]["reason"] == "non-finite or negative time/bandwidth"
    doc["results"][0]["out_of_place"]["bus_bw"] = "fast"
    assert "unexpected layout" in fails(write(tmp_path, json.dumps(doc)))
    del doc["results"][0]["size"]
    assert "lacks the key 'size'" in fails(write(tmp_path, json.dumps(doc)))


def test_a_header_without_algbw_still_parses():
    """Found by fuzzing: a column-title line lacking 'algbw' (here printed as N/A) raised a KeyError."""
    text = ("# Collective test starting: all_reduce_perf\n"
            "#  size  count  type  redop  root  time  N/A  busbw  #wrong  time  algbw  busbw  #wrong\n"
            "     1048576        262144     float     sum      -1    138.1    7.59   14.24      0"
            "    122.1    8.59   16.10      0\n")
    (row,) = parse_nccl_tests(text).rows
    assert row.out_of_place.time_us == 138.1 and row.out_of_place.busbw == 14.24 and row.in_place.algbw == 8.59


def test_json_log_with_an_infinite_integer_field_is_one_clear_error(tmp_path):
    # JSON allows Infinity; an integer field holding it (found by the fuzzer) is the file's fault, not a traceback
    doc = json.loads((FIX / "v2_19_all_reduce.json").read_text())
    doc["nccl_version"] = float("inf")
    assert "unexpected layout" in fails(write(tmp_path, json.dumps(doc)))
