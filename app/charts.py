"""Pure chart functions: result models in, plotly Figure out. No Streamlit, no I/O, no planner arithmetic.

Values are plotted in the core's own units (bytes, tokens) so a line's y-value *is* the plan's number; axis
ticks and hover labels are formatted with planner.format.
"""

from __future__ import annotations

import plotly.graph_objects as go

from planner.format import (
    VERDICT_MARK,
    fmt_bytes,
    fmt_ctx,
    fmt_seconds,
    fmt_tok_s,
    fmt_tok_s_range,
    verdict_text,
)
from planner.plan import FitOption, Plan
from planner.units import GiB

from .readings import fitting_users, longest_context, mac_label, option_label, option_name

VERDICT_COLOR = {"fits": "#2e7d32", "tight": "#ef8f00", "raise-limit": "#1565c0", "no-fit": "#c62828"}
# (field of MemoryEstimate, legend name, colour); stacked bottom to top. All-zero components are left out.
STACK = [
    ("weights", "weights", "#4e79a7"),
    ("kv_cache", "KV cache", "#f28e2b"),
    ("recurrent_state", "recurrent state", "#edc948"),
    ("vision", "vision tower", "#b07aa1"),
    ("compute_buffer", "compute buffer", "#9c9c9c"),
    ("output_buffer", "output buffer", "#bdbdbd"),
    ("runtime_overhead", "runtime overhead", "#d7d7d7"),
]
LAYOUT = {"template": "plotly_white", "margin": {"l": 10, "r": 10, "t": 50, "b": 10}, "font": {"size": 13}}


def log_ticks(lo: float, hi: float, fmt=lambda v: f"{v:g}") -> tuple[list[float], list[str]]:
    """Ticks of a log axis at 1, 2 and 5 × 10^k from ``lo`` to ``hi``, each labelled in full: plotly's own log ticks
    print bare minor digits ("2", "5") between the decades, which read as values (issue 35)."""
    import math

    lo, hi = max(lo, 1e-9), max(hi, lo * 1.0001, 1e-9)
    vals = [m * 10.0 ** k for k in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1)
            for m in (1, 2, 5)]
    # one tick below and above the data so the ends are labelled
    below = [v for v in vals if v <= lo][-1:]
    above = [v for v in vals if v >= hi][:1]
    vals = below + [v for v in vals if lo < v < hi] + above
    return vals, [fmt(v) for v in vals]


def declutter(xs: list, ys: list, log_x: bool = False, dx: float = 0.06, dy: float = 0.04) -> list[bool]:
    """Which points keep a text label: greedily, best y first, a label is dropped when a kept one lies within
    ``dx`` of the x span (in log10 on a log axis) and ``dy`` of the y span: a label ~ 6 % wide and one line high
    at the page's chart size. The dropped ones keep their name in the hover."""
    import math

    def tx(v):
        return math.log10(v) if log_x and v and v > 0 else (v or 0.0)

    px, py = [tx(v) for v in xs], [v or 0.0 for v in ys]
    wx = (max(px) - min(px)) or 1.0 if px else 1.0
    wy = (max(py) - min(py)) or 1.0 if py else 1.0
    keep: list[int] = []
    for i in sorted(range(len(px)), key=lambda i: -py[i]):
        if all(abs(px[i] - px[j]) > dx * wx or abs(py[i] - py[j]) > dy * wy for j in keep):
            keep.append(i)
    return [i in set(keep) for i in range(len(px))]


def byte_ticks(top: int, n: int = 8) -> tuple[list[int], list[str]]:
    """Axis ticks on whole GiB steps (1, 2, 4, 8, 16... GiB) up to ``top`` bytes, labelled by fmt_bytes."""
    step = GiB
    while top / step > n:
        step *= 2
    vals = list(range(0, top + step, step))
    return vals, [fmt_bytes(v, 0) if v else "0" for v in vals]


