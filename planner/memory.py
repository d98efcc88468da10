"""Memory: weights, KV cache, recurrent state, runtime buffers -> MemoryEstimate. [bytes]

References: llama.cpp src/llama-quant.cpp (preset tensor types), src/llama-kv-cache.cpp and
src/llama-kv-cache-iswa.cpp (KV sizing), src/llama-context.cpp (padding, output buffer, compute reserve);
mlx/primitives.h + mlx_lm/utils.py quantize_model (MLX bits), mlx_lm/models/cache.py (KV growth).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from . import architecture as arch
from . import profiles
from ._model import assemble
from .engines import Engine, engine_for
from .errors import InputError
from .results import KVLayout, MemoryEstimate, WeightsEstimate
from .schema import (
    GgmlType,
    GgmlTypeTable,
    LlamaCppFamily,
    MlxRuntime,
    ModelConfig,
    ModelProfile,
    QuantFormat,
    QuantizeClasses,
    Runtime,
)

# llama-quantize's per-file state (init_quantize_state_counters) plus per-name caches of the preset walk: counts,
# index maps, rule lists, flags and types under str or tuple keys, so the values are heterogeneous
Counters = dict[str | tuple[str | int, ...], Any]

# --------------------------------------------------------------------------- GGUF presets
# (the tensors never quantized: profiles/quants/ggml-types.yaml llama_quantize)


def use_more_bits(i: int, n: int) -> bool:
    """src/llama-quant.cpp use_more_bits()."""
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def _cond(c: str, i: int | None, n: int, static: dict[str, bool]) -> bool:
    neg = c.startswith("not_")
    c = c.removeprefix("not_")
    if c in static:
        v = static[c]
    elif i is None:
        v = False
    elif c == "use_more_bits":
        v = use_more_bits(i, n)
    elif c == "first_eighth":
        v = i < n // 8
    elif c == "first_sixteenth":
        v = i < n // 16
    elif c == "first_2":
        v = i < 2
    elif c == "first_4":
        v = i < 4
    else:
        raise KeyError(f"unknown preset rule condition {c!r}")
    return v != neg


def _matches(rule_tensor: str, name: str) -> bool:
    # llama.cpp matches with name.find(): ffn_down also hits ffn_down_exps / ffn_down_shexp
    return name == rule_tensor or (rule_tensor.startswith("ffn_") and name.startswith(rule_tensor))


def _static_conditions(cfg: ModelConfig) -> dict[str, bool]:
    """Model-level conditions of the preset rules (src/llama-quant.cpp: n_gqa, n_expert, LLM_TYPE_70B)."""
    gqa = cfg.num_attention_heads // cfg.num_key_value_heads
    return {"gqa_ge_4": gqa >= 4, "gqa_lt_4": gqa < 4, "gqa_ge_4_or_moe": gqa >= 4 or cfg.n_experts >= 4,
            "model_70b": cfg.num_hidden_layers == 80 and cfg.model_type in ("llama", "qwen2") and not cfg.is_moe,
            "n_expert_8": cfg.n_experts == 8}


_FFN_CATEGORIES = ("ffn_up", "ffn_gate", "ffn_down")  # tensor_get_category: name.find order up, gate, down


@functools.cache
def _ffn_category(name: str) -> str | None:
    return next((c for c in _FFN_CATEGORIES if c in name), None)


def rule_name(name: str, cfg: ModelConfig, classes: QuantizeClasses) -> str:
    """The name llama-quantize's rules see: attn_qkv / attn_kv_b take attn_v's rules (category_is_attn_v),
    per_layer_token_embd takes token_embd's, and a token embedding shared with the output (no output.weight,
    qs.has_tied_embeddings) takes the output's (src/llama-quant.cpp tensor_get_category, llama_tensor_get_type_impl)."""
    if name in classes.attn_v_like:
        return "attn_v"
    if name in classes.token_embd_like:
        return "output" if cfg.tie_word_embeddings else "token_embd"
    return name


def kept_type(name: str, base: str, classes: QuantizeClasses) -> str | None:
    """Type of a tensor llama-quantize never quantizes (tensor_allows_quantization), None for the others."""
    for k in classes.kept:
        if k.name in name:
            # an --outtype tensor (BF16 from a bf16 checkpoint) takes the file's float type in an F32 or F16 file
            return base if k.type == "BF16" and base in ("F32", "F16") else k.type
    return None


