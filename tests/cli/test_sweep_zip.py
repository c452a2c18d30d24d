"""A sweep file's bad zip group is one error from `fabricsim sweep` that says what is wrong: an axis the file lacks
(it was a traceback when another name of the group was an axis), or too few axes (it said 'it must be a list' of a
list)."""

from __future__ import annotations

from fabricsim.cli.main import main


def test_a_zip_group_with_a_missing_axis_is_one_error(tmp_path, capsys):
    sweep = tmp_path / "s.yaml"
    sweep.write_text("cluster: dgx-h100\nperf: {collective: all_reduce, sizes: [1M]}\naxes: {cluster.nodes: [1, 2]}\n"
                     "zip: [[cluster.nodes, cluster.gpu]]\n")
    assert main(["sweep", str(sweep), "-o", str(tmp_path / "r.csv"), "--workers", "1"]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {sweep}: zip names 'cluster.gpu', which is not an axis: add it under axes\n"


def test_a_zip_group_of_one_axis_says_how_many_it_needs(tmp_path, capsys):
    sweep = tmp_path / "s.yaml"
    sweep.write_text("cluster: dgx-h100\nperf: {collective: all_reduce, sizes: [1M]}\naxes: {cluster.nodes: [1, 2]}\n"
                     "zip: [[cluster.nodes]]\n")
    assert main(["sweep", str(sweep), "-o", str(tmp_path / "r.csv"), "--workers", "1"]) == 2
    assert capsys.readouterr().err == (f"error: {sweep}: field 'zip[0]' is ['cluster.nodes']: it must be a list of at "
                                       "least 2 items\n")
