"""Speculative decoding with a draft model (llama-server -md, mlx_lm.server --draft-model): memory and speed.

Memory: llama-server gives the draft a context with the main one's n_ctx, slots and batch
(common/speculative.cpp common_base_params_to_speculative), KV type -ctkd/-ctvd (the recipe sets the main's);
mlx-lm keeps one cache per model (mlx_lm/server.py: make_prompt_cache(model) + make_prompt_cache(draft_model)) and
serves one request at a time with a draft. The draft shares the main process: no second runtime overhead.

Speed (Leviathan et al. 2023, https://arxiv.org/abs/2211.17192, eq. 1): a step drafts g tokens (g draft steps)
and verifies them in one main step over g + 1 positions; it yields E = (1 - a^(g+1)) / (1 - a) tokens at
acceptance a. Decode = E / (g·t_draft + t_verify), never above the bandwidth bound (g + 1) · BW / (B_main + g·B_draft).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import capacity, profiles
from .errors import InputError, UnknownProfileError
from .memory import MemoryModel, memory_model
from .results import DraftEstimate, WiredLimit
from .schema import Chip

if TYPE_CHECKING:  # throughput imports the memory model this module builds on
    from .throughput import Roofline


def tokens_per_step(alpha: float, g: int) -> float:
    """Expected tokens per verification step (Leviathan et al. 2023, eq. 1). [tokens]"""
    return (1 - alpha ** (g + 1)) / (1 - alpha)


def acceptance_for(target: str, draft: str) -> tuple[float, str]:
    """Documented acceptance of a (main, draft) pair, or the default with its source."""
    sp = profiles.speculative_pairs()
    for p in sp.pairs:
        if target in p.targets and draft in p.drafts:
            return p.acceptance, p.source
    return sp.default_acceptance, sp.default_source


def draft_memory_model(main: MemoryModel, draft_id: str, quant_id: str | None = None) -> MemoryModel:
    """The draft on the same runtime, its KV type the main's; the vocabularies must match."""
    try:
        d = profiles.load_model(draft_id)
    except UnknownProfileError:
        raise UnknownProfileError("draft model", draft_id, profiles.model_ids(), flag="[[draft_model]]") from None
    m = main.model
    if d.config.vocab_size != m.config.vocab_size:
        raise InputError(f"[[draft_model]] {draft_id}: vocabulary {d.config.vocab_size:,} ≠ {m.config.vocab_size:,} "
                         f"of {m.id}; pick a draft of the same family (e.g. a 1B-8B model with the same tokenizer)")
    rt = main.runtime
    q = profiles.load_quant(quant_id or main.quant_id, rt.weight_format)
    try:
        return memory_model(d, rt, q, profiles.ggml_types(), kv_type=main.kv.kv_type, flash_attn=main.flash_attn,
                            n_ubatch=main.n_ubatch, kv_unified=main.kv_unified)
    except InputError:  # e.g. the draft cannot take a quantized KV: fall back to the runtime default
        return memory_model(d, rt, q, profiles.ggml_types(), flash_attn=main.flash_attn, n_ubatch=main.n_ubatch)


def draft_parts(dm: MemoryModel, context: int, slots: int) -> tuple[int, int, int]:
    """(weights, KV + state, buffers) of the draft at the main context and slots [bytes]; no runtime overhead."""
    e = dm.estimate(context, slots)
    return e.weights + e.vision, e.kv_cache + e.recurrent_state, e.compute_buffer + e.output_buffer


def speculative_speed(rf_main: Roofline, rf_draft: Roofline, alpha: float, g: int, depth: float) -> tuple[float, float, float]:
    """(decode with draft, decode without, bandwidth ceiling) for one sequence at ``depth`` cached tokens [tok/s]."""
    t_main = rf_main.step_time(1, depth)
    t_draft = rf_draft.step_time(1, depth)
    t_verify = rf_main.step_time(g + 1, depth)  # g + 1 positions in one pass (KV read counted per position)
    with_draft = tokens_per_step(alpha, g) / (g * t_draft + t_verify)
    ceiling = (g + 1) * rf_main.bw / (rf_main.step_bytes(1, depth) + g * rf_draft.step_bytes(1, depth))
    return min(with_draft, ceiling), 1.0 / t_main, ceiling


def draft_plan(main: MemoryModel, main_total: int, draft_id: str, wired: WiredLimit, context: int, slots: int,
               acceptance: float | None = None, draft_tokens: int | None = None, rf: Roofline | None = None,
               chip: Chip | None = None,
               depth: float = 0.0) -> DraftEstimate:
    """Memory and speed of ``main`` with ``draft_id`` drafting. ``rf``: the main model's roofline (speed)."""
    dm = draft_memory_model(main, draft_id)
    alpha, src = acceptance_for(main.model.id, draft_id) if acceptance is None else (acceptance, "[[draft_acceptance]]")
    if not 0 < alpha < 1:
        raise InputError(f"[[draft_acceptance]] {alpha:g}: give a probability between 0 and 1, e.g. 0.7")
    rt = main.runtime
    g = draft_tokens or profiles.speculative_pairs().draft_tokens.get(main.engine.name, 3)
    w, kv, buf = draft_parts(dm, context, slots)
    total = main_total + w + kv + buf
    fit = capacity.fit(total, main.weights.total_bytes + w, wired, rt)
    notes = []
    if main.engine.draft_one_at_a_time and slots > 1:
        notes.append("mlx_lm.server serves one request at a time with a draft model (not batchable)")
    dec = base = ceil = None
    if rf is not None and chip is not None:
        from .search import speed_model

        rf_d = speed_model(dm, chip, profiles.load_quant(dm.quant_id, rt.weight_format))
        if rf_d is not None:
            dec, base, ceil = speculative_speed(rf, rf_d, alpha, g, depth)
    return DraftEstimate(draft_model=dm.model.id, draft_quant=dm.quant_id, draft_tokens=g, acceptance=alpha,
                         acceptance_source=src, weights_bytes=w, kv_bytes=kv, buffer_bytes=buf, total_bytes=total,
                         fit=fit, tokens_per_step=tokens_per_step(alpha, g), decode_tok_s=dec, base_decode_tok_s=base,
                         ceiling_tok_s=ceil, speedup=dec / base if dec and base else None, notes=notes)


