"""app.charts and app.readings: pure functions of a Plan. Trace counts and line positions equal the plan's numbers."""

from __future__ import annotations

import pytest

pytest.importorskip("plotly")

from app import charts, readings
from planner.format import fmt_bytes, verdict_text
from planner.plan import PlanRequest, plan


@pytest.fixture(scope="module")
def p70():
    return plan(PlanRequest(model="llama-3.3-70b", ram=64, macos="15"))  # 48 GiB limit: Q5_K_M needs raising


@pytest.fixture(scope="module")
def p8():
    return plan(PlanRequest(model="llama-3.1-8b", chip="M4 Max", gpu_cores=40, ram=64, users=4,
                            runtimes=["llama.cpp"], quants=["Q4_K_M", "Q8_0"]))


def _vlines(fig):
    return {s.x0 for s in fig.layout.shapes if s.type == "line"}


def test_memory_stack_lines_are_the_plans_numbers(p70):
    fig = charts.memory_stack(p70)
    w = p70.wired
    assert _vlines(fig) == {w.effective_bytes, w.max_raise_bytes, w.ram_bytes}
    rect = [s for s in fig.layout.shapes if s.type == "rect"]
    assert len(rect) == 1 and (rect[0].x0, rect[0].x1) == (w.effective_bytes, w.ram_bytes)
    labels = {a.x: a.text for a in fig.layout.annotations}
    assert labels[w.effective_bytes] == f"GPU limit {fmt_bytes(w.effective_bytes)}"
    assert labels[w.ram_bytes] == "RAM 64 GB"
    assert fmt_bytes(w.max_raise_bytes) in labels[w.max_raise_bytes]


def test_memory_stack_traces_sum_to_total_and_mark_the_choice(p70):
    chosen = p70.options[2]
    fig = charts.memory_stack(p70, chosen)
    bars = [t for t in fig.data if t.type == "bar"]
    # weights, KV, compute, output (llama.cpp only), overhead; recurrent state and vision are zero for a dense LLM
    assert [t.name for t in bars] == ["weights", "KV cache", "compute buffer", "output buffer", "runtime overhead"]
    assert all(t.orientation == "h" for t in bars)  # one row per option: the totals at the bar ends never collide
    assert len(fig.data) == len(bars) + 1  # + the totals text trace
    for i, o in enumerate(p70.options):
        assert sum(t.x[i] for t in bars) == o.memory.total
    totals = fig.data[-1]
    assert list(totals.x) == [o.memory.total for o in p70.options]
    assert all(fmt_bytes(o.memory.total) in t for o, t in zip(p70.options, totals.text))
    assert [y for y in totals.y if y.startswith("<b>")] == [f"<b>{readings.option_label(chosen)}</b>"]


def test_memory_stack_user_wired_limit_has_no_separate_raise_line():
    p = plan(PlanRequest(model="llama-3.1-8b", ram=16, wired_limit_mb=8192))
    w = p.wired
    if w.max_raise_bytes != w.effective_bytes:
        assert w.effective_bytes in _vlines(charts.memory_stack(p))
    assert w.effective_bytes == 8192 * 1024 * 1024


def test_byte_ticks_cover_the_top():
    vals, text = charts.byte_ticks(64 * 2**30)
    assert vals[0] == 0 and vals[-1] >= 64 * 2**30 and len(vals) <= 10
    assert text[1].endswith("GiB")


def test_heatmap_cells_are_safe_users_and_choice_is_marked(p8):
    chosen = p8.options[1]
    fig = charts.concurrency_heatmap(p8, chosen)
    heat, mark = fig.data
    assert heat.type == "heatmap" and mark.type == "scatter"
    for i, o in enumerate(p8.options):
        assert list(heat.text[i]) == [str(o.safe_users[c]) for c in p8.contexts]
        for j, c in enumerate(p8.contexts):
            n = o.safe_users[c]
            assert heat.z[i][j] == (0 if n == 0 else 2 if n >= p8.request.users else 1)
    assert list(mark.x) == ["8K"] and list(mark.y) == [readings.option_label(chosen)]
    assert len(charts.concurrency_heatmap(p8).data) == 1


def test_compare_macs_one_column_per_mac():
    plans = [plan(PlanRequest(model="llama-3.3-70b", ram=r)) for r in (48, 64, 128)]
    fig = charts.compare_macs(plans)
    (heat,) = fig.data
    assert len(heat.x) == 3 and len(heat.y) == len(plans[0].options)
    codes = {v: k for k, v in charts.VERDICT_CODE.items()}
    assert [codes[z] for z in heat.z[0]] == [p.options[0].fit.verdict for p in plans]


