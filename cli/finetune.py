"""`plan finetune`: will a LoRA / QLoRA / DoRA / full fine-tune with mlx_lm.lora fit, with which batch and sequence
length, how fast, and the command line.

plan finetune --model llama-3.1-8b --ram 32 --chip "M4 Pro" --gpu-cores 20 --quant 4bit --seq-len 2048 \
              --batch 4 --rank 8 --layers 16 --dataset-tokens 2000000
"""

from __future__ import annotations

import typer

from planner.finetune import FinetuneRequest

from .options import check, opt
from .words import say

R = FinetuneRequest


def finetune_cmd(
    model: str = opt(R, "model", "--model", "-m"),
    ram: float | None = opt(R, "ram", "--ram"),
    chip: str | None = opt(R, "chip", "--chip"),
    gpu_cores: int | None = opt(R, "gpu_cores", "--gpu-cores"),
    quant: str | None = opt(R, "quant", "--quant", "-q"),
    fine_tune_type: str = opt(R, "fine_tune_type", "--fine-tune-type"),
    seq_len: int = opt(R, "seq_len", "--seq-len", "--max-seq-length"),
    batch: int = opt(R, "batch", "--batch", "--batch-size"),
    rank: int = opt(R, "rank", "--rank"),
    scale: float = opt(R, "scale", "--scale"),
    layers: int = opt(R, "layers", "--layers", "--num-layers"),
    grad_checkpoint: bool = opt(R, "grad_checkpoint", "--grad-checkpoint"),
    lengths: str | None = opt(R, "lengths", "--lengths"),
    dataset_tokens: int | None = opt(R, "dataset_tokens", "--dataset-tokens"),
    epochs: float = opt(R, "epochs", "--epochs"),
    macos: str = opt(R, "macos", "--macos"),
    wired_limit_mb: int | None = opt(R, "wired_limit_mb", "--wired-limit"),
    json_out: bool = typer.Option(False, "--json", help="Print the plan as JSON"),
):
    """Peak memory of an mlx_lm.lora fine-tune against the GPU limit, the largest batch and sequence length,
    training speed and time, and the command line."""
    from planner.finetune import plan_finetune

    from .bounds import check_options

    check_options(ram=ram, gpu_cores=gpu_cores, wired_limit=wired_limit_mb)  # the bounds of every command
    p = plan_finetune(check(R, locals()))
    from .contract import dumps

    typer.echo(dumps(p) if json_out else say(render(p)))


def render(p) -> str:
    from planner.format import fmt_bytes, fmt_seconds, fmt_tok_s, table, verdict_text

    r, m = p.request, p.chosen.memory
    kind = {"lora": "LoRA", "dora": "DoRA", "full": "full fine-tune"}[r.fine_tune_type]
    qlora = " (QLoRA)" if r.fine_tune_type != "full" and p.quant != "mlx-bf16" else ""
    lines = [f"{p.model_name} · {kind}{qlora} on {p.quant} · {p.layers_trained} of {p.n_layers} layers · "
             f"batch {r.batch} × {r.seq_len:,} tokens" + (f" · rank {r.rank}" if r.fine_tune_type != "full" else "")
             + (" · gradient checkpointing" if r.grad_checkpoint else ""),
             f"GPU limit {fmt_bytes(p.wired.effective_bytes)} of {fmt_bytes(p.wired.ram_bytes)} RAM",
             f"lengths: {p.assumption}", "",
             f"Peak memory (mlx_lm.lora, one optimizer step, batch {r.batch} × {p.padded_len:,} tokens):"]
    if p.lead:
        lines.insert(0, f"Bottom line: {p.lead}.")
    own = " (in the base weights)" if r.fine_tune_type == "full" else ""
    rows = [("base weights", m.weights), (f"trainable parameters ({m.trainable_params / 1e6:,.1f} M){own}", m.adapters),
            ("their gradients", m.gradients), ("Adam moments (2 per parameter)", m.optimizer),
            ("activations kept for the backward pass", m.activations),
            ("backward peak (attention scores, logits)", m.transient), ("runtime overhead", m.runtime),
            ("total", m.total)]
    lines.append(table([[k, fmt_bytes(v)] for k, v in rows], ["part", "bytes"], "lr"))
    if p.peak_high:
        lines.append(f"likely peak {fmt_bytes(p.peak_low)} to {fmt_bytes(p.peak_high)} (± the largest validation "
                     f"residual); mlx_lm.lora's 'Peak mem' leaves out the {fmt_bytes(m.runtime)} runtime overhead: "
                     f"{m.mlx_peak / 1e9:.2f} GB")
    lines += ["", f"verdict: {verdict_text(p.chosen.fit.verdict)}: {p.chosen.fit.reason}"]
    if p.chosen.fit.sysctl:
        lines.append(f"  {p.chosen.fit.sysctl}")
    lines.append(f"largest batch at {p.padded_len:,} tokens: {p.max_batch} · longest sequence at batch {r.batch}: "
                 f"{p.max_seq_len:,} tokens")
    alt = [[a.fine_tune_type, "on" if a.grad_checkpoint else "off", fmt_bytes(a.memory.total),
            verdict_text(a.fit.verdict)] for a in p.alternatives]
    lines += ["", "Alternatives:", table(alt, ["type", "checkpointing", "peak", "verdict"], "llrl")]
    if p.speed:
        s = p.speed
        lines += ["", f"speed (an unmeasured prior): {fmt_tok_s(s.tokens_per_s)} training tok/s, {fmt_seconds(s.step_s)} per step"
                  + (f"; {s.steps:,} steps ≈ {fmt_seconds(s.total_s)} for {r.dataset_tokens:,} tokens × {r.epochs:g} "
                     f"epoch(s)" if s.total_s else ""), f"  ({s.basis})"]
    lines += ["", "Command:", f"  {p.command}"]
    if p.lora_config:
        lines += ["  lora.yaml:"] + [f"    {ln}" for ln in p.lora_config.splitlines()]
    lines += [f"note: {n}" for n in p.notes]
    return "\n".join(lines)
