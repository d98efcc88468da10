"""llama.cpp: its memory layout, step rules and launch line (llama-server).

References: src/llama-kv-cache.cpp and src/llama-kv-cache-iswa.cpp (KV sizing), src/llama-memory-recurrent.cpp
(recurrent state), src/llama-context.cpp (padding, output buffer, compute reserve), src/llama-model-loader.cpp
(lazy reads), common/arg.cpp (KV type names), tools/server (slots).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..arch_attention import LLAMA_CPP_NO_SWA
from ..errors import InputError
from ..schema import (
    Chip,
    GgmlType,
    GgmlTypeTable,
    LlamaCppFamily,
    ModelConfig,
    ModelProfile,
    QuantFormat,
    Runtime,
)
from ..units import MiB, pad_to

if TYPE_CHECKING:  # these modules import planner.engines
    from ..architecture import CacheLayer
    from ..memory import MemoryModel
    from ..recipes import Recipe
    from ..results import Fit
    from ..serve import Scheduler

LAZY_MIN_BYTES = 4 * 1024**3  # llama-model-loader.cpp lazy_read::add auto_min_size
# ggml-metal-ops.cpp ggml_metal_op_flash_attn_ext_use_vec: ``(ne01 < 20) && (ne00 % 32 == 0)``, ne01 the queries of one
# KV stream, ne00 the query head size
FA_VEC_MAX_QUERIES = 19
FA_VEC_HEAD_MULTIPLE = 32

# the KV cache type spellings of other runtimes for llama.cpp's types (common/arg.cpp kv_cache_types: f16, q8_0, q4_0,
# ...): "q8" is q8_0
_LLAMA_KV = {"q8": "q8_0", "q4": "q4_0", "8bit": "q8_0", "4bit": "q4_0", "kv8": "q8_0", "kv4": "q4_0", "8": "q8_0",
             "4": "q4_0", "fp16": "f16", "q80": "q8_0", "q40": "q4_0", "q8-0": "q8_0", "q4-0": "q4_0"}

_LOWER: dict[int, tuple[GgmlTypeTable, dict[str, GgmlType]]] = {}


def _types_lower(table: GgmlTypeTable) -> dict[str, GgmlType]:
    """name.lower() -> type, built once per table (kv_element_bytes runs per cache layer per KV type)."""
    hit = _LOWER.get(id(table))
    if hit is None or hit[0] is not table:
        hit = _LOWER[id(table)] = (table, {t.name.lower(): t for t in table.types})
    return hit[1]


def _llama(rt: Runtime) -> LlamaCppFamily:
    assert isinstance(rt, LlamaCppFamily), rt.id  # engine_for sends only llama.cpp-family runtimes here
    return rt


class LlamaCpp:
    """llama.cpp and the products that run it underneath (adapters.py)."""

    name = "llama.cpp"
    server = "llama-server"
    mmap_streams = True       # default llama-server --load-mode auto = mmap: a GGUF larger than RAM streams from the SSD
    partial_offload = True    # -ngl
    kv_unified_option = True  # llama-server --kv-unified
    refuses_long_prompts = True  # tools/server: a prompt longer than the slot's context is an error
    # the first token is sampled from the logits of the batch that holds the prompt's last token
    # (tools/server/server-context.cpp: n_decoded = 1 right after that llama_decode)
    last_prompt_token_decodes = False
    host_step = True          # llama-server's sampling/streaming per token (the server calibration run)
    loads_vision_tower = False  # the projector is a separate file, loaded only with --mmproj
    context_checkpoints = True  # common/common.h n_ctx_checkpoints: recurrent-state checkpoints per slot
    drafts = True             # llama-server -md
    draft_one_at_a_time = False
    build_dtype_compute = False  # ggml-metal: activations in f32, quantized blocks dequantized to f32/f16 in-kernel

    # ---- memory layout
    def kv_alias(self, kv_type: str) -> str:
        """A KV cache type as llama.cpp spells it (q8 -> q8_0); unknown names unchanged."""
        k = kv_type.lower()
        return _LLAMA_KV.get(k, k)

    def check_kv_type(self, given: str, kv_type: str, runtime: Runtime, model: ModelProfile) -> None:
        """Nothing beyond the runtime's kv_types: a quantized V cache needs flash attention, which memory_model
        checks against the effective setting (quantized_v_needs_flash)."""

    def quantized_v_needs_flash(self, kv_type: str) -> bool:
        """llama-context.cpp: a quantized V cache requires flash attention (V is not transposed then)."""
        return kv_type not in ("f16", "bf16", "f32")

    def settings(self, runtime: Runtime, flash_attn: bool | None, kv_unified: bool | None) -> tuple[bool, bool]:
        """(flash attention, unified KV): the profile's defaults (flash attention, unified KV cache) unless the user set them."""
        rt = _llama(runtime)
        return (rt.flash_attn if flash_attn is None else flash_attn,
                rt.kv_unified if kv_unified is None else kv_unified)

    def kv_element_bytes(self, kv_type: str, runtime: Runtime, table: GgmlTypeTable, ne0: int) -> float:
        """Bytes per KV row element: ggml_row_size."""
        tt = _types_lower(table)[kv_type.lower()]
        if ne0 % tt.block_size:
            raise InputError(f"[[kv_type]] {kv_type}: row of {ne0} values is not a multiple of its block {tt.block_size}")
        return tt.bytes_per_block / tt.block_size

    def rotating(self, model: ModelProfile, runtime: Runtime) -> bool:
        """llama-kv-cache-iswa.cpp: sliding-window layers get their own window-sized cache, except for the
        model_types llama.cpp runs without SWA (planner/arch_attention.py LLAMA_CPP_NO_SWA)."""
        return model.config.model_type not in LLAMA_CPP_NO_SWA

    def cache_layer_bytes(self, c: CacheLayer, kv_type: str, runtime: Runtime, table: GgmlTypeTable) -> float:
        """KV bytes per token of one attention layer: K and V rows; MLA stores the latent (+ rope) as K only
        (llama-model.cpp deepseek2: V is a view of K); DSA indexer keys (planner/arch_attention.py): K only,
        in type_k."""
        per = c.k_elems * self.kv_element_bytes(kv_type, runtime, table, c.k_elems)
        if c.v_elems and c.kind != "mla":
            per += c.v_elems * self.kv_element_bytes(kv_type, runtime, table, c.v_elems)
        if c.index_elems:
            per += c.index_elems * self.kv_element_bytes(kv_type, runtime, table, c.index_elems)
        return per

    def state_bytes(self, c: CacheLayer) -> int:
        """llama_memory_recurrent: one F32 row of n_embd_r + n_embd_s per recurrent layer (planner/hybrid.py)."""
        return c.state_f32_elems * 4

    def decode_reads(self, cfg: ModelConfig, layers: Sequence[CacheLayer], runtime: Runtime, kv_type: str,
                     table: GgmlTypeTable) -> dict[str, int]:
        """llama.cpp applies DSA's top-k as a mask over the whole cache (src/llama-graph.cpp build_attn with
        top_k: kq_mask_top_k), so it reads what it stores: no entry."""
        return {}

    def resident_weights(self, by_group: dict[str, int], total: int) -> int:
        """llama.cpp reads a per-layer embedding table (Gemma 4 PLE, group lookup) of over 4 GiB lazily from the
        mmap, only the rows a batch needs (llama-model-loader.cpp lazy_read::add, default LLAMA_LAZY_MODE_AUTO;
        TENSOR_READ_LAZY in gemma4.cpp)."""
        lazy = by_group.get("lookup", 0)
        return total - lazy if lazy > LAZY_MIN_BYTES else total

    def cells(self, mm: MemoryModel, rt: LlamaCppFamily, context: int, users: int) -> tuple[int, int, int]:
        """(full cells, swa cells, per-stream n_kv) for llama-server -c context*users -np users."""
        pad = rt.ctx_pad
        n_ctx = pad_to(context * users, pad)  # llama-server -c is the total over slots
        if mm.kv_unified:
            streams, per_stream = 1, n_ctx
        else:
            streams = users
            per_stream = pad_to(n_ctx // users, pad)
        full = per_stream * streams
        swa = 0
        if mm.kv.swa_bytes_per_token:
            w = mm.kv.window or 0
            if rt.swa_full:
                swa_size = per_stream
            else:
                # llama-kv-cache-iswa.cpp: size_swa = PAD(min(size_base, n_swa*(unified ? n_seq : 1) + n_ubatch), 256)
                swa_size = pad_to(min(per_stream, w * (users if mm.kv_unified else 1) + mm.n_ubatch), pad)
            swa = swa_size * streams
        return full, swa, per_stream

    def memory_parts(self, mm: MemoryModel, context: int, users: int,
                     prompt_chunk: int | None) -> tuple[int, int, int, int, int, int]:
        """(KV, recurrent state, compute buffer, output buffer, overhead, cells) of llama-server."""
        m, rt, kv = mm.model.config, _llama(mm.runtime), mm.kv
        full, swa, n_kv = self.cells(mm, rt, context, users)
        kv_bytes = full * kv.bytes_per_token + swa * kv.swa_bytes_per_token
        ub = min(mm.n_ubatch, n_kv)
        # compute buffer, fitted to llama.cpp's allocator (docs/model-facts.md §4.1)
        cb_fa = ub * (rt.compute_vocab_bytes * m.vocab_size + rt.compute_embd_factor * m.hidden_size)
        cb = cb_fa
        if not mm.flash_attn:
            cb = max(cb_fa, ub * (4 * n_kv * (m.num_attention_heads + 1) + rt.compute_noflash_embd_factor * m.hidden_size))
        out = int(rt.output_bytes_per_vocab * m.vocab_size * users)
        cells = full + swa
        return (int(kv_bytes), kv.state_bytes_per_seq * users, int(cb), out, int(rt.runtime_overhead_mib * MiB), cells)

    def max_slots(self, kv_type: str) -> int | None:
        """llama-server batches any KV type: no cap."""
        return None

    def warn_fraction(self, runtime: Runtime) -> float | None:
        """llama.cpp does not warn about the working set."""
        return None

    def hidden_state_bytes(self, runtime: Runtime) -> int:
        """ggml keeps hidden states in F32 between backends."""
        return 4

    # ---- step times
    def prefill_chunk(self, mm: MemoryModel) -> int:
        """Prompt tokens per prefill step: the physical batch -ub of this memory model (Runtime.prefill_chunk
        unless the user gave a physical batch, n_ubatch)."""
        return mm.n_ubatch

    def prefill_steps(self, prompt: int, batch: int, chunk: int, prefill_batch: int = 1) -> int:
        """Prefill graph evaluations: n_ubatch tokens per graph over all sequences."""
        return math.ceil(prompt * batch / chunk)

    def unfused_attention(self, chip: Chip) -> bool:
        """llama.cpp's CPU backend has a flash-attention kernel of its own (ggml-cpu ops.cpp
        ggml_compute_forward_flash_attn_ext): never the unfused path."""
        return False

    def noflash(self, flash_attn: bool, factor: float) -> float:
        """Without flash attention (-fa off) attention runs as KQ mul_mat, soft_max and KQV mul_mat
        (llama-graph.cpp build_attn_mha): ``factor`` slower."""
        return 1.0 if flash_attn else factor

    def decode_attn_vec(self, flash_attn: bool, queries: int, heads: tuple[tuple[int, int], ...]) -> bool:
        """Whether a decode step's attention runs on the flash-attention vector kernel (kernel_flash_attn_ext_vec: one
        threadgroup per query row and head, float4 dot products and simd_sum, no simdgroup-matrix tiles) rather than
        the tiled matrix kernel prefill uses. ggml-metal-ops.cpp ggml_metal_op_flash_attn_ext_use_vec picks it for
        fewer than 20 queries per KV stream and a query head size that is a multiple of 32 (``heads``: the (query, value)
        head sizes of the attention layers, throughput.Geometry.attn_heads). The
        queries of a stream: llama-graph.cpp build_attn_mha splits the batch into n_stream = n_seqs_unq streams
        (llama-graph.cpp ``n_stream = cparams.kv_unified ? 1 : ubatch.n_seqs_unq``), so ``queries`` is one per
        sequence, or the whole batch with a unified cache. Without flash attention (-fa off) KQ and KQV are
        mul_mat ops, not this kernel."""
        return (flash_attn and queries <= FA_VEC_MAX_QUERIES
                and all(q % FA_VEC_HEAD_MULTIPLE == 0 for q, _ in heads))

    def prefill_attn_dims(self, cfg: ModelConfig) -> float | None:
        """llama.cpp prefills MLA in the absorbed latent like decode (deepseek2.cpp): no separate prefill dims."""
        return None

    def unfused_prefill_layers(self, cfg: ModelConfig, runtime: Runtime) -> tuple[list[CacheLayer], int]:
        """None: llama.cpp applies Gemma 2's logit soft-cap inside its flash-attention kernel (ggml_flash_attn_ext's
        logit_softcap, llama-graph.cpp build_attn_mha) and its kernels take every head size the catalog has; without
        flash attention the no-flash factor holds the cost."""
        return [], 0

    # ---- launch line
    def scheduler(self, mm: MemoryModel, slots: int, kv_unified: bool) -> Scheduler:
        """llama-server: -np slots, -b logical batch (at least the -ub chunk), every slot may prefill."""
        from ..serve import Scheduler

        rt = _llama(mm.runtime)
        return Scheduler("llama.cpp", slots, max(rt.n_batch, mm.n_ubatch), slots, kv_unified=kv_unified)

    def launch(self, mm: MemoryModel, q: QuantFormat, context: int, slots: int, fit: Fit) -> Recipe:
        from ..recipes import _llama_server

        return _llama_server(mm, q, context, slots, fit)

    def with_draft(self, r: Recipe, mm: MemoryModel, dm: MemoryModel, g: int) -> Recipe:
        from ..recipes import _llama_draft

        return _llama_draft(r, mm, dm, g)


ENGINE = LlamaCpp()