def test_chart_sections(p70):
    assert charts.chart_sections(p70) == ["memory", "concurrency"]  # no chip: no speed charts


def test_headline_70b_on_64gb(p70):
    level, text = readings.headline(p70)
    assert level == "success"
    assert verdict_text("fits") in text
    q4 = next(o for o in p70.options if o.quant == "Q4_K_M")
    assert f"llama.cpp · Q4_K_M uses {fmt_bytes(q4.memory.total)} of the {fmt_bytes(p70.wired.effective_bytes)}" in text


def test_headline_no_fit_names_the_smallest():
    p = plan(PlanRequest(model="llama-3.1-405b", ram=64))
    level, text = readings.headline(p)
    assert level == "error" and verdict_text("no-fit") in text
    # the smallest need plan and recommend name (planner.search.smallest_need: any KV type, with the margin)
    n = p.smallest
    assert n is not None and f"({n.runtime} {n.quant}, KV cache {n.kv_type}) needs {fmt_bytes(n.memory_bytes)}" in text


def test_fit_rows_match_cli_strings(p70):
    from cli.render import render_plan

    cli = render_plan(p70)
    for row in readings.fit_rows(p70):
        line = next(ln for ln in cli.splitlines() if ln.startswith(row["runtime"]) and f" {row['quantization']} " in ln)
        for k in ("weights", "file size", "KV cache", "total", "verdict"):
            assert row[k] in line


def test_readings_mention_the_limit(p70):
    assert fmt_bytes(p70.wired.effective_bytes) in readings.limit_reading(p70)
    assert f"iogpu.wired_limit_mb={p70.wired.sysctl_max_mb}" in readings.limit_reading(p70)
    raise_opt = next(o for o in p70.options if o.fit.verdict == "raise-limit")
    assert raise_opt.fit.sysctl in readings.recipe_lines(p70, raise_opt)
    assert "Q5_K_M" in readings.memory_reading(p70)


# ----------------------------------------------------------------------------- speed, recommend, buy
def _speed_plan(**kw):
    return plan(PlanRequest(model="llama-3.1-8b", chip="M4 Max", gpu_cores=40, ram=64, users=4,
                            quants=["Q4_K_M", "mlx-4bit-g64"], **kw))


def _picks(p):
    return [next(o for o in p.options if o.runtime == rt) for rt in ("llama.cpp", "mlx-lm")]


def test_decode_vs_users_draws_only_users_that_fit():
    """70B Q4_K_M on 64 GB at 8K: the plan says how many sessions fit; the chart stops there and marks it."""
    p = plan(PlanRequest(model="llama-3.3-70b", chip="M4 Max", gpu_cores=40, ram=64, quants=["Q4_K_M",
                                                                                                  "mlx-4bit-g64"]))
    picks = _picks(p)
    ceil = {readings.option_label(o): {u: o.speed.decode_tok_s_per_seq[u] * 1.5 for u in p.user_counts}
            for o in picks}
    fig = charts.decode_vs_users(p, picks, ceil)
    for o in picks:
        fit = readings.fitting_users(p, o)
        # hand check of the rule: u sessions fit when the longest context for u users reaches the 8K asked for
        assert fit == [u for u in p.user_counts if o.max_context[u] >= 8192] and fit[-1] < 16
        per = next(t for t in fig.data if t.name == f"{readings.option_name(o)}: per user")
        assert [int(x) for x in per.x] == fit
        assert list(per.y) == [o.speed.decode_tok_s_per_seq[u] for u in fit]
        roof = next(t for t in fig.data if t.name == f"{readings.option_name(o)}: bandwidth ceiling")
        assert list(roof.x) == list(per.x)
        assert any(t.name == f"limit: {fit[-1]} fit at 8K " for t in fig.data)
    assert not any("all users" in t.name for t in fig.data)
    text = readings.decode_reading(p, picks)
    assert fmt_tok_s_of(picks[0].speed.decode_tok_s_per_seq[1]) in text


def test_decode_per_user_never_above_the_core_ceiling():
    """The dotted line is the speed core's own bandwidth roofline (plan predict): no drawn point exceeds it."""
    from planner.predict import predict_result

    p = plan(PlanRequest(model="llama-3.1-8b", chip="M4 Max", gpu_cores=40, ram=64, users=4,
                         quants=["Q4_K_M", "mlx-4bit-g64"]))
    for o in _picks(p):
        for u in readings.fitting_users(p, o):
            ceiling = predict_result("M4 Max", 40, 64, "llama-3.1-8b", o.quant, o.runtime, p.request.prompt,
                                     p.request.gen, 0, u, "15", None, None, None)["decode_ceiling_tok_s"]
            assert o.speed.decode_tok_s_per_seq[u] <= ceiling * (1 + 1e-9), (o.quant, u)