def _fixed_type(t: arch.Tensor, preset: QuantFormat, model: ModelProfile, classes: QuantizeClasses) -> str | None:
    """The type a tensor gets before any preset rule applies, None when the rules decide."""
    if not t.quantizable or t.group == "norm":
        return "F32"
    nq = model.native_quant
    if nq is not None and t.group in nq.groups:
        # already quantized in the checkpoint: conversion/gpt_oss.py writes gpt-oss experts as MXFP4 for any
        # --outtype, and src/llama-quant.cpp llama_model_quantize_impl copies a tensor whose target is its own
        # type and refuses to requantize one ('requantizing from type %s is disabled'), so every preset keeps it
        return nq.gguf_type
    base = preset.base_type
    assert base is not None  # QuantFormat._check_kind: every gguf format has a base_type
    kept = kept_type(t.name, base, classes)
    if kept is not None:
        return kept
    if base in ("F32", "F16", "BF16"):
        return base
    if preset.expert_type and t.group == "experts":
        return preset.expert_type
    return None


def gguf_tensor_type(t: arch.Tensor, preset: QuantFormat, model: ModelProfile, types: dict[str, GgmlType],
                     counters: Counters, static: dict[str, bool] | None = None,
                     classes: QuantizeClasses | None = None) -> str:
    cfg = model.config
    classes = classes or QuantizeClasses()
    fixed = _fixed_type(t, preset, model, classes)
    if fixed is not None:
        return fixed
    base = preset.base_type
    static = static if static is not None else _static_conditions(cfg)
    name = rule_name(t.name, cfg, classes)
    n_layer = counters.get("n_layer_all", cfg.num_hidden_layers)
    # the layer index the rules see (src/llama-quant.cpp): attn_v-like tensors count in file order
    # (i_attention_wv of n_attention_wv); FFN tensors use the layer in the name when n_expert > 1, else their
    # own counter i_ffn_down/i_ffn_gate/i_ffn_up (layer_info), of n_layer_all
    cat = _ffn_category(name)
    if name == "attn_v":
        i, n = counters.get("attn_v_index", {}).get((t.layer, t.name), t.layer), counters.get("n_attn_v", 0)
    elif cat is not None and cfg.n_experts <= 1 and t.layer is not None:
        i, n = counters.get("ffn_index", {}).get((cat, t.layer, t.name), t.layer), n_layer
    else:
        i, n = t.layer, n_layer
    rules = counters.get(("rules", name))
    if rules is None:  # not setdefault: that would rebuild the list for every tensor
        rules = counters[("rules", name)] = [r for r in preset.rules if _matches(r.tensor, name)]
    # rules that test only model-level conditions give every layer the same type: decide once per (name, row)
    free = counters.get(("free", name))
    if free is None:
        free = counters[("free", name)] = all(c.removeprefix("not_") in static for r in rules for c in r.when)
    key = ("type", name, t.ne0)
    if free and key in counters:
        known: str = counters[key]
        return known
    assert base is not None  # _fixed_type returned None: a gguf preset, which has a base_type
    typ = base
    for r in rules:
        if all(_cond(c, i, n, static) for c in r.when) and (r.if_type_in is None or typ in r.if_type_in):
            typ = r.type
    # tensor_type_fallback(): the row must be a whole number of blocks
    while t.ne0 % types[typ].block_size != 0:
        typ = types[typ].fallback or "F16"
    typ = typ or "F16"
    if free:
        counters[key] = typ
    return typ


def quantize_counters(cfg: ModelConfig, ts: Sequence[arch.Tensor], classes: QuantizeClasses) -> Counters:
    """The per-file counts llama-quantize keeps (init_quantize_state_counters): n_attention_wv over the attn_v-like
    tensors, n_ffn_* = n_layer_all (every block in the file, MTP blocks included), and each counted tensor's index
    in llama-quantize's order: by layer, then by name (llama-model-loader.h weight_name_comparer), keyed
    (layer, name) for attn_v-like tensors and (category, layer, name) for FFN ones. One pass over the tensors."""
    attn_v_like = classes.attn_v_like
    n_attn_v, top = 0, -1
    attn_v: set[tuple[int, str]] = set()
    by_cat: dict[str, set[tuple[int, str]]] = {c: set() for c in _FFN_CATEGORIES}
    for t in ts:
        name, layer = t.name, t.layer
        if name in attn_v_like:
            n_attn_v += 1
            if layer is not None:
                attn_v.add((layer, name))
        if layer is not None:
            if layer > top:
                top = layer
            c = _ffn_category(name) if t.quantizable else None  # each tensor's category once
            if c is not None:
                by_cat[c].add((layer, name))
    # an MTP block (Qwen3.5 mtp_num_hidden_layers) is in the file after the last layer, with its own attn_v: the
    # converter keeps it and llama-quantize counts it, though the layout (and llama.cpp's loader) leave it out
    mtp = cfg.mtp_num_hidden_layers or 0
    return {"n_attn_v": n_attn_v + mtp, "n_layer_all": (top + 1 if top >= 0 else cfg.num_hidden_layers) + mtp,
            "attn_v_index": {k: j for j, k in enumerate(sorted(attn_v))},
            # read only for models without experts (gguf_tensor_type: with experts the rules see the layer)
            "ffn_index": {(c, layer, name): j for c in _FFN_CATEGORIES
                          for j, (layer, name) in enumerate(sorted(by_cat[c]))} if cfg.n_experts <= 1 else {}}


