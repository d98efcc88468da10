"""Rules of the planner stated directly (hypothesis over the catalog), instead of snapshots of its output.

Each property names the rule; the comment under it names the one-line bug it exists to catch.
"""

from __future__ import annotations

import functools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner import capacity as C
from planner import memory as M
from planner import profiles as P
from planner.plan import DEFAULT_QUANTS, PlanRequest, plan
from planner.units import GiB

SETTINGS = settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
TABLE = P.ggml_types()
MODELS = P.model_ids()
RUNTIMES = ["llama.cpp", "mlx-lm", "ollama"]
COMBOS = [(m, r, q) for m in MODELS for r in RUNTIMES for q in DEFAULT_QUANTS[P.load_runtime(r).weight_format]]
RAM_SIZES = sorted({r for c in P.all_chips() for r in c.ram_options_gb})
MACOS = P.load_macos("15")


@functools.cache
def mm(model: str, runtime: str, quant: str) -> M.MemoryModel:
    return M.memory_model(P.load_model(model), P.load_runtime(runtime), P.load_quant(quant), TABLE)


# --------------------------------------------------------------------------- the fit verdict
def test_fit_boundary_by_hand():
    """The verdict boundaries are inclusive: exactly the budget 'fits', one byte more is 'tight'; exactly the
    limit is 'tight', one byte more needs the raised limit.

    64 GB Mac, macOS 15: default limit 75 % of 64 GiB = 48 GiB = 51,539,607,552 B; llama.cpp keeps a 1024 MiB
    margin (profiles/runtimes/llama.cpp.yaml headroom_mib) = 1,073,741,824 B, so the budget is
    51,539,607,552 - 1,073,741,824 = 50,465,865,728 B. Raised limit: 64 GiB - max(8 GiB, 12.5 % of 64 GiB = 8 GiB)
    = 56 GiB = 60,129,542,144 B.
    Catches: `total < budget` for `<=` (and `<` for `<=` against the limit or the raised limit)."""
    rt = P.load_runtime("llama.cpp")
    w = C.wired_limit(64, MACOS)
    assert (w.effective_bytes, w.max_raise_bytes) == (51_539_607_552, 60_129_542_144)
    budget = 50_465_865_728
    assert C.safe_budget(w, rt) == budget
    verdict = [C.fit(t, 0, w, rt).verdict for t in (budget, budget + 1, 51_539_607_552, 51_539_607_553)]
    assert verdict == ["fits", "tight", "tight", "raise-limit"]
    # the raised limit keeps the same margin: 60,129,542,144 - 1,073,741,824 = 59,055,800,320 B still raises
    assert C.fit(59_055_800_320, 0, w, rt).verdict == "raise-limit"
    assert C.fit(59_055_800_321, 0, w, rt).verdict == "no-fit"


def test_mlx_weight_warning_boundary_by_hand():
    """mlx-lm warns when the weights exceed 0.9 x the limit: 0.9 x 51,539,607,552 = 46,385,646,796.8 B.
    Weights of 46,385,646,796 B (below) still 'fit' with room; 46,385,646,797 B (above) are 'tight'. (The
    threshold is not a whole byte, so `>` and `>=` agree here.)
    Catches: the warning applied to the total instead of the weights, or a wrong fraction."""
    rt = P.load_runtime("mlx-lm")
    w = C.wired_limit(64, MACOS)
    total = 47 * GiB  # below the mlx budget of 48 GiB - 1 GiB margin
    assert C.fit(total, 46_385_646_796, w, rt).verdict == "fits"
    assert C.fit(total, 46_385_646_797, w, rt).verdict == "tight"


# --------------------------------------------------------------------------- longest context
@SETTINGS
@given(st.sampled_from(COMBOS), st.sampled_from(RAM_SIZES), st.sampled_from([1, 2, 4, 8, 16]))
def test_every_max_context_answer_fits(combo, ram, users):
    """What the plan calls the longest comfortable context gets the verdict 'fits' from capacity.fit, and
    with the raised limit 'fits' under the raised limit (mlx-lm's weight warning included: when it fires,
    nothing is comfortable).
    Catches: max_context searching against the limit instead of the budget, or a verdict rule (the mlx weight
    warning) that the capacity search ignores."""
    m = mm(*combo)
    lim = P.load_model(combo[0]).config.max_position_embeddings
    default = C.wired_limit(ram, MACOS)
    for wired in (default, C.raised_limit(ram, MACOS, default)):
        c = C.max_context(m, users, C.comfortable_budget(wired, m.runtime, m.weights.total_bytes), lim)
        if c:
            assert C.fit(m.total(c, users), m.weights.total_bytes, wired, m.runtime).verdict == "fits"


# --------------------------------------------------------------------------- plan() wiring
@SETTINGS
@given(st.sampled_from(MODELS), st.sampled_from(RAM_SIZES), st.sampled_from([2048, 8192, 32768]),
       st.sampled_from([1, 3, 8]))
