"""`plan predict`: speed and memory of one (chip, runtime, model, quant) at one workload (the prediction contract).

plan predict --chip "M3 Max" --gpu-cores 40 --ram 64 --model llama-2-7b --quant Q4_0 --runtime llama.cpp \
             --prompt 512 --gen 128 --depth 0 --batch 1 --json
"""

from __future__ import annotations

import json
from typing import Optional

import typer

from .. import capacity, profiles
from .. import throughput as tp
from ..errors import InputError, UnknownProfileError
from ..memory import memory_model


def predict_result(chip: str, gpu_cores: int | None, ram: float | None, model: str, quant: str, runtime: str,
                   prompt: int, gen: int, depth: int, batch: int, macos: str = "15",
                   flash_attn: bool | None = None, ubatch: int | None = None, kv_type: str | None = None) -> dict:
    """The contract's JSON object (a plain dict: ThroughputEstimate fields + memory fit)."""
    c = profiles.resolve_chip(chip, gpu_cores)
    ram_gb = float(max(c.ram_options_gb)) if ram is None else ram
    if int(ram_gb) != ram_gb or int(ram_gb) not in c.ram_options_gb:
        raise InputError(f"--ram {ram_gb:g}: the {c.label} comes with {', '.join(map(str, c.ram_options_gb))} GB")
    rt = profiles.load_runtime(runtime)
    m = profiles.load_model(model)
    q = _quant(quant, rt)
    if batch < 1 or min(prompt, gen, depth) < 0:
        raise InputError("--batch must be ≥ 1 and --prompt/--gen/--depth ≥ 0")
    mm = memory_model(m, rt, q, profiles.ggml_types(), kv_type=kv_type, flash_attn=flash_attn, n_ubatch=ubatch)
    est = tp.predict(mm, c, profiles.load_speed_constants(c, rt.id), q.kind, q.mode, prompt, gen, depth, batch,
                     reference_chips=profiles.all_chips())
    context = max(depth + prompt + gen, 1)
    mem = mm.estimate(context, batch)
    wired = capacity.wired_limit(ram_gb, profiles.load_macos(macos))
    verdict = capacity.fit(mem.total, mm.weights.total_bytes, wired, rt)
    return {
        "chip": c.id, "ram_gb": ram_gb, "runtime": rt.id, "model": m.id, "quant": q.id,
        **est.model_dump(),
        "fits": mem.total <= wired.default_bytes,
        "fit_verdict": verdict.verdict,
        "peak_memory_bytes": mem.total,
        "wired_limit_bytes": wired.default_bytes,
        "weights_bytes": mm.weights.total_bytes,
        "kv_cache_bytes": mem.kv_cache,
    }


def _quant(name: str, rt):
    try:
        return profiles.load_quant(name, rt.weight_format)
    except UnknownProfileError as first:
        other = "mlx" if rt.weight_format == "gguf" else "gguf"
        try:
            q = profiles.load_quant(name, other)
        except UnknownProfileError:
            raise first from None
        raise InputError(f"--quant {name} is a {q.kind} format; {rt.id} loads {rt.weight_format} weights "
                         f"(e.g. {'Q4_K_M' if rt.weight_format == 'gguf' else '4bit'})") from None


def render(r: dict) -> str:
    from ..format import fmt_bytes, fmt_seconds, fmt_tok_s

    lines = [
        f"{r['model']} {r['quant']} on {r['chip']} ({r['ram_gb']:g} GB) with {r['runtime']}: "
        f"prompt {r['prompt_tokens']} @ depth {r['depth']}, gen {r['gen_tokens']}, batch {r['batch']}",
        f"  prefill   {fmt_tok_s(r['prefill_tok_s'])} tok/s   TTFT {fmt_seconds(r['ttft_s'])}",
        f"  decode    {fmt_tok_s(r['decode_tok_s_per_seq'])} tok/s per sequence, {fmt_tok_s(r['decode_tok_s'])} total "
        f"({r['bound']}-bound; ceiling {fmt_tok_s(r['decode_ceiling_tok_s'])} tok/s; compute-bound from batch "
        f"{r['knee_batch'] or '>4096'})",
        f"  request   {fmt_seconds(r['time_per_request_s'])}",
        f"  memory    {fmt_bytes(r['peak_memory_bytes'])} of {fmt_bytes(r['wired_limit_bytes'])} GPU limit: "
        f"{'fits' if r['fits'] else 'does not fit'} ({r['fit_verdict']})",
        f"  calibration: {r['calibration']}",
    ]
    lines += [f"  note: {n}" for n in r["notes"]]
    return "\n".join(lines)


def predict_cmd(
    chip: str = typer.Option(..., "--chip", help="Apple chip, e.g. 'M3 Max'"),
    gpu_cores: Optional[int] = typer.Option(None, "--gpu-cores", help="GPU cores (needed for binned chips)"),
    ram: Optional[float] = typer.Option(None, "--ram", help="Unified memory [GB]; default: the chip's largest"),
    model: str = typer.Option(..., "--model", "-m", help="Catalog id or alias, e.g. llama-2-7b"),
    quant: str = typer.Option(..., "--quant", "-q", help="GGUF preset (Q4_K_M) or MLX format (4bit, 8bit-g32, bf16)"),
    runtime: str = typer.Option("llama.cpp", "--runtime", "-r", help="llama.cpp, mlx-lm or ollama"),
    prompt: int = typer.Option(512, "--prompt", help="New prompt tokens per sequence (llama-bench ppP)"),
    gen: int = typer.Option(128, "--gen", help="Generated tokens per sequence (llama-bench tgG)"),
    depth: int = typer.Option(0, "--depth", help="Tokens already cached before the prompt (llama-bench @ dD)"),
    batch: int = typer.Option(1, "--batch", help="Concurrent sequences, each with its own prompt"),
    macos: str = typer.Option("15", "--macos", help="macOS major version (default GPU limit)"),
    flash_attn: Optional[bool] = typer.Option(None, "--flash-attn/--no-flash-attn", help="llama.cpp flash attention"),
    ubatch: Optional[int] = typer.Option(None, "--ubatch", help="llama.cpp physical batch -ub"),
    json_out: bool = typer.Option(False, "--json", help="Print the contract JSON"),
):
    """Prefill, TTFT and decode speed of one model on one Mac (roofline with fitted efficiencies)."""
    r = predict_result(chip, gpu_cores, ram, model, quant, runtime, prompt, gen, depth, batch, macos,
                       flash_attn, ubatch)
    typer.echo(json.dumps(r, indent=2, ensure_ascii=False) if json_out else render(r))