def _base_counters(cfg: ModelConfig, ts: Sequence[arch.Tensor], classes: QuantizeClasses) -> Counters:
    """:func:`quantize_counters` once per (config, tensor classes): they do not depend on the preset, and a catalog
    sweep sizes each model in several presets (architecture's identity memo, the classes kept alive beside them)."""
    per_cfg: dict[int, tuple[QuantizeClasses, Counters]] = arch._memo("quantize_counters", cfg, lambda c: {})
    hit = per_cfg.get(id(classes))
    if hit is None or hit[0] is not classes:
        hit = per_cfg[id(classes)] = (classes, quantize_counters(cfg, ts, classes))
    return hit[1]


def row_bytes(types: dict[str, GgmlType], typ: str, ne0: int) -> int:
    """ggml_row_size(type, ne0)."""
    tt = types[typ]
    return ne0 // tt.block_size * tt.bytes_per_block


# gguf_weights by the identity of its (frozen) inputs, kept alive with the result: a plan and its bottom line's
# search size the same presets of the same model (profiles are loaded once per process). Across runs the sizes are
# kept beside the profiles they derive from (profiles.derived: sizing a 70B model's six presets tensor by tensor
# was ~5 % of the plain question's instructions)
_GGUF_WEIGHTS: dict[tuple[int, int, int], tuple[ModelProfile, QuantFormat, GgmlTypeTable, WeightsEstimate]] = {}


def gguf_weights(model: ModelProfile, preset: QuantFormat, table: GgmlTypeTable) -> WeightsEstimate:
    key = (id(model), id(preset), id(table))
    hit = _GGUF_WEIGHTS.get(key)
    if hit is not None and hit[0] is model and hit[1] is preset and hit[2] is table:
        return hit[3]
    if len(_GGUF_WEIGHTS) > 4096:  # a catalog sweep keeps one entry per model and preset
        _GGUF_WEIGHTS.clear()
    w = profiles.derived("gguf_weights", (model, preset, table), lambda: _gguf_weights(model, preset, table))
    _GGUF_WEIGHTS[key] = (model, preset, table, w)
    return w


def _gguf_weights(model: ModelProfile, preset: QuantFormat, table: GgmlTypeTable) -> WeightsEstimate:
    types = {t.name: t for t in table.types}
    classes = table.llama_quantize
    ts = arch.tensors(model.config)
    static = _static_conditions(model.config)
    names = []
    for name, runs in _by_name(model.config):
        seen_as = rule_name(name, model.config, classes)
        rules = [r for r in preset.rules if _matches(r.tensor, seen_as)]
        # no layer-dependent rule: one type per distinct row shape, bytes for all such tensors at once
        names.append((name, runs, all(c.removeprefix("not_") in static for r in rules for c in r.when)))
    # llama-quantize's per-file counters (layer indices) are read only by layer-dependent rules: a preset without
    # any for this model (Q8_0, Q6_K...) needs none. The preset adds its own entries to its copy.
    layered = not all(free for _, _, free in names)
    counters = dict(_base_counters(model.config, ts, classes)) if layered else {}
    by_group: dict[str, int] = {}
    by_type: dict[str, int] = {}
    for name, runs, free in names:
        items = [(t, rows) for t, rows in runs] if free else [(t, t.ne1 * t.n) for t in _tensors_named(ts, name)]
        for t, rows in items:
            typ = gguf_tensor_type(t, preset, model, types, counters, static, classes)
            b = row_bytes(types, typ, t.ne0) * rows
            by_group[t.group] = by_group.get(t.group, 0) + b
            by_type[typ] = by_type.get(typ, 0) + b
    n = arch.n_params(model.config)
    total = sum(by_group.values())
    # mmproj files are usually F16 (llama.cpp tools/mtmd)
    vision = int((model.vision_params_b or 0) * 1e9 * 2)
    return WeightsEstimate(total_bytes=total, n_params=n, bits_per_weight=8 * total / n, by_group=by_group,
                           by_type=by_type, vision_bytes=vision)