def memory_stack(p: Plan, chosen: FitOption | None = None) -> go.Figure:
    """Stacked memory per runtime × quant (one horizontal bar each, so the totals at the bar ends never collide)
    against the GPU wired limit, the raise ceiling and the RAM line; the chosen option's label is bold."""
    w = p.wired
    ys = [_bar_label(o, chosen) for o in p.options]
    fig = go.Figure()
    for field, name, color in STACK:
        xs = [getattr(o.memory, field) for o in p.options]
        if not any(xs):
            continue
        fig.add_bar(y=ys, x=xs, name=name, orientation="h", marker_color=color, hovertext=[fmt_bytes(v) for v in xs],
                    hovertemplate="%{y}<br>" + name + ": %{hovertext}<extra></extra>")
    totals = [o.memory.total for o in p.options]
    fig.add_scatter(
        y=ys, x=totals, mode="text", name="total", showlegend=False, textposition="middle right", cliponaxis=False,
        text=[f" {VERDICT_MARK[o.fit.verdict]} {fmt_bytes(o.memory.total)}" for o in p.options],
        textfont={"color": [VERDICT_COLOR[o.fit.verdict] for o in p.options], "size": 12},
        hovertext=[f"{verdict_text(o.fit.verdict)}: {o.fit.reason}" for o in p.options],
        hovertemplate="%{y}<br>total %{text}<br>%{hovertext}<extra></extra>")
    # Lines are named above the plot (limit, RAM) and below it (raise ceiling), each at its own x.
    fig.add_vrect(x0=w.effective_bytes, x1=w.ram_bytes, fillcolor="#9e9e9e", opacity=0.12, line_width=0)
    fig.add_vline(x=w.effective_bytes, line={"color": "#c62828", "width": 2})
    side = [(w.effective_bytes, f"GPU limit {fmt_bytes(w.effective_bytes)}", "#c62828", 1.0, "bottom", "right")]
    if w.max_raise_bytes != w.effective_bytes:
        fig.add_vline(x=w.max_raise_bytes, line={"color": "#1565c0", "width": 1.5, "dash": "dash"})
        side.append((w.max_raise_bytes, f"raise to ≤ {fmt_bytes(w.max_raise_bytes)}", "#1565c0", 1.08, "bottom",
                     "center"))
    fig.add_vline(x=w.ram_bytes, line={"color": "#424242", "width": 2})
    side.append((w.ram_bytes, f"RAM {p.mac.ram_gb:g} GB", "#424242", 1.0, "bottom", "right"))
    for x, text, color, y, yanchor, xanchor in side:
        fig.add_annotation(xref="x", x=x, yref="paper", y=y, yanchor=yanchor, xanchor=xanchor, text=text,
                           showarrow=False, font={"color": color, "size": 12})
    top = max([w.ram_bytes, *totals])
    vals, text = byte_ticks(top)
    fig.update_layout(**{**LAYOUT, "margin": {"l": 10, "r": 80, "t": 60, "b": 40}}, barmode="stack",
                      height=max(300, 26 * len(ys) + 160),
                      legend={"orientation": "h", "yanchor": "top", "y": -0.08, "x": 0, "xanchor": "left",
                              "traceorder": "normal"},
                      yaxis={"type": "category", "autorange": "reversed"},
                      xaxis={"title": None, "tickvals": vals, "ticktext": text, "range": [0, vals[-1]]})
    return fig


def _bar_label(o: FitOption, chosen: FitOption | None) -> str:
    label = option_label(o)
    return f"<b>{label}</b>" if chosen is not None and (o.runtime, o.quant) == (chosen.runtime, chosen.quant) else label


# Heatmap categories: 0 none fit, 1 some but fewer than requested, 2 enough for the requested users.
HEAT_SCALE = [[0.0, "#f4c7c3"], [0.33, "#f4c7c3"], [0.33, "#fce8b2"], [0.66, "#fce8b2"], [0.66, "#b7e1cd"],
              [1.0, "#b7e1cd"]]


