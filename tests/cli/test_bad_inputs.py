"""Inputs that once ended in a traceback (issue 12 item 11) are one clear error through the real entry point:
exit status 2, one 'error:' line on stderr naming the file or option, the field and the fix. Two cases run
`python -m fabricsim.cli.main` in a fresh process; the others call the same `main()` the console script runs."""

import contextlib
import io
import subprocess
import sys
from dataclasses import dataclass

import pytest

from fabricsim.cli.main import main
from fabricsim.topology import preset_spec

MODEL = "layers: 2\nhidden: 64\nheads: 4\nkv_heads: 4\nffn: 256\nvocab: 1000\nseq: 128\n"
CLUSTER = preset_spec("dgx-h100", nodes=2).to_yaml()


def process(*args: str) -> subprocess.CompletedProcess:
    """Run `python -m fabricsim.cli.main ARGS` (the console script's code) in a fresh process."""
    return subprocess.run([sys.executable, "-m", "fabricsim.cli.main", *args], capture_output=True, text=True,
                          timeout=120)


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str


def fabricsim(*args: str) -> Run:
    """`fabricsim ARGS` through the console script's entry function, its output captured."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return Run(code, out.getvalue(), err.getvalue())


def one_error(run) -> str:
    assert run.returncode == 2, run.stderr
    assert run.stderr.startswith("error: ") and run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    return run.stderr[len("error: "):].strip()


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("line, shown, run", [("null: 1", "null", process), ("2.5: 1", "2.5", fabricsim)])
def test_model_keys_that_are_not_text(tmp_path, line, shown, run):
    path = write(tmp_path, "m.yaml", MODEL + line + "\n")
    msg = one_error(run("train", "--model", path, "--cluster", "dgx-h100", "--gpus", "8"))
    assert msg.startswith(f"{path}: key {shown} is not a field name: keys are text")


@pytest.mark.parametrize("kind", ["cluster", "model"])
def test_yaml_nested_500_deep(tmp_path, kind):
    deep = "[" * 500 + "]" * 500
    if kind == "cluster":
        path = write(tmp_path, "c.yaml", CLUSTER.replace("nodes: 2", f"nodes: {deep}"))
        msg = one_error(process("topo", "show", path))
        assert msg.startswith(f"{path}: field 'nodes' is [[[[") and "it must be a whole number" in msg
    else:
        path = write(tmp_path, "m.yaml", MODEL.replace("layers: 2", f"layers: {deep}"))
        msg = one_error(fabricsim("train", "--model", path, "--cluster", "dgx-h100", "--gpus", "8"))
        assert msg.startswith(f"{path}: field 'layers' is [[[[") and "from 1 to 10,000" in msg


def test_sizes_of_400_digits_and_a_huge_factor(tmp_path):
    msg = one_error(fabricsim("perf", "all_reduce", "--cluster", "dgx-h100", "-b", "1" + "0" * 400))
    assert msg.startswith("size '1000") and "256 TiB" in msg
    run = fabricsim("perf", "all_reduce", "--cluster", "dgx-h100", "-b", "1K", "-e", "1M", "-f", "1e308",
                    "--format", "csv")
    assert run.returncode == 0 and [line.split(",")[0] for line in run.stdout.splitlines()[1:]] == ["1024"]


@pytest.mark.parametrize("edit, expect", [
    (("oversubscription: 1.0", "oversubscription: .nan"),
     "field 'oversubscription' is nan: it must be a number > 0 and <= 1,000"),
    (("oversubscription: 1.0", "oversubscription: .inf"),
     "field 'oversubscription' is inf: it must be a number > 0 and <= 1,000"),
    (("nvswitch_chips: 4", "nvswitch_chips: 32768"), "field 'nvswitch_chips' is 32768: it must be a whole number "
                                                      "from 0 to 4,096"),
])
def test_cluster_numbers_out_of_range(tmp_path, edit, expect):
    path = write(tmp_path, "c.yaml", CLUSTER.replace(*edit))
    assert one_error(fabricsim("topo", "show", path)) == f"{path}: {expect}"


@pytest.mark.parametrize("layers", ["1000000000", "1000000000000"])
def test_huge_layer_counts_are_refused_when_the_file_is_read(tmp_path, layers):
    path = write(tmp_path, "m.yaml", MODEL.replace("layers: 2", f"layers: {layers}"))
    msg = one_error(fabricsim("train", "--model", path, "--cluster", "dgx-h100", "--gpus", "8"))
    assert msg == f"{path}: field 'layers' is {layers}: it must be a whole number from 1 to 10,000"


def test_an_exponent_without_a_dot_is_a_number(tmp_path):
    from fabricsim.topology import load_spec

    path = write(tmp_path, "c.yaml", CLUSTER.replace("nic_gbps: 400.0", "nic_gbps: 4e2"))
    assert load_spec(path) == preset_spec("dgx-h100", nodes=2)
    assert fabricsim("topo", "show", path).stdout == fabricsim("topo", "show", "dgx-h100", "--nodes", "2").stdout


# Three rows of an 8-GPU all_reduce in nccl-tests' layout; the middle row's out-of-place time is replaced.
LOG = """# Collective test starting: all_reduce_perf
#  Rank  0 Group  0 Pid  1 on host device  0 [0x18] NVIDIA H100 80GB HBM3
#  Rank  7 Group  0 Pid  1 on host device  7 [0xdb] NVIDIA H100 80GB HBM3
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144     float     sum      -1    30.00   34.95   61.17      0    30.00   34.95   61.17      0
     2097152        524288     float     sum      -1     TIME   41.94   73.40      0    50.00   41.94   73.40      0
     4194304       1048576     float     sum      -1    80.00   52.43   91.75      0    80.00   52.43   91.75      0
