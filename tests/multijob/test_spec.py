"""The jobs file schema: what it accepts, and one clear message for what it does not."""

import pytest

from fabricsim.errors import FabricsimError
from fabricsim.multijob.spec import jobs_from, load_jobs

JOB = {"name": "a", "gpus": 8, "collective": "all_reduce", "size": "1G"}


def spec(**over):
    return {"cluster": "dgx-h100", "jobs": [dict(JOB, **over)]}


def test_a_collective_loop_and_a_training_job_read():
    s = jobs_from({"cluster": "superpod-h100", "gpus": 512, "placement": "scattered",
                   "jobs": [dict(JOB, iterations=5, start="5ms", gap="20us"),
                            {"name": "t", "ranks": "8-15", "train": {"model": "llama3-8b", "tp": 8}}]})
    assert s.gpus == 512 and s.placement == "scattered" and s.level == "flow"
    assert s.jobs[0].iterations == 5 and s.jobs[1].train.tp == 8 and s.jobs[1].ranks == "8-15"


@pytest.mark.parametrize("over, message", [
    ({"colective": "all_reduce"}, r"unknown key 'jobs\[0\].colective' \(did you mean 'collective'\?\)"),
    ({"collective": "allreduce"}, "unknown collective 'allreduce': use one of all_reduce"),
    ({"size": None}, "a collective loop needs size"),
    ({"gpus": 0}, r"field 'jobs\[0\].gpus' is 0: it must be a whole number from 1"),
    ({"gpus": None}, "give gpus .* or ranks"),
    ({"ranks": "0-7"}, "give gpus .* or ranks .*, one of them"),
    ({"placement": "spread"}, r"field 'jobs\[0\].placement' is 'spread': it must be one of 'packed', 'random', 'scattered' or null"),
    ({"iterations": 0}, r"field 'jobs\[0\].iterations' is 0"),
    ({"train": {"model": "llama3-8b"}}, "give either collective .* or train"),
    ({"size": 0}, "^jobs: job 'a': size 0 moves nothing: give a message size, e.g. size: 1G$"),
    ({"size": "1X"}, "^jobs: job 'a': invalid size '1X'"),
    ({"start": "-5ms"}, "^jobs: job 'a': start: invalid duration '-5ms'"),
    ({"gap": "5 parsecs"}, "^jobs: job 'a': gap: invalid duration '5 parsecs'"),
])
def test_bad_jobs_are_one_clear_error(over, message):
    with pytest.raises(FabricsimError, match=message):
        jobs_from(spec(**over))


def test_training_fields_are_checked_and_loop_fields_refused():
    with pytest.raises(FabricsimError, match=r"unknown key 'jobs\[0\].train.tpp' \(did you mean 'tp'\?\)"):
        jobs_from({"cluster": "c", "jobs": [{"name": "t", "gpus": 8, "train": {"model": "m", "tpp": 2}}]})
    with pytest.raises(FabricsimError, match="size, algo, proto and gap belong to a collective loop"):
        jobs_from({"cluster": "c", "jobs": [{"name": "t", "gpus": 8, "size": "1G", "train": {"model": "m"}}]})


def test_file_level_problems():
    with pytest.raises(FabricsimError, match="jobs lists 0 jobs"):
        jobs_from({"cluster": "c", "jobs": []})
    with pytest.raises(FabricsimError, match="job name 'a' is used twice"):
        jobs_from({"cluster": "c", "jobs": [JOB, JOB]})
    with pytest.raises(FabricsimError, match=r"unknown key 'job' \(did you mean 'jobs'\?\)"):
        jobs_from({"cluster": "c", "job": [JOB]})


def test_a_cluster_file_is_found_beside_the_jobs_file(tmp_path):
    (tmp_path / "c.yaml").write_text("x")
    (tmp_path / "jobs.yaml").write_text("cluster: c.yaml\njobs:\n  - {name: a, gpus: 8, collective: all_reduce, size: 1G}\n")
    assert load_jobs(tmp_path / "jobs.yaml").cluster == str(tmp_path / "c.yaml")
    (tmp_path / "bad.yaml").write_text("cluster: [\n")
    with pytest.raises(FabricsimError, match="malformed YAML"):
        load_jobs(tmp_path / "bad.yaml")