def concurrency_heatmap(p: Plan, chosen: FitOption | None = None) -> go.Figure:
    """Safe concurrent sessions for every option × context; the chosen option at the requested context is boxed."""
    users = p.request.users
    xs = [fmt_ctx(c) for c in p.contexts]
    ys = [option_label(o) for o in p.options]
    z, text = [], []
    for o in p.options:
        counts = [o.safe_users[c] for c in p.contexts]
        z.append([0 if n == 0 else (2 if n >= users else 1) for n in counts])
        text.append([str(n) for n in counts])
    fig = go.Figure(go.Heatmap(
        x=xs, y=ys, z=z, text=text, texttemplate="%{text}", zmin=0, zmax=2, colorscale=HEAT_SCALE,
        showscale=False, xgap=2, ygap=2, hovertemplate="%{y} at %{x} tokens: %{text} sessions<extra></extra>"))
    if chosen is not None:
        fig.add_scatter(x=[fmt_ctx(chosen.memory.context)], y=[option_label(chosen)], mode="markers",
                        cliponaxis=False,
                        marker={"symbol": "square-open", "size": 34, "color": "#000", "line": {"width": 3}},
                        name="your choice", showlegend=False, hoverinfo="skip")
    fig.update_layout(**LAYOUT, height=max(260, 34 * len(ys) + 90),
                      xaxis={"title": "context per session [tokens] → cells: sessions that fit at once",
                                 "type": "category", "side": "top"},
                      yaxis={"type": "category", "autorange": "reversed"})
    return fig


VERDICT_CODE = {"no-fit": 0, "raise-limit": 1, "tight": 2, "fits": 3}
VERDICT_SCALE = [[0.0, "#f4c7c3"], [0.25, "#f4c7c3"], [0.25, "#c6dafc"], [0.5, "#c6dafc"], [0.5, "#fce8b2"],
                 [0.75, "#fce8b2"], [0.75, "#b7e1cd"], [1.0, "#b7e1cd"]]


def compare_macs(plans: list[Plan]) -> go.Figure:
    """Verdict matrix: runtime × quant (rows) on each Mac (columns), cells show the verdict and the headroom."""
    xs = [mac_label(p).replace(", ", "<br>") for p in plans]
    ys = [option_label(o) for o in plans[0].options]
    z, text = [], []
    for i in range(len(ys)):
        z.append([VERDICT_CODE[p.options[i].fit.verdict] for p in plans])
        text.append([f"{VERDICT_MARK[p.options[i].fit.verdict]} {fmt_bytes(p.options[i].fit.headroom_bytes)}"
                     for p in plans])
    hover = [[f"{verdict_text(p.options[i].fit.verdict)}: {p.options[i].fit.reason}" for p in plans]
             for i in range(len(ys))]
    fig = go.Figure(go.Heatmap(
        x=xs, y=ys, z=z, text=text, customdata=hover, texttemplate="%{text}", zmin=0, zmax=3,
        colorscale=VERDICT_SCALE, showscale=False, xgap=2, ygap=2,
        hovertemplate="%{y} on %{x}<br>%{customdata}<extra></extra>"))
    fig.update_layout(**LAYOUT, height=max(260, 34 * len(ys) + 110),
                      xaxis={"type": "category", "side": "top",
                                 "title": "cells: verdict and room left under the GPU limit (negative: over)"}, yaxis={"type": "category", "autorange": "reversed"})
    return fig


def has_speed(p: Plan) -> bool:
    return any(_speed(o) is not None for o in p.options)


def chart_sections(p: Plan) -> list[str]:
    """The charts the single-Mac page draws, in order: memory and concurrency always; speed ones with a chip."""
    return ["memory", "concurrency", *(["decode", "ttft"] if has_speed(p) else [])]


def jitter(prices: list[float], step: float) -> list[float]:
    """x positions for dots at equal prices: spread symmetrically around the price by ``step`` dollars each, so
    three Macs at $3,999 sit side by side instead of on top of each other (the hover keeps the true price)."""
    count: dict[float, int] = {}
    for p in prices:
        count[p] = count.get(p, 0) + 1
    seen: dict[float, int] = {}
    out = []
    for p in prices:
        k = seen.get(p, 0)
        seen[p] = k + 1
        out.append(p + (k - (count[p] - 1) / 2) * step)
    return out


def _likely_bars(rows, b, color: str) -> dict | None:
    """Error bars from each Mac's 80 % likely per-user decode range (planner.search.Speed.decode_tok_s_range), when the
    chart's axis is per-user decode."""
    if b.speed_axis != "decode_tok_s_per_user" or any(x.decode_tok_s_range is None for x in rows):
        return None
    return {"type": "data", "symmetric": False, "color": color, "thickness": 1, "width": 0,
            "array": [x.decode_tok_s_range[1] - x.decode_tok_s_per_user for x in rows],
            "arrayminus": [x.decode_tok_s_per_user - x.decode_tok_s_range[0] for x in rows]}


