"""`fs.jobs`: several jobs on one fabric from the Python API."""

import pytest

import fabricsim as fs

MIX = {"cluster": "dgx-h100", "nodes": 4, "jobs": [
    {"name": "ar", "gpus": 16, "collective": "all_reduce", "size": "64M", "iterations": 2},
    {"name": "a2a", "gpus": 16, "collective": "alltoall", "size": "32M", "iterations": 2, "start": "100us"}]}


def test_jobs_from_a_mapping_with_a_placement_comparison(tmp_path):
    r = fs.jobs(MIX, placement=["packed", "scattered"], level="analytical")
    assert isinstance(r, fs.JobsResult) and [run.placement for run in r.runs] == ["packed", "scattered"]
    assert repr(r).startswith("JobsResult(2 jobs on dgx-h100, 32 GPUs; packed: ar x1.00")
    recs = r.to_records()
    assert [(x["placement"], x["job"]) for x in recs] == [("packed", "ar"), ("packed", "a2a"), ("scattered", "ar"),
                                                          ("scattered", "a2a")]
    assert all(x["shared_s"] >= x["alone_s"] * (1 - 1e-12) for x in recs)
    pytest.importorskip("pandas")
    assert list(r.to_pandas()["job"]) == ["ar", "a2a", "ar", "a2a"]
    assert r.to_perfetto(tmp_path / "t.json").is_file()
    pytest.importorskip("matplotlib")
    assert len(r.figure().axes) == 4


def test_progress_is_told_and_bad_options_are_errors():
    seen = []
    fs.jobs(MIX, level="analytical", progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (2, 2)
    with pytest.raises(fs.FabricsimError, match="placement lists no policy"):
        fs.jobs(MIX, placement=[])
    with pytest.raises(fs.FabricsimError, match="unknown placement 'tight'"):
        fs.jobs(MIX, placement="tight")
    with pytest.raises(fs.FabricsimError, match="unknown level 'fast'"):
        fs.jobs(MIX, level="fast")
