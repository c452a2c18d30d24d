import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricsim.errors import FabricsimError
from fabricsim.training import parallel as P
from fabricsim.training.models import MODELS

L70 = MODELS["llama3-70b"]
HBM = 80e9


def ok(**kw):
    par = P.Parallelism(**kw)
    P.validate(L70, par, par.n_gpus, 8, HBM)
    return par


def test_valid_megatron_layout():
    par = ok(tp=4, pp=4, dp=2, cp=2, vp=5, global_batch=128)
    assert par.n_gpus == 64 and par.micro_batches == 128 // (par.micro_batch * par.dp)
    assert 0 < P.memory_per_gpu(L70, par) <= HBM


@pytest.mark.parametrize("kw, n, match", [
    (dict(tp=8, pp=2, dp=2, global_batch=64), 64, "GPU count"),
    (dict(tp=1, pp=96, dp=1, global_batch=96), 96, "layers cannot fill"),
    (dict(tp=8, pp=4, vp=32, dp=2, global_batch=64), 64, "pp\\*vp"),
    (dict(tp=6, pp=2, dp=2, global_batch=64, allow_tp_spill=True), 24, "heads"),
    (dict(tp=8, pp=4, dp=2, global_batch=63), 64, "global batch"),
    (dict(tp=8, pp=4, dp=2, ep=2, global_batch=64), 64, "mixture-of-experts"),
    (dict(tp=1, pp=1, dp=8, global_batch=8), 8, "GB over"),
])
def test_layout_errors(kw, n, match):
    with pytest.raises(FabricsimError, match=match):
        P.validate(L70, P.Parallelism(**kw), n, 8, HBM)


def test_tp_beyond_domain_needs_spill():
    m = MODELS["gpt3-175b"]
    par = P.Parallelism(tp=16, pp=16, dp=1, global_batch=64)
    with pytest.raises(FabricsimError, match="NVLink domain"):
        P.validate(m, par, 256, 8)
    P.validate(m, P.Parallelism(tp=16, pp=16, dp=1, global_batch=64, allow_tp_spill=True), 256, 8)


def test_ep_rules():
    m = MODELS["mixtral-8x7b"]
    with pytest.raises(FabricsimError, match="divide the 8 experts"):
        P.validate(m, P.Parallelism(tp=1, pp=1, dp=6, ep=3, global_batch=6), 6, 8)
    with pytest.raises(FabricsimError, match="ep\\*etp = 8\\*1 must divide tp\\*cp\\*dp = 4"):
        P.validate(m, P.Parallelism(tp=2, pp=1, dp=2, ep=8, global_batch=2), 4, 8)
    # MoE parallel folding: EP spans TP x DP (Megatron-Core expert RankGenerator), so ep 4 fits tp 2 x dp 2
    P.validate(m, P.Parallelism(tp=2, pp=1, dp=2, ep=4, global_batch=2), 4, 8)
    P.validate(m, P.Parallelism(tp=2, pp=1, dp=8, ep=8, global_batch=8), 16, 8)
    with pytest.raises(FabricsimError, match="etp=3 does not divide"):
        P.validate(m, P.Parallelism(tp=1, pp=1, dp=6, ep=2, etp=3, global_batch=6), 6, 8)


def test_memory_error_says_by_how_much():
    with pytest.raises(FabricsimError, match=r"needs about [\d.]+ GB.*over"):
        P.validate(L70, P.Parallelism(tp=8, pp=1, dp=1, zero=0, global_batch=1), 8, 8, HBM)


def test_zero_sharding_reduces_memory():
    base = dict(tp=1, pp=1, dp=64, global_batch=64)
    mem = [P.memory_per_gpu(MODELS["llama3-8b"], P.Parallelism(zero=z, **base)) for z in range(4)]
    assert mem[0] > mem[1] > mem[2] > mem[3]


def test_rank_groups_follow_megatron_order():
    par = P.Parallelism(tp=2, cp=2, dp=2, pp=2)
    assert P.tp_groups(par).tolist()[:2] == [[0, 1], [2, 3]]
    assert P.cp_groups(par).tolist()[:2] == [[0, 2], [1, 3]]
    assert P.dp_groups(par).tolist()[0] == [0, 4]
    assert sorted(P.dp_cp_groups(par).tolist()[0]) == [0, 2, 4, 6]
    assert P.pp_pairs(par).tolist()[:2] == [[0, 8], [1, 9]]
    assert P.pp_pairs(P.Parallelism(tp=1, dp=1, pp=4, vp=2)).tolist() == [[0, 1], [1, 2], [2, 3], [3, 0]]


@settings(max_examples=60, deadline=None)
@given(tp=st.sampled_from([1, 2, 4, 8]), cp=st.sampled_from([1, 2]), dp=st.sampled_from([1, 2, 4]),
       pp=st.sampled_from([1, 2, 4]), ep=st.sampled_from([1, 2]))
