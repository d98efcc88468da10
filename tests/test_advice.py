"""plan recommend core (planner/advice.py): scenarios whose answers follow from the memory and speed models."""

import pytest

from planner import profiles
from planner.advice import (
    NoFitError,
    TargetsUnreachableError,
    quality_of,
    recommend,
)
from planner.search import speed_available
from planner.workload import custom_workload

needs_speed = pytest.mark.skipif(not speed_available(), reason="planner/throughput.py not available")


def _chat70(users=4):
    # no speed targets: memory decides (chip=None -> memory-only ranking)
    return custom_workload("chat", users=users, context=8192).model_copy(update={"targets": type(
        custom_workload("chat").targets)()})


def test_70b_4x8k_48gb_q4_k_m_excluded_by_wired_limit():
    # Llama-3.3-70B Q4_K_M weights are 42.5 GB = 39.6 GiB. A 48 GB Mac's default GPU limit under macOS 15 is 3/4 = 36 GiB: the
    # weights alone exceed it. The most we would raise it to leaves max(4 GiB, 12.5 %) = 6 GiB to macOS (42 GiB);
    # minus the 1 GiB runtime margin that is 41 GiB: 4 concurrent 8K sessions (4 × 0.7 GiB even with q4_0 KV)
    # never fit; a single queued slot with q4_0 KV (39.6 + 0.7 + buffers = 40.8 GiB) just does.
    r = recommend("llama-3.3-70b", 48, _chat70(), quants=["Q4_K_M"], macos="15")
    assert r.options
    for o in r.options:
        assert o.fit.verdict == "raise-limit" and o.slots == 1 and o.kv_type == "q4_0", o
    # and Q5_K_M (46.5 GiB of weights) does not fit at all
    with pytest.raises(NoFitError, match="does not fit"):
        recommend("llama-3.3-70b", 48, _chat70(), quants=["Q5_K_M"], macos="15")
    # what remains at 48 GB needs the limit raised (≥4-bit) or a 3-bit quant with a large quality cost
    r = recommend("llama-3.3-70b", 48, _chat70(), macos="15")
    for o in r.options:
        assert o.fit.verdict == "raise-limit" or o.quality.tier in ("noticeable", "large"), o


def test_70b_4x8k_64gb_is_borderline():
    # 64 GB: default limit 48 GiB. Q4_K_M (39.6 GiB) + 4 × 8K f16 KV (4 × 2.5 GiB) + buffers ≈ 51 GiB > 48 GiB:
    # only with the sysctl; with q8_0 KV (half the KV) it fits under 48 GiB, but with little to spare.
    # Borderline = the answer hinges on the KV type and the wired limit.
    from planner import capacity
    from planner.search import base_memory_model, with_kv

    wired = capacity.wired_limit(64, profiles.load_macos("15"))
    base = base_memory_model("llama-3.3-70b", "llama.cpp", "Q4_K_M")
    rt = base.runtime
    f16, q8 = with_kv(base, "f16"), with_kv(base, "q8_0")
    v16 = capacity.fit(f16.total(8192, 4), base.weights.total_bytes, wired, rt)
    v8 = capacity.fit(q8.total(8192, 4), base.weights.total_bytes, wired, rt)
    assert v16.verdict == "raise-limit" and v16.sysctl.startswith("sudo sysctl iogpu.wired_limit_mb=")
    assert v8.verdict in ("fits", "tight") and v8.headroom_bytes < 6 * 2**30   # < 6 GiB spare of 48 GiB
    # and recommend agrees: its best Q4_K_M answer at 4 users avoids the sysctl by quantizing the KV
    r = recommend("llama-3.3-70b", 64, _chat70(), quants=["Q4_K_M"], runtimes=["llama.cpp"])
    assert r.options[0].kv_type in ("q8_0", "f16") and r.options[0].fit.verdict != "no-fit"


