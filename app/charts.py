"""Pure chart functions: result models in, plotly Figure out. No Streamlit, no I/O, no planner arithmetic.

Values are plotted in the core's own units (bytes, tokens) so a line's y-value *is* the plan's number; axis
ticks and hover labels are formatted with planner.format.
"""

from __future__ import annotations

import plotly.graph_objects as go

from planner.format import VERDICT_MARK, fmt_bytes, fmt_ctx, verdict_text
from planner.plan import Option, Plan
from planner.units import GiB

from .readings import mac_label, option_label

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
LAYOUT = dict(template="plotly_white", margin=dict(l=10, r=10, t=50, b=10), font=dict(size=13))


def byte_ticks(top: int, n: int = 8) -> tuple[list[int], list[str]]:
    """Axis ticks on whole GiB steps (1, 2, 4, 8, 16... GiB) up to ``top`` bytes, labelled by fmt_bytes."""
    step = GiB
    while top / step > n:
        step *= 2
    vals = list(range(0, top + step, step))
    return vals, [fmt_bytes(v, 0) if v else "0" for v in vals]


def memory_stack(p: Plan) -> go.Figure:
    """Stacked memory per runtime × quant against the GPU wired limit, the raise ceiling and the RAM line."""
    w = p.wired
    x = [[o.runtime for o in p.options], [o.quant for o in p.options]]  # multicategory axis: runtime, then quant
    fig = go.Figure()
    for field, name, color in STACK:
        ys = [getattr(o.memory, field) for o in p.options]
        if not any(ys):
            continue
        fig.add_bar(x=x, y=ys, name=name, marker_color=color, hovertext=[fmt_bytes(v) for v in ys],
                    hovertemplate="%{x}<br>" + name + ": %{hovertext}<extra></extra>")
    totals = [o.memory.total for o in p.options]
    fig.add_scatter(
        x=x, y=totals, mode="text", name="total", showlegend=False, textposition="top center", cliponaxis=False,
        text=[f"{VERDICT_MARK[o.fit.verdict]} {fmt_bytes(o.memory.total)}" for o in p.options],
        textfont=dict(color=[VERDICT_COLOR[o.fit.verdict] for o in p.options], size=12),
        hovertext=[f"{verdict_text(o.fit.verdict)}: {o.fit.reason}" for o in p.options],
        hovertemplate="%{x}<br>total %{text}<br>%{hovertext}<extra></extra>")
    # Lines carry no overlapping in-plot labels: each is named in the right margin, at its own height.
    fig.add_hrect(y0=w.effective_bytes, y1=w.ram_bytes, fillcolor="#9e9e9e", opacity=0.12, line_width=0)
    fig.add_hline(y=w.effective_bytes, line=dict(color="#c62828", width=2))
    side = [(w.effective_bytes, f"GPU limit {fmt_bytes(w.effective_bytes)}", "#c62828")]
    if w.max_raise_bytes != w.effective_bytes:
        fig.add_hline(y=w.max_raise_bytes, line=dict(color="#1565c0", width=1.5, dash="dash"))
        side.append((w.max_raise_bytes, f"raise to ≤ {fmt_bytes(w.max_raise_bytes)}", "#1565c0"))
    fig.add_hline(y=w.ram_bytes, line=dict(color="#424242", width=2))
    side.append((w.ram_bytes, f"RAM {p.mac.ram_gb:g} GB<br><span style='font-size:11px'>grey band: "
                              f"{fmt_bytes(w.left_for_macos_bytes)} for macOS</span>", "#424242"))
    for y, text, color in side:
        fig.add_annotation(xref="paper", x=1.0, xanchor="left", yref="y", y=y, text=text, showarrow=False,
                           font=dict(color=color, size=12), align="left")
    top = max([w.ram_bytes, *totals])
    vals, text = byte_ticks(top)
    fig.update_layout(**{**LAYOUT, "margin": dict(l=10, r=150, t=30, b=10)}, barmode="stack", height=500,
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0, xanchor="left", traceorder="normal"),
                      yaxis=dict(title="memory", tickvals=vals, ticktext=text, range=[0, vals[-1]]))
    return fig


# Heatmap categories: 0 none fit, 1 some but fewer than requested, 2 enough for the requested users.
HEAT_SCALE = [[0.0, "#f4c7c3"], [0.33, "#f4c7c3"], [0.33, "#fce8b2"], [0.66, "#fce8b2"], [0.66, "#b7e1cd"],
              [1.0, "#b7e1cd"]]


def concurrency_heatmap(p: Plan, chosen: Option | None = None) -> go.Figure:
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
                        marker=dict(symbol="square-open", size=34, color="#000", line=dict(width=3)),
                        name="your choice", showlegend=False, hoverinfo="skip")
    fig.update_layout(**LAYOUT, height=max(260, 34 * len(ys) + 90),
                      xaxis=dict(title="context per session [tokens] → cells: sessions that fit at once",
                                 type="category", side="top"),
                      yaxis=dict(type="category", autorange="reversed"))
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
                      xaxis=dict(type="category", side="top",
                                 title="cells: verdict and room left under the GPU limit (negative: over)"), yaxis=dict(type="category", autorange="reversed"))
    return fig


def all_figures(p: Plan, chosen: Option | None = None) -> dict[str, go.Figure]:
    """Every chart the single-Mac page shows, by section key. Speed charts join here when Option.speed exists."""
    return {"memory": memory_stack(p), "concurrency": concurrency_heatmap(p, chosen)}