def test_groups_partition_ranks_and_tp_stays_in_node(tp, cp, dp, pp, ep):
    if (dp * cp) % ep:
        return
    par = P.Parallelism(tp=tp, cp=cp, dp=dp, pp=pp, ep=ep)
    n = par.n_gpus
    for groups in (P.tp_groups(par), P.cp_groups(par), P.dp_groups(par), P.dp_cp_groups(par), P.ep_groups(par)):
        assert np.array_equal(np.sort(groups.ravel()), np.arange(n))
    nodes = P.tp_groups(par) // 8
    assert (nodes == nodes[:, :1]).all()  # TP groups inside one 8-GPU node


def test_default_layout_fits_and_prefers_small_tp():
    small = P.default_parallelism(MODELS["llama3-8b"], 64, 8, HBM)
    assert small.tp * small.pp == 1 or small.tp <= 2
    big = P.default_parallelism(MODELS["gpt3-175b"], 1024, 8, HBM)
    assert big.tp == 8 and big.pp > 1 and big.n_gpus == 1024
    P.validate(MODELS["gpt3-175b"], big, 1024, 8, HBM)
    with pytest.raises(FabricsimError, match="no Megatron layout"):
        P.default_parallelism(MODELS["llama3-405b"], 8, 8, HBM)


def test_groups_that_split_nvlink_domains_unevenly_still_run():
    """DeepSeek-V3 on 8 NVL72 racks with pp=3: a 192-GPU stage spans 2.67 racks, so its DP groups take 9, 9 and
    6 GPUs from three racks; Llama 3 8B with pp=3 on 2 racks: stage 1's DP groups take 24 + 24 GPUs of two racks, the
    others 48 of one. Megatron runs such layouts; the comm model times uneven groups as an even proxy."""
    from fabricsim.training.comm import engine_comm_model
    from fabricsim.training.step import step_time
    from fabricsim.training.sweep import cluster_topology, topology_gpu

    m = MODELS["deepseek-v3"]
    P.validate(m, P.resolve(P.Parallelism(tp=8, pp=3, global_batch=576), 576), 576, 72)
    small = MODELS["llama3-8b"]
    par = P.resolve(P.Parallelism(tp=1, pp=3, global_batch=144), 144)
    P.validate(small, par, 144, 72)
    topo = cluster_topology("gb200-nvl72", 144)
    r = step_time(small, par, topology_gpu(topo), engine_comm_model(topo))
    assert r.tokens_per_s > 0 and r.comm_total["dp"] > 0


def test_no_fit_names_the_closest_layout():
    with pytest.raises(FabricsimError, match=r"closest, tp8 pp\d+ .*GB over; .* = weights .* activations"):
        P.default_parallelism(MODELS["llama3-405b"], 64, 8, HBM)


def test_uneven_stages_follow_the_busiest_stage():
    """Llama 3 405B (126 layers) on pp=16, as Meta trained it: stages of 8 layers, the last ones shorter."""
    m = MODELS["llama3-405b"]
    par = P.resolve(P.Parallelism(tp=8, pp=16, global_batch=256), 1024)
    P.validate(m, par, 1024, 8)  # layout rules only; memory depends on recompute and CP choices
    assert P.stage_layers(m, par) == 8
    even = P.resolve(P.Parallelism(tp=8, pp=14, global_batch=256), 8 * 14 * 9)
    assert P.stage_layers(m, even) == 9


def test_moe_parallel_folding_lays_expert_groups_over_each_stage():
    """Megatron-Core's expert RankGenerator: EP groups at stride etp inside each pipeline stage's TP x CP x DP ranks."""
    par = P.Parallelism(tp=2, pp=2, dp=4, ep=8, etp=1)
    assert P.ep_groups(par).tolist() == [list(range(8)), list(range(8, 16))]
    assert P.expert_dp_groups(par).shape == (16, 1)  # 8 x 1 = all 8 GPUs of a stage: no expert data parallelism
    par = P.Parallelism(tp=2, pp=1, dp=4, ep=2, etp=2)
    assert P.ep_groups(par).tolist()[:2] == [[0, 2], [1, 3]]
    assert P.expert_dp_groups(par).tolist()[0] == [0, 4]


def test_interleaved_candidates_split_layers_evenly():
    fits = P.fitting_layouts(MODELS["llama3-70b"], 64, 8, HBM, interleaved=True, global_batch=256)
    assert any(p.vp > 1 for p in fits)
    assert all(p.vp == 1 or 80 % (p.pp * p.vp) == 0 or 82 % (p.pp * p.vp) == 0 for p in fits)


@pytest.mark.parametrize("dp, zero, micro_batch, fixes", [
    (2, 1, 1, "raise tp/pp, use zero 3 or use more recompute (--recompute full or a module list)"),
    (2, 3, 2, "raise tp/pp, use more recompute (--recompute full or a module list) or lower micro_batch"),
    (1, 1, 1, "raise tp/pp or use more recompute (--recompute full or a module list)"),  # ZeRO needs dp ranks
])
def test_over_hbm_advises_only_fixes_that_apply(dp, zero, micro_batch, fixes):
    model = MODELS["llama3-70b"]
    par = P.Parallelism(tp=8, pp=1, dp=dp, zero=zero, micro_batch=micro_batch, global_batch=dp * micro_batch)
    with pytest.raises(FabricsimError) as err:
        P.validate(model, par, 8 * dp, 8, 40e9)
    assert str(err.value).endswith(f"): {fixes}")
