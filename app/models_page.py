"""The "What can I run?" page: the catalog ranked for one Mac (planner.models.what_runs, = `plan models`), as a
table and a Plotly chart of published quality against decode speed. No arithmetic: numbers via planner.format.
"""

from __future__ import annotations

import plotly.graph_objects as go

from planner.format import SCORE_CAVEAT_NOTE, fmt_bytes, fmt_ctx, fmt_params, fmt_score, fmt_tok_s
from planner.results import ModelRow, ModelsResult

PAGE_TITLE = "What can I run on this Mac?"
NO_CHIP = "(no chip: memory only)"
MARK = {"fits": "#2e7d32", "tight": "#ef8f00", "raise-limit": "#1565c0", "no-fit": "#c62828"}


def table_rows(r: ModelsResult, rows: list[ModelRow]) -> list[dict[str, str]]:
    """One dict per row, the same columns as `plan models` (text, formatted at the edge)."""
    out = []
    for x in rows:
        d = {"#": str(x.rank), "model": x.model, "params": fmt_params(x.params_b * 1e9), "runtime": x.runtime,
             "quant": x.quant, "KV": x.kv_type,
             "fits (ctx @users · users @ctx)": f"{fmt_ctx(x.max_context)} · {x.max_users}"
             if x.verdict != "no-fit" else "does not fit"}
        if r.chip is not None:
            emb = "embedding" in x.tasks
            d["decode tok/s"] = "–" if emb else fmt_tok_s(x.decode_tok_s_per_user)
            d["range"] = (f"{fmt_tok_s(x.decode_tok_s_range[0])}–{fmt_tok_s(x.decode_tok_s_range[1])}"
                          if x.decode_tok_s_range and not emb else "–")
            d["prefill tok/s"] = fmt_tok_s(x.prefill_tok_s)
        d["score"] = fmt_score(x.score, x.score_caveats)
        d["memory left"] = fmt_bytes(x.memory_left_bytes)
        d["note"] = "; ".join(m.split(":")[0] for m in x.misses) or ""
        out.append(d)
    return out


def quality_speed_chart(r: ModelsResult) -> go.Figure:
    """Published score (y) against decode tok/s per user (x; memory left without a chip), one point per scored
    model, coloured by the memory verdict. Unscored models have no y and are left out (the table lists them)."""
    pts = [x for x in r.rows if x.score is not None]
    speed = r.chip is not None
    xs = [x.decode_tok_s_per_user if speed else x.memory_left_bytes / 2**30 for x in pts]
    from app.charts import declutter

    shown = declutter(xs, [x.score for x in pts], log_x=speed)  # names that would overlap stay in the hover
    fig = go.Figure()
    for verdict, colour in MARK.items():
        sel = [i for i, x in enumerate(pts) if x.verdict == verdict]
        if not sel:
            continue
        fig.add_trace(go.Scatter(
            x=[xs[i] for i in sel], y=[pts[i].score for i in sel], mode="markers+text", name=verdict,
            text=[pts[i].model if shown[i] else "" for i in sel], hovertext=[pts[i].model for i in sel],
            textposition="top center", textfont={"size": 10},
            marker={"color": colour, "size": 9, "symbol": ["circle" if pts[i].meets else "circle-open" for i in sel]},
            customdata=[[pts[i].runtime, pts[i].quant, fmt_tok_s(pts[i].decode_tok_s_per_user), fmt_bytes(pts[i].memory_left_bytes)]
                        for i in sel],
            hovertemplate="%{hovertext}<br>%{customdata[0]} %{customdata[1]}<br>score %{y:.1f}<br>decode "
                          "%{customdata[2]} tok/s<br>memory left %{customdata[3]}<extra></extra>"))
    bench = next((x.benchmark for x in pts if x.benchmark), "score")
    fig.update_layout(
        template="plotly_white", margin={"l": 10, "r": 10, "t": 50, "b": 10}, height=520,
        title=f"{bench} vs {'decode speed' if speed else 'memory left'} ({len(pts)} scored models; open = misses a filter)",
        xaxis_title="decode tok/s per user (log)" if speed else "memory left under the GPU limit [GiB]",
        yaxis_title=f"{bench} [%]", legend_title="memory")
    if speed:
        from app.charts import log_ticks

        pos = [v for v in xs if v and v > 0]
        tv, tt = log_ticks(min(pos, default=1.0), max(pos, default=100.0))
        fig.update_xaxes(type="log", tickvals=tv, ticktext=tt)  # labelled 1-2-5 ticks, no bare minor digits
    return fig