"""


@pytest.mark.parametrize("time", ["1e308", "inf"])
def test_a_compare_row_timed_1e308_is_skipped_like_inf(tmp_path, time):
    run = fabricsim("compare", write(tmp_path, "t.log", LOG.replace("TIME", time)), "--cluster", "dgx-h100")
    assert run.returncode == 0, run.stderr
    assert "# rows 2:" in run.stdout and "# skipped size 2097152 B: " in run.stdout


# Every YAML input names a key twice -> one error naming the key, both lines and the file (PyYAML keeps the last).
DUPLICATES = {
    "cluster": ("c.yaml", CLUSTER.replace("nodes: 2\n", "nodes: 2\nfabric: ib-ndr\nnodes: 4\n", 1), "nodes",
                lambda p: ("perf", "all_reduce", "--cluster", p)),
    "model": ("m.yaml", MODEL + "layers: 4\n", "layers",
              lambda p: ("train", "--model", p, "--cluster", "dgx-h100", "--gpus", "8")),
    "sweep": ("s.yaml", "cluster: dgx-h100\naxes:\n  nodes: [1, 2]\n  nodes: [4]\n", "nodes", lambda p: ("sweep", p)),
    "jobs": ("j.yaml", "cluster: dgx-h100\ncluster: dgx-a100\njobs: []\n", "cluster", lambda p: ("jobs", p)),
    "run": ("r.yaml", "model: llama3-8b\ncluster: dgx-h100\ngpus: 8\ngpus: 16\n", "gpus", lambda p: ("train", "--run", p)),
}


@pytest.mark.parametrize("kind", DUPLICATES)
def test_a_key_named_twice_is_refused(tmp_path, kind):
    name, text, key, args = DUPLICATES[kind]
    path = write(tmp_path, name, text)
    lines = [i + 1 for i, line in enumerate(text.splitlines()) if line.strip().startswith(f"{key}:")]
    assert len(lines) == 2
    msg = one_error(fabricsim(*args(path)))
    assert msg == f"key '{key}' appears twice (lines {lines[0]} and {lines[1]}) in {path}: keep one"


def test_a_key_named_twice_through_the_console_script(tmp_path):
    name, text, key, args = DUPLICATES["cluster"]
    path = write(tmp_path, name, text)
    done = process(*args(path))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"key '{key}' appears twice" in done.stderr and done.stdout == ""


@pytest.mark.parametrize("name", ["nope.yaml", "nope.yml", "nope.json", "sub/nope"])
def test_a_model_path_that_does_not_exist(tmp_path, name):
    path = str(tmp_path / name)
    msg = one_error(fabricsim("train", "--model", path, "--cluster", "dgx-h100", "--gpus", "8"))
    assert msg.startswith(f"model file {path} does not exist: check the path, or use a built-in model: gpt3-175b, ")


def test_an_unknown_model_name_is_still_a_name():
    msg = one_error(fabricsim("train", "--model", "llama9", "--cluster", "dgx-h100", "--gpus", "8"))
    assert msg.startswith("unknown model 'llama9': use a built-in (")


def test_tp_beyond_the_nvlink_domain_offers_only_fixes_the_cli_has():
    msg = one_error(fabricsim("train", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "16", "--tp", "16"))
    assert msg == ("tp=16 does not fit in the 8-GPU NVLink domain, so TP traffic would cross the scale-out network: "
                   "use a tp that divides 8 (1, 2, 4 or 8) and spread the other GPUs over pp and dp")


@pytest.mark.parametrize("algo", ["recursive_doubling", "rabenseifner", "hierarchical"])
def test_a_forced_algorithm_nccl_does_not_implement_gets_a_note(algo):
    run = fabricsim("perf", "all_reduce", "--cluster", "dgx-h100", "--nodes", "2", "--algo", algo, "-b", "1M", "-e", "1M")
    assert run.returncode == 0 and algo in run.stdout
    assert run.stderr == (f"note: NCCL does not implement {algo} for all_reduce (it runs ring, tree, nvls, nvls_tree, "
                          f"collnet_direct, collnet_chain), so the {algo} rows are fabricsim's own schedule, which no "
                          "NCCL run would show\n")


def test_forcing_algorithms_nccl_runs_gets_no_note():
    run = fabricsim("perf", "all_reduce", "--cluster", "dgx-h100", "--nodes", "2", "--algo", "ring,tree", "-b", "1M",
                    "-e", "1M")
    assert run.returncode == 0 and run.stderr == ""


SWEEP = "cluster: dgx-h100\naxes:\n  cluster.nodes: [1, 2]\nperf:\n  collective: all_reduce\n  sizes: [1M]\n"


def test_a_size_factor_of_one_says_what_it_must_be(tmp_path):
    path = write(tmp_path, "s.yaml", "cluster: dgx-h100\nperf:\n  collective: all_reduce\n  sizes: {min: 1M, max: 1G, factor: 1}\n")
    assert one_error(fabricsim("sweep", path)) == f"{path}: field 'perf.sizes.factor' is 1: it must be a number > 1 or null"


def test_an_axis_error_names_the_item(tmp_path):
    path = write(tmp_path, "s.yaml", SWEEP.replace("[1, 2]", "[1, 0]"))
    msg = one_error(fabricsim("sweep", path))
    assert msg.startswith(f"{path}: axis 'cluster.nodes' (item 2): cluster.nodes 0: it must be a whole number from 1")


def test_a_results_file_of_another_suffix_is_refused(tmp_path):
    path = write(tmp_path, "s.yaml", SWEEP)
    out = tmp_path / "s.txt"
    assert one_error(fabricsim("sweep", path, "-o", str(out))) == (
        f"results file {out}: suffix '.txt' is no results format: name it .parquet or .csv (the formats fabricsim "
        "writes), or pass --format")
    assert not out.exists()
    assert fabricsim("sweep", path, "-o", str(tmp_path / "s.results"), "--format", "csv").returncode == 0


def test_every_gpu_count_that_cannot_run_gets_its_own_reason():
    msg = one_error(fabricsim("train", "--model", "llama3-405b", "--cluster", "dgx-h100", "--gpus", "8,64"))
    assert msg.startswith("8 GPUs: no Megatron layout of llama3-405b fits 8 GPUs")
    assert "; 64 GPUs: no Megatron layout of llama3-405b fits 64 GPUs" in msg
    assert "zero 3" not in msg  # each closest layout has dp = 1: ZeRO has nothing to shard over
    assert "raise tp/pp or use more recompute (--recompute full or a module list)" in msg



def test_a_key_named_twice_in_a_json_sweep_file(tmp_path):
    path = write(tmp_path, "s.json", '{"cluster": "dgx-h100", "cluster": "dgx-a100", "perf": {"collective": "all_reduce"}}')
    assert one_error(fabricsim("sweep", path)) == f"key 'cluster' appears twice in one object in {path}: keep one"


def test_a_run_file_option_named_twice_with_dash_and_underscore(tmp_path):
    path = write(tmp_path, "r.yaml", "model: llama3-8b\ncluster: dgx-h100\ngpus: 8\nglobal_batch: 64\nglobal-batch: 128\n")
    assert one_error(fabricsim("train", "--run", path)) == (
        f"{path}: 'global-batch' and 'global_batch' name the same option: keep one")


@pytest.mark.parametrize("size, collective, smallest", [("0", "all_reduce", "4"), ("3", "all_reduce", "4"),
                                                        ("512", "alltoall", "1,024")])
def test_a_failures_size_below_one_element_is_refused(size, collective, smallest):
    msg = one_error(fabricsim("whatif", "failures", "--cluster", "superpod-h100", "--gpus", "256", "--size", size,
                              "--collective", collective, "--fail-count", "0..1", "--seeds", "1"))
    assert msg.startswith(f"--size {size}: {collective} on 256 GPUs moves nothing below {smallest} bytes")
    assert msg.endswith("give a larger size, e.g. --size 1G")


@pytest.mark.parametrize("flag, value, expect", [
    ("--degrade", "node0.gpu0", "--degrade 'node0.gpu0' must read SPEC:FACTOR"),
    ("--degrade", "node0.gpu0:2", "--degrade 'node0.gpu0:2': factor '2' must be a number or fraction above 0"),
    ("--fail", "random:2:foo", "--fail 'random:2:foo': unknown class 'foo'"),
])
def test_a_bad_fault_option_is_named_as_typed(flag, value, expect):
    msg = one_error(fabricsim("perf", "all_reduce", "--cluster", "dgx-h100", flag, value))
    assert msg.startswith(expect) and "faults." not in msg


def test_a_bad_fault_from_python_is_named_as_the_keyword():
    import fabricsim as fs

    with pytest.raises(fs.FabricsimError, match=r"^degrade 'x' must read SPEC:FACTOR"):
        fs.degrade(fs.cluster("dgx-h100"), "x")


def test_a_report_of_a_file_that_is_no_results_offers_no_format_option(tmp_path):
    path = write(tmp_path, "s.yaml", SWEEP)
    assert one_error(fabricsim("report", path, "-o", str(tmp_path / "r.html"))) == (
        f"results file {path}: suffix '.yaml' is no results format: give a .parquet or .csv file that `fabricsim "
        "sweep` wrote")


@pytest.mark.parametrize("args, first", [((), "Usage: fabricsim [OPTIONS] COMMAND [ARGS]..."),
                                         (("topo",), "Usage: fabricsim topo [OPTIONS] COMMAND [ARGS]...")])
def test_a_group_without_a_command_prints_its_help_as_it_reads(args, first):
    run = fabricsim(*args)
    assert run.returncode == 2 and run.stdout == ""
    lines = run.stderr.splitlines()
    assert lines[0] == first and "Commands:" in lines and not run.stderr.startswith("error:")