def _by_name(cfg: ModelConfig) -> list[tuple[str, list[tuple[arch.Tensor, int]]]]:
    """Tensors grouped by name, then by (row length, group, quantizable, layer kind): one representative tensor
    and the rows (ne1 × n) they hold together. Built once per config (architecture's identity memo)."""
    def build(c: ModelConfig) -> list[tuple[str, list[tuple[arch.Tensor, int]]]]:
        out: dict[str, dict[tuple[int, str, bool, bool], list[Any]]] = {}  # [representative tensor, rows]
        for t in arch.tensors(c):  # get before set: setdefault built a dict and a list per tensor
            d = out.get(t.name)
            if d is None:
                d = out[t.name] = {}
            k = (t.ne0, t.group, t.quantizable, t.layer is None)
            slot = d.get(k)
            if slot is None:
                d[k] = [t, t.ne1 * t.n]
            else:
                slot[1] += t.ne1 * t.n
        return [(name, [(t, rows) for t, rows in d.values()]) for name, d in out.items()]
    return arch._memo("gguf_by_name", cfg, build)


def _tensors_named(ts: Sequence[arch.Tensor], name: str) -> list[arch.Tensor]:
    return [t for t in ts if t.name == name]


def mlx_weights(model: ModelProfile, fmt: QuantFormat, runtime: MlxRuntime) -> WeightsEstimate:
    """mlx_lm.utils.quantize_model: Linear/Embedding layers whose last dim divides the group are quantized
    (bits + 8*(scale+bias bytes)/group per weight); everything else stays bf16; MoE routers at router_bits."""
    act = runtime.activation_bytes
    by_group: dict[str, int] = {}
    n = 0
    for group, ne0, quantizable, elems in arch.tensor_summary(model.config):
        n += elems
        if group == "norm" or not quantizable and group != "router" or fmt.mode == "none":
            b = elems * act
        else:
            bits, g = fmt.bits or 16, fmt.group_size or 1  # set for every mlx format but mode "none" (above)
            sb, bb = fmt.scale_bytes or 0, fmt.bias_bytes or 0
            if group == "router":
                bits, g, sb, bb = runtime.router_bits, 64, act, act
            if ne0 % g != 0:
                b = elems * act
            else:
                b = elems * bits // 8 + (elems // g) * (sb + bb)
        by_group[group] = by_group.get(group, 0) + b
    total = sum(by_group.values())
    vision = int((model.vision_params_b or 0) * 1e9 * act)
    return WeightsEstimate(total_bytes=total, n_params=n, bits_per_weight=8 * total / n, by_group=by_group,
                           vision_bytes=vision)


def weights(model: ModelProfile, quant: QuantFormat, runtime: Runtime, table: GgmlTypeTable) -> WeightsEstimate:
    if runtime.weight_format != quant.kind:
        raise InputError(f"[[quant]] {quant.id} is a {quant.kind} format; {runtime.id} loads {runtime.weight_format} "
                         f"weights (pick a {runtime.weight_format} quant, e.g. "
                         f"{'Q4_K_M' if runtime.weight_format == 'gguf' else '4bit'})")
    if isinstance(runtime, MlxRuntime):  # kept across runs beside its profiles, as gguf_weights
        return profiles.derived("mlx_weights", (model, quant, runtime), lambda: mlx_weights(model, quant, runtime))
    return gguf_weights(model, quant, table)


# --------------------------------------------------------------------------- KV cache
# every runtime-specific rule (element bytes, spellings, rotating caches, MLA/DSA layout, state dtype) is its
# engine's (planner/engines/llamacpp.py, planner/engines/mlxlm.py)
def kv_element_bytes(kv_type: str, runtime: Runtime, table: GgmlTypeTable, ne0: int) -> float:
    """Bytes per KV row element: ggml_row_size for llama.cpp; mlx QuantizedKVCache bits + 32/group."""
    return engine_for(runtime).kv_element_bytes(kv_type, runtime, table, ne0)


def kv_alias(kv_type: str, runtime: Runtime) -> str:
    """A KV cache type (kv_type) as the runtime spells it (q8 -> q8_0 on llama.cpp, kv8 on mlx-lm); unknown names unchanged."""
    return engine_for(runtime).kv_alias(kv_type)


