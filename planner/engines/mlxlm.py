"""mlx-lm: its memory layout, step rules and launch line (mlx_lm.server).

References: mlx_lm/models/cache.py (KVCache growth, RotatingKVCache, QuantizedKVCache, ArraysCache),
mlx_lm/generate.py (generate_step, BatchGenerator, prefill_step_size), mlx_lm/server.py, mlx_lm/models/
deepseek_v3.py and deepseek_v32.py (MLA, DSA); mlx (ml-explore/mlx) mlx/backend/metal/scaled_dot_product_attention.cpp
and mlx/fast.cpp (which attention runs fused, and the fallback's ops).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .. import architecture as arch
from .. import hybrid
from ..errors import InputError
from ..schema import Chip, GgmlTypeTable, MlxRuntime, ModelConfig, ModelProfile, QuantFormat, Runtime
from ..units import MiB, pad_to

if TYPE_CHECKING:  # these modules import planner.engines
    from ..architecture import CacheLayer
    from ..memory import MemoryModel
    from ..recipes import Recipe
    from ..results import Fit
    from ..serve import Scheduler

_MLX_KV = {"8bit": "kv8", "4bit": "kv4", "q8": "kv8", "q4": "kv4", "8": "kv8", "4": "kv4", "q80": "kv8", "q40": "kv4",
           "f16": "bf16", "fp16": "bf16"}


# mlx-lm model files whose attention does not call mx.fast.scaled_dot_product_attention but computes it from separate
# ops on the GPU: mlx_lm/models/gemma2.py Attention.__call__ soft-caps the logits (attn_logit_softcapping), which the
# fused kernel cannot do: ``scores = queries @ keys.swapaxes(-1, -2)``; ``mx.tanh(scores / cap)``; ``scores *= cap``;
# ``mx.where(mask, scores, min)``; ``mx.softmax(scores, precise=True)``; ``scores @ values`` (mlx-lm 0.32.2).
MLX_UNFUSED_ATTENTION = frozenset({"gemma2"})
# Trips of an unfused layer's (H, S, L) score matrix through memory (MlxLm.unfused_prefill_layers): gemma2's ops above
# write it (QKᵀ), read and write it five times (/cap, tanh, ×cap, mask select, softmax), and read it (·V): 12.
SCORE_PASSES_SOFTCAP = 12
# mlx/fast.cpp scaled_dot_product_attention's fallback (v0.32.1 3a6219917e45 and 846d17622): ``scores = matmul(q,
# swapaxes(k))`` writes it; ``where(mask, scores, min)`` (mlx-lm always passes a mask for a prefill chunk: "causal"
# -> greater_equal, or a sliding-window array) reads and writes it; ``softmax(scores, precise=true)`` reads and
# writes it; ``matmul(scores, v)`` reads it: 6, in the inputs' dtype (``final_type``, bf16 activations).
SCORE_PASSES_FALLBACK = 6
# head sizes of mlx's sdpa_vector kernel (scaled_dot_product_attention.cpp sdpa_vector_supported_head_dim)
SDPA_VECTOR_HEAD_DIMS = frozenset({64, 96, 128, 256})


def _mlx(rt: Runtime) -> MlxRuntime:
    assert isinstance(rt, MlxRuntime), rt.id  # engine_for sends only mlx-lm-family runtimes here
    return rt


class MlxLm:
    """mlx-lm and the products whose caches follow it (adapters.py: LM Studio mlx-engine, mlx-vlm)."""

    name = "mlx-lm"
    server = "mlx_lm.server"
    mmap_streams = False      # mlx_lm/utils.py load_model: mx.load, then mx.eval(model.parameters())
    partial_offload = False
    kv_unified_option = False
    refuses_long_prompts = False
    # mlx_lm/generate.py generate_step prefills all but the last prompt token, then runs it through _step with the
    # first sampled token (``while total_prompt_tokens - prompt_processed_tokens > 1``)
    last_prompt_token_decodes = True
    host_step = False
    context_checkpoints = False
    drafts = True             # mlx_lm.server --draft-model
    draft_one_at_a_time = True  # mlx_lm.server with a draft model serves one request at a time (not batchable)
    loads_vision_tower = False  # the text model's sanitize() drops it (mlx_lm/models/gemma3.py, qwen3_5.py)
    # the embedding, norms and the scales of mx.quantize keep the build's float dtype and the activations follow
    # it (docs/model-facts.md §2.4): a bfloat16 build computes in bfloat16
    build_dtype_compute = True

    # ---- memory layout
    def kv_alias(self, kv_type: str) -> str:
        """A KV cache type as mlx-lm spells it (q8 -> kv8); unknown names unchanged."""
        k = kv_type.lower().replace("-", "").replace("_", "")
        return _MLX_KV.get(k, k)

    def check_kv_type(self, given: str, kv_type: str, runtime: Runtime, model: ModelProfile) -> None:
        if kv_type != "bf16" and self.rotating(model, runtime):
            raise InputError(f"[[kv_type]] {given}: mlx-lm cannot quantize the sliding-window (rotating) cache of "
                             f"{model.id} (RotatingKVCache Quantization NYI); use bf16")

    def quantized_v_needs_flash(self, kv_type: str) -> bool:
        """mlx has no flash-attention switch: any KV type runs."""
        return False

    def settings(self, runtime: Runtime, flash_attn: bool | None, kv_unified: bool | None) -> tuple[bool, bool]:
        """(flash attention, unified KV): neither is an mlx-lm setting, so off unless the caller says."""
        return (False if flash_attn is None else flash_attn, False if kv_unified is None else kv_unified)

    def kv_element_bytes(self, kv_type: str, runtime: Runtime, table: GgmlTypeTable, ne0: int) -> float:
        """Bytes per KV row element: the activation dtype, or QuantizedKVCache bits + 32/group (a scale and a
        bias in the activation dtype per group)."""
        rt = _mlx(runtime)
        act = rt.activation_bytes
        if kv_type in ("bf16", "f16", "fp16"):
            return act
        bits = {"kv8": 8, "kv4": 4, "kv6": 6, "kv3": 3, "kv2": 2}[kv_type]
        return bits / 8 + 2 * act / rt.kv_group_size

    def rotating(self, model: ModelProfile, runtime: Runtime) -> bool:
        """RotatingKVCache for the sliding layers of the model_types whose make_cache builds one
        (profiles/runtimes swa_model_types)."""
        return isinstance(runtime, MlxRuntime) and model.config.model_type in runtime.swa_model_types and any(
            c.kind == "sliding" for c in arch.cache_layers(model.config))

    def cache_layer_bytes(self, c: CacheLayer, kv_type: str, runtime: Runtime, table: GgmlTypeTable) -> float:
        """KV bytes per token of one attention layer: K and V rows; MLA caches the latent (+ rope) as keys only
        (deepseek_v3.py cache.update_and_fetch(kv_latent, k_pe)); DSA indexer keys with zero values, so twice
        (deepseek_v32.py Indexer)."""
        per = c.k_elems * self.kv_element_bytes(kv_type, runtime, table, c.k_elems)
        if c.v_elems and c.kind != "mla":
            per += c.v_elems * self.kv_element_bytes(kv_type, runtime, table, c.v_elems)
        if c.index_elems:
            per += c.index_elems * self.kv_element_bytes(kv_type, runtime, table, c.index_elems) * 2
        return per

    def state_bytes(self, c: CacheLayer) -> int:
        """ArraysCache: conv state in the activation dtype, SSM / delta state in float32 (planner/hybrid.py)."""
        return c.mlx_state_bytes

    def decode_reads(self, cfg: ModelConfig, layers: Sequence[CacheLayer], runtime: Runtime, kv_type: str,
                     table: GgmlTypeTable) -> dict[str, int]:
        """mlx-lm DSA decode (mlx_lm/models/deepseek_v32.py DeepseekV32Attention, L == 1): the indexer scores every
        cached key (keys only; its zero values are never read), then attention gathers the top index_topk latents
        (take_along_axis): per step idx_keys x context + latents x min(context, topk)."""
        if not cfg.index_topk or not any(c.index_elems for c in layers):
            return {}
        idx = sum(c.index_elems * self.kv_element_bytes(kv_type, runtime, table, c.index_elems) for c in layers)
        lat = sum(c.k_elems * self.kv_element_bytes(kv_type, runtime, table, c.k_elems)
                  for c in layers if c.kind == "mla")
        return {"read_bytes_per_token": math.ceil(idx), "swa_read_bytes_per_token": math.ceil(lat),
                "read_window": cfg.index_topk}

    def resident_weights(self, by_group: dict[str, int], total: int) -> int:
        """mlx-lm evaluates every weight into memory at load."""
        return total

    def memory_parts(self, mm: MemoryModel, context: int, users: int,
                     prompt_chunk: int | None) -> tuple[int, int, int, int, int, int]:
        """(KV, recurrent state, activations, output buffer, overhead, cells) of mlx-lm: one cache per sequence."""
        rt, kv = _mlx(mm.runtime), mm.kv
        step = rt.kv_step
        per_seq = pad_to(context, step)  # KVCache grows in 256-token steps
        S = min(prompt_chunk or mm.n_ubatch, context)
        swa_cells = min(per_seq, (kv.window or 0) + S - 1) if kv.swa_bytes_per_token else 0
        kv_bytes = users * (per_seq * kv.bytes_per_token + swa_cells * kv.swa_bytes_per_token)
        cells = users * (per_seq + swa_cells)
        cb = self.activations(mm, rt, S, context, users)
        out = 0
        return (int(kv_bytes), kv.state_bytes_per_seq * users, int(cb), out, int(rt.runtime_overhead_mib * MiB), cells)

    def activations(self, mm: MemoryModel, rt: MlxRuntime, S: int, context: int, users: int) -> int:
        """Peak transient memory of the last prefill chunk (S tokens against L = context keys), on top of the
        weights and the grown KV cache. mlx_lm/generate.py generate_step evaluates only the cache state per chunk
        (prefill_step_size), then mx.clear_cache(); the lm_head runs on the final token alone. Per chunk:

        - MLP phase: residual + normed input (2·S·h) and gate, up and the swiglu product (3·S·ffn)
          (mlx_lm/models/llama.py MLP);
        - attention without a fused kernel (head dim outside the Metal kernels, MLA, quantized KV): the
          H×S×L score matrix (mlx/fast.cpp scaled_dot_product_attention fallback; where() and softmax reuse
          the donated buffer) and its S×L bool causal mask (greater_equal); MLA holds a second H×S×L matrix,
          the rope scores passed as an additive mask (mlx_lm/models/deepseek_v3.py pe_scores);
        - cache growth: KVCache.update_and_fetch (mlx_lm/models/cache.py) concatenates a layer's old keys and
          values with the next 256-token steps, so one layer's old K/V (L − S tokens) is alive with the new;
        - logits of the last token in float32."""
        m = mm.model.config
        act, L = rt.activation_bytes, context
        per_chunk = S * (2 * m.hidden_size + 3 * m.ffn_width) * act
        if m.head_dim not in rt.fused_sdpa_head_dims or m.is_mla or mm.kv.kv_type != "bf16":
            per_chunk += (2 if m.is_mla else 1) * m.num_attention_heads * S * L * act + S * L
        per_chunk += mm.kv.bytes_per_token * max(L - S, 0) // m.num_hidden_layers
        per_chunk += hybrid.mlx_prefill_transient(m, S, act)  # recurrent layers' scan buffers (planner/hybrid.py)
        logits = m.vocab_size * 4
        return min(users, rt.prefill_batch_size) * per_chunk + logits

    def max_slots(self, kv_type: str) -> int | None:
        """mlx_lm.server --kv-bits disables batching: one slot with a quantized KV cache."""
        return 1 if kv_type != "bf16" else None

    def warn_fraction(self, runtime: Runtime) -> float | None:
        """Share of the working set above which mlx-lm warns (mlx_lm/generate.py wired_limit())."""
        return _mlx(runtime).warn_fraction

    def hidden_state_bytes(self, runtime: Runtime) -> int:
        """mlx activations are in the activation dtype (bf16, runtime activation_bytes)."""
        return _mlx(runtime).activation_bytes

    # ---- step times
    def prefill_chunk(self, mm: MemoryModel) -> int:
        """Prompt tokens per prefill step: prefill_step_size, the memory model's chunk (mlx_lm --prefill-step-size
        when asked, else Runtime.prefill_chunk; mlx_lm/generate.py generate_step prefill_step_size)."""
        return mm.n_ubatch

    def prefill_steps(self, prompt: int, batch: int, chunk: int, prefill_batch: int = 1) -> int:
        """``chunk`` tokens of up to ``prefill_batch`` sequences per step (BatchGenerator._process_prompts:
        model(tokens[:, :prefill_step_size]) on a (B, P) array)."""
        return math.ceil(batch / prefill_batch) * math.ceil(prompt / chunk)

    def unfused_attention(self, chip: Chip) -> bool:
        """MLX computes prefill attention from separate ops on a CPU stream (Roofline.prefill_attn_time)."""
        return chip.on_cpu

    def noflash(self, flash_attn: bool, factor: float) -> float:
        """mlx has no flash-attention switch: no slowdown."""
        return 1.0

    def decode_attn_vec(self, flash_attn: bool, queries: int, heads: tuple[tuple[int, int], ...]) -> bool:
        """mlx-lm decodes one query per sequence through mx.fast.scaled_dot_product_attention, whatever the batch;
        mlx runs its vector kernel (mlx/backend/metal/kernels/sdpa_vector.h) only for a query and value head of
        one size in {64, 96, 128, 256} (mlx/backend/metal/scaled_dot_product_attention.cpp
        ScaledDotProductAttention::use_fallback: ``sdpa_vector_supported_head_dim``), else it falls back to
        separate matmul / softmax / matmul ops (absorbed MLA: 576-wide queries over 512-wide values)."""
        return all(q == v and q in SDPA_VECTOR_HEAD_DIMS for q, v in heads)

    def prefill_attn_dims(self, cfg: ModelConfig) -> float | None:
        """mlx-lm prefills MLA with decompressed heads, not the absorbed latent of decode: for L > 1 it expands the
        latent to per-head keys (qk_nope) and values (v_head_dim) and scores the rope part apart (mlx_lm/models/
        deepseek_v3.py DeepseekV3Attention.__call__: ``if L == 1: ... else: k = self.embed_q(kv_latent,
        transpose=False); v = self.unembed_out(kv_latent)``): Σ H·(d_nope + d_rope + d_v) over the MLA layers."""
        if not cfg.is_mla:
            return None
        per = cfg.num_attention_heads * ((cfg.qk_nope_head_dim or 128) + (cfg.qk_rope_head_dim or 64)
                                         + (cfg.v_head_dim or 128))
        return float(per * sum(1 for c in arch.cache_layers(cfg) if c.kind == "mla"))

    def unfused_prefill_layers(self, cfg: ModelConfig, runtime: Runtime) -> tuple[list[CacheLayer], int]:
        """The attention layers whose prefill mlx computes from separate ops on the GPU, materialising the H×S×L score
        matrix, and the score matrix's trips through memory per such layer:

        - MLX_UNFUSED_ATTENTION (gemma2's soft-capped logits): 12 (SCORE_PASSES_SOFTCAP);
        - any other layer whose query/value head size has no fused full-attention kernel for a chunk of more than 8
          queries (the runtime's fused_sdpa_head_dims, mlx/backend/metal/scaled_dot_product_attention.cpp
          ScaledDotProductAttention::use_fallback at v0.32.1, 3a6219917e45: ``sdpa_full_supported_head_dim`` is
          {64, 72, 80, 96, 128}; at 846d17622 (0.32.2-dev) has_fused_kernel also lists 192 and 256 but use_fallback
          still returns true for them when ``query_sequence_length > 8``): mlx/fast.cpp scaled_dot_product_attention's
          fallback, 6 trips (SCORE_PASSES_FALLBACK). Gemma 2/3/4 (256; Gemma 4's global layers 512), Qwen3.5 /
          Qwen3.6 / Qwen3-Next (256).
        MLA (deepseek_v3.py: L > 1 calls the fused kernel on 128-wide decompressed heads) and recurrent layers are
        never here. Not modelled: mlx at 846d17622 runs head size 256 fused on NAX (M5) GPUs for a causal chunk of
        1024+ queries without an array mask (mlx 0.32.0/0.32.1, which the calibration rows ran, does not)."""
        rt = _mlx(runtime)
        attn = [c for c in arch.cache_layers(cfg) if c.kind not in ("linear", "mla")]
        if cfg.model_type in MLX_UNFUSED_ATTENTION:
            return attn, SCORE_PASSES_SOFTCAP
        fused = set(rt.fused_sdpa_head_dims)
        return [c for c in attn if (c.head_dim or cfg.head_dim) not in fused], SCORE_PASSES_FALLBACK

    # ---- launch line
    def scheduler(self, mm: MemoryModel, slots: int, kv_unified: bool) -> Scheduler:
        """mlx_lm.server: --decode-concurrency slots, prefill_step_size per step, --prompt-concurrency prompts."""
        from ..serve import Scheduler

        rt = _mlx(mm.runtime)
        return Scheduler("mlx-lm", slots, rt.prefill_step_size, min(rt.prefill_batch_size, slots))

    def launch(self, mm: MemoryModel, q: QuantFormat, context: int, slots: int, fit: Fit) -> Recipe:
        from ..recipes import _mlx_lm

        return _mlx_lm(mm, q, context, slots, fit)

    def with_draft(self, r: Recipe, mm: MemoryModel, dm: MemoryModel, g: int) -> Recipe:
        from ..recipes import _mlx_draft

        return _mlx_draft(r, mm, dm, g)


ENGINE = MlxLm()