def test_plan_tables_agree(model, ram, context, users):
    """plan()'s two capacity tables and the raised-limit column describe one budget each:
    - raised-limit context >= default-limit context, for every user count;
    - u users fit at context c (safe_users[c] >= u) exactly when the longest context for u users is >= c;
    - the requested (context, users) 'fits' only if the table's longest context for those users covers it.
    - every longest context in the table gets the verdict 'fits'.
    Catches: max_context_raised computed from the default budget (or the other way round), swapped keys of the
    context and user columns, a table searched against the limit instead of the budget."""
    p = plan(PlanRequest(model=model, ram=ram, context=context, users=users))
    for o in p.options:
        assert set(o.safe_users) == set(p.contexts) and set(o.max_context) == set(p.user_counts)
        assert set(o.max_context_raised) == set(p.user_counts)
        m = mm(model, o.runtime, o.quant)
        for u in p.user_counts:
            assert o.max_context_raised[u] >= o.max_context[u]
            if o.max_context[u]:  # every longest-context answer of the table is a 'fits'
                assert C.fit(m.total(o.max_context[u], u), m.weights.total_bytes, p.wired, m.runtime).verdict == "fits"
            for c in p.contexts:
                if c <= p.model.max_context:
                    assert (o.safe_users[c] >= u) == (o.max_context[u] >= c), (o.runtime, o.quant, u, c)
        if o.fit.verdict == "fits" and o.memory.context == context and users in o.max_context:
            assert o.max_context[users] >= context - 255  # contexts are searched in 256-token steps


# --------------------------------------------------------------------------- speed
def _roofline(model: str, runtime: str, quant: str, chip: str):
    from planner.search import speed_model

    return speed_model(mm(model, runtime, quant), P.resolve_chip(chip), P.load_quant(quant))


SPEED_COMBOS = [("llama-3.1-8b", "llama.cpp", "Q4_K_M"), ("qwen3-30b-a3b", "mlx-lm", "mlx-4bit-g64"),
                ("llama-3.3-70b", "llama.cpp", "Q4_K_M"), ("gemma-3-27b", "mlx-lm", "mlx-4bit-g64")]
CHIPS = ["m4-max-40gpu", "m2-ultra-76gpu", "m1-8gpu", "m3-pro-18gpu"]


@settings(max_examples=80, deadline=None, derandomize=True)
@given(st.sampled_from(SPEED_COMBOS), st.sampled_from(CHIPS), st.integers(1, 16), st.integers(1, 40),
       st.booleans())
def test_per_user_speed_never_rises_with_more_users(combo, chip, slots, users, staggered):
    """With the slots fixed, one more user never makes anyone faster, and users beyond the slots share the
    slots' aggregate decode rate: per-user tok/s x users <= the rate of min(slots, users) sequences.
    Catches: flooring the number of waves (2 slots, 3 users claiming the 2-user rate), or queueing that forgets
    to divide the rate among the waiting users."""
    from planner.search import speed_at

    rf = _roofline(*combo, chip)
    if rf is None:
        pytest.skip("no speed for this chip")
    a = speed_at(rf, 512, 128, slots, users, staggered)
    b = speed_at(rf, 512, 128, slots, users + 1, staggered)
    assert b.decode_tok_s_per_user <= a.decode_tok_s_per_user * (1 + 1e-9)
    assert b.time_per_request_s >= a.time_per_request_s * (1 - 1e-9)
    assert a.decode_tok_s_per_user * users <= a.decode_tok_s * (1 + 1e-9)


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.sampled_from(SPEED_COMBOS), st.sampled_from(CHIPS), st.floats(0.05, 8.0), st.floats(0.05, 1.0),
       st.floats(0.2, 4.0))
def test_derived_efficiencies_are_capped_at_one(combo, chip, eta_c_decode, eta_c, q):
    """A derived efficiency is a fraction of peak: however the fitted factors multiply, the batched-decode
    matrix efficiency stays <= 1, so no batch decodes faster than the chip's peak FLOPS allow.
    Catches: dropping the min(1.0, ...) in Roofline.eta_mm_decode."""
    import dataclasses

    rf = _roofline(*combo, chip)
    if rf is None:
        pytest.skip("no speed for this chip")
    k = rf.k.model_copy(update={"eta_c_decode": eta_c_decode, "eta_c": eta_c,
                                "quant_prefill_factor": {rf.geo.quant_class: q}})
    r = dataclasses.replace(rf, k=k)
    assert 0 < r.eta_mm_decode() <= 1.0
    batch = 64
    _, _, t_cmp = r.step_parts(batch, 4096)
    assert t_cmp >= batch * r.step_flops(1, 0) / r.flops * (1 - 1e-9)  # the weight matmuls never beyond peak
    assert r.step_time(batch, 4096) >= batch * r.step_flops(1, 4096) / r.flops * (1 - 1e-9)  # with attention
