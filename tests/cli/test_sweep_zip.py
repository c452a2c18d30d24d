"""A sweep file's zip group naming an axis the file lacks is one error from `fabricsim sweep` (it was a traceback
when another name of the group was an axis)."""

from __future__ import annotations

from fabricsim.cli.main import main


def test_a_zip_group_with_a_missing_axis_is_one_error(tmp_path, capsys):
    sweep = tmp_path / "s.yaml"
    sweep.write_text("cluster: dgx-h100\nperf: {collective: all_reduce, sizes: [1M]}\naxes: {cluster.nodes: [1, 2]}\n"
                     "zip: [[cluster.nodes, cluster.gpu]]\n")
    assert main(["sweep", str(sweep), "-o", str(tmp_path / "r.csv"), "--workers", "1"]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {sweep}: zip names 'cluster.gpu', which is not an axis: add it under axes\n"