def price_performance(b) -> go.Figure:
    """Price against speed for the best configuration of every Mac (planner.buy.BuyResult.per_mac). The y axis is
    ``b.speed_axis`` (per-user decode tok/s; aggregate for throughput workloads), the metric "fastest" is ranked by.
    The Pareto front is a line through filled diamonds; equal prices are spread apart; Macs over the budget are
    faded and the budget is a dashed line. Memory-only results plot RAM instead of speed."""
    rows = b.per_mac
    speed = any(b.speed(x) is not None for x in rows)
    axis = "aggregate decode tok/s" if b.speed_axis == "decode_tok_s" else "decode tok/s per user"
    span = max((x.price_usd for x in rows), default=1) - min((x.price_usd for x in rows), default=0)
    xs = dict(zip((x.mac for x in rows), jitter([x.price_usd for x in rows], max(span, 1000) * 0.006)))

    def y(x):
        return b.speed(x) if speed else x.ram_gb

    def hover(x):
        rng = f" (likely {fmt_tok_s(x.decode_tok_s_range[0])}–{fmt_tok_s(x.decode_tok_s_range[1])})" if x.decode_tok_s_range else ""
        sp = (f"{fmt_tok_s(x.decode_tok_s_per_user)} tok/s per user{rng}, first token {fmt_seconds(x.ttft_s)}<br>"
              if x.decode_tok_s_per_user is not None else "")
        miss = "".join(f"<br>misses: {k} by {v:.0%}" for k, v in x.misses.items())
        return (f"{x.product}<br>{x.chip_label}, {x.ram_gb} GB: ${x.price_usd:,.0f} ({x.price_confidence} price)<br>"
                f"{x.runtime} · {x.quant}<br>{sp}{verdict_text(x.verdict)}; bound by {x.binding}{miss}")

    fig = go.Figure()
    groups = (("meets the targets", "#2e7d32", 0.85, lambda x: x.meets_targets and x.within_budget),
              ("misses a target", "#9e9e9e", 0.85, lambda x: not x.meets_targets and x.within_budget),
              ("over budget", "#cfcfcf", 0.5, lambda x: not x.within_budget))
    for name, color, opacity, keep in groups:
        sel = [x for x in rows if keep(x)]
        if sel:
            fig.add_scatter(x=[xs[x.mac] for x in sel], y=[y(x) for x in sel], mode="markers", name=name,
                            marker={"color": color, "size": 9, "opacity": opacity}, hovertext=[hover(x) for x in sel],
                            hovertemplate="%{hovertext}<extra></extra>", error_y=_likely_bars(sel, b, color))
    if b.pareto:
        # each front Mac named next to its diamond (issue 35: unlabelled dots), alternately above and below so
        # neighbours do not overlap; the others keep their name in the hover
        fig.add_scatter(x=[xs[x.mac] for x in b.pareto], y=[y(x) for x in b.pareto], mode="lines+markers+text",
                        text=[f"{x.chip} {x.ram_gb:g} GB" for x in b.pareto],
                        textposition=["top left" if i % 2 == 0 else "bottom right" for i in range(len(b.pareto))],
                        textfont={"size": 11, "color": "#1565c0"}, cliponaxis=False,
                        name="Pareto front", line={"color": "#1565c0", "width": 2, "shape": "hv"},
                        marker={"symbol": "diamond", "size": 12, "color": "#1565c0", "line": {"color": "#fff", "width": 1}},
                        hovertext=[hover(x) for x in b.pareto], hovertemplate="%{hovertext}<extra></extra>")
    picks = ((b.best_value, "best value (tok/s per $)", "circle-open", 26, "#6a1b9a"),
             (b.fastest_within_budget, f"fastest (highest {axis})", "triangle-up", 18, "#c62828"),
             (b.cheapest, "cheapest that meets the targets", "star", 18, "#ef8f00"))
    for pick, name, symbol, size, color in picks:  # best value first and larger: the others stay visible inside
        if pick is not None:
            fig.add_scatter(x=[xs[pick.mac]], y=[y(pick)], mode="markers", name=name,
                            marker={"symbol": symbol, "size": size, "color": color,
                                    "line": {"color": color if symbol.endswith("open") else "#000", "width": 2}},
                            hovertext=[hover(pick)], hovertemplate="%{hovertext}<extra></extra>")
    xrange = None
    if b.budget_usd:
        fig.add_vline(x=b.budget_usd, line={"dash": "dash", "color": "#555"},
                      annotation_text=f"budget ${b.budget_usd:,.0f}", annotation_position="top left")
        lo = min((x.price_usd for x in rows), default=0)
        xrange = [lo - 0.1 * (b.budget_usd - lo) - 100, b.budget_usd + 0.6 * max(b.budget_usd - lo, 500)]
    fig.update_layout(**LAYOUT, height=480,
                      legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0, "xanchor": "left"},
                      xaxis={"title": "price [USD] (equal prices spread apart; zoom out for Macs over the "
                                      "budget)" if xrange else "price [USD] (equal prices spread apart)",
                             "tickprefix": "$", "separatethousands": True, "range": xrange},
                      yaxis={"title": axis if speed else "RAM [GB] (no speed model)"})
    return fig


