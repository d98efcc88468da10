"""Property-based invariants of the memory/capacity model (hypothesis), over every catalog model x runtime x
default quant and many RAM sizes / wired limits / contexts / users. A failure here is a bug in the core."""

from __future__ import annotations

import functools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner import capacity as C
from planner import memory as M
from planner import profiles as P
from planner.errors import InputError
from planner.plan import DEFAULT_QUANTS, Plan, PlanRequest, plan
from planner.results import Fit, KVLayout, MemoryEstimate, WeightsEstimate, WiredLimit
from planner.units import MiB

EXAMPLES = 300  # per property; docs/invariants.md reports this number
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])

TABLE = P.ggml_types()
MODELS = P.model_ids()
RUNTIMES = ["llama.cpp", "mlx-lm", "ollama"]
MACOS = [P.load_macos("15"), P.load_macos("26")]
RAM_SIZES = sorted({r for c in P.all_chips() for r in c.ram_options_gb})
COMBOS = [(m, r, q) for m in MODELS for r in RUNTIMES
          for q in DEFAULT_QUANTS[P.load_runtime(r).weight_format]]
STEP = 256


@functools.cache
def mm(model: str, runtime: str, quant: str, kv: str | None = None) -> M.MemoryModel:
    return M.memory_model(P.load_model(model), P.load_runtime(runtime), P.load_quant(quant), TABLE, kv_type=kv)


combos = st.sampled_from(COMBOS)
rams = st.sampled_from(RAM_SIZES)
contexts = st.integers(min_value=1, max_value=1_048_576)
users = st.integers(min_value=1, max_value=64)
macos = st.sampled_from(MACOS)


def _limit(model: str) -> int:
    return P.load_model(model).config.max_position_embeddings


def test_catalog_is_covered():
    assert len(COMBOS) == len(MODELS) * (2 * len(DEFAULT_QUANTS["gguf"]) + len(DEFAULT_QUANTS["mlx"]))
    assert len(RAM_SIZES) >= 10


# --------------------------------------------------------------------------- monotonicity in memory
@SETTINGS
@given(combos, rams, rams, st.sampled_from([4096, 8192, 32768, 131072]), users, macos)
def test_more_ram_never_lowers_capacity(combo, r1, r2, ctx, u, os_):
    lo, hi = sorted((r1, r2))
    m = mm(*combo)
    b_lo = C.safe_budget(C.wired_limit(lo, os_), m.runtime)
    b_hi = C.safe_budget(C.wired_limit(hi, os_), m.runtime)
    assert b_lo <= b_hi
    assert C.safe_users(m, ctx, b_lo) <= C.safe_users(m, ctx, b_hi)
    lim = _limit(combo[0])
    assert C.max_context(m, u, b_lo, lim) <= C.max_context(m, u, b_hi, lim)


@SETTINGS
@given(combos, rams, st.floats(0.05, 1.0), st.floats(0.05, 1.0), st.sampled_from([4096, 32768]), users)
def test_higher_wired_limit_never_lowers_capacity(combo, ram, f1, f2, ctx, u):
    lo, hi = sorted((f1, f2))
    m = mm(*combo)
    ram_mb = ram * 1024
    w_lo = C.wired_limit(ram, MACOS[0], max(1, int(lo * ram_mb)))
    w_hi = C.wired_limit(ram, MACOS[0], max(1, int(hi * ram_mb)))
    b_lo, b_hi = C.safe_budget(w_lo, m.runtime), C.safe_budget(w_hi, m.runtime)
    assert C.safe_users(m, ctx, b_lo) <= C.safe_users(m, ctx, b_hi)
    lim = _limit(combo[0])
    assert C.max_context(m, u, b_lo, lim) <= C.max_context(m, u, b_hi, lim)


@SETTINGS
@given(combos, rams, contexts, contexts)
def test_longer_context_never_raises_safe_users(combo, ram, c1, c2):
    lo, hi = sorted((c1, c2))
    m = mm(*combo)
    budget = C.safe_budget(C.wired_limit(ram, MACOS[0]), m.runtime)
    assert C.safe_users(m, hi, budget) <= C.safe_users(m, lo, budget)


@SETTINGS
@given(combos, rams, users, users)
def test_more_users_never_raise_max_context(combo, ram, u1, u2):
    lo, hi = sorted((u1, u2))
    m = mm(*combo)
    budget = C.safe_budget(C.wired_limit(ram, MACOS[0]), m.runtime)
    lim = _limit(combo[0])
    assert C.max_context(m, hi, budget, lim) <= C.max_context(m, lo, budget, lim)


