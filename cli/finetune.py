"""`plan finetune`: will a LoRA / QLoRA / DoRA / full fine-tune with mlx_lm.lora fit, with which batch and sequence
length, how fast, and the command line.

plan finetune --model llama-3.1-8b --ram 32 --chip "M4 Pro" --gpu-cores 20 --quant 4bit --seq-len 2048 \
              --batch 4 --rank 8 --layers 16 --dataset-tokens 2000000
"""

from __future__ import annotations

import typer

from planner.finetune import FinetuneRequest

_H = {k: f.description for k, f in FinetuneRequest.model_fields.items()}


def finetune_cmd(
    model: str = typer.Option(..., "--model", "-m", help=_H["model"]),
    ram: float | None = typer.Option(None, "--ram", help=_H["ram_gb"]),
    chip: str | None = typer.Option(None, "--chip", help=_H["chip"]),
    gpu_cores: int | None = typer.Option(None, "--gpu-cores", help=_H["gpu_cores"]),
    quant: str = typer.Option("4bit", "--quant", "-q", help=_H["quant"]),
    fine_tune_type: str = typer.Option("lora", "--fine-tune-type", help=_H["fine_tune_type"]),
    seq_len: int = typer.Option(2048, "--seq-len", "--max-seq-length", help=_H["seq_len"]),
    batch: int = typer.Option(4, "--batch", "--batch-size", help=_H["batch"]),
    rank: int = typer.Option(8, "--rank", help=_H["rank"]),
    scale: float = typer.Option(20.0, "--scale", help=_H["scale"]),
    layers: int = typer.Option(16, "--layers", "--num-layers", help=_H["layers"]),
    grad_checkpoint: bool = typer.Option(False, "--grad-checkpoint", help=_H["grad_checkpoint"]),
    dataset_tokens: int | None = typer.Option(None, "--dataset-tokens", help=_H["dataset_tokens"]),
    epochs: float = typer.Option(1.0, "--epochs", help=_H["epochs"]),
    macos: str = typer.Option("15", "--macos", help=_H["macos"]),
    wired_limit: int | None = typer.Option(None, "--wired-limit", help=_H["wired_limit_mb"]),
    json_out: bool = typer.Option(False, "--json", help="Print the plan as JSON"),
):
    """Peak memory of an mlx_lm.lora fine-tune against the GPU limit, the largest batch and sequence length,
    training speed and time, and the command line."""
    from planner.finetune import plan_finetune

    req = FinetuneRequest(model=model, ram_gb=ram, chip=chip, gpu_cores=gpu_cores, quant=quant,
                          fine_tune_type=fine_tune_type, seq_len=seq_len, batch=batch, rank=rank, scale=scale,
                          layers=layers, grad_checkpoint=grad_checkpoint, dataset_tokens=dataset_tokens, epochs=epochs,
                          macos=macos, wired_limit_mb=wired_limit)
    p = plan_finetune(req)
    typer.echo(p.model_dump_json(indent=2) if json_out else render(p))


def render(p) -> str:
    from planner.format import fmt_bytes, fmt_seconds, fmt_tok_s, table, verdict_text

    r, m = p.request, p.chosen.memory
    kind = {"lora": "LoRA", "dora": "DoRA", "full": "full fine-tune"}[r.fine_tune_type]
    qlora = " (QLoRA)" if r.fine_tune_type != "full" and p.quant != "mlx-bf16" else ""
    lines = [f"{p.model_name} · {kind}{qlora} on {p.quant} · {p.layers_trained} of {p.n_layers} layers · "
             f"batch {r.batch} × {r.seq_len:,} tokens" + (f" · rank {r.rank}" if r.fine_tune_type != "full" else "")
             + (" · gradient checkpointing" if r.grad_checkpoint else ""),
             f"GPU limit {fmt_bytes(p.wired.effective_bytes)} of {fmt_bytes(p.wired.ram_bytes)} RAM", "",
             "Peak memory (mlx_lm.lora, one optimizer step):"]
    rows = [("base weights", m.weights), (f"trainable parameters ({m.trainable_params / 1e6:,.1f} M)", m.adapters),
            ("their gradients", m.gradients), ("Adam moments (2 per parameter)", m.optimizer),
            ("activations kept for the backward pass", m.activations),
            ("backward peak (attention scores, logits)", m.transient), ("runtime overhead", m.runtime),
            ("total", m.total)]
    lines.append(table([[k, fmt_bytes(v)] for k, v in rows], ["part", "bytes"], "lr"))
    lines += ["", f"verdict: {verdict_text(p.chosen.fit.verdict)}: {p.chosen.fit.reason}"]
    if p.chosen.fit.sysctl:
        lines.append(f"  {p.chosen.fit.sysctl}")
    lines.append(f"largest batch at {r.seq_len:,} tokens: {p.max_batch} · longest sequence at batch {r.batch}: "
                 f"{p.max_seq_len:,} tokens")
    alt = [[a.fine_tune_type, "on" if a.grad_checkpoint else "off", fmt_bytes(a.memory.total),
            verdict_text(a.fit.verdict)] for a in p.alternatives]
    lines += ["", "Alternatives:", table(alt, ["type", "checkpointing", "peak", "verdict"], "llrl")]
    if p.speed:
        s = p.speed
        lines += ["", f"speed: {fmt_tok_s(s.tokens_per_s)} training tok/s, {fmt_seconds(s.step_s)} per step"
                  + (f"; {s.steps:,} steps ≈ {fmt_seconds(s.total_s)} for {r.dataset_tokens:,} tokens × {r.epochs:g} "
                     f"epoch(s)" if s.total_s else ""), f"  ({s.basis})"]
    lines += ["", "Command:", f"  {p.command}"]
    if p.lora_config:
        lines += ["  lora.yaml:"] + [f"    {ln}" for ln in p.lora_config.splitlines()]
    lines += [f"note: {n}" for n in p.notes]
    return "\n".join(lines)
