"""`plan predict`: speed and memory of one (chip, runtime, model, quant) at one workload (the prediction contract).

plan predict --chip "M3 Max" --gpu-cores 40 --ram 64 --model llama-2-7b --quant Q4_0 --runtime llama.cpp \
             --prompt 2048 --gen 750 --cached-prefix 0.75 --depth 0 --batch 1 --json
"""

from __future__ import annotations

import typer

from planner.predict import predict_result
from planner.requests import PredictRequest

from .options import check, opt, wopt
from .words import say


def render(r: dict) -> str:
    from planner.format import (
        cached_label,
        fmt_bytes,
        fmt_seconds,
        fmt_tok_s,
        fmt_tok_s_range,
        ttft_text,
        verdict_text,
    )

    lines = [
        f"{r['model']} {r['quant']} (KV cache {r['kv_type']}) on {r['chip_label']} ({r['ram_gb']:g} GB) with "
        f"{r['runtime']}: "
        f"prompt {r['prompt_tokens']:,} ({cached_label(r['cached_prefix_share'])}) @ depth {r['depth']}, "
        f"gen {r['gen_tokens']:,}, batch {r['batch']}",
        f"  prefill   {fmt_tok_s_range(r['prefill_tok_s'], r['prefill_tok_s_range'])}   "
        f"{ttft_text(r['ttft_s'], r['cached_prefix_share'])}",
        f"  decode    {fmt_tok_s_range(r['decode_tok_s_per_seq'], r['decode_tok_s_range'])} per sequence, "
        f"{fmt_tok_s(r['decode_tok_s'])} total "
        f"({r['bound']}-bound; ceiling {fmt_tok_s(r['decode_ceiling_tok_s'])} tok/s; compute-bound from batch "
        f"{r['knee_batch'] or '>4096'})",
        f"  request   {fmt_seconds(r['time_per_request_s'])}",
        f"  memory    {fmt_bytes(r['peak_memory_bytes'])} of {fmt_bytes(r['wired_limit_bytes'])} GPU limit: "
        f"{verdict_text(r['verdict'])}",
        f"  calibration: {r['calibration']}",
    ]
    lines += [f"  note: {n}" for n in r["notes"]]
    return "\n".join(lines)


R = PredictRequest


def predict_cmd(
    chip: str = opt(R, "chip", "--chip"),
    gpu_cores: int | None = opt(R, "gpu_cores", "--gpu-cores"),
    ram: float | None = opt(R, "ram", "--ram"),
    model: str = opt(R, "model", "--model", "-m"),
    quant: str | None = opt(R, "quant", "--quant", "-q"),
    runtime: str | None = opt(R, "runtime", "--runtime", "-r"),
    prompt: str = wopt(R, "prompt"),
    gen: str = wopt(R, "gen"),
    depth: int = opt(R, "depth", "--depth"),
    batch: int = opt(R, "batch", "--batch"),
    macos: str = opt(R, "macos", "--macos"),
    flash_attn: bool | None = opt(R, "flash_attn", "--flash-attn/--no-flash-attn"),
    ubatch: int | None = opt(R, "ubatch", "--ubatch"),
    cached_prefix: float = wopt(R, "cached_prefix"),
    kv_type: str | None = opt(R, "kv_type", "--kv-type"),
    images: int = opt(R, "images", "--images"),
    image_size: str | None = opt(R, "image_size", "--image-size"),
    json_out: bool = typer.Option(False, "--json", help="Print the contract JSON"),
):
    """Prefill, TTFT and decode speed of one model on one Mac (roofline with fitted efficiencies)."""
    from cli.bounds import check_options

    check_options(gpu_cores=gpu_cores, ram=ram, prompt=prompt, gen=gen, depth=depth, batch=batch, ubatch=ubatch)
    q = check(R, dict(chip=chip, gpu_cores=gpu_cores, ram=ram, model=model, quant=quant, runtime=runtime,
                      prompt=prompt, gen=gen, depth=depth, batch=batch, macos=macos, flash_attn=flash_attn,
                      ubatch=ubatch, cached_prefix=cached_prefix, kv_type=kv_type, images=images,
                      image_size=image_size))
    r = predict_result(q.chip, q.gpu_cores, q.ram, q.model, q.quant, q.runtime, q.prompt, q.gen, q.depth, q.batch,
                       q.macos, q.flash_attn, q.ubatch, q.kv_type, cached_prefix=q.cached_prefix, images=q.images,
                       image_size=q.image_size)
    from .contract import dumps

    typer.echo(dumps(r) if json_out else say(render(r)))
