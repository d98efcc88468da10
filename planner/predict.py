"""One prediction at one operating point: the `plan predict` contract, shared by the CLI and the app."""

from __future__ import annotations

from . import capacity, profiles
from . import throughput as tp
from .errors import InputError, UnknownProfileError
from .memory import memory_model


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
