"""A log that does not print its rank count gives it through nccl-tests' bus factor (busbw / algbw), and compare,
doctor and calibrate use it rather than assume the cluster's GPU count."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import fabricsim as fs
from fabricsim.cli.main import main
from fabricsim.reports.nccltests_log import ParsedRow, Placement, bus_factor_ranks, parse_nccl_tests
from fabricsim.reports.nccltests_table import format_table
from fabricsim.vocab import bus_factor


def _rows(collective: str, n: int, algbws: list[float]) -> list[ParsedRow]:
    """Rows as nccl-tests prints them: algbw and busbw to two decimals."""
    out = []
    for a in algbws:
        p = Placement(1.0, round(a, 2), round(a * bus_factor(collective, n), 2), 0.0)
        out.append(ParsedRow(1 << 20, 1 << 18, "float", "sum", -1, p, p))
    return out


@settings(max_examples=200, deadline=None)
@given(coll=st.sampled_from(["all_reduce", "all_gather", "reduce_scatter", "alltoall"]), n=st.integers(2, 512),
       algbws=st.lists(st.floats(0.01, 2000.0), min_size=1, max_size=6))
def test_the_bus_factor_gives_the_rank_count_or_nothing_never_a_wrong_one(coll, n, algbws):
    got = bus_factor_ranks(_rows(coll, n, algbws), coll)
    assert got in (n, None)
    if max(algbws) >= 100 and n <= 32:  # enough printed digits to tell n from n +/- 1
        assert got == n


def test_collectives_whose_factor_is_one_say_nothing():
    assert bus_factor_ranks(_rows("broadcast", 8, [100.0]), "broadcast") is None
    assert bus_factor_ranks(_rows("all_reduce", 8, [100.0]), None) is None


def test_compare_refuses_a_log_of_more_ranks_than_the_cluster_has(tmp_path, capsys):
    """The table of a 16-rank run without its '#  Rank' lines, compared on one 8-GPU node: one error naming the fix,
    not a comparison with 8 ranks' bus factor."""
    rows = fs.perf(fs.cluster("dgx-h100", nodes=2), "all_reduce", fs.sizes("1M", "1G", factor=32)).rows
    table = format_table(list(rows), "all_reduce", 16, extra_cols=False)
    text = "\n".join(line for line in table.splitlines() if "nranks" not in line and "Collective" not in line)
    log = tmp_path / "run.log"
    log.write_text(text + "\n")
    parsed = parse_nccl_tests(text)
    assert parsed.collective is None and parsed.nranks is None  # neither printed
    assert main(["compare", str(log), "-c", "dgx-h100", "--collective", "all_reduce"]) == 2
    assert "the log ran on 16 ranks but dgx-h100 has 8 GPUs" in capsys.readouterr().err
    assert main(["compare", str(log), "-c", "dgx-h100", "--nodes", "2", "--collective", "all_reduce"]) == 0
    assert "16 ranks (from its busbw / algbw)" in capsys.readouterr().out
    assert fs.doctor(log, "dgx-h100", collective="all_reduce", level="analytical").facts.ranks == 16