def fmt_tok_s_of(x):
    from planner.format import fmt_tok_s

    return fmt_tok_s(x)


def test_ttft_vs_prompt_stops_at_the_longest_context_that_fits():
    reqs = {n: plan(PlanRequest(model="llama-3.3-70b", chip="M4 Max", gpu_cores=40, ram=64, prompt=n,
                                gen=750, quants=["Q4_K_M", "mlx-4bit-g64"])) for n in (512, 8192, 65536)}
    plans = list(reqs.values())
    picks = _picks(plans[0])
    fig = charts.ttft_vs_prompt(plans, picks, 750, 1)
    for o in picks:
        limit = readings.longest_context(o, 1)
        tr = next(t for t in fig.data if t.name == readings.option_name(o))
        assert list(tr.x) == [n for n in reqs if n + 750 <= limit]  # 64K + 750 does not fit the 70B on 64 GB
        assert list(tr.y) == [next(x for x in reqs[n].options if x.runtime == o.runtime).speed.ttft_s for n in tr.x]
        assert any(t.name == f"limit: longest context that fits: {charts.fmt_ctx(limit)} " for t in fig.data)
    assert charts.chart_sections(plans[0]) == ["memory", "concurrency", "decode", "ttft"]


def test_price_performance_marks_pareto_and_picks():
    from planner.buy import buy
    from planner.workload import Targets, custom_workload

    wl = custom_workload("chat")
    wl = wl.model_copy(update={"targets": Targets()})  # no targets: every Mac that fits is a candidate
    b = buy(["llama-3.1-8b"], wl)
    fig = charts.price_performance(b)
    by_name = {t.name: t for t in fig.data}
    front = by_name["Pareto front"]
    # visible: a line through filled diamonds in a solid colour (not open markers with a transparent fill)
    assert "lines" in front.mode and front.marker.symbol == "diamond" and front.marker.color == "#1565c0"
    assert list(front.y) == [b.speed(x) for x in b.pareto]
    dots = [t for t in fig.data if t.name in ("meets the targets", "misses a target", "over budget")]
    assert sum(len(t.x) for t in dots) == len(b.per_mac)
    for t in dots:   # the 80 % likely range of each Mac's decode as error bars
        rows = [x for x in b.per_mac if x.decode_tok_s_per_user in set(t.y)]
        assert t.error_y.array is not None and len(t.error_y.array) == len(t.x) and rows
        assert all(v >= 0 for v in (*t.error_y.array, *t.error_y.arrayminus))
    xs = [x for t in dots for x in t.x]
    assert len(set(xs)) == len(xs)                    # equal prices spread apart, none on top of another
    fastest = by_name["fastest (highest decode tok/s per user)"]
    assert list(fastest.y) == [max(b.speed(x) for x in b.per_mac if x.meets_targets)]
    assert f"${b.cheapest.price_usd:,.0f}" in readings.buy_reading(b)
    rows = readings.buy_rows(b)
    assert len(rows) == len(b.per_mac) and rows[0]["price [$]"] == b.per_mac[0].price_usd


def test_jitter_spreads_equal_prices_symmetrically():
    assert charts.jitter([3999, 3999, 3999, 1999], 20) == [3979, 3999, 4019, 1999]


def test_price_performance_budget_line_and_faded_over_budget():
    from planner.buy import buy
    from planner.workload import custom_workload

    b = buy(["qwen3-30b-a3b"], custom_workload("chat", users=4), budget_usd=1500)
    fig = charts.price_performance(b)
    assert any(s.type == "line" and s.x0 == 1500 for s in fig.layout.shapes)
    names = {t.name for t in fig.data}
    assert "over budget" in names
    for t in fig.data:
        if t.name.startswith(("cheapest", "best value", "fastest", "Pareto")):
            assert all(x <= 1500 + 50 for x in t.x), t.name     # + the jitter of equal prices
    assert "within $1,500" in readings.buy_reading(b)


def test_recommend_reading_and_recipe():
    from planner.advice import recommend
    from planner.workload import custom_workload

    r = recommend("llama-3.3-70b", 64, custom_workload("chat", users=1).model_copy(
        update={"targets": custom_workload("chat").targets.model_copy(update={"min_tok_s_per_user": None,
                                                                               "max_ttft_s": None})}))
    top = r.options[0]
    assert top.quant in readings.recommend_reading(r)
    assert top.recipe.server in readings.recipe_text(top.recipe).splitlines()
    assert len(readings.recommend_rows(r)) == len(r.options)