def page() -> None:  # pragma: no cover - exercised by tests/app/test_browser_models.py in a real browser
    import streamlit as st

    from app.readings import for_web
    from planner import profiles
    from planner.errors import PlannerError
    from planner.models import TASKS

    st.title(PAGE_TITLE)
    st.caption("Every catalog model that runs on the Mac, best first: the highest published benchmark score that "
               "meets the speed and context asked for, each with its best runtime, quantization and KV cache.")
    chips = profiles.all_chips()
    names = [NO_CHIP, *sorted({c.name for c in chips})]
    c1, c2, c3, c4 = st.columns(4)
    name = c1.selectbox("Chip", names, index=names.index("M4 Max") if "M4 Max" in names else 0, key="mr_chip")
    bins = sorted((c for c in chips if c.name == name), key=lambda c: c.gpu_cores)
    cores = c2.selectbox("GPU cores", [c.gpu_cores for c in bins] or ["–"], index=max(len(bins) - 1, 0),
                         key=f"mr_cores_{name}")
    chip = next((c for c in bins if c.gpu_cores == cores), None)
    sizes = sorted(chip.ram_options_gb) if chip else [8, 16, 18, 24, 32, 36, 48, 64, 96, 128, 192, 256, 512]
    ram = c3.selectbox("Unified memory (RAM)", sizes, index=sizes.index(64) if 64 in sizes else len(sizes) - 1,
                       key=f"mr_ram_{name}_{cores}", format_func=lambda g: f"{g} GB")
    task = c4.selectbox("Task", ["any", *TASKS], key="mr_task")
    d1, d2, d3, d4 = st.columns(4)
    min_tok_s = d1.number_input("Minimum decode tok/s (0 = none)", 0.0, 10_000.0, 0.0, step=5.0, key="mr_min")
    context = d2.select_slider("Context per user", [2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144],
                               value=8192, key="mr_ctx", format_func=fmt_ctx)
    users = d3.number_input("Concurrent users", 1, 256, 1, key="mr_users")
    max_params = d4.number_input("Largest model [B params] (0 = any)", 0.0, 2000.0, 0.0, step=1.0, key="mr_maxp")
    try:
        r = _cached(float(ram), chip.id if chip else None, None if task == "any" else task, min_tok_s or None,
                    int(context), int(users), max_params or None)
    except PlannerError as e:
        st.error(for_web(e))
        return
    head = f"{r.chip_label}, {r.ram_gb:g} GB" if r.chip else f"{r.ram_gb:g} GB (pick a chip for speed)"
    st.info(f"{head}: {len(r.rows)} models. {r.quality_basis[:1].upper() + r.quality_basis[1:]}.")
    if r.best_effort:
        st.warning("Nothing meets every filter; the closest are shown. " + " ".join(for_web(b) for b in r.binding))
    st.plotly_chart(quality_speed_chart(r), width="stretch", key="mr_chart")
    st.table(table_rows(r, r.rows))
    if r.embedding_rows:
        st.subheader("Embedding models (ranked among themselves)")
        st.table(table_rows(r, r.embedding_rows))
    if any(x.score_caveats for x in (*r.rows, *r.embedding_rows)):
        st.caption(SCORE_CAVEAT_NOTE)
    for n in r.notes:
        st.caption(for_web(n))


def _cached(ram: float, chip_id: str | None, task, min_tok_s, context: int, users: int, max_params) -> ModelsResult:
    import streamlit as st

    @st.cache_data(max_entries=64, show_spinner="Ranking the catalog...")
    def run(ram, chip_id, task, min_tok_s, context, users, max_params) -> str:
        from planner import profiles
        from planner.models import Query, what_runs

        chip = profiles.resolve_chip(chip_id) if chip_id else None
        return what_runs(Query(ram_gb=ram, chip=chip, task=task, min_tok_s=min_tok_s, context=context, users=users,
                               max_params_b=max_params)).model_dump_json()

    return ModelsResult.model_validate_json(run(ram, chip_id, task, min_tok_s, context, users, max_params))