# ----------------------------------------------------------------------------- speed (FitOption.speed, planner.throughput)
RUNTIME_COLOR = {"llama.cpp": "#4e79a7", "mlx-lm": "#e15759", "ollama": "#59a14f"}


def _speed(o: FitOption):
    return getattr(o, "speed", None)


def _limit_line(fig: go.Figure, x, top: float, text: str, color: str) -> None:
    """A vertical dotted line from 0 to ``top`` at ``x`` (a trace, so it sits in data units on any axis type) with
    the reason the curve stops there."""
    fig.add_scatter(x=[x, x], y=[0, top], mode="lines+text", text=["", text], textposition="top left",
                    line={"color": color, "width": 1.5, "dash": "dot"}, name=f"limit: {text}", showlegend=False,
                    textfont={"color": color, "size": 12}, hoverinfo="skip", cliponaxis=False)


def decode_vs_users(p: Plan, options: list[FitOption], ceilings: dict[str, dict[int, float]] | None = None) -> go.Figure:
    """Decode tok/s each user sees against concurrent users, drawn only up to the users that fit in memory at the
    requested context (a dotted line marks where it stops); ``ceilings`` (option label -> users -> tok/s, from the
    speed core) adds each option's bandwidth roofline per user: the speed if every byte moved at peak bandwidth.
    The total over all users is in the hover text (a per-user ceiling would sit below a total line)."""
    fig = go.Figure()
    ctx = p.request.context
    for o in options:
        sp = _speed(o)
        users = fitting_users(p, o)
        if sp is None or not users:
            continue
        color = RUNTIME_COLOR.get(o.runtime, "#555")
        name = option_name(o)
        xs = [str(u) for u in users]
        fig.add_scatter(x=xs, y=[sp.decode_tok_s_per_seq[u] for u in users], mode="lines+markers",
                        name=f"{name}: per user", line={"color": color, "width": 2.5},
                        hovertext=[f"{fmt_tok_s_range(sp.decode_tok_s_per_seq[u], sp.decode_tok_s_range.get(u))} per user, "
                                   f"{fmt_tok_s(sp.decode_tok_s_total[u])} tok/s for all {u}; {sp.bound[u]}-bound"
                                   for u in users], hovertemplate="%{x} users: %{hovertext}<extra></extra>")
        ceiling = (ceilings or {}).get(option_label(o))
        if ceiling:
            fig.add_scatter(x=xs, y=[ceiling[u] for u in users], mode="lines",
                            name=f"{name}: bandwidth ceiling", line={"color": color, "width": 1.5, "dash": "dot"},
                            hovertext=[f"at most {fmt_tok_s(ceiling[u])} tok/s per user (peak bandwidth)"
                                       for u in users], hovertemplate="%{x} users: %{hovertext}<extra></extra>")
        if users[-1] < p.user_counts[-1]:
            top = max([sp.decode_tok_s_per_seq[users[0]], *(ceiling or {}).values()])
            _limit_line(fig, xs[-1], top, f"{users[-1]} fit at {fmt_ctx(ctx)} ", color)
    fig.update_layout(**LAYOUT, height=420,
                      legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0, "xanchor": "left"},
                      xaxis={"title": f"concurrent users, each with a {fmt_ctx(ctx)}-token context", "type": "category",
                             "categoryorder": "array", "categoryarray": [str(u) for u in p.user_counts]},
                      yaxis={"title": "decode speed per user [tok/s]", "rangemode": "tozero"})
    return fig


