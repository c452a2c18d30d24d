"""Fuzzed command-line values: sizes and the -b/-e/-f/-i sweep, --algo/--proto lists, train --gpus and
verify --ranks. A result with sane figures or one FabricsimError, nothing else."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fabricsim import vocab
from fabricsim.reports.sweep import sizes
from fabricsim.cli.train import _counts
from fabricsim.cli.verify import MAX_VERIFY_RANKS, parse_ranks
from fabricsim.errors import FabricsimError
from fabricsim.topology import load_cluster, preset_spec
from fabricsim.tuner import nccl_model
from fabricsim.tuner.select import _filter, candidates
from fabricsim.units import MAX_BYTES, c_integer, parse_size
from tests.fuzz.conftest import RUNS, run_fuzz

size_text = (st.from_regex(r"\A\s?[0-9]{0,20}(\.[0-9]{0,45})?\s?[KMGTkmgtP]?(iB|B|b)?\s?\Z")
             | st.sampled_from(["1" + "0" * 400, "0." + "0" * 6000 + "1", "256T", "257T", "1e3", "-1", "nan", "1K1"])
             | st.text(max_size=12) | st.integers(-(10 ** 20), 10 ** 20))
factors = st.none() | st.floats() | st.sampled_from([1e308, 1.0000001, 2.0, 1.5])


def refused_or(fn, *args):
    try:
        return fn(*args)
    except FabricsimError:
        return None


@pytest.mark.parametrize("profile", RUNS)
def test_sizes(profile):
    @given(size_text)
    def fuzz(text):
        value = refused_or(parse_size, text)
        assert value is None or (type(value) is int and 0 <= value <= MAX_BYTES)

    run_fuzz(profile, fuzz)


@pytest.mark.parametrize("profile", RUNS)
def test_size_sweep(profile):
    @given(size_text, size_text, factors, st.none() | size_text)
    def fuzz(b, e, f, i):
        lo, hi = refused_or(parse_size, b), refused_or(parse_size, e)
        step = refused_or(parse_size, i) if i is not None else None
        if lo is None or hi is None or (i is not None and step is None):
            return
        out = refused_or(sizes, lo, hi, f, step)
        if out is not None:
            assert out[0] == lo and out[-1] <= hi and len(out) <= 4097
            assert all(type(s) is int for s in out) and all(a < b for a, b in zip(out, out[1:]))

    run_fuzz(profile, fuzz)


LIST_WORDS = [*vocab.ALGORITHMS, *vocab.NCCL_ALGO_NAMES.values(), *vocab.PROTOCOLS, *vocab.NCCL_PROTOCOLS,
              "RING", "nvlstree", "collnet", "^", ",", " ", "^ring", "bogus", "", "\t", "ll,", ",,"]
list_text = st.lists(st.sampled_from(LIST_WORDS) | st.text(max_size=5), max_size=6).map(
    lambda words: ",".join(words)) | st.text(max_size=20)
TOPO = load_cluster("dgx-h100", nodes=2)
PAIRS = {c: candidates(TOPO, c, np.arange(TOPO.n_gpus), "all") for c in vocab.COLLECTIVES}
SYSTEM = nccl_model.system_from_topology(TOPO)


@pytest.mark.parametrize("profile", RUNS)
def test_algo_and_proto_lists(profile):
    @given(list_text, list_text, st.sampled_from(vocab.COLLECTIVES), st.integers(1, MAX_BYTES))
    def fuzz(algo, proto, collective, nbytes):
        algos, protos = refused_or(vocab.parse_algorithms, algo), refused_or(vocab.parse_protocols, proto)
        for sel, universe in ((algos, vocab.ALGORITHMS), (protos, vocab.PROTOCOLS)):
            assert sel is None or (sel.names and set(sel.names) <= set(universe))
        kept = refused_or(_filter, PAIRS[collective], algos, protos, collective)
        assert kept is None or (kept and set(kept) <= set(PAIRS[collective]))
        if collective in vocab.NCCL_FUNCS:  # NCCL's model with the same lists, as `perf --model nccl` runs it
            choice = refused_or(nccl_model.nccl_predict, SYSTEM, collective, nbytes, algo, proto)
            assert choice is None or (math.isfinite(choice.time_s) and choice.time_s > 0
                                      and math.isfinite(choice.busbw) and choice.busbw >= 0 and choice.channels >= 1)

    run_fuzz(profile, fuzz)


@pytest.mark.parametrize("profile", RUNS)
def test_train_gpu_counts(profile):
    @given(st.lists(st.integers(-5, 10 ** 7).map(str) | st.sampled_from(["", " ", "1e3", "8.0", "٣", "1_0"])
                    | st.text(max_size=4), min_size=1, max_size=5).map(",".join) | st.text(max_size=20),
           st.sampled_from(["dgx-h100", "gb200-nvl72", "superpod-h100", "pcie-l40s-8"]))
    def fuzz(text, preset):
        counts = refused_or(_counts, text)
        if counts is None:
            return
        assert counts and all(type(c) is int and c >= 1 for c in counts)
        for c in counts:
            spec = refused_or(preset_spec, preset, None, c)
            assert spec is None or spec.nodes * spec.gpus_per_node == c

    run_fuzz(profile, fuzz)


@pytest.mark.parametrize("profile", RUNS)
def test_verify_ranks(profile):
    @given(st.lists(st.integers(-3, 2000).map(str) | st.tuples(st.integers(-3, 10 ** 12), st.integers(-3, 10 ** 12))
                    .map(lambda t: f"{t[0]}-{t[1]}") | st.text(max_size=4), min_size=1, max_size=4).map(",".join))
    def fuzz(text):
        counts = refused_or(parse_ranks, text)
        assert counts is None or (counts == sorted(set(counts)) and 1 <= counts[0] and counts[-1] <= MAX_VERIFY_RANKS)

    run_fuzz(profile, fuzz)


@pytest.mark.parametrize("profile", RUNS)
def test_c_integers(profile):
    # NCCL's integer parameters and nccl-tests' options are read by strtoll / strtol with base 0: every C spelling of
    # an integer reads as C reads it, anything else (Python's '1_0', '0o10', text) is refused, never an exception
    @given(st.integers(-(10 ** 30), 10 ** 30), st.sampled_from(["{:d}", "{:#x}", "{:#X}", "0{:o}"]), st.text(" ", max_size=2),
           st.text(max_size=8))
    def fuzz(n, form, pad, noise):
        text = form.format(n) if n >= 0 else "-" + form.format(-n)
        assert c_integer(pad + text + pad) == n
        value = c_integer(noise)
        assert value is None or (type(value) is int and noise.strip()[:1] in "+-0123456789")

    run_fuzz(profile, fuzz)
    assert [c_integer(t) for t in ("010", "0x10", "08", "1_0", "0o10", "", " 7 ")] == [8, 16, None, None, None, None, 7]