@SETTINGS
@given(combos, contexts, contexts, users, users)
def test_memory_is_monotone_in_context_and_users(combo, c1, c2, u1, u2):
    m = mm(*combo)
    (clo, chi), (ulo, uhi) = sorted((c1, c2)), sorted((u1, u2))
    assert m.total(clo, ulo) <= m.total(chi, ulo) <= m.total(chi, uhi)
    assert m.total(clo, ulo) <= m.total(clo, uhi)


# --------------------------------------------------------------------------- bits and KV types
GGUF_CHAINS = [["Q2_K", "Q3_K_M", "Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0", "F16", "F32"],
               ["Q3_K_S", "Q3_K_M", "Q3_K_L"], ["Q4_K_S", "Q4_K_M"], ["Q5_K_S", "Q5_K_M"],
               ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0"], ["IQ2_XXS", "IQ2_M", "IQ3_XXS", "IQ3_M", "IQ4_XS", "IQ4_NL"],
               ["IQ4_XS", "Q4_K_M"], ["IQ1_S", "IQ2_XXS"]]
MLX_CHAINS = [[f"mlx-{b}bit-g{g}" for b in (2, 3, 4, 5, 6, 8)] for g in (32, 64, 128)] + \
             [[f"mlx-{b}bit-g{g}" for g in (128, 64, 32)] for b in (2, 3, 4, 5, 6, 8)] + \
             [["mlx-mxfp4", "mlx-4bit-g32"], ["mlx-mxfp8", "mlx-bf16"], ["mlx-8bit-g32", "mlx-bf16"]]
CHAINS = [("llama.cpp", c) for c in GGUF_CHAINS] + [("mlx-lm", c) for c in MLX_CHAINS]


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("runtime, chain", CHAINS, ids=lambda x: "-".join(x) if isinstance(x, list) else x)
def test_more_bits_never_shrink_weights(model, runtime, chain):
    share = _undivided_share(model, 128) if chain[0].endswith("g128") and chain[-1].endswith("g32") else 0.0
    if share:
        # mlx-lm leaves a layer in bf16 when its row is not a multiple of the group (mlx_lm.utils.quantize_model),
        # so g128 can be *bigger* than g64: real behaviour, not a bug. It is when most weights are affected (gpt-oss:
        # hidden 2880 = 22.5 x 128); one odd dense FFN among hundreds of experts (DeepSeek-Coder-V2-Lite's 10944)
        # only narrows the gap. Check that behaviour, then the rest of the chain.
        g128, g64 = mm(model, runtime, chain[0]).weights, mm(model, runtime, chain[1]).weights
        if share > 0.5:
            assert g128.total_bytes > g64.total_bytes
        chain = chain[1:]
    sizes = [mm(model, runtime, q).weights.total_bytes for q in chain]
    if runtime == "llama.cpp" and P.load_model(model).native_quant is not None and {"IQ3_M", "IQ4_XS"} <= set(chain):
        # gpt-oss keeps its experts in MXFP4 in every preset, so only attention and embeddings differ, and there
        # IQ3_M gives attn_output Q4_K (4.5 bits; src/llama-quant.cpp ATTENTION_OUTPUT branch) where IQ4_XS keeps
        # IQ4_XS (4.25): the IQ3_M file is the larger one, as llama-quantize writes it. Check that, then the rest.
        i, j = chain.index("IQ3_M"), chain.index("IQ4_XS")
        assert sizes[i] > sizes[j]
        chain, sizes = chain[:i] + chain[i + 1:], sizes[:i] + sizes[i + 1:]
    assert sizes == sorted(sizes), dict(zip(chain, sizes))


def _undivided_share(model: str, g: int) -> float:
    """Fraction of the quantizable weights whose rows are not a multiple of the group size g."""
    from planner import architecture as arch

    qt = [t for t in arch.tensors(P.load_model(model).config) if t.quantizable and t.group != "norm"]
    return sum(t.n_elements for t in qt if t.ne0 % g) / sum(t.n_elements for t in qt)