def ttft_vs_prompt(plans: list[Plan], picks: list[FitOption], gen_tokens: int, users: int) -> go.Figure:
    """Time to first token against prompt length. ``plans`` are the same request at several prompt lengths;
    ``picks`` the options to draw, each only for prompts that fit with the answer in its longest context at the
    requested users (a dotted line marks that limit)."""
    fig = go.Figure()
    for pick in picks:
        limit = longest_context(pick, users)
        xs, ys = [], []
        for pl in plans:
            o = next((o for o in pl.options if (o.runtime, o.quant) == (pick.runtime, pick.quant)), None)
            if o is not None and _speed(o) is not None and pl.request.prompt + gen_tokens <= limit:
                xs.append(pl.request.prompt)
                ys.append(o.speed.ttft_s)
        if not xs:
            continue
        color = RUNTIME_COLOR.get(pick.runtime, "#555")
        fig.add_scatter(x=xs, y=ys, mode="lines+markers", name=option_name(pick), line={"color": color, "width": 2.5},
                        hovertext=[f"{fmt_ctx(x)} prompt: first token after {fmt_seconds(y)}" for x, y in zip(xs, ys)],
                        hovertemplate="%{hovertext}<extra></extra>")
        if limit < plans[0].model.max_context:  # memory, not the model, ends the line: mark it
            _limit_line(fig, xs[-1], max(ys), f"longest context that fits: {fmt_ctx(limit)} ", color)
    ticks = sorted({pl.request.prompt for pl in plans})
    fig.update_layout(**LAYOUT, height=420,
                      legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0, "xanchor": "left"},
                      xaxis={"title": "prompt length [tokens]", "type": "log", "tickvals": ticks,
                             "ticktext": [fmt_ctx(t) for t in ticks]},
                      yaxis={"title": "time to first token [s]", "rangemode": "tozero"})
    return fig


def serve_curve(r) -> go.Figure:
    """Latency against offered load (a ServeResult's curve): TTFT p50 and p95 per request rate, the saturation
    rate as a vertical line in its likely range (shaded), the requested rate marked."""
    xs = [p.rate_per_s * 60 for p in r.curve]
    fig = go.Figure()
    for name, ys, dash in (("TTFT p95", [p.ttft_p95_s for p in r.curve], "solid"),
                           ("TTFT p50", [p.ttft_p50_s for p in r.curve], "dot")):
        fig.add_scatter(x=xs, y=ys, mode="lines+markers", name=name, line={"width": 2.5, "dash": dash},
                        hovertext=[f"{x:.1f} requests/min: {name} {fmt_seconds(y)}" for x, y in zip(xs, ys)],
                        hovertemplate="%{hovertext}<extra></extra>")
    fig.add_vline(x=r.saturation_rate_per_s * 60, line={"color": "#c0392b", "dash": "dash"},
                  annotation_text="queue grows without bound", annotation_position="top left")
    if r.saturation_slow_per_s is not None:   # the saturation rate across the calibration's 80 % speed range
        fig.add_vrect(x0=r.saturation_slow_per_s * 60, x1=r.saturation_fast_per_s * 60, fillcolor="#c0392b",
                      opacity=0.08, line_width=0)
    fig.add_vline(x=r.rate_per_s * 60, line={"color": "#555", "dash": "dot"}, annotation_text="your rate",
                  annotation_position="bottom right")
    if r.target_ttft_p95_s:
        fig.add_hline(y=r.target_ttft_p95_s, line={"color": "#27ae60", "dash": "dash"},
                      annotation_text=f"TTFT p95 target {r.target_ttft_p95_s:g} s")
    ys = [y for p in r.curve for y in (p.ttft_p50_s, p.ttft_p95_s) if y and y > 0] + (
        [r.target_ttft_p95_s] if r.target_ttft_p95_s else [])
    tv, tt = log_ticks(min(ys, default=0.1), max(ys, default=10.0), fmt_seconds)
    fig.update_layout(**LAYOUT, height=420,
                      legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0, "xanchor": "left"},
                      xaxis={"title": f"requests per minute ({r.slots} slots)", "rangemode": "tozero"},
                      yaxis={"title": "time to first token [s]", "type": "log", "tickvals": tv, "ticktext": tt})
    return fig
