"""`plan predict`: speed and memory of one (chip, runtime, model, quant) at one workload (the prediction contract).

plan predict --chip "M3 Max" --gpu-cores 40 --ram 64 --model llama-2-7b --quant Q4_0 --runtime llama.cpp \
             --prompt 512 --gen 128 --depth 0 --batch 1 --json
"""

from __future__ import annotations

import json

import typer

from planner.predict import predict_result


def render(r: dict) -> str:
    from planner.format import fmt_bytes, fmt_seconds, fmt_tok_s, fmt_tok_s_range, verdict_text

    lines = [
        f"{r['model']} {r['quant']} on {r['chip']} ({r['ram_gb']:g} GB) with {r['runtime']}: "
        f"prompt {r['prompt_tokens']} @ depth {r['depth']}, gen {r['gen_tokens']}, batch {r['batch']}",
        f"  prefill   {fmt_tok_s_range(r['prefill_tok_s'], r['prefill_tok_s_range'])}   TTFT {fmt_seconds(r['ttft_s'])}",
        f"  decode    {fmt_tok_s_range(r['decode_tok_s_per_seq'], r['decode_tok_s_range'])} per sequence, "
        f"{fmt_tok_s(r['decode_tok_s'])} total "
        f"({r['bound']}-bound; ceiling {fmt_tok_s(r['decode_ceiling_tok_s'])} tok/s; compute-bound from batch "
        f"{r['knee_batch'] or '>4096'})",
        f"  request   {fmt_seconds(r['time_per_request_s'])}",
        f"  memory    {fmt_bytes(r['peak_memory_bytes'])} of {fmt_bytes(r['wired_limit_bytes'])} GPU limit: "
        f"{verdict_text(r['fit_verdict'])}",
        f"  calibration: {r['calibration']}",
    ]
    lines += [f"  note: {n}" for n in r["notes"]]
    return "\n".join(lines)


def predict_cmd(
    chip: str = typer.Option(..., "--chip", help="Apple chip, e.g. 'M3 Max'"),
    gpu_cores: int | None = typer.Option(None, "--gpu-cores", help="GPU cores (needed for binned chips)"),
    ram: float | None = typer.Option(None, "--ram", help="Unified memory [GB]; default: the chip's largest"),
    model: str = typer.Option(..., "--model", "-m", help="Catalog id or alias, e.g. llama-2-7b"),
    quant: str = typer.Option(..., "--quant", "-q", help="GGUF preset (Q4_K_M) or MLX format (4bit, 8bit-g32, bf16)"),
    runtime: str = typer.Option("llama.cpp", "--runtime", "-r", help="llama.cpp, mlx-lm or ollama"),
    prompt: int = typer.Option(512, "--prompt", help="New prompt tokens per sequence (llama-bench ppP)"),
    gen: int = typer.Option(128, "--gen", help="Generated tokens per sequence (llama-bench tgG)"),
    depth: int = typer.Option(0, "--depth", help="Tokens already cached before the prompt (llama-bench @ dD)"),
    batch: int = typer.Option(1, "--batch", help="Concurrent sequences, each with its own prompt"),
    macos: str = typer.Option("15", "--macos", help="macOS major version (default GPU limit)"),
    flash_attn: bool | None = typer.Option(None, "--flash-attn/--no-flash-attn", help="llama.cpp flash attention"),
    ubatch: int | None = typer.Option(None, "--ubatch", help="llama.cpp physical batch -ub"),
    json_out: bool = typer.Option(False, "--json", help="Print the contract JSON"),
):
    """Prefill, TTFT and decode speed of one model on one Mac (roofline with fitted efficiencies)."""
    r = predict_result(chip, gpu_cores, ram, model, quant, runtime, prompt, gen, depth, batch, macos,
                       flash_attn, ubatch)
    typer.echo(json.dumps(r, indent=2, ensure_ascii=False) if json_out else render(r))