def test_recipes_have_the_exact_flags():
    r = recommend("llama-3.1-8b", 64, custom_workload("chat", users=4), runtimes=["llama.cpp", "mlx-lm"], top=50)
    ll = next(o for o in r.options if o.runtime == "llama.cpp" and o.slots == 4)
    cmd = ll.recipe.server
    # -c is the total over slots (llama-server splits it per -np slot)
    assert f"-c {4 * ll.context}" in cmd and "-np 4" in cmd and "-fa on" in cmd and "-ngl 99" in cmd
    assert f"-ctk {ll.kv_type} -ctv {ll.kv_type}" in cmd and "-ub 512" in cmd
    mx = next(o for o in r.options if o.runtime == "mlx-lm" and o.kv_type == "bf16" and o.slots == 4)
    assert "--decode-concurrency 4" in mx.recipe.server and "--prefill-step-size 2048" in mx.recipe.server
    assert "--max-kv-size" not in mx.recipe.server                       # mlx_lm.server 0.32.2 has no such flag
    assert f"--max-kv-size {mx.context}" in mx.recipe.generate
    kv = next(o for o in r.options if o.runtime == "mlx-lm" and o.kv_type == "kv8")
    assert "--kv-bits 8" in kv.recipe.server and kv.slots == 1         # --kv-bits disables batching in the server


