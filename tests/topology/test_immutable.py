"""A built topology is an immutable value: nothing derived from it can go stale, it owns one bounded store of
derived data, and it is freed with everything derived from it once the caller drops it."""

from __future__ import annotations

import dataclasses
import gc
import importlib
import inspect
import pickle
import pkgutil
import weakref
from functools import _lru_cache_wrapper

import numpy as np
import pytest

import fabricsim
from fabricsim.topology import Topology, load_cluster
from fabricsim.topology.derived import DerivedStore
from fabricsim.tuner.select import best

ARRAYS = [f.name for f in dataclasses.fields(Topology) if f.name.startswith(("dev_", "link_", "gpu_")) and f.name != "link_origin"]


@pytest.fixture
def h100():
    return load_cluster("dgx-h100")


def test_halving_a_capacity_in_place_raises(h100):
    ring = best(h100, "all_reduce", 1 << 30, algos=["ring"]).result.busbw
    with pytest.raises(ValueError, match="read-only"):
        h100.link_capacity *= 0.5
    with pytest.raises(ValueError, match="read-only"):
        h100.link_capacity[0] = 1.0
    assert best(h100, "all_reduce", 1 << 30, algos=["ring"]).result.busbw == ring


@pytest.mark.parametrize("name", ARRAYS)
def test_every_array_is_read_only(h100, name):
    arr = getattr(h100, name)
    assert not arr.flags.writeable
    with pytest.raises(ValueError):
        arr[...] = arr


def test_fields_parts_techs_and_features_cannot_change(h100):
    with pytest.raises(dataclasses.FrozenInstanceError):
        h100.link_capacity = h100.link_capacity * 0.5
    with pytest.raises(TypeError):
        h100.features["sharp"] = True
    assert isinstance(h100.parts, tuple) and isinstance(h100.techs, tuple)


def test_derived_arrays_are_read_only_too(h100):
    for arr in (h100.gpu_node, h100.gpu_domain, h100.out_ptr, h100.out_links):
        assert not arr.flags.writeable


def test_arrays_handed_in_are_frozen_or_copied():
    base = load_cluster("dgx-h100")
    values = {f.name: getattr(base, f.name) for f in dataclasses.fields(Topology) if f.init}
    owned = np.array(base.link_capacity)  # a fresh writable array: frozen in place
    viewed = np.stack([base.link_latency, base.link_latency])  # a view of a writable array: copied
    topo = Topology(**{**values, "link_capacity": owned, "link_latency": viewed[0]})
    assert topo.link_capacity is owned and not owned.flags.writeable
    viewed[0, 0] = 99.0
    assert topo.link_latency[0] == base.link_latency[0]
    assert topo.link_src is base.link_src  # already read-only: shared


def test_each_topology_owns_its_stores_and_all_derived_data_lives_there(h100):
    """Two stores per topology: its own, and the structural one (shared only with its calibrated variants)."""
    other = load_cluster("dgx-h100")
    for store in ("_derived", "_structure"):
        assert isinstance(getattr(h100, store), DerivedStore) and getattr(h100, store) is not getattr(other, store)
    best(h100, "all_reduce", 1 << 30, algos="ring")  # a routed schedule (NCCL's pick here, NVLS, routes none)
    kinds = {**h100._derived.kinds(), **h100._structure.kinds()}
    for kind in ("routing_tables", "routes", "unit", "nccl_system", "effective_capacity"):
        assert kind in kinds, kinds
    assert len(other._derived) == 0 and len(other._structure) == 0


def test_no_module_keeps_a_cache_keyed_on_a_topology():
    """No WeakKeyDictionary anywhere, and no lru_cache on a function taking a Topology."""
    for mod in pkgutil.walk_packages(fabricsim.__path__, "fabricsim."):
        module = importlib.import_module(mod.name)
        for name, value in vars(module).items():
            assert not isinstance(value, weakref.WeakKeyDictionary), f"{mod.name}.{name}"
            if isinstance(value, _lru_cache_wrapper) and value.__module__ == mod.name:
                hints = inspect.signature(value.__wrapped__).parameters.values()
                assert not any("Topology" in str(p.annotation) or p.name == "topo" for p in hints), f"{mod.name}.{name}"


