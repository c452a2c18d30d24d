"""The added public measurements (validation.added): every row sourced and on its cluster file, scored apart from
the calibration set (the table is printed in the test output), and a row that disagrees with its file is one error."""

from __future__ import annotations

import json

import pytest

from fabricsim.cli.main import main
from fabricsim.cli.validate import accuracy_table
from fabricsim.errors import FabricsimError
from fabricsim.topology import build, load_spec
from fabricsim.validation.accuracy import run_cases, summary
from fabricsim.validation.added import CLUSTER_DIR, ROWS, cases, cluster_file
from tests.conftest import REPORTS

pytestmark = pytest.mark.costly  # seconds of work in one file: collected first (tests/conftest.py)

# Regression bounds on the 55 rows scored (analytical engine level, absolute %): today's figures (median 17.6%,
# p90 152.2%) rounded up, not targets. Above p90 sit the 20-rack GB200 rows (the cross-rack MNNVL and scale
# mechanisms of issue 13 items 3-4 are not modelled), the A3 Mega and p4de small sizes (TCPXO's and EFA's
# per-message software floors are not published) and the EKS p5 rows (same hardware as the other p5 rows, slower).
MEDIAN_BOUND = 18.0
P90_BOUND = 153.0


def _rows() -> list[dict]:
    return [json.loads(line) for line in ROWS.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def scored():
    return run_cases(*cases(), level="analytical")


def test_every_row_has_its_source_and_a_cluster_file_or_a_reason():
    rows = _rows()
    assert len(rows) == 56 and len({r["id"] for r in rows}) == 56
    for r in rows:
        assert r["source"] and r["hardware"] and r["trust"] in ("high", "medium", "low")
    used = {r["cluster"] for r in rows if r["cluster"]}
    assert used == {p.stem for p in CLUSTER_DIR.glob("*.yaml")}  # no file unused, none missing
    for name in used:
        text = cluster_file(name).read_text()
        prose = " ".join(line.lstrip("#").strip() for line in text.splitlines()).lower()
        assert "described from the row" in prose and "never from" in prose  # from the hardware its source states
        assert "# gap:" in text  # and what the file cannot say
        build(load_spec(cluster_file(name)))


def test_the_added_rows_are_scored_apart_and_do_not_regress(scored):
    preds, skipped = scored
    REPORTS.append("fabricsim validate --added (added public measurements, analytical engine level; not calibration)\n"
                   + accuracy_table(preds, skipped))
    assert len(preds) == 55 and len(skipped) == 1
    assert {s.id for s in skipped} == {"coll-dstack3961-p6b200-2n-ar-8B"}
    group, n, med, p90, *_ = summary(preds)[-1]
    assert group == "all" and n == 55
    assert med <= MEDIAN_BOUND, f"median {med:.1f}% exceeds {MEDIAN_BOUND}%"
    assert p90 <= P90_BOUND, f"p90 {p90:.1f}% exceeds {P90_BOUND}%"


def test_rows_run_on_their_stated_nodes_of_the_cluster_file():
    by_id = {c.id: c for c in cases()[0]}
    assert len(by_id["coll-nccl527-p4d-4n-ar-1G"].ranks) == 32 and by_id["coll-nccl527-p4d-4n-ar-1G"].spec.nodes == 4
    assert by_id["coll-cw-gb200-2rack-ar-1G"].spec.nodes == 32  # no count in the row: the file's own 32 trays
    assert by_id["coll-mgcafe-a3mega-2n-ag-1M"].spec.net_transport == "tcpxo"
    assert by_id["coll-awsai-p5-2n-ar-1G"].spec.nics_per_node == 32
    assert by_id["coll-cw-gb200-1rack-ar-1G"].exclude == ("nvls", "nvls_tree")  # NCCL_NVLS_ENABLE=0
    one = by_id["coll-nt123-dgxa100-8g-ar-ring1ch-lat"]  # NCCL_MAX_NCHANNELS=1 over the size label's 8-128 B sweep
    assert one.chunk_env is not None and one.chunk_env.channels.max_nchannels == 1 and one.sweep == (8, 128)
    assert len(one.ranks) == 8 and by_id["coll-cw-gb200-1rack-ar-1G"].chunk_env.channels.max_nchannels is None


@pytest.mark.parametrize("change, message", [
    ({"cluster": "no-such-cluster"}, "no cluster file no-such-cluster.yaml"),
    ({"hardware": {"gpu": "B200", "gpus_per_node": 8, "nodes": 2}}, "has GPU A100-80GB but the row says B200"),
    ({"hardware": {"gpu": "A100-SXM4-80GB", "gpus_per_node": 16, "nodes": 2}}, "8 GPUs per node but the row ran 16"),
    ({"cluster": "../x"}, "cluster"),
])
def test_a_row_that_disagrees_with_its_cluster_is_one_clear_error(tmp_path, change, message):
    row = {**_rows()[0], **change}
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(FabricsimError, match=message.replace(".", r"\.").replace("(", r"\(")):
        cases(path)


def test_cli_added(tmp_path, capsys):
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _rows()[:2]))
    assert main(["validate", "--added", "--data", str(path), "--level", "analytical", "--summary-only"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("added public measurements") and "not part of the calibration figures" in out
    assert main(["validate", "--added", "--data", str(path), "--level", "analytical", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in doc["rows"]] == ["coll-awsai-p4de-2n-ar-1M", "coll-awsai-p4de-2n-ar-8B"]
    assert main(["validate", "--added", "--logs"]) == 2
    assert "--added scores the added public measurements alone" in capsys.readouterr().err