def test_quality_table_comes_from_llama_cpp_scoreboard():
    # Q4_K_M on Llama-3-8B: ΔPPL 0.1755 on 6.2316 = 2.8 %, KLD 0.0313 (tools/perplexity/README.md)
    q = quality_of(profiles.load_quant("Q4_K_M", "gguf"))
    assert q.ppl_delta_pct == pytest.approx(2.82) and q.kld == pytest.approx(0.0313) and q.approximate
    assert "perplexity/README.md" in q.source
    # monotone along the k-quant ladder
    ladder = ["Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "Q3_K_M", "Q2_K"]
    ppl = [quality_of(profiles.load_quant(x, "gguf")).ppl_delta_pct for x in ladder]
    assert ppl == sorted(ppl)


def test_mlx_quality_uses_published_mmlu_or_says_unknown():
    # mlx-lm BENCHMARKS.md: 4-bit g64 loses 3.33 MMLU-Pro points, 8-bit 0.20; mxfp4 has no published figure
    q4 = quality_of(profiles.load_quant("4bit", "mlx"))
    q8 = quality_of(profiles.load_quant("8bit", "mlx"))
    assert q4.mmlu_pro_delta == pytest.approx(-3.33) and q4.tier == "noticeable"
    assert q8.tier == "lossless"
    assert quality_of(profiles.load_quant("mxfp4", "mlx")).tier == "unknown"


@needs_speed
def test_8b_agent_16k_is_prefill_bound_and_m5_prefills_faster():
    # A 16K-token prompt and 300 tokens out: prefill FLOPs (2·N·P ≈ 2.6e14) dwarf decode (300 steps of ~5 GB
    # reads), so every ranked option is prefill-bound and ranked by time per turn. M5 GPUs have per-core matrix
    # units (calibrated matrix_unit_factor > 1) at similar bandwidth, so the M5 Max prefills faster than M4 Max.
    wl = custom_workload("agent", prompt="16384", context=20480)
    r4 = recommend("llama-3.1-8b", 64, wl, chip=profiles.resolve_chip("m4-max-40gpu"))
    r5 = recommend("llama-3.1-8b", 64, wl, chip=profiles.resolve_chip("m5-max-40gpu"))
    # on the M4 Max every ranked option is prefill-bound; the M5's matrix units prefill so much faster that its
    # 8-bit options come out near the boundary (prefill about half of the turn), so only the M4 is held to it
    assert all(o.bound.startswith("prefill-bound") for o in r4.options)
    for r in (r4, r5):
        times = [o.speed.time_per_request_s for o in r.options]
        # ranking: quality tier and KV first, then time per turn within a tier
        assert r.options[0].speed.time_per_request_s == min(
            o.speed.time_per_request_s for o in r.options if o.quality.tier == r.options[0].quality.tier
            and o.kv_type == r.options[0].kv_type) or times
    assert r5.options[0].speed.prefill_tok_s > 1.5 * r4.options[0].speed.prefill_tok_s
    assert r5.options[0].speed.ttft_s < r4.options[0].speed.ttft_s


@needs_speed
def test_impossible_target_says_what_the_best_reaches():
    wl = custom_workload("chat", users=4, min_tok_s=200)
    with pytest.raises(TargetsUnreachableError, match=r"the best reaches [\d.]+ tok/s per user"):
        recommend("llama-3.3-70b", 128, wl, chip=profiles.resolve_chip("m4-max-40gpu"))


@needs_speed
def test_mixed_workload_offers_router_with_memory_check():
    # targets relaxed so the test does not hinge on calibrated speeds: the router needs ≥ 2 runtimes with speed
    wl = custom_workload("code", min_tok_s=1, max_ttft=3600)
    r = recommend("llama-3.1-8b", 64, wl, chip=profiles.resolve_chip("m4-max-40gpu"))
    assert r.router is not None
    assert r.router.memory_bytes > 0 and isinstance(r.router.fits, bool)


# --------------------------------------------------------------------------- quality first with headroom
def _m4max():
    return profiles.resolve_chip("m4-max-40gpu")


@needs_speed
def test_quality_first_when_targets_met_with_headroom():
    """8B chat on a 64 GB M4 Max: a 4-bit quant is faster, but a lossless quant with a 16-bit KV cache meets the
    targets (10 tok/s, 3 s TTFT) by far more than the 20 % headroom, so quality wins and nothing needs explaining."""
    wl = custom_workload("chat")
    r = recommend("llama-3.1-8b", 64, wl, chip=_m4max())
    top = r.options[0]
    assert top.quality.tier == "lossless" and top.kv_type in ("f16", "bf16"), top
    assert r.why_not_higher_quality is None
    fast = recommend("llama-3.1-8b", 64, wl, chip=_m4max(), quants=["IQ4_XS"], runtimes=["llama.cpp"]).options[0]
    assert fast.quality.tier != "lossless" and fast.speed.decode_tok_s_per_user > top.speed.decode_tok_s_per_user


@needs_speed
def test_quality_yields_to_speed_without_headroom_and_says_why():
    """Set the per-user target just above what Q8_0 with an f16 KV cache reaches: it misses, so Q4_K_M leads
    and the answer names Q8_0 and what it misses."""
    from planner.advice import preference

    q8 = recommend("llama-3.3-70b", 128, custom_workload("chat", max_ttft=3600, min_tok_s=1), chip=_m4max(), quants=["Q8_0"],
                   runtimes=["llama.cpp"]).options
    q8_f16 = next(o for o in q8 if o.kv_type == "f16")
    wl = custom_workload("chat", max_ttft=3600, min_tok_s=q8_f16.speed.decode_tok_s_per_user * 1.05)
    r = recommend("llama-3.3-70b", 128, wl, chip=_m4max(), runtimes=["llama.cpp"], quants=["Q8_0", "Q4_K_M"])
    assert r.options[0].quant == "Q4_K_M"
    assert r.why_not_higher_quality.startswith("llama.cpp Q8_0 with KV cache f16 (lossless quality) misses the "
                                               "targets: "), r.why_not_higher_quality
    # the key itself: the same option with more than 20 % to spare beats a faster small-loss one; within 20 % not
    small = next(o for o in r.options if o.quality.tier == "small")
    t = wl.targets.min_tok_s_per_user
    lossless = small.model_copy(update={"quality": small.quality.model_copy(update={"tier": "lossless"}),
                                        "speed": small.speed.model_copy(update={"decode_tok_s_per_user": 1.3 * t})})
    quick = small.model_copy(update={"speed": small.speed.model_copy(update={"decode_tok_s_per_user": 3 * t})})
    assert preference(lossless, wl) < preference(quick, wl)
    tight = lossless.model_copy(update={"speed": lossless.speed.model_copy(update={"decode_tok_s_per_user": 1.1 * t})})
    assert preference(quick, wl) < preference(tight, wl)


@needs_speed
def test_unreachable_targets_best_effort_lists_the_closest_with_a_server_command():
    """70B chat on a 64 GB M4 Max: a 2K-token prompt takes far longer than 3 s, so no option meets the targets;
    best effort still ranks the nearest options, each with what it misses and a server command, and no quality
    reason (nothing met the targets to choose quality over)."""
    wl = custom_workload("chat", min_tok_s=10, max_ttft=3)
    with pytest.raises(TargetsUnreachableError):
        recommend("llama-3.3-70b", 64, wl, chip=_m4max())
    r = recommend("llama-3.3-70b", 64, wl, chip=_m4max(), best_effort=True)
    assert not r.targets_met and r.options and all(o.misses for o in r.options)
    assert r.options[0].recipe.server.startswith(("llama-server", "mlx_lm.server"))
    assert r.why_not_higher_quality is None


@needs_speed
@pytest.mark.parametrize("model,ram,wl", [
    ("llama-3.3-70b", 64, custom_workload("chat", users=1, context=8192, min_tok_s=10, max_ttft=3)),
    ("llama-3.3-70b", 64, custom_workload("chat", min_tok_s=10, max_ttft=3)),
    ("qwen3-32b", 48, custom_workload("agent")),
])
def test_closest_options_prefer_quality_among_equally_close(model, ram, wl):
    """When nothing meets the targets, options whose worst miss is within 5 % of each other are equally close, and
    quality decides: a slightly faster decode that does not help the binding target (here TTFT, compute-bound and
    the same for every weight format) is no reason to offer a lossier quant or a 4-bit KV cache first."""
    from planner.advice import quality_rank, shortfall

    r = recommend(model, ram, wl, chip=_m4max(), best_effort=True)
    assert not r.targets_met and len(r.options) >= 2
    top = r.options[0]
    for o in r.options[1:]:
        if len(o.misses) == len(top.misses) and shortfall(o, wl) <= shortfall(top, wl):
            # an option at least as close as the top one ranks below it only for being of lower quality
            assert quality_rank(o) >= quality_rank(top), (o.quant, o.kv_type, top.quant, top.kv_type)
    # and no option in the top one's 5 % band of closeness (same misses, same step above the closest) is of
    # higher quality: within the band, quality leads
    import math

    from planner.advice import SHORTFALL_STEP

    best = min(shortfall(o, wl) for o in r.options if len(o.misses) == len(top.misses))

    def step(o):
        return math.floor(math.log(shortfall(o, wl) / best) / math.log(SHORTFALL_STEP) + 1e-9)
    band = [o for o in r.options if len(o.misses) == len(top.misses) and step(o) == step(top)
            and (o.quality.tier == "large") == (top.quality.tier == "large")]
    assert all(quality_rank(o) >= quality_rank(top) for o in band), [(o.quant, o.kv_type) for o in band]


@needs_speed
def test_a_large_quality_cost_is_never_paid_for_a_target_still_missed():
    """70B chat on a 64 GB M3 Max with a 3 s TTFT no option reaches: Q3_K_M (large quality cost) decodes faster
    but misses the TTFT like the rest, so every option of a smaller cost ranks above it."""
    chip = profiles.resolve_chip("m3-max-40gpu")
    r = recommend("llama-3.3-70b", 64, custom_workload("chat", min_tok_s=10, max_ttft=3), chip=chip,
                  best_effort=True, top=40)
    assert not r.targets_met
    tiers = [o.quality.tier for o in r.options]
    assert "large" in tiers and tiers[0] != "large"
    first_large = tiers.index("large")
    assert all(t == "large" for t in tiers[first_large:]), tiers


@needs_speed
def test_runtime_verdicts_compare_the_top_with_each_runtimes_best():
    """The comparison reads each runtime's best by the same ranking: the top option's own runtime is compared
    with the other one's first option, and the code follows the decode ratio around the 5 % band."""
    from planner.advice import SAME_SPEED, runtime_verdicts

    r = recommend("llama-3.1-8b", 64, custom_workload("chat"), chip=_m4max(), best_effort=True)
    top = r.options[0]
    by_rt = {o.runtime: o for o in r.best_per_runtime}
    assert set(by_rt) == {"llama.cpp", "mlx-lm"} and by_rt[top.runtime].quant == top.quant
    (v,) = runtime_verdicts(r)
    other = by_rt[v.other]
    ratio = top.speed.decode_tok_s_per_user / other.speed.decode_tok_s_per_user
    assert v.decode_ratio == pytest.approx(ratio)
    assert v.code == ("same" if 1 / SAME_SPEED <= ratio <= SAME_SPEED else "faster" if ratio > 1 else "slower")
    only = recommend("llama-3.1-8b", 64, custom_workload("chat"), chip=_m4max(), runtimes=["mlx-lm"])
    assert [x.code for x in runtime_verdicts(only)] == ["only"]


@pytest.mark.parametrize("ttft,headroom", [(1.0, True), (2.0 / 1.2, True), (1.7, False), (1.99, False)])
def test_ttft_between_target_over_1_2_and_the_target_has_no_headroom(ttft, headroom):
    """Rule (issue 34): an option meets a TTFT target 'with headroom' only when 1.2 × TTFT ≤ target; a TTFT
    between target / 1.2 and the target meets it without headroom."""
    from types import SimpleNamespace

    from planner.advice import has_headroom

    o = SimpleNamespace(fit=SimpleNamespace(verdict="fits"), meets_targets=True,
                        speed=SimpleNamespace(ttft_s=ttft, decode_tok_s_per_user=100.0, time_per_request_s=10.0))
    wl = SimpleNamespace(targets=SimpleNamespace(min_tok_s_per_user=None, max_ttft_s=2.0, max_request_s=None))
    assert has_headroom(o, wl) is headroom