def check_kv_type(kv_type: str, runtime: Runtime, model: ModelProfile) -> str:
    k = kv_alias(kv_type, runtime)
    if k not in runtime.kv_types:
        raise InputError(f"[[kv_type]] {kv_type} is not offered by {runtime.id}; choose one of {', '.join(runtime.kv_types)}")
    engine_for(runtime).check_kv_type(kv_type, k, runtime, model)
    # a quantized V cache needs flash attention: memory_model checks it against the effective setting
    return k


_KV_MEMO: dict[tuple[int, int, str, int], tuple[ModelProfile, Runtime, GgmlTypeTable, KVLayout]] = {}


def kv_layout(model: ModelProfile, runtime: Runtime, kv_type: str, table: GgmlTypeTable) -> KVLayout:
    """KV bytes per token of one (model, runtime, KV type): the same for every quant, so memoised on the identity
    of the (frozen, loaded-once) profiles; the entry keeps them alive so an id is not reused."""
    key = (id(model), id(runtime), kv_type, id(table))
    hit = _KV_MEMO.get(key)
    if hit is not None and hit[0] is model and hit[1] is runtime and hit[2] is table:
        return hit[3]
    out = _kv_layout(model, runtime, kv_type, table)
    if len(_KV_MEMO) > 4096:
        _KV_MEMO.clear()
    _KV_MEMO[key] = (model, runtime, table, out)
    return out


def _kv_layout(model: ModelProfile, runtime: Runtime, kv_type: str, table: GgmlTypeTable) -> KVLayout:
    layers = arch.cache_layers(model.config)
    eng = engine_for(runtime)
    full = swa = 0.0
    state = 0
    window = None
    rotating = eng.rotating(model, runtime)
    per_layer: list[float] = []
    read_full = read_swa = 0.0  # KV-shared layers (Gemma 4) read their owner's cache again: decode reads, not stores
    per_kind: dict[arch.CacheLayer, float] = {}  # a layer's bytes depend only on its (frozen) CacheLayer
    for c in layers:
        if c.owner is not None:
            o = layers[c.owner]
            per = per_layer[c.owner]
            if o.kind == "sliding" and rotating:
                read_swa += per
            else:
                read_full += per
            per_layer.append(0.0)
            continue
        if c.kind == "linear":
            per_layer.append(0.0)
            state += eng.state_bytes(c)
            continue
        known = per_kind.get(c)
        per = known if known is not None else per_kind.setdefault(c, eng.cache_layer_bytes(c, kv_type, runtime, table))
        per_layer.append(per)
        if c.kind == "sliding" and rotating:
            swa += per
            window = c.window
        else:
            full += per
    reads = eng.decode_reads(model.config, layers, runtime, kv_type, table)
    if read_full or read_swa:
        reads = {"read_bytes_per_token": math.ceil(full + read_full),
                 "swa_read_bytes_per_token": math.ceil(swa + read_swa)}
    return assemble(KVLayout, kv_type=kv_type, bytes_per_token=math.ceil(full),
                    swa_bytes_per_token=math.ceil(swa), window=window, state_bytes_per_seq=state, **reads)


# --------------------------------------------------------------------------- whole estimate
TOTALS_KEPT = 4096  # totals one MemoryModel remembers (a plan asks ~400; memory_model shares the instance)


