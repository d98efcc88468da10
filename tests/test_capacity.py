"""Golden values for planner.capacity and the whole plan: wired limits, verdicts, safe sessions, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from cli.main import main
from planner import capacity as C
from planner import memory as M
from planner import profiles as P
from planner.errors import InputError, UnknownProfileError
from planner.plan import PlanRequest, plan
from planner.units import GiB, MiB

TABLE = P.ggml_types()
MACOS15 = P.load_macos("15")


def mm(model: str, runtime: str = "llama.cpp", quant: str = "Q4_K_M", **kw) -> M.MemoryModel:
    return M.memory_model(P.load_model(model), P.load_runtime(runtime), P.load_quant(quant), TABLE, **kw)


# --------------------------------------------------------------------------- wired limit
@pytest.mark.parametrize("ram, mib", [(16, 10922), (32, 21845), (48, 36864), (64, 49152), (96, 73728), (128, 98304)])
def test_default_wired_limit_matches_logged_values(ram, mib):
    # recommendedMaxWorkingSetSize in real logs (docs/model-facts.md §1.1): 2/3 up to 32 GB, 3/4 above
    assert C.wired_limit(ram, MACOS15).default_bytes // MiB == mib


def test_max_raise_leaves_4_gib_or_12_5_percent():
    # 64 GB: reserve max(4 GiB, 8 GiB) = 8 GiB -> 56 GiB; 16 GB: max(4, 2) = 4 -> 12 GiB;
    # 512 GB: reserve 64 GiB -> 448 GiB; 8 GB: 8 - 4 = 4 GiB is below the 5.33 GiB default, so the default stays
    assert C.wired_limit(64, MACOS15).max_raise_bytes == 56 * GiB
    assert C.wired_limit(16, MACOS15).max_raise_bytes == 12 * GiB
    assert C.wired_limit(512, MACOS15).max_raise_bytes == 448 * GiB
    assert C.wired_limit(8, MACOS15).max_raise_bytes == C.wired_limit(8, MACOS15).default_bytes


def test_user_wired_limit_bounds():
    assert C.wired_limit(64, MACOS15, 57344).effective_bytes == 56 * GiB
    for bad in (0, -1, 65537, 10**12):
        with pytest.raises(InputError, match="^wired_limit "):
            C.wired_limit(64, MACOS15, bad)


# --------------------------------------------------------------------------- 70B on 48 / 64 GB
def test_70b_q4_0_does_not_fit_48gb_default_limit():
    # A measured run failed. Default limit 0.75 x 48 GiB = 36 GiB; Q4_0 weights alone are 37.22 GiB.
    m = mm("llama-3.3-70b", quant="Q4_0")
    wired = C.wired_limit(48, MACOS15)
    est = m.estimate(4096, 1)
    assert wired.default_bytes == 36 * GiB
    assert m.weights.total_bytes > wired.default_bytes
    assert C.fit(est.total, m.weights.total_bytes, wired, m.runtime).verdict in ("raise-limit", "no-fit")
    assert C.safe_users(m, 4096, C.safe_budget(wired, m.runtime)) == 0
    assert C.max_context(m, 1, C.safe_budget(wired, m.runtime), 131072) == 0


def test_70b_q4_k_m_on_64gb_8k_sessions_by_hand():
    # Budget: default limit 0.75 x 64 GiB = 48 GiB, minus the 1 GiB runtime margin (llama.cpp --fit-target) = 47 GiB
    #   = 50,465,865,728 B
    # Fixed: weights 42,512,531,456 B (39.59 GiB) + compute buffer 512 x (4 x 128,256 + 8 x 8192) = 296,222,720 B
    #   (282.5 MiB) + runtime overhead 256 MiB = 268,435,456 B  -> 43,077,189,632 B
    # Per 8K session: KV 8192 x 327,680 B = 2,684,354,560 B (2.5 GiB) + logits buffer 128,256 x 4 B = 513,024 B
    # (50,465,865,728 - 43,077,189,632) / 2,684,867,584 = 7,388,676,096 / 2,684,867,584 = 2.75  ->  2 sessions.
    # Peers' "9 sessions" = (64 - 39.6 - ~0.5) GiB / 2.5 GiB: it fits against all 64 GB, ignoring the GPU wired limit
    # (48 GiB by default) and leaving nothing to macOS.
    m = mm("llama-3.3-70b")
    wired = C.wired_limit(64, MACOS15)
    budget = C.safe_budget(wired, m.runtime)
    assert budget == 47 * GiB == 50_465_865_728
    assert m.weights.total_bytes == 42_512_531_456
    assert m.estimate(8192, 1).compute_buffer == 296_222_720
    assert C.safe_users(m, 8192, budget) == 2
    assert m.total(8192, 2) <= budget < m.total(8192, 3)
    # and it "fits" for one 8K session, comfortably
    est = m.estimate(8192, 1)
    assert C.fit(est.total, m.weights.total_bytes, wired, m.runtime).verdict == "fits"
    # against the whole 64 GiB (the peers' mistake) the same arithmetic gives 9
    assert C.safe_users(m, 8192, 64 * GiB) == 9


def test_plan_reports_same_sessions():
    p = plan(PlanRequest(model="llama-3.3-70b", ram=64, runtimes=["llama.cpp"], quants=["Q4_K_M"], macos="15"))
    (opt,) = p.options
    assert opt.safe_users[8192] == 2
    assert opt.fit.verdict == "fits"


def test_raise_limit_verdict_and_sysctl():
    # 70B Q5_K_M at 8K on 64 GB: 46.5 + 2.5 + 0.5 GiB = 49.5 GiB > 48 GiB default, < 56 - 1 GiB raised
    m = mm("llama-3.3-70b", quant="Q5_K_M")
    wired = C.wired_limit(64, MACOS15)
    f = C.fit(m.total(8192, 1), m.weights.total_bytes, wired, m.runtime)
    assert f.verdict == "raise-limit"
    # ceil((49.5 GiB + 1 GiB) / 1 GiB) x 1024 MB
    assert f.sysctl == "sudo sysctl iogpu.wired_limit_mb=52224"


def test_tight_between_budget_and_limit():
    m = mm("llama-3.1-8b")
    wired = C.wired_limit(16, MACOS15)
    tot = wired.effective_bytes - 100 * MiB
    assert C.fit(tot, m.weights.total_bytes, wired, m.runtime).verdict == "tight"


def test_mlx_warns_when_weights_exceed_90_percent():
    m = mm("llama-3.1-8b", "mlx-lm", "mlx-4bit-g64")
    wired = C.wired_limit(64, MACOS15)
    f = C.fit(int(0.95 * wired.effective_bytes), int(0.91 * wired.effective_bytes), wired, m.runtime)
    assert f.verdict == "tight" and "90%" in f.reason


def test_max_context_boundary_by_hand():
    # 8B Q4_K_M, 16 GB Mac: budget = 2/3 x 16 GiB - 1 GiB; max context is the last 256-multiple that fits
    m = mm("llama-3.1-8b")
    budget = C.safe_budget(C.wired_limit(16, MACOS15), m.runtime)
    c = C.max_context(m, 1, budget, 131072)
    assert c % 256 == 0 and c > 0
    assert m.total(c, 1) <= budget < m.total(c + 256, 1)
    # by hand: (budget - weights - 266.5 MiB - 256 MiB - 0.5 MiB logits) / 131,072 B per token, floored to 256
    free = budget - m.weights.total_bytes - 279_445_504 - 256 * MiB - 128_256 * 4
    assert c == free // 131_072 // 256 * 256


def test_max_context_capped_at_model_limit():
    m = mm("llama-3.2-1b")
    assert C.max_context(m, 1, 10**15, 131072) == 131072


# --------------------------------------------------------------------------- the searches equal bisection
def _bisect(f, budget, lo, hi):
    """Reference: plain bisection for the largest x in [lo, hi) with f(x) <= budget (f(lo) <= budget < f(hi))."""
    n = 0
    while hi - lo > 1:
        mid, n = (lo + hi) // 2, n + 1
        if f(mid) <= budget:
            lo = mid
        else:
            hi = mid
    return lo, n


def _counted(f):
    seen = []
    return (lambda x: seen.append(x) or f(x)), seen


def _check_search(f, lo, hi, budget):
    want, _ = _bisect(f, budget, lo, hi)
    g, seen = _counted(f)
    assert C.largest_fitting(g, budget, (lo, f(lo)), (hi, f(hi))) == want
    # ITP's bound: never more evaluations than bisection's worst case, ceil(log2(hi - lo)), plus the slack
    assert len(seen) <= (hi - lo - 1).bit_length() + 2
    assert all(lo < x < hi for x in seen)
    return len(seen)


_STEPS = st.lists(st.integers(0, 1 << 40), min_size=2, max_size=600)


@settings(max_examples=300, deadline=None)
@given(_STEPS, st.integers(0, 10**6), st.data())
def test_search_equals_bisection_on_monotone_steps(steps, start, data):
    # any non-decreasing function on a grid: cumulative non-negative steps (flat runs, jumps, one huge jump)
    values = np.cumsum([start, *steps]).tolist()
    if values[-1] == values[0]:
        values[-1] += 1
    hi = len(values) - 1
    budget = data.draw(st.integers(values[0], values[-1] - 1))
    _check_search(values.__getitem__, 0, hi, budget)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 10**12), st.integers(1, 10**9), st.integers(1, 512), st.integers(0, 5000),
       st.integers(0, 10**6), st.integers(2, 5000), st.data())
def test_search_equals_bisection_on_padded_windowed_affine(base, per, pad, window, per_swa, top, data):
    # memory's own shapes: cells padded to a step, a sliding window min(c, W) with its own bytes, a fixed part
    def f(x):
        return base + per * (-(-x // pad) * pad) + per_swa * min(x, window)

    assume(f(1) < f(top))  # else nothing to search
    budget = data.draw(st.integers(f(1), f(top) - 1))
    _check_search(f, 1, top, budget)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10**12), st.integers(1, 10**9), st.integers(2, 1 << 20), st.data())
def test_search_lands_on_an_affine_answer_in_two_evaluations(base, per, top, data):
    # the chord of an affine function crosses the budget at the answer: probe it, then its right neighbour
    budget = data.draw(st.integers(base + per, base + per * top - 1))
    assert _check_search(lambda x: base + per * x, 1, top, budget) <= 2


def _old_safe_users(m, context, budget, cap=C.MAX_USERS):
    if m.total(context, 1) > budget:
        return 0
    if m.total(context, cap) <= budget:
        return cap
    return _bisect(lambda u: m.total(context, u), budget, 1, cap)[0]


def _old_max_context(m, users, budget, limit, step=256):
    top = limit // step
    if top < 1 or m.total(step, users) > budget:
        return 0
    if m.total(top * step, users) <= budget:
        return top * step
    return step * _bisect(lambda k: m.total(k * step, users), budget, 1, top)[0]


@pytest.mark.parametrize("model, runtime, quant, kw", [
    ("llama-3.3-70b", "llama.cpp", "Q4_K_M", {}),
    ("llama-3.1-8b", "llama.cpp", "Q8_0", {"kv_type": "q8_0"}),
    ("llama-3.1-8b", "llama.cpp", "Q4_K_M", {"flash_attn": False}),
    ("gemma-4-31b", "llama.cpp", "Q4_K_M", {}),          # sliding-window layers
    ("gpt-oss-20b", "ollama", "MXFP4_MOE", {}),          # SWA, native MXFP4 experts
    ("qwen3.6-35b-a3b", "llama.cpp", "Q4_K_M", {}),      # hybrid: recurrent state per sequence
    ("qwen3-8b", "mlx-lm", "mlx-4bit-g64", {}),
    ("qwen3-8b", "mlx-lm", "mlx-4bit-g64", {"kv_type": "kv8"}),  # quantized KV: unfused attention, quadratic
    ("gemma-4-31b", "mlx-lm", "mlx-4bit-g64", {}),
    ("qwen3.6-35b-a3b", "lmstudio-mlx", "mlx-4bit-g64", {}),
])
def test_capacity_searches_equal_bisection_on_real_memory_models(model, runtime, quant, kw):
    m = mm(model, runtime, quant, **kw)
    limit = m.model.config.max_position_embeddings
    weights = m.total(256, 1)
    for extra_gib in (0.1, 0.7, 3, 9.5, 30, 120, 700):
        budget = weights + int(extra_gib * GiB)
        for users in (1, 3, 16):
            assert C.max_context(m, users, budget, limit) == _old_max_context(m, users, budget, limit)
        for context in (4096, 32768, 131072):
            assert C.safe_users(m, context, budget) == _old_safe_users(m, context, budget)
        contexts, users = [4096, 8192, 16384, 32768, limit], [1, 2, 4, 8, 16]
        assert C.safe_users_by_context(m, contexts, budget) == {c: _old_safe_users(m, c, budget) for c in contexts}
        assert C.max_context_by_users(m, users, budget, limit) == {u: _old_max_context(m, u, budget, limit)
                                                                  for u in users}


class _Grid:
    """A stand-in memory model, non-decreasing in context and in users: fixed bytes, per-sequence cells padded to a
    step, a sliding window min(c, W), a compute buffer that stops growing at a batch size, per-sequence outputs."""

    def __init__(self, base, per, pad, window, per_swa, ub, out):
        self.p = (base, per, pad, window, per_swa, ub, out)

    def total(self, context, users=1):
        base, per, pad, window, per_swa, ub, out = self.p
        cells = -(-context // pad) * pad
        return (base + users * (per * cells + per_swa * min(context, window) + out)
                + per * min(ub, cells * users) // 64)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10**11), st.integers(1, 10**6), st.sampled_from([1, 32, 256, 512]), st.integers(0, 9000),
       st.integers(0, 10**5), st.integers(1, 4096), st.integers(0, 10**7), st.integers(0, 10**12),
       st.integers(-10**6, 10**6))
def test_rows_and_guesses_never_change_an_answer(base, per, pad, window, per_swa, ub, out, extra, guess):
    # the rows cap each search by the previous answer and start it from a scaled guess; any guess, good or wild,
    # only changes how many evaluations a search takes
    g = _Grid(base, per, pad, window, per_swa, ub, out)
    budget, limit = base + extra, 131072
    contexts, users = [4096, 8192, 16384, 32768, 131072], [1, 2, 4, 8, 16, 3000]
    assert C.safe_users_by_context(g, contexts, budget) == {c: _old_safe_users(g, c, budget) for c in contexts}
    assert C.max_context_by_users(g, users, budget, limit) == {u: _old_max_context(g, u, budget, limit)
                                                              for u in users}
    assert C.safe_users(g, 8192, budget, guess=guess) == _old_safe_users(g, 8192, budget)
    assert C.max_context(g, 2, budget, limit, guess=guess) == _old_max_context(g, 2, budget, limit)


def test_a_right_guess_costs_two_evaluations():
    g = _Grid(10**9, 1000, 256, 0, 0, 512, 0)
    budget = g.total(40960, 1) + 10
    calls = []
    counted = type("Counted", (), {"total": lambda self, c, u=1: calls.append((c, u)) or g.total(c, u)})()
    assert C.max_context(counted, 1, budget, 131072, guess=40960) == 40960
    assert calls == [(40960, 1), (41216, 1)]
    # a budget met exactly fits: the guess's neighbour is then the answer (or beyond it)
    assert C.max_context(g, 1, g.total(41216, 1), 131072, guess=40960) == 41216
    assert C.safe_users(g, 4096, g.total(4096, 7), guess=6) == 7


# --------------------------------------------------------------------------- bad input through the CLI
def _one_line_error(capsys, argv, *needles):
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc == 2, (argv, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err + out
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


def test_unknown_model_suggests(capsys):
    line = _one_line_error(capsys, ["--model", "llama-3.3-7b", "--ram", "64"], "llama-3.3-7b", "did you mean")
    assert "llama-3.3-70b" in line
    with pytest.raises(UnknownProfileError) as e:
        P.load_model("qwen3-3b")
    assert e.value.suggestions


def test_ram_no_mac_has_lists_sizes(capsys):
    _one_line_error(capsys, ["--model", "llama-3.3-70b", "--ram", "65"], "65", "64", "96", "valid sizes")


def test_ram_chip_lacks(capsys):
    _one_line_error(capsys, ["--model", "llama-3.3-70b", "--chip", "M4 Max", "--gpu-cores", "40", "--ram", "24"],
                    "--ram 24", "48", "128")


def test_binned_chip_without_gpu_cores_is_answered_for_the_bin_its_ram_names(capsys):
    # Apple sells the 36 GB M3 Max only with the 30-core GPU: the RAM names the bin, no note, no refusal
    assert main(["--model", "llama-3.3-70b", "--chip", "M3 Max", "--ram", "36"]) == 0
    out = capsys.readouterr().out
    assert "M3 Max 30-core GPU, 36 GB" in out and "without --gpu-cores" not in out
    # 64 GB is sold with the 40-core GPU only
    assert main(["--model", "llama-3.3-70b", "--chip", "M3 Max", "--ram", "64"]) == 0
    assert "M3 Max 40-core GPU, 64 GB" in capsys.readouterr().out
    # no RAM: both bins are possible, so the slower one answers and the first lines say which and why
    assert main(["--model", "llama-3.3-70b", "--chip", "M3 Max"]) == 0
    mac = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("Mac: "))
    assert "30-core GPU" in mac and "without --gpu-cores" in mac and "40-core" in mac


@pytest.mark.parametrize("argv, needle", [
    (["--ram", "-5"], "ram"),
    (["--ram", "0"], "ram"),
    (["--ram", "1e308"], "1e+308"),
    (["--ram", "inf"], "ram"),
    (["--ram", "nan"], "ram"),
    (["--ram", "64", "--context", "-1"], "context"),
    (["--ram", "64", "--context", "0"], "context"),
    (["--ram", "64", "--context", "99999999999"], "context"),
    (["--ram", "64", "--users", "-2"], "users"),
    (["--ram", "64", "--users", "99999999999999999999"], "users"),
    (["--ram", "64", "--wired-limit", "-1"], "--wired-limit"),
    (["--ram", "64", "--wired-limit", "99999999999999999999999"], "--wired-limit"),
    (["--ram", "64", "--ubatch", "0"], "ubatch"),
    (["--ram", "64", "--gpu-cores", "-4"], "gpu"),
])
def test_negative_and_absurd_numbers(capsys, argv, needle):
    _one_line_error(capsys, ["--model", "llama-3.3-70b", *argv], needle)


# ---------------------------------------------------------------- fit_codes: the vectorised fit (plan buy's sweep)


def _boundaries(wired, rt):
    """Every byte count where fit() changes its verdict: the safe budget, the limit, the raise bound."""
    head = rt.headroom_mib * MiB
    return [C.safe_budget(wired, rt), wired.effective_bytes, int(wired.max_raise_bytes - head)]


@settings(max_examples=300, deadline=None)
@given(rt_id=st.sampled_from(["llama.cpp", "mlx-lm", "ollama"]), ram=st.sampled_from([8, 16, 24, 36, 64, 128, 512]),
       which=st.integers(0, 2), delta=st.integers(-3, 3), scale=st.floats(0.5, 1.5), wshare=st.floats(0.5, 1.0))
def test_fit_codes_agree_with_fit_on_every_verdict(rt_id, ram, which, delta, scale, wshare):
    # totals exactly at, one byte around, and far from each boundary (the <= edges and the runtime margin)
    rt = P.load_runtime(rt_id)
    wired = C.wired_limit(ram, P.load_macos("15"))
    edge = _boundaries(wired, rt)[which]
    for total in (edge + delta, int(edge * scale)):
        for weights in (int(total * wshare), int((C.warn_fraction(rt) or 0.9) * wired.effective_bytes) + delta):
            want = C.fit(total, weights, wired, rt).verdict
            got = C.fit_codes(np.array([total], dtype=float), np.array([weights], dtype=float),
                              float(wired.effective_bytes), float(wired.max_raise_bytes), rt.headroom_mib,
                              C.warn_fraction(rt) or 0.0)
            assert C.VERDICTS[int(got[0])] == want, (total, weights, ram, rt_id)


def test_fit_codes_exact_boundaries_by_hand():
    # 64 GB, macOS 15: limit 3/4 × 64 GiB = 48 GiB; llama.cpp margin 1 GiB -> safe budget 47 GiB. A total of
    # exactly 47 GiB "fits" (<=), one byte more is "tight"; exactly 48 GiB is still "tight", one more "raise-limit"
    rt, wired = P.load_runtime("llama.cpp"), C.wired_limit(64, P.load_macos("15"))
    totals = np.array([47 * GiB, 47 * GiB + 1, 48 * GiB, 48 * GiB + 1], dtype=float)
    codes = C.fit_codes(totals, totals * 0.9, float(wired.effective_bytes), float(wired.max_raise_bytes),
                        rt.headroom_mib, 0.0)
    assert [C.VERDICTS[c] for c in codes] == ["fits", "tight", "tight", "raise-limit"]


@pytest.mark.parametrize("macos,ram,fraction", [
    ("26", 32, 2 / 3), ("26", 36, 0.78),     # the first rule ends at 32 GB inclusive
    ("26", 96, 0.78), ("26", 128, 0.84),     # the second at 96 GB inclusive
    ("15", 32, 2 / 3), ("15", 36, 0.75),
])
def test_wired_rules_switch_at_their_documented_ram_on_both_sides(macos, ram, fraction):
    """Rule (issue 34): each wired-limit rule of profiles/macos covers RAM up to and including its max_ram_gb; the
    next rule starts just above it (both sides of each boundary of macOS 15 and 26)."""
    from planner import capacity, profiles

    w = capacity.wired_limit(ram, profiles.load_macos(macos))
    assert w.default_bytes == int(ram * 2**30 * fraction)


def test_a_context_past_the_models_maximum_is_capped_at_it_with_one_note():
    """capacity.cap_context: the one rule every command caps a context by (the model's max_position_embeddings),
    with one note naming both numbers; a context within the maximum is kept, without a note."""
    m = P.load_model("llama-3.1-8b")  # max_position_embeddings 131,072 (its config.json)
    assert C.cap_context(131_072, m) == (131_072, None)
    ctx, note = C.cap_context(200_000, m)
    assert ctx == 131_072 and note is not None and "200,000" in note and "capped at 131,072" in note


def test_plan_recommend_and_cluster_cap_a_context_with_the_same_note():
    """One note for one fact: plan, recommend and cluster say the cap in the words of capacity.cap_context."""
    from planner.advice import recommend
    from planner.cluster import plan_cluster
    from planner.cluster.spec import parse_macs
    from planner.plan import PlanRequest, plan
    from planner.workload import custom_workload

    _, note = C.cap_context(200_000, P.load_model("llama-3.1-8b"))
    p = plan(PlanRequest(model="llama-3.1-8b", ram=64, context=200_000))
    r = recommend("llama-3.1-8b", 64, custom_workload("chat", context=200_000), best_effort=True)
    c = plan_cluster("llama-3.1-8b", parse_macs("1x Mac Studio M3 Ultra 512GB"), context=200_000)
    assert p.request.context == r.options[0].context == 131_072
    for notes in (p.notes, r.notes, c.notes):
        assert note in notes


def test_a_context_shorter_than_the_request_holds_the_request_up_to_the_maximum():
    # a server refuses a request longer than its context: the context grows to prompt + gen, never past the maximum
    from planner.capacity import hold_request

    assert hold_request(8192, 2048, 750, 131_072) == (8192, None)
    ctx, note = hold_request(8192, 20_000, 750, 131_072)
    assert ctx == 20_750 and note is not None and "planned at 20,750" in note
    assert hold_request(8192, 50_000, 750, 40_960)[0] == 40_960
