"""The "Fine-tune" page: peak memory of an mlx_lm.lora run against the GPU limit (planner.finetune.plan_finetune,
= `plan finetune`), as a stacked bar, the limits, the speed and the command line. No arithmetic here: the core
computes, planner.format formats.
"""

from __future__ import annotations

import plotly.graph_objects as go

from app.readings import LABELS
from planner.finetune import FinetunePlan
from planner.format import fmt_bytes, fmt_seconds, fmt_tok_s, verdict_text
from planner.inputs import IN, render

PAGE_TITLE = "Fine-tune (LoRA / QLoRA)"
PARTS = [("weights", "base weights", "#5c6bc0"), ("adapters", "trainable parameters", "#26a69a"),
         ("gradients", "gradients", "#66bb6a"), ("optimizer", "Adam moments", "#9ccc65"),
         ("activations", "activations kept", "#ffa726"), ("transient", "backward peak", "#ef5350"),
         ("runtime", "runtime overhead", "#bdbdbd")]


def memory_chart(p: FinetunePlan) -> go.Figure:
    """One horizontal stacked bar per option (the chosen one first) against the default and raised GPU limits."""
    opts = [p.chosen, *p.alternatives]
    names = [f"{o.fine_tune_type}{' + checkpointing' if o.grad_checkpoint else ''}" for o in opts]
    fig = go.Figure()
    for key, label, colour in PARTS:
        vals = [getattr(o.memory, key) / 2**30 for o in opts]
        fig.add_trace(go.Bar(y=names, x=vals, name=label, orientation="h", marker_color=colour,
                             customdata=[fmt_bytes(getattr(o.memory, key)) for o in opts],
                             hovertemplate=f"{label}: %{{customdata}}<extra></extra>"))
    lines = [(p.wired.effective_bytes, "GPU limit", "solid", "top left")]
    if p.wired.can_raise:  # on 8 GB the highest safe limit is the default: one line, one label (no overprint)
        lines.append((p.wired.max_raise_bytes, "highest safe limit", "dot", "top right"))
    for x, text, dash, where in lines:
        fig.add_vline(x=x / 2**30, line_dash=dash, line_color="#424242",
                      annotation_text=f"{text} {fmt_bytes(x)}", annotation_position=where)
    fig.update_layout(barmode="stack", template="plotly_white", height=300, margin={"l": 10, "r": 10, "t": 60, "b": 10},
                      xaxis_title="peak memory [GiB]", legend={"orientation": "h", "y": -0.3},
                      title="Peak memory of one optimizer step (mlx_lm.lora)")
    fig.update_yaxes(autorange="reversed")
    return fig


def summary_lines(p: FinetunePlan) -> list[str]:
    r, m = p.request, p.chosen.memory
    out = [f"**{verdict_text(p.chosen.fit.verdict)}**: {fmt_bytes(m.total)} peak; {p.chosen.fit.reason}",
           f"Largest batch at {r.seq_len:,} tokens: **{p.max_batch}**; longest sequence at batch {r.batch}: "
           f"**{p.max_seq_len:,}** tokens"]
    if p.speed:
        s = p.speed
        line = (f"Training speed (an unmeasured prior): **{fmt_tok_s(s.tokens_per_s)} tok/s**, "
                f"{fmt_seconds(s.step_s)} per step")
        if s.total_s:
            line += f"; {s.steps:,} steps ≈ **{fmt_seconds(s.total_s)}** for the dataset"
        out.append(line)
    if p.lead:  # the setting that fits, which the command line below uses
        out.append("It " + render(p.lead, LABELS) + ".")
    out.append("Lengths: " + render(p.assumption.replace(f"give {IN.lengths} p50=..,p90=.. of your examples for their "
                                                         "own peak", "shorter examples need less"), LABELS))
    return out


def page() -> None:  # pragma: no cover - exercised in a real browser by tests/app/test_browser_finetune.py
    import streamlit as st

    from app.readings import for_web
    from planner import profiles
    from planner.errors import PlannerError
    from planner.finetune import FinetuneRequest, plan_finetune

    st.title(PAGE_TITLE)
    st.caption("Will an mlx_lm.lora fine-tune fit this Mac, with which batch and sequence length, and how long will "
               "it take? Peak memory of one optimizer step against the GPU memory limit.")
    models = sorted(m.id for m in profiles.all_models())
    chips = profiles.all_chips()
    c1, c2, c3, c4 = st.columns(4)
    model = c1.selectbox("Model", models, index=models.index("llama-3.1-8b") if "llama-3.1-8b" in models else 0,
                         key="ft_model")
    name = c2.selectbox("Chip", sorted({c.name for c in chips}), index=None, placeholder="(memory only)", key="ft_chip")
    bins = sorted((c for c in chips if c.name == name), key=lambda c: c.gpu_cores)
    cores = c3.selectbox("GPU cores", [c.gpu_cores for c in bins] or [None], key=f"ft_cores_{name}")
    chip = next((c for c in bins if c.gpu_cores == cores), None)
    sizes = sorted(chip.ram_options_gb) if chip else [8, 16, 18, 24, 32, 36, 48, 64, 96, 128, 192, 256, 512]
    ram = c4.selectbox("RAM", sizes, index=sizes.index(32) if 32 in sizes else 0, key=f"ft_ram_{name}_{cores}",
                       format_func=lambda g: f"{g} GB")
    d1, d2, d3, d4, d5 = st.columns(5)
    quant = d1.selectbox("Base weights", ["4bit", "8bit", "bf16"], key="ft_quant")
    kind = d2.selectbox("Type", ["lora", "dora", "full"], key="ft_type")
    seq = d3.number_input("Max sequence length", 64, 131072, 2048, step=256, key="ft_seq")
    batch = d4.number_input("Batch size", 1, 256, 4, key="ft_batch")
    layers = d5.number_input("Layers trained (-1 = all)", -1, 200, 16, key="ft_layers")
    e1, e2, e3 = st.columns(3)
    rank = e1.number_input("LoRA rank", 1, 1024, 8, key="ft_rank")
    ckpt = e2.checkbox("Gradient checkpointing", key="ft_ckpt")
    tokens = e3.number_input("Dataset tokens (0 = skip time)", 0, 10**11, 2_000_000, step=100_000, key="ft_tokens")
    try:
        p = plan_finetune(FinetuneRequest(model=model, ram=float(ram), chip=name if chip else None,
                                          gpu_cores=cores if chip else None, quant=quant, fine_tune_type=kind,
                                          seq_len=int(seq), batch=int(batch), rank=int(rank), layers=int(layers),
                                          grad_checkpoint=ckpt, dataset_tokens=int(tokens) or None))
    except (PlannerError, ValueError) as e:
        st.error(for_web(e).splitlines()[0])
        return
    box = st.success if p.chosen.fit.verdict == "fits" else st.warning if p.chosen.fit.verdict in (
        "tight", "raise-limit") else st.error
    box("  \n".join(summary_lines(p)))
    for n in p.notes:
        st.caption(for_web(n))
    st.plotly_chart(memory_chart(p), width="stretch", key="ft_chart")
    st.code(p.command + (f"\n\n# lora.yaml\n{p.lora_config}" if p.lora_config else ""), language="bash")