# ----------------------------------------------------------------------------- the one answer and the page's words
def test_answer_names_one_option_and_reflects_the_targets():
    from planner import profiles
    from planner.advice import TargetsUnreachableError, recommend
    from planner.workload import custom_workload

    chip = profiles.resolve_chip("m4-max-40gpu")
    wl = custom_workload("chat")
    p8 = plan(PlanRequest(model="llama-3.1-8b", chip="M4 Max", gpu_cores=40, ram=64))
    r = recommend("llama-3.1-8b", 64, wl, chip=chip)
    level, text = readings.answer(p8, wl, r.options[0], True, r.why_not_higher_quality)
    assert level == "success" and "runs your chat assistant workload" in text
    assert readings.option_name(r.options[0]) in text and fmt_tok_s_of(r.options[0].speed.decode_tok_s_per_user) in text
    p70 = plan(PlanRequest(model="llama-3.3-70b", chip="M4 Max", gpu_cores=40, ram=64))
    wl = custom_workload("chat", max_ttft=3)  # a 2K prompt of a 70B takes far longer than 3 s
    with pytest.raises(TargetsUnreachableError):
        recommend("llama-3.3-70b", 64, wl, chip=chip)
    r = recommend("llama-3.3-70b", 64, wl, chip=chip, best_effort=True)
    top = r.options[0]
    assert not r.targets_met
    level, text = readings.answer(p70, wl, top, r.targets_met)
    assert level == "warning" and "misses the speed targets" in text and top.misses[0] in text


def test_answer_says_mlx_lm_or_llama_cpp_as_the_cli_does():
    from planner import profiles
    from planner.advice import recommend, runtime_verdicts
    from planner.format import versus_text
    from planner.workload import custom_workload

    wl = custom_workload("chat")
    p8 = plan(PlanRequest(model="llama-3.1-8b", chip="M4 Max", gpu_cores=40, ram=64))
    r = recommend("llama-3.1-8b", 64, wl, chip=profiles.resolve_chip("m4-max-40gpu"))
    sentence = versus_text(runtime_verdicts(r))
    _, text = readings.answer(p8, wl, r.options[0], True, r.why_not_higher_quality, sentence)
    assert sentence.startswith("mlx-lm or llama.cpp? ") and sentence in text


def test_model_line_shows_active_params_only_for_moe(p70):
    assert "active" not in readings.model_line(p70)
    moe = plan(PlanRequest(model="qwen3-30b-a3b", ram=64))
    assert moe.model.is_moe and "active per token" in readings.model_line(moe)


def test_for_web_speaks_the_forms_words():
    assert readings.for_web("unknown model --model 'x'; see `plan models`") == "Unknown model 'x'; see the model catalog"
    assert readings.for_web("--wired-limit 9 MB is too small") == "GPU wired limit (Advanced) 9 MB is too small"
    assert readings.for_web("[[wired_limit]] 9 MB is too small") == "GPU wired limit (Advanced) 9 MB is too small"
    assert readings.for_web("meets nothing for 1 user(s) with 2 slot(s)") == "Meets nothing for 1 user with 2 slots"
    assert readings.for_web("read /tmp/up/ab12/M/config.json", "/tmp/up/ab12/M") == "Read the uploaded config.json"


def test_log_ticks_are_1_2_5_and_labelled_in_full():
    # 0.3 to 40 s: ticks 0.2 0.5 1 2 5 10 20 50 (one below and above the data), each with its own label
    vals, text = charts.log_ticks(0.3, 40, charts.fmt_seconds)
    assert vals == pytest.approx([0.2, 0.5, 1, 2, 5, 10, 20, 50])
    assert text == [charts.fmt_seconds(v) for v in vals]


def test_declutter_keeps_the_best_and_drops_only_overlaps():
    keep = charts.declutter([10, 10.2, 50, 10.1], [80, 79.9, 79.9, 60], log_x=True)
    assert keep == [True, False, True, True]   # the second sits on the first; the third is far in x; the last in y


def test_finetune_chart_draws_one_limit_line_when_the_limit_cannot_be_raised():
    # 8 GB: the highest safe limit is the default (macOS keeps 4 GiB), so one line and one label, not two on top of
    # each other; 32 GB: the default and the raised limit
    from app.finetune_page import memory_chart
    from planner.finetune import FinetuneRequest, plan_finetune

    for ram, lines in ((8, 1), (32, 2)):
        fig = memory_chart(plan_finetune(FinetuneRequest(model="qwen3-0.6b", ram=ram)))
        assert sum(s.type == "line" for s in fig.layout.shapes) == lines