KV_CHAINS = {"llama.cpp": ["q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "f16", "f32"], "ollama": ["q4_0", "q8_0", "f16"],
             "mlx-lm": ["kv4", "kv8", "bf16"]}


@SETTINGS
@given(st.sampled_from(MODELS), st.sampled_from(RUNTIMES), contexts, users)
def test_kv_quantization_never_grows_kv(model, runtime, ctx, u):
    quant = DEFAULT_QUANTS[P.load_runtime(runtime).weight_format][2]
    kv, total = [], []
    for k in KV_CHAINS[runtime]:
        try:
            e = mm(model, runtime, quant, k).estimate(ctx, u)
        except InputError:  # e.g. mlx-lm cannot quantize a rotating (SWA) cache; ollama FA off + quantized V
            continue
        kv.append(e.kv_cache)
        total.append(e.total)
    assert kv == sorted(kv)
    if runtime != "mlx-lm":
        # not for mlx-lm: attention over a QuantizedKVCache is unfused (mlx_lm/models/base.py
        # quantized_scaled_dot_product_attention materialises the S x L_kv scores), so at short contexts the
        # quantized-KV *total* can exceed bf16 (llama-2-70b kv8 at 1358 tokens: +0.1 MB). KV itself never grows.
        assert total == sorted(total)


# --------------------------------------------------------------------------- sums, JSON, boundaries
@SETTINGS
@given(combos, contexts, users)
def test_breakdown_sums_exactly(combo, ctx, u):
    m = mm(*combo)
    e = m.estimate(ctx, u)
    parts = (e.weights, e.kv_cache, e.recurrent_state, e.compute_buffer, e.output_buffer, e.runtime_overhead, e.vision)
    assert all(isinstance(x, int) and x >= 0 for x in parts)
    assert e.total == sum(parts)
    assert m.total(ctx, u) == e.total
    w = m.weights
    assert sum(w.by_group.values()) == w.total_bytes == e.weights
    if w.by_type:
        assert sum(w.by_type.values()) == w.total_bytes


@SETTINGS
@given(combos, contexts, users, rams, macos)
def test_results_round_trip_through_json(combo, ctx, u, ram, os_):
    m = mm(*combo)
    e = m.estimate(ctx, u)
    wired = C.wired_limit(ram, os_)
    fit = C.fit(e.total, m.weights.total_bytes, wired, m.runtime)
    for obj, cls in [(e, MemoryEstimate), (m.weights, WeightsEstimate), (m.kv, KVLayout), (wired, WiredLimit),
                     (fit, Fit)]:
        assert cls.model_validate_json(obj.model_dump_json()) == obj


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(MODELS), rams, st.sampled_from([1, 4096, 8192, 100_000]), st.sampled_from([1, 3, 16]),
       st.sampled_from([None, ["llama.cpp"], ["mlx-lm"], ["ollama", "mlx-lm"]]))
def test_plan_round_trips_through_json(model, ram, ctx, u, runtimes):
    req = PlanRequest(model=model, ram=ram, context=ctx, users=u, **({"runtimes": runtimes} if runtimes else {}))
    p = plan(req)
    assert Plan.model_validate_json(p.model_dump_json()) == p


@SETTINGS
@given(combos, rams, users, macos)
def test_max_context_boundary(combo, ram, u, os_):
    m = mm(*combo)
    budget = C.safe_budget(C.wired_limit(ram, os_), m.runtime)
    lim = _limit(combo[0])
    c = C.max_context(m, u, budget, lim)
    assert c % STEP == 0 and 0 <= c <= lim
    if c > 0:
        assert m.total(c, u) <= budget  # what we report as fitting does fit
    if c + STEP <= lim:
        assert m.total(c + STEP, u) > budget  # and 256 tokens more does not (unless at the model limit)


@SETTINGS
@given(combos, rams, st.sampled_from([256, 4096, 8192, 32768, 131072]))
def test_safe_users_boundary(combo, ram, ctx):
    m = mm(*combo)
    budget = C.safe_budget(C.wired_limit(ram, MACOS[0]), m.runtime)
    n = C.safe_users(m, ctx, budget)
    if n > 0:
        assert m.total(ctx, n) <= budget
    if n < C.MAX_USERS:
        assert m.total(ctx, n + 1) > budget


@SETTINGS
@given(combos, rams, contexts, users)
def test_fit_verdict_agrees_with_budget(combo, ram, ctx, u):
    m = mm(*combo)
    wired = C.wired_limit(ram, MACOS[0])
    e = m.estimate(ctx, u)
    f = C.fit(e.total, m.weights.total_bytes, wired, m.runtime)
    budget = C.safe_budget(wired, m.runtime)
    if f.verdict == "fits":
        assert e.total <= budget
    if e.total > wired.effective_bytes:
        assert f.verdict in ("raise-limit", "no-fit")
    if f.verdict == "raise-limit":
        assert e.total + m.runtime.headroom_mib * MiB <= wired.max_raise_bytes
    assert f.headroom_bytes == wired.effective_bytes - e.total
