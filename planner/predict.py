"""One prediction at one operating point: the `plan predict` contract, shared by the CLI and the app."""

from __future__ import annotations

from typing import Any

from . import capacity, profiles
from . import throughput as tp
from .deployment import pick_quant, resolve_mac, resolve_runtime
from .errors import InputError
from .memory import memory_model
from .points import DEFAULT_CACHED_PREFIX
from .schema import ModelProfile, Runtime
from .workload import cached_tokens, check_cached_prefix


def predict_result(chip: str, gpu_cores: int | None, ram: float | None, model: str, quant: str | None, runtime: str | None,
                   prompt: int, gen: int, depth: int, batch: int, macos: str = profiles.DEFAULT_MACOS,
                   flash_attn: bool | None = None, ubatch: int | None = None, kv_type: str | None = None,
                   cached_prefix: float = DEFAULT_CACHED_PREFIX, images: int = 0,
                   image_size: str | None = None) -> dict[str, Any]:
    """The contract's JSON object (a plain dict: ThroughputEstimate fields + memory fit). ``cached_prefix``: the
    share of the prompt already in the server's prompt cache; only the rest is prefilled, on top of it and of
    ``depth`` (planner/workload.py cached_tokens, the rule of every command). ``images`` per request: their tokens
    join the prompt, the projector is loaded, mlx-vlm runs them for mlx-lm (as in a plan: :func:`_images`)."""
    mac = resolve_mac(chip, gpu_cores, ram)
    c, chip_note, ram_gb = mac.chip, mac.bin_note, mac.ram_gb
    assert c is not None  # a chip name was given
    rt, runtime_note = resolve_runtime(runtime, model, quant=quant)  # None: the runtime the name or quant pins
    m = profiles.load_model(model)
    if batch < 1 or min(prompt, gen, depth) < 0:
        raise InputError("[[batch]] must be ≥ 1 and [[prompt]]/[[gen]]/[[depth]] ≥ 0")
    rt, image_tokens, image_notes = _images(m, rt, images, image_size)
    prompt += image_tokens
    q, quant_note = pick_quant(quant, model, m, rt)
    mm = memory_model(m, rt, q, profiles.ggml_types(), kv_type=kv_type, flash_attn=flash_attn,
                      n_ubatch=ubatch).with_images(images)
    cached = cached_tokens(prompt, check_cached_prefix(cached_prefix), rt)
    est = tp.predict(mm, c, profiles.load_speed_constants(c, rt.id), q.kind, q.mode, prompt - cached, gen,
                     depth + cached, batch, reference_chips=profiles.all_chips())
    context = max(depth + prompt + gen, 1)
    most = m.config.max_position_embeddings
    over = (f"[[depth]] + [[prompt]] + [[gen]] = {context:,} tokens, over {m.id}'s {most:,}-token context: "
            "llama-server caps a request at that context, and past it the model runs beyond its training" if context > most else None)
    lead = [n for n in (chip_note, profiles.library_note(model), runtime_note, quant_note, over, *image_notes)
            if n]
    if lead:
        est = est.model_copy(update={"notes": [*lead, *est.notes]})
    mem = mm.estimate(context, batch)
    wired = capacity.wired_limit(ram_gb, profiles.load_macos(macos))
    verdict = capacity.fit(mem.total, mm.weights.total_bytes, wired, rt)
    return {
        "chip": c.id, "chip_label": c.label, "ram_gb": ram_gb, "runtime": rt.id, "model": m.id, "quant": q.id,
        **est.model_dump(), "prompt_tokens": prompt, "depth": depth, "cached_prefix_share": cached_prefix,
        "cached_tokens": cached,
        "fits": mem.total <= wired.default_bytes,
        "verdict": verdict.verdict,
        "peak_memory_bytes": mem.total,
        "wired_limit_bytes": wired.default_bytes,
        "weights_bytes": mm.weights.total_bytes,
        "kv_cache_bytes": mem.kv_cache,
        "kv_type": mm.kv.kv_type,   # the KV cache type answered ([[kv_type]], or the runtime's default)
    }


def _images(model: ModelProfile, rt: Runtime, images: int, size: str | None) -> tuple[Runtime, int, list[str]]:
    """(runtime, prompt tokens, notes) of ``images`` per request: planner/vision.py image_prompt's tokens, and mlx-vlm
    for mlx-lm, which reads text only (planner.setups.image_runtimes, the rule of a plan)."""
    from .setups import image_runtimes
    from .vision import image_prompt

    tokens, notes = image_prompt(model, images, size)
    if not tokens:
        return rt, 0, notes
    (rt,), swap = image_runtimes([rt])
    return rt, tokens, [*notes, *swap]