def _collected(make) -> bool:
    ref = make()
    gc.collect()
    return ref() is None


def test_a_topology_is_freed_after_perf_tuner_and_training_calls():
    from fabricsim.reports.sweep import predict
    from fabricsim.training.comm import engine_comm_model
    from fabricsim.training.models import load_model
    from fabricsim.training.parallel import Parallelism, resolve
    from fabricsim.training.step import step_time
    from fabricsim.training.sweep import topology_gpu

    def used() -> weakref.ref:
        topo = load_cluster("dgx-h100", nodes=2)
        every = np.arange(topo.n_gpus)
        predict(topo, every, "all_reduce", [1 << 20, 1 << 30])
        predict(topo, every, "alltoall", [1 << 24])
        best(topo, "sendrecv", 1 << 24, ranks=np.array([0, 8], dtype=np.int32))
        par = resolve(Parallelism(tp=8, global_batch=64), 16)
        step_time(load_model("llama3-8b"), par, topology_gpu(topo), engine_comm_model(topo))
        return weakref.ref(topo)

    assert _collected(used)


def test_the_store_is_bounded_by_entries_and_bytes():
    store = DerivedStore(max_entries=3, max_bytes=10_000)
    for k in range(5):
        store.get(("a", k), lambda: np.zeros(10))
    assert len(store) == 3 and ("a", 4) in store and ("a", 1) not in store
    store.get(("a", 2), lambda: np.zeros(10))  # a hit makes it the most recent
    store.get(("big",), lambda: np.zeros(1000))  # 8,000 bytes: the older entries go until it fits
    assert ("a", 2) in store and ("a", 3) not in store and store.nbytes <= 10_000
    store.get(("huge",), lambda: np.zeros(10_000))  # larger than the bound: the newest always stays
    assert len(store) == 1 and ("huge",) in store


def test_a_store_that_keeps_nothing_oversized_returns_it_and_keeps_the_rest():
    """The per-size plans' store (Topology.derive_structure(per_size=True)): a plan over its bound is not kept."""
    store = DerivedStore(max_entries=3, max_bytes=10_000, keep_oversized=False)
    small = store.get(("small",), lambda: np.zeros(10))
    huge = store.get(("huge",), lambda: np.zeros(10_000))
    assert huge.shape == (10_000,) and ("huge",) not in store and store.get(("small",), lambda: None) is small


def test_a_stored_value_is_computed_once_and_read_only():
    store, calls = DerivedStore(), []
    value = store.get(("x",), lambda: calls.append(1) or np.arange(4.0))
    assert store.get(("x",), lambda: calls.append(1) or np.arange(4.0)) is value and calls == [1]
    assert not value.flags.writeable


def test_a_topology_pickles_without_its_store(h100):
    best(h100, "all_reduce", 1 << 20)
    back = pickle.loads(pickle.dumps(h100))
    assert len(back._derived) == 0 and dict(back.features) == dict(h100.features)
    np.testing.assert_array_equal(back.link_capacity, h100.link_capacity)
    assert not back.link_capacity.flags.writeable
    assert best(back, "all_reduce", 1 << 20).result.time == best(h100, "all_reduce", 1 << 20).result.time


def test_repr_is_one_short_line():
    topo = load_cluster("superpod-h100", gpus=1024)
    assert repr(topo) == f"Topology('superpod-h100': 1024 GPUs, {topo.n_devices} devices, {topo.n_links} links)"
    res = best(topo, "all_reduce", 1 << 30, algos=["ring"]).result
    assert len(repr(res)) < 200 and "all_reduce ring/" in repr(res)