@dataclass(frozen=True)
class MemoryModel:
    """Precomputed per-(model, runtime, quant, kv) costs; ``estimate(context, users)`` is O(1)."""

    model: ModelProfile
    runtime: Runtime
    quant_id: str
    weights: WeightsEstimate
    kv: KVLayout
    flash_attn: bool
    n_ubatch: int
    kv_unified: bool
    images: int = 0  # images per request: the projector (weights.vision_bytes) is loaded when > 0 (or always by
    # an engine that loads a multimodal checkpoint whole, Engine.loads_vision_tower)

    # engine, resident_weights and vision_bytes are fixed for a (frozen) model: computed once per instance, as
    # the capacity searches ask for them at every step (functools.cached_property writes the instance dict, which
    # a frozen dataclass allows; dataclasses.replace builds a new instance, with its own)
    @functools.cached_property
    def engine(self) -> Engine:
        """The engine whose memory rules apply (planner/engines)."""
        return engine_for(self.runtime)

    def with_images(self, images: int) -> MemoryModel:
        """The same model with ``images`` per request (the projector counted when > 0): one rule for planner.plan
        and planner.search.candidates (recommend), so both count the same bytes."""
        return self if self.images == images else dataclasses.replace(self, images=images)

    def estimate(self, context: int, users: int = 1, prompt_chunk: int | None = None) -> MemoryEstimate:
        if context <= 0 or users <= 0:
            raise InputError("context and users must be positive")
        p = self._parts(context, users, prompt_chunk)
        return assemble(
            MemoryEstimate,
            weights=self.resident_weights, kv_cache=p[0], recurrent_state=p[1], compute_buffer=p[2],
            output_buffer=p[3], runtime_overhead=p[4], vision=self.vision_bytes, context=context,
            users=users, kv_cells=p[5])

    def total(self, context: int, users: int = 1) -> int:
        """Same sum as ``estimate(...).total`` without building the model (used by capacity searches). [bytes]
        Remembered per instance: a plan's searches (safe users by context, longest context by users, with the
        limit as is and raised) probe the same points about twice."""
        t = self._totals.get((context, users))
        if t is None:
            if len(self._totals) >= TOTALS_KEPT:  # a long-lived server (MCP, HTTP, the app) shares this instance
                self._totals.clear()
            p = self._parts(context, users, None)
            t = self._totals[(context, users)] = self.resident_weights + self.vision_bytes + sum(p[:5])
        return t

    @functools.cached_property
    def _totals(self) -> dict[tuple[int, int], int]:
        return {}

    @functools.cached_property
    def resident_weights(self) -> int:
        """Weight bytes held in memory: all of them, except what the engine reads lazily (llama.cpp: a per-layer
        embedding table over 4 GiB, Engine.resident_weights)."""
        return self.engine.resident_weights(self.weights.by_group, self.weights.total_bytes)

    @functools.cached_property
    def vision_bytes(self) -> int:
        """Vision encoder + projector (llama.cpp --mmproj, mlx-vlm vision tower): for plans with images, and on an
        engine that loads a multimodal checkpoint whole (LM Studio's MLX engine, mlx-vlm) for any plan."""
        return self.weights.vision_bytes if self.images or self.engine.loads_vision_tower else 0

    def _parts(self, context: int, users: int, prompt_chunk: int | None) -> tuple[int, int, int, int, int, int]:
        """(KV, recurrent state, compute buffer, output buffer, overhead, cells): the engine's buffers
        (llama-server cells and compute reserve; mlx-lm per-sequence caches and prefill activations)."""
        return self.engine.memory_parts(self, context, users, prompt_chunk)


def memory_model(model: ModelProfile, runtime: Runtime, quant: QuantFormat, table: GgmlTypeTable,
                 kv_type: str | None = None, flash_attn: bool | None = None, n_ubatch: int | None = None,
                 kv_unified: bool | None = None) -> MemoryModel:
    kv_type = check_kv_type(kv_type or runtime.default_kv_type, runtime, model)
    eng = engine_for(runtime)
    fa, unified = eng.settings(runtime, flash_attn, kv_unified)  # flash attention and kv_unified are llama.cpp's
    if eng.quantized_v_needs_flash(kv_type) and not fa:
        llama = cast(LlamaCppFamily, runtime)  # only llama.cpp asks for flash attention
        how = "drop [[no_flash_attn]]" if llama.flash_attn else f"{runtime.id} has it off by default: add [[flash_attn]]"
        raise InputError(f"[[kv_type]] {kv_type}: a quantized V cache requires flash attention ({how})")
    ub = n_ubatch or runtime.prefill_chunk
    # one instance per (profiles, settings), on architecture's identity memo (the entry keeps the profiles alive):
    # a plan and its bottom line's search then share one MemoryModel and the totals it remembers
    made: dict[tuple[int | str | bool, ...], tuple[Any, ...]] = arch._memo("memory_models", model.config, lambda c: {})
    key = (id(model), id(runtime), id(quant), id(table), kv_type, bool(fa), ub, unified)
    hit = made.get(key)
    if hit is not None and hit[0] is model and hit[1] is runtime and hit[2] is quant and hit[3] is table:
        return cast(MemoryModel, hit[4])
    mm = MemoryModel(
        model=model, runtime=runtime, quant_id=quant.id, weights=weights(model, quant, runtime, table),
        kv=kv_layout(model, runtime, kv_type, table), flash_attn=bool(fa), n_ubatch=ub, kv_unified=unified)
    made[key] = (model, runtime, quant, table, mm)
    return mm
