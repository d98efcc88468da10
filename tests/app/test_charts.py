"""app.charts and app.readings: pure functions of a Plan. Trace counts and line positions equal the plan's numbers."""

from __future__ import annotations

import pytest

pytest.importorskip("plotly")

from app import charts, readings
from planner.format import fmt_bytes, verdict_text
from planner.plan import PlanRequest, plan


@pytest.fixture(scope="module")
def p70():
    return plan(PlanRequest(model="llama-3.3-70b", ram_gb=64))


@pytest.fixture(scope="module")
def p8():
    return plan(PlanRequest(model="llama-3.1-8b", chip="M4 Max", gpu_cores=40, ram_gb=64, users=4,
                            runtimes=["llama.cpp"], quants=["Q4_K_M", "Q8_0"]))


def _hlines(fig):
    return {s.y0 for s in fig.layout.shapes if s.type == "line"}


def test_memory_stack_lines_are_the_plans_numbers(p70):
    fig = charts.memory_stack(p70)
    w = p70.wired
    assert _hlines(fig) == {w.effective_bytes, w.max_raise_bytes, w.ram_bytes}
    rect = [s for s in fig.layout.shapes if s.type == "rect"]
    assert len(rect) == 1 and (rect[0].y0, rect[0].y1) == (w.effective_bytes, w.ram_bytes)
    labels = {a.y: a.text for a in fig.layout.annotations}
    assert labels[w.effective_bytes] == f"GPU limit {fmt_bytes(w.effective_bytes)}"
    assert labels[w.ram_bytes].startswith("RAM 64 GB") and fmt_bytes(w.left_for_macos_bytes) in labels[w.ram_bytes]
    assert fmt_bytes(w.max_raise_bytes) in labels[w.max_raise_bytes]


def test_memory_stack_traces_sum_to_total(p70):
    fig = charts.memory_stack(p70)
    bars = [t for t in fig.data if t.type == "bar"]
    # weights, KV, compute, output (llama.cpp only), overhead; recurrent state and vision are zero for a dense LLM
    assert [t.name for t in bars] == ["weights", "KV cache", "compute buffer", "output buffer", "runtime overhead"]
    assert len(fig.data) == len(bars) + 1  # + the totals text trace
    for i, o in enumerate(p70.options):
        assert sum(t.y[i] for t in bars) == o.memory.total
    totals = fig.data[-1]
    assert list(totals.y) == [o.memory.total for o in p70.options]
    assert all(fmt_bytes(o.memory.total) in t for o, t in zip(p70.options, totals.text))


def test_memory_stack_user_wired_limit_has_no_separate_raise_line():
    p = plan(PlanRequest(model="llama-3.1-8b", ram_gb=16, wired_limit_mb=8192))
    w = p.wired
    if w.max_raise_bytes != w.effective_bytes:
        assert w.effective_bytes in _hlines(charts.memory_stack(p))
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
    plans = [plan(PlanRequest(model="llama-3.3-70b", ram_gb=r)) for r in (48, 64, 128)]
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
    p = plan(PlanRequest(model="llama-3.1-405b", ram_gb=64))
    level, text = readings.headline(p)
    assert level == "error" and verdict_text("no-fit") in text
    smallest = min(p.options, key=lambda o: o.memory.total)
    assert fmt_bytes(smallest.memory.total) in text


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
    return plan(PlanRequest(model="llama-3.1-8b", chip="M4 Max", gpu_cores=40, ram_gb=64, users=4,
                            quants=["Q4_K_M", "mlx-4bit-g64"], **kw))


def test_decode_vs_users_traces_are_the_speed_numbers():
    p = _speed_plan()
    picks = readings.speed_picks(p, p.options[0])
    assert [o.runtime for o in picks] == ["llama.cpp", "mlx-lm"]
    fig = charts.decode_vs_users(p, picks)
    per_pick = len(fig.data) // len(picks)
    assert per_pick in (2, 3)  # per user, all users (+ roofline when the core gives it)
    for i, o in enumerate(picks):
        per, tot = fig.data[i * per_pick], fig.data[i * per_pick + 1]
        assert list(per.x) == sorted(o.speed.decode_tok_s_per_seq)
        assert list(per.y) == [o.speed.decode_tok_s_per_seq[u] for u in per.x]
        assert list(tot.y) == [o.speed.decode_tok_s_total[u] for u in tot.x]
    ceil = {readings.option_label(picks[0]): {u: 100.0 + u for u in p.user_counts}}
    with_roof = charts.decode_vs_users(p, picks, ceil)
    roof = [t for t in with_roof.data if t.name.endswith("bandwidth roofline")]
    assert len(roof) == 1 and list(roof[0].y) == [100.0 + u for u in p.user_counts]
    text = readings.decode_reading(p, picks)
    assert fmt_tok_s_of(picks[0].speed.decode_tok_s_per_seq[1]) in text


def fmt_tok_s_of(x):
    from planner.format import fmt_tok_s

    return fmt_tok_s(x)


def test_ttft_vs_prompt_one_point_per_plan():
    plans = [_speed_plan(prompt_tokens=n) for n in (512, 2048, 8192)]
    fig = charts.ttft_vs_prompt(plans, [("llama.cpp", "Q4_K_M"), ("mlx-lm", "mlx-4bit-g64")])
    assert len(fig.data) == 2
    for tr, (rt, q) in zip(fig.data, [("llama.cpp", "Q4_K_M"), ("mlx-lm", "mlx-4bit-g64")]):
        assert list(tr.x) == [512, 2048, 8192]
        assert list(tr.y) == [next(o for o in pl.options if o.runtime == rt and o.quant == q).speed.ttft_s
                              for pl in plans]
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
    assert top.recipe.server in readings.recipe_text(top)
    assert len(readings.recommend_rows(r)) == len(r.options)
