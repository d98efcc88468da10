"""Throughput: a roofline with fitted efficiencies -> prefill, decode, TTFT and time per request.

Decode step (B sequences at context c each), docs/model-facts.md §5.1-5.2, gguf-parser-go ``cmplat = max(...)``::

    bytes(B, c) = W_dense + W_experts · r(B) + B · (kv_full·c + kv_swa·min(c, W) + 2·state)
                  r(B) = B·k/E below the expert kernel's threshold (Roofline.expert_mm_min; kernel_mul_mv_id and
                  mlx gather_qmv re-read per token), else 1 − (1 − k/E)^B
    flops(B, c) = B · (2·N_active + 2·A_full·c + 2·A_swa·min(c, W))
    t_attn      = max(B · kv(c) / (η_kv · η_bw · BW), 2·B·A(c) / (η_ad · η_attn · F)) × (no flash attention: f_kv)
    t_step      = t_fix + weights / (η_bw · BW) + t_attn                                   (B = 1)
                  t_fix + weights / (η_bw · BW) + t_attn + (B − 1) · flops_1 / (η_mv · F)        (2 ≤ B ≤ mv_max_batch)
                  t_fix + max(weights / (η_bw · BW), flops_w / (η_cd · η_c · q · F)) + t_attn         (larger B)
    t_fix       = L · t_layer + L_moe · t_moe_layer + L_rec · t_rec_layer   (L_moe: layers with routed experts;
                  their router, top-k and gathered-expert kernels run one after another whatever the expert size;
                  L_rec: recurrent layers, their conv, norms, gates and state-update kernels likewise)
                  (expert bytes at η_bw · moe_bw_factor; up to mv_max_batch the matrix-vector kernels add each further
                  column's dot products to the reads; larger B runs prefill's kernel_mul_mm on the weights, padded to its
                  tile (η_cd: a ratio to the prefill η_c · q of the same chip and quant), and the attention kernel
                  after it, not overlapped: flops_w are the weight matmuls only)

Prefill of P tokens per sequence on D cached tokens (§5.3)::

    flops_mm   = 2 · (N_dense · B·P + N_expert · rows_e)   (lm_head only for the last position; rows_e: each expert's
                 routed rows per chunk padded to the 32-row tile, E · 32 · E[ceil(n/32)], n ~ Poisson(T·k/E))
    flops_attn = 2 · A · Σ_i min(D + i, W)             (causal; A = Σ_layers H·(d_qk + d_v))
                 + S · B·P                                (recurrent layers: S state-update FLOPs per token,
                                                            planner/hybrid.py state_flops; decode adds B · S too)
    t_prefill  = n_chunks · t_fix + max(flops_mm / (η_c·q·F), n_chunks · W_read / (η_bw·BW))
                 + flops_attn · fa / (η_attn · F)
                 (MLX on a CPU: unfused, every query of a chunk × every key up to its end, at η_c · F; mlx-lm
                 layers whose head size has no fused GPU kernel: that rectangle at η_c · F + the score matrix's
                 trips through memory at η_bw · BW, Engine.unfused_prefill_layers)
    mlx-lm's own prompt speed = P / (TTFT + W_all · t_wire): stream_generate's timer also waits for its call's
                 residency wiring of all W_all weight bytes (Roofline.wire_time; not the serving TTFT)

with F the peak GPU FLOPS (× the matrix-unit factor on M5), q the weight-class dequantization factor, η_ad the decode
attention kernel's FLOP efficiency relative to prefill's (eta_attn_decode, 1 unless a calibration fitted it; only where
the engine runs its vector kernel: llama.cpp flash attention with fewer than 20 queries per KV stream, else 1), fa the
no-flash-attention slowdown (llama.cpp -fa off) and n_chunks the number of physical batches (llama.cpp n_ubatch,
mlx-lm prefill_step_size). η ≤ 1, so decode never beats BW / bytes per step (the hard physical bound).
References: llama.cpp ggml/src/ggml-metal (mul_mv vs mul_mm kernels, flash_attn_ext), tools/batched-bench;
mlx-lm mlx_lm/generate.py (generate_step, prefill_step_size); docs/model-facts.md §5.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import architecture as arch
from . import hybrid
from .engines import Engine, by_name
from .engines.mlxlm import SCORE_PASSES_SOFTCAP
from .errors import InputError
from .memory import MemoryModel
from .schema import Chip, ModelConfig
from .speed_result import ThroughputEstimate
from .speed_schema import Constants, ResolvedSpeedConstants, SpeedConstants
from .units import gb_s_to_bytes_s, tflops_to_flops

MAX_KNEE_BATCH = 4096


# --------------------------------------------------------------------------- geometry
@dataclass(frozen=True)
class Geometry:
    """What a forward pass reads and computes, independent of chip and efficiencies."""

    n_layers: int
    dense_bytes: float        # weights read every decode step whatever the routing, embedding gather excluded [bytes]
    expert_bytes: float       # all routed-expert weights [bytes]
    n_experts: int            # E (0 = dense)
    top_k: int                # k
    matmul_params: float      # active params per token, embedding and lm_head excluded [1]
    head_params: float        # lm_head params (tied: the embedding read as the head) [1]
    kv_full: float            # KV bytes per token, full-attention layers [bytes]
    kv_swa: float             # KV bytes per token, sliding-window layers [bytes]
    window: int | None
    state_bytes: float        # recurrent state per sequence [bytes]
    attn_full: float          # Σ_full layers H·(d_qk + d_v): attention MACs per query per key [1]
    attn_swa: float           # same over sliding-window layers [1]
    quant_class: str = "float"
    expert_matmul_params: float = 0.0  # routed-expert params per token (top_k × one expert), within matmul_params [1]
    prefill_attn_full: float | None = None  # attn_full as prefill computes it, when it differs (mlx-lm MLA) [1]
    state_flops: float = 0.0  # recurrent-state update per token per sequence, all layers (planner/hybrid.py) [FLOP]
    score_heads: float = 0.0  # Σ_layers H where prefill attention is unfused on the GPU, materialising the score
                              # matrix (Engine.unfused_prefill_layers), over layers attending every key; 0 = fused [1]
    score_heads_swa: float = 0.0  # same over sliding-window layers with a bounded cache (keys up to W + chunk) [1]
    score_passes: float = SCORE_PASSES_SOFTCAP  # trips of such a layer's score matrix through memory (engine rule) [1]
    unfused_full: float = 0.0  # the part of attn_full (prefill: prefill_attn_full) on those layers [1]
    unfused_swa: float = 0.0   # the part of attn_swa on those layers [1]
    moe_layers: int = 0       # layers with a routed-expert block (t_moe_layer_s per forward pass) [1]
    recurrent_layers: int = 0  # layers with a recurrent state (t_recurrent_layer_s per forward pass) [1]
    weight_bytes: float = 0.0  # every weight the runtime holds in memory (MemoryModel.resident_weights) [bytes]
    attn_heads: tuple[tuple[int, int], ...] = ((128, 128),)  # the attention layers' (query, value) head sizes
                              # (absorbed MLA: kv_lora_rank + rope, kv_lora_rank): each engine's vector kernel takes
                              # only some (Engine.decode_attn_vec)

    def expert_union(self, tokens: int) -> float:
        """Expected fraction of routed experts touched by ``tokens`` tokens, uniform routing: 1 − (1 − k/E)^n."""
        if not self.n_experts:
            return 0.0
        return 1.0 - (1.0 - self.top_k / self.n_experts) ** max(tokens, 1)

    def padded_expert_rows(self, tokens: float, tile: int) -> float:
        """Token rows the expert matrix-matrix kernel computes for ``tokens`` tokens: each expert's rows are padded up
        to the kernel tile, so few tokens per expert waste most of each tile. [rows, summed over experts]

        llama.cpp kernel_mul_mm_id (ggml-metal.metal) groups the rows routed to each expert and runs 32-row tiles
        per expert (ggml-metal-ops.cpp ggml_metal_op_mul_mat_id: threadgroups (ne21 + 31)/32 per expert). With
        uniform routing an expert's count is ~Poisson(λ = T·k/E), so rows = E · tile · E[ceil(n / tile)],
        E[ceil(n/t)] = Σ_{j≥0} P(n > j·t). MLX tiles differently (segment_expert_rows)."""
        if not self.n_experts or tokens <= 0:
            return 0.0
        lam = tokens * self.top_k / self.n_experts
        return self.n_experts * tile * expected_tiles(lam, tile)

    def segment_expert_rows(self, tokens: float, tile: int) -> float:
        """Token rows MLX's sorted gather kernel computes for ``tokens`` tokens. [rows, summed over experts]

        mlx gather_qmm_rhs (ml-explore/mlx 846d176 mlx/backend/metal/kernels/fp_quantized.h fp_gather_qmm_rhs,
        quantized.h the same) tiles the R = T·k rows sorted by expert (mlx_lm switch_layers.py SwitchGLU) in
        ``tile``-row blocks, not per expert: a block runs one full-tile matmul for each expert segment it holds
        ("Do as many matmuls as necessary"). Segments = blocks + the expert boundaries inside a block: each of the
        E_t − 1 boundaries between the E_t touched experts falls on a block start with probability 1/tile, so
        rows = tile · (R/tile + (tile − 1)/(2·tile) + (E_t − 1)(1 − 1/tile)) = R + (tile − 1)(E_t − 1/2)."""
        if not self.n_experts or tokens <= 0:
            return 0.0
        touched = self.n_experts * self.expert_union(math.ceil(tokens))
        return tokens * self.top_k + (tile - 1) * max(touched - 0.5, 0.0)

    def expert_reads(self, tokens: int, mm_id_min: int = 1) -> float:
        """Routed-expert weights read by one pass over ``tokens`` tokens, as a fraction of all of them. [1]

        From ``mm_id_min`` tokens on, the expert matmul is the matrix-matrix kernel, which groups each expert's rows
        and reads the expert once: the union of touched experts. Below it (llama.cpp ggml-metal-common.cpp
        ggml_metal_op_mul_mat_id_use_mm: ``ne21 >= 32``) kernel_mul_mv_id runs one threadgroup grid per (token,
        expert slot) pair (ggml-metal.metal kernel_mul_mv_id: ``iid1 = tgpig.z/nei0``), each reading its expert's
        rows again: tokens · k experts. Both agree at one token (k of E)."""
        if not self.n_experts:
            return 0.0
        if tokens < mm_id_min:
            return max(tokens, 1) * self.top_k / self.n_experts
        return self.expert_union(tokens)

    def weights_read(self, tokens: int, mm_id_min: int = 1) -> float:
        """Weight bytes read by one pass over ``tokens`` tokens (decode: tokens = batch). [bytes]"""
        return self.dense_bytes + self.expert_bytes * self.expert_reads(tokens, mm_id_min)

    def kv_read(self, context: float) -> float:
        """KV + state bytes read per sequence per decode step at ``context`` cached tokens. [bytes]"""
        swa_ctx = min(context, self.window) if self.window else context
        # recurrent state is read and written back every step (llama.cpp ssm_scan / mlx gated_delta)
        return self.kv_full * context + self.kv_swa * swa_ctx + 2 * self.state_bytes

    def batch_kv_read(self, batch: int, context: float, shared: float = 0.0) -> float:
        """KV + state bytes a decode step reads for ``batch`` sequences at ``context`` cached tokens each, of which
        the first ``shared`` are one prefix every sequence shares (llama-batched-bench ``-pps``: the prompt is
        decoded once and its cells assigned to every sequence, llama_memory_seq_cp; the attention reads those
        cells once per step for the whole batch, not once per sequence). [bytes]"""
        own = batch * self.kv_read(context)
        if shared <= 0 or batch <= 1:
            return own
        s = min(shared, context)
        prefix = self.kv_full * s + self.kv_swa * (min(s, self.window) if self.window else s)
        return own - (batch - 1) * prefix

    def attn_keys(self, context: float) -> float:
        """Attention MACs per query token at ``context`` keys, all layers (×2 for FLOPs). [1]"""
        swa_ctx = min(context, self.window) if self.window else context
        return self.attn_full * context + self.attn_swa * swa_ctx


def expected_tiles(lam: float, tile: int) -> float:
    """E[ceil(n / tile)] for n ~ Poisson(lam): Σ_{j≥0} P(n > j·tile). Large lam: lam/tile + (tile − 1)/(2·tile)
    (the remainder is uniform over the tile)."""
    if lam > 400:
        return lam / tile + (tile - 1) / (2 * tile)
    n_max = int(lam + 12 * math.sqrt(lam) + tile + 1)
    pmf = math.exp(-lam)
    cdf, total = 0.0, 0.0
    for n in range(n_max + 1):
        if n > 0:
            pmf *= lam / n
        cdf += pmf
        if n % tile == 0:   # P(n' > n) for n = j·tile
            total += max(0.0, 1.0 - cdf)
    return total


def quant_class(quant_id: str, kind: str, mode: str | None = None) -> str:
    """Weight class for the prefill dequantization factor."""
    q = quant_id.upper()
    if kind == "mlx":
        return {"none": "float", "affine": "affine"}.get(mode or "", "fp4")
    if q in ("F16", "BF16", "F32"):
        return "float"
    if q.startswith("MXFP4"):
        return "mxfp4"
    if q.startswith("IQ"):
        return "iquant"
    if "_K" in q:
        return "kquant"
    return "legacy"


SCORE_ELEMENT_BYTES = 2  # a materialised score matrix is in the activations' dtype (bf16; mlx fast.cpp final_type)


def _attention_dims(cfg: ModelConfig, runtime_family: str) -> tuple[float, float]:
    """(Σ H·(d_qk+d_v) over full layers, same over sliding layers); the same for every engine (decode attends
    absorbed MLA in the latent on both; mlx-lm's decompressed MLA prefill is Engine.prefill_attn_dims)."""
    full = swa = 0.0
    H = cfg.num_attention_heads
    for c in arch.cache_layers(cfg):
        if c.kind == "linear":
            continue
        if c.kind == "mla":
            # absorbed MLA attends in the latent space: d_qk = kv_lora_rank + rope, d_v = kv_lora_rank
            # (llama.cpp src/models/deepseek2.cpp, mlx_lm/models/deepseek_v3.py; docs/model-facts.md §5.3)
            per = H * (c.k_elems + (cfg.kv_lora_rank or 0))  # set on every MLA config (schema)
        else:
            per = H * 2 * (c.head_dim or cfg.head_dim)  # per-layer head size (Gemma 4: global_head_dim on full layers)
        if c.kind == "sliding" and c.window:
            swa += per
        else:
            full += per
    return full, swa


def _attn_heads(cfg: ModelConfig) -> tuple[tuple[int, int], ...]:
    """The distinct (query, value) head sizes of the attention layers as decode runs them: absorbed MLA queries
    are kv_lora_rank + rope wide over kv_lora_rank-wide values (deepseek2.cpp; mlx_lm/models/deepseek_v3.py).
    Recurrent layers have no attention."""
    sizes = {(c.k_elems, cfg.kv_lora_rank or 0) if c.kind == "mla" else (c.head_dim or cfg.head_dim,) * 2
             for c in arch.cache_layers(cfg) if c.kind != "linear"}
    return tuple(sorted(sizes))


def _matmul_params(cfg: ModelConfig) -> tuple[int, int, int]:
    """(head, matmul, expert matmul) parameters a decoded token multiplies (see geometry)."""
    tied = cfg.tie_word_embeddings
    head = 0
    matmul = expert_mm = 0
    k = cfg.num_experts_per_tok or 1
    for t in arch.tensors(cfg):
        if t.group in ("embedding", "output"):
            if t.group == "output" or tied:
                head += t.ne0 * t.ne1
        elif t.group == "experts":
            matmul += t.ne0 * t.ne1 * min(k, t.n)
            expert_mm += t.ne0 * t.ne1 * min(k, t.n)
        elif t.group not in ("norm", "lookup"):
            matmul += t.n_elements
    return head, matmul, expert_mm


def geometry(mm: MemoryModel, quant_kind: str = "gguf", quant_mode: str | None = None) -> Geometry:
    """Geometry of a model as loaded by one runtime in one quant (weights and KV from the memory model)."""
    cfg = mm.model.config
    g = mm.weights.by_group
    tied = cfg.tie_word_embeddings
    embed = g.get("embedding", 0)
    experts = g.get("experts", 0)
    # dense: everything but the embedding gather (one row); tied models read the embedding once as the head
    # a per-layer embedding table (group lookup, Gemma 4 PLE) is gathered one row per token like the embedding
    dense = sum(v for k, v in g.items() if k not in ("embedding", "experts", "lookup")) + (embed if tied else 0)
    k = cfg.num_experts_per_tok or 1
    head, matmul, expert_mm = arch._memo("geometry_params", cfg, _matmul_params)  # once per config: a sweep
    kv = mm.kv
    kv_swa_window = kv.window if kv.swa_bytes_per_token else None
    if kv.read_window:  # mlx-lm DSA decode reads only the top-k latents (KVLayout.read_window)
        kv_swa_window = kv.read_window
    family = mm.engine.name
    full, swa = arch._memo("attention_dims:" + family, cfg, lambda c: _attention_dims(c, family))  # per config
    if not kv.swa_bytes_per_token:
        full, swa = full + swa, 0.0  # mlx-lm keeps a full cache for models without a rotating cache
    return Geometry(
        n_layers=cfg.num_hidden_layers, dense_bytes=float(dense), expert_bytes=float(experts),
        n_experts=cfg.n_experts if cfg.is_moe else 0, top_k=k if cfg.is_moe else 0,
        matmul_params=float(matmul), head_params=float(head),
        # KV-shared layers (Gemma 4) re-read their owner's cache: the read, not the store, per decode step
        kv_full=float(kv.read_bytes_per_token if kv.read_bytes_per_token is not None else kv.bytes_per_token),
        kv_swa=float(kv.swa_read_bytes_per_token if kv.swa_read_bytes_per_token is not None
                     else kv.swa_bytes_per_token), window=kv_swa_window, state_bytes=float(kv.state_bytes_per_seq),
        attn_full=full, attn_swa=swa, quant_class=quant_class(mm.quant_id, quant_kind, quant_mode),
        expert_matmul_params=float(expert_mm) if cfg.is_moe else 0.0,
        prefill_attn_full=mm.engine.prefill_attn_dims(cfg),
        state_flops=arch._memo("state_flops", cfg, hybrid.state_flops),  # per config, like the sums above
        **_unfused_prefill(mm),
        moe_layers=arch._memo("moe_layers", cfg, moe_layers) if cfg.is_moe else 0,
        recurrent_layers=arch._memo("recurrent_layers", cfg, hybrid.recurrent_layers),
        weight_bytes=float(mm.resident_weights),
        attn_heads=arch._memo("attn_heads", cfg, _attn_heads))


def _unfused_prefill(mm: MemoryModel) -> dict[str, float]:
    """Geometry fields of the attention layers the engine prefills from separate ops on the GPU
    (Engine.unfused_prefill_layers): Σ H and Σ H·(d_qk + d_v) over them, split like attn_full / attn_swa (sliding
    layers count as sliding only with a bounded cache, as in geometry), and the score matrix's trips per layer."""
    cfg = mm.model.config
    layers, passes = mm.engine.unfused_prefill_layers(cfg, mm.runtime)
    if not layers:
        return {}
    bounded = bool(mm.kv.swa_bytes_per_token)
    H = cfg.num_attention_heads
    out = {"score_heads": 0.0, "score_heads_swa": 0.0, "score_passes": float(passes), "unfused_full": 0.0,
           "unfused_swa": 0.0}
    for c in layers:
        part = "swa" if bounded and c.kind == "sliding" and c.window else "full"
        out["score_heads" if part == "full" else "score_heads_swa"] += H
        out[f"unfused_{part}"] += H * 2 * (c.head_dim or cfg.head_dim)  # as _attention_dims
    return out


def moe_layers(cfg: ModelConfig) -> int:
    """Layers that hold a routed-expert block (architecture.tensors group ``experts``; DeepSeek's first_k_dense
    layers and interleaved dense layers have none). Each such layer adds its own chain of small dependent kernels
    to a forward pass, whatever its experts' size: mlx_lm/models/qwen3_moe.py Qwen3MoeSparseMoeBlock runs the router
    matmul, softmax, argpartition, take_along_axis and the score normalisation, then SwitchGLU
    (mlx_lm/models/switch_layers.py) expand_dims, three gather_qmm and the activation, then the score product and
    sum: a dozen dispatches on top of the dense layer's (Roofline.fixed_time)."""
    return len({t.layer for t in arch.tensors(cfg) if t.group == "experts" and t.layer is not None})


# --------------------------------------------------------------------------- chip peaks
def bandwidth(chip: Chip) -> float:
    """Vendor memory bandwidth [bytes/s]; refuses chips without one."""
    if chip.memory_bandwidth_gb_s is None:
        raise InputError(f"[[chip]] {chip.name} {chip.gpu_cores}-core: memory bandwidth is not published "
                         f"({chip.status}); speed cannot be predicted (memory answers still work)")
    return gb_s_to_bytes_s(chip.memory_bandwidth_gb_s)


def peak_flops(chip: Chip, reference_chips: list[Chip] | None = None) -> tuple[float, str]:
    """Peak FP16 GPU FLOPS without matrix units [FLOP/s], and how it was obtained.

    Chips with no published figure (M5) get cores × the highest per-core rate of the newest earlier generation
    with figures (per-core rate = 256 FLOP/clk × clock, docs/model-facts.md §5.3 table).
    """
    if chip.gpu_fp16_tflops:
        return tflops_to_flops(chip.gpu_fp16_tflops), chip.tflops_basis or "chip profile"
    refs = [c for c in (reference_chips or []) if c.gpu_fp16_tflops and c.generation < chip.generation]
    if not refs:
        raise InputError(f"[[chip]] {chip.label}: no GPU FLOPS figure and no earlier generation to derive it from")
    gen = max(c.generation for c in refs)
    per_core = max((c.gpu_fp16_tflops or 0.0) / c.gpu_cores for c in refs if c.generation == gen)
    return (tflops_to_flops(per_core * chip.gpu_cores),
            f"derived: {chip.gpu_cores} cores × {gen} per-core {per_core * 1000:.0f} GFLOPS (no published figure)")


# --------------------------------------------------------------------------- the roofline
@dataclass(frozen=True)
class Roofline:
    """Geometry + chip peaks + constants: every time below in seconds."""

    geo: Geometry
    bw: float                 # [bytes/s]
    flops: float              # peak incl. matrix units [FLOP/s]
    k: Constants              # resolved: every required field set (schema.Constants)
    runtime_family: str = "llama.cpp"
    flash_attn: bool = True
    chunk: int = 512          # tokens per physical batch (n_ubatch / prefill_step_size)
    prefill_batch: int = 1    # sequences per prefill step (Runtime.prefill_batch)
    shared_prefix: int = 0    # leading context tokens every sequence of the batch shares (one copy in the cache)
    unified_kv: bool = False  # one cache for all sequences, every query scanning all its cells (masked)
    attn_unfused: bool = False  # prefill attention as plain matmuls over the whole score rectangle (MLX on a CPU)
    calibration: str = ""     # where ``k`` came from (ResolvedSpeedConstants.source); estimate() reports it

    @property
    def engine(self) -> Engine:
        """The engine named by ``runtime_family`` (planner/engines): its step rules apply."""
        return by_name(self.runtime_family)

    # ---- decode
    def fixed_time(self) -> float:
        """Fixed cost of one forward pass, whatever the bytes and FLOPs: L · t_layer + L_moe · t_moe_layer. [s]

        A decode step of one token is a chain of dependent kernels, each waiting for the one before it (mlx-lm
        evaluates one lazily built graph per step, mlx_lm/generate.py generate_step; llama.cpp one ggml graph): the
        dispatch and ramp of each costs time that no weight stream hides. A MoE layer adds its routing chain
        (moe_layers) to the dense layer's. mlx-lm measurements show both: mlx-lm BENCHMARKS.md (M4 Max, mlx 0.29)
        decodes Qwen3-4B at 134.5 / 116.4 / 104.7 / 86.9 / 52.5 tok/s in 4 / 5 / 6 / 8 / 16 bits, a straight line in
        the bytes per token with an intercept of 2.9 ms (36 layers, ~80 us each); the same source's Qwen3-30B-A3B
        (48 MoE layers) in 4 and 8 bits has an intercept of 5.2 ms, ~28 us more per layer; guruswami-ai's M3 Ultra
        sweep (2 to 8 bits) gives Llama-3.1-8B 3.0 ms, Mixtral-8x7B (32 MoE layers) 4.4 ms.

        A recurrent layer (gated DeltaNet, Mamba) adds its own chain in place of attention: mlx_lm/models/qwen3_5.py
        GatedDeltaNet runs two projections, the causal conv1d with its state concat, SiLU, the q/k RMS norms,
        compute_g, the sigmoid gate, the gated_delta kernel and the gated RMSNorm; llama.cpp qwen35.cpp
        build_layer_attn_linear the same ops as ggml nodes (ssm_conv, l2_norm, gated_delta_net, norm, mul). Their
        launches cost time: fusing the chain after the conv into one Metal kernel took Qwen3.6-35B-A3B (30 such
        layers) from 114.65 to 128.00 tok/s on an M3 Ultra, 0.91 ms a step, ~30 us a layer (Rapid-MLX PR #3383,
        raullenchai/Rapid-MLX). t_recurrent_layer_s is that cost per layer, fitted (unset = 0)."""
        k = self.k
        return (self.geo.n_layers * k.t_layer_s + self.geo.moe_layers * (k.t_moe_layer_s or 0.0)
                + self.geo.recurrent_layers * (k.t_recurrent_layer_s or 0.0))

    def step_bytes(self, batch: int, context: float) -> float:
        return self.geo.weights_read(batch, self.expert_mm_min()) + self.geo.batch_kv_read(batch, context, self.shared_prefix)

    def step_flops(self, batch: int, context: float) -> float:
        g = self.geo
        return batch * (2 * (g.matmul_params + g.head_params) + 2 * g.attn_keys(context))

    def keys_per_query(self, batch: int, context: float) -> float:
        """Cache cells one decode query attends over. [tokens] Its own ``context``, or with a unified cache every
        cell of every sequence, masked but computed: llama.cpp before per-sequence streams (llama-kv-cache.cpp
        kv_unified; every build of 2023-2024) ran KQ over all n_kv used cells for the whole batch, so B
        sequences at c tokens cost B · c keys per query (less the shared prefix, stored once)."""
        if not self.unified_kv or batch <= 1:
            return context
        return batch * context - (batch - 1) * min(self.shared_prefix, context)

    def prefill_attn_flops(self, prompt: int, depth: int, batch: int) -> float:
        """Causal attention FLOPs of ``batch`` prompts of ``prompt`` tokens on ``depth`` cached each, over the layers a
        fused attention kernel runs (all but Geometry.unfused_full / unfused_swa). With a unified cache
        (keys_per_query) a token attends to every earlier cell of every sequence: one prompt of B·P on B·D."""
        if self.unified_kv and batch > 1:
            return 2 * _causal_keys(self.geo, prompt * batch, depth * batch)
        return 2 * batch * _causal_keys(self.geo, prompt, depth)

    def step_parts(self, batch: int, context: float) -> tuple[float, float, float]:
        """(fixed, memory, compute) times of one decode step; the step takes fixed + max(memory, compute). [s]

        Memory: routed-expert bytes stream at ``moe_bw_factor`` × the dense efficiency (gather, many small matmuls).
        Compute: batches up to ``mv_max_batch`` run matrix-vector kernels: B = 1 is the bandwidth kernel itself,
        each further column adds its dot products at η_mv *on top of* the weight reads (llama.cpp
        kernel_mul_mv_ext_* / mlx qmv_wide read a weight block once, then loop over the columns; the measured
        B = 2..8 steps grow by (B − 1) × a per-column cost, not as max(memory, compute)). The overlap that is not
        hidden, min(memory, compute), is returned in the fixed part so that fixed + max(memory, compute) is the
        sum. Larger batches run the matrix-matrix kernel, which overlaps with the weight reads and pads the batch up
        to its ``mm_tile`` (ggml-metal-ops.cpp ``ne11_mm_min = 8``; kernel_mul_mm 32-column tiles); the attention
        over the caches (kv_time) is a separate kernel after the projections, so it is in the fixed part there."""
        k, g = self.k, self.geo
        w_exp = g.expert_bytes * g.expert_reads(batch, self.expert_mm_min())
        t_w = (g.dense_bytes + w_exp / k.moe_bw_factor) / (k.eta_bw * self.bw)
        t_att = self.kv_time(batch, context)
        fixed = self.fixed_time()
        keys = self.keys_per_query(batch, context)
        if batch <= k.mv_max_batch:
            t_mem = t_w + t_att
            t_cmp = (batch - 1) * self.step_flops(1, keys) / (k.eta_mv * self.flops)
            return fixed + min(t_mem, t_cmp), t_mem, t_cmp
        padded = math.ceil(batch / k.mm_tile) * k.mm_tile
        # dense weights: one padded column tile at the batched-decode efficiency; routed experts: their own tiles,
        # padded per expert, at the prefill efficiency (expert_time, the rule prefill uses)
        t_cmp = self.mm_flops(padded) / (self.eta_mm_decode() * self.flops) + self.expert_time(batch)
        # attention is its own kernel after the projections (flash_attn_ext_vec per sequence): it does not overlap
        # with the matrix-matrix weight pass, so it joins the fixed part
        return fixed + t_att, t_w, t_cmp

    def expert_rows(self, tokens: float) -> float:
        """Routed-expert token rows one matmul pass computes: in the matrix-matrix kernel each expert's rows padded
        to the tile (llama.cpp, Geometry.padded_expert_rows) or one full tile per expert segment of each block
        (MLX, Geometry.segment_expert_rows); below its threshold tokens · k unpadded vector products. [rows]"""
        g, k = self.geo, self.k
        if tokens < self.expert_mm_min():
            return tokens * g.top_k
        tile = self.expert_tile(tokens)
        if k.expert_tiling == "segments":
            return g.segment_expert_rows(tokens, tile)
        return g.padded_expert_rows(tokens, tile)

    def expert_tile(self, tokens: float) -> int:
        """Row tile of the routed-expert matrix kernel for a pass of ``tokens`` tokens: expert_tile (unset:
        mm_tile), or expert_tile_wide from expert_tile_wide_from rows per expert on. MLX on neural accelerators
        (ml-explore/mlx a076a63 #4023 quantized.cpp gather_qmm_rhs_nax: ``bm = (M / E < 64) ? 32 : 64`` with M the
        T·k sorted rows; c7ff35d #4352 quantized_nax.h: a simdgroup (bm / 2 rows) skips a segment it does not
        hold, so a segment costs 16 or 32 rows). [rows]"""
        k, g = self.k, self.geo
        if k.expert_tile_wide and k.expert_tile_wide_from and g.n_experts \
                and tokens * g.top_k >= k.expert_tile_wide_from * g.n_experts:
            return k.expert_tile_wide
        return k.expert_tile or k.mm_tile

    def expert_mm_min(self) -> int:
        """Smallest pass (tokens) whose routed experts run the matrix-matrix kernel, which reads each touched expert
        once; below it each (token, expert) pair runs a vector kernel that reads its expert again. llama.cpp:
        mm_id_min_batch tokens (ggml-metal-common.cpp ggml_metal_op_mul_mat_id_use_mm: ne21 >= 32). MLX: also
        mm_id_min_rows_per_expert sorted rows per expert on average, T·k/E >= 4 (ml-explore/mlx 846d176
        quantized.cpp GatherQMM::eval_gpu: ``B / E >= 4``, from mlx #2609 of 2025-09; 8 before). [tokens]"""
        k, g = self.k, self.geo
        m = k.mm_id_min_batch or 1
        if k.mm_id_min_rows_per_expert and g.top_k:
            m = max(m, math.ceil(k.mm_id_min_rows_per_expert * g.n_experts / g.top_k))
        return m

    def expert_time(self, tokens: float) -> float:
        """Compute time of the routed experts for one pass over ``tokens`` tokens (a prefill chunk or a decode
        batch): expert_rows through one expert each at the prefill matrix efficiency η_c · q. [s]

        kernel_mul_mm_id (ggml-metal.metal; ggml-metal-ops.cpp ggml_metal_op_mul_mat_id) runs a grid of 32-row
        tiles per expert over all experts, so even a decode batch of 32 keeps as many threadgroups busy as a prefill
        chunk: it runs at prefill's efficiency, with each touched expert's partial tile computed whole."""
        g = self.geo
        if not g.top_k:
            return 0.0
        return 2 * g.expert_matmul_params / g.top_k * self.expert_rows(tokens) / (min(1.0, self.eta_prefill())
                                                                                    * self.flops)

    def kv_time(self, batch: int, context: float) -> float:
        """Decode attention over the cache of ``batch`` sequences: max(KV stream, attention FLOPs). [s]

        The attention kernel reads K and V at η_kv × the weight stream's efficiency (llama.cpp
        kernel_flash_attn_ext_vec in ggml-metal.metal and mlx sdpa_vector in mlx/backend/metal/kernels/sdpa_vector.h
        split the keys over simdgroups, then reduce across them with softmax bookkeeping per block), and it computes
        2·Σ H·(d_qk + d_v) FLOPs per key at the attention efficiency η_attn: for many query heads per KV head
        (absorbed MLA: 128 heads over one 576-wide latent, deepseek2.cpp / deepseek_v3.py) that compute, not the
        read, sets the depth cost. A decode query runs alone (llama.cpp kernel_flash_attn_ext_vec on Metal; on a
        CPU ggml-cpu ops.cpp ggml_compute_forward_flash_attn_ext_f16_one_chunk, a dot, an exp and a mad per key and
        head), not in prefill's tiled kernel, so its FLOPs run at η_attn × eta_attn_decode (unset: 1) when the
        engine runs that vector kernel (eta_attn_decode below), else at prefill's η_attn. Without
        flash attention (llama.cpp -fa off, Ollama's default) the step runs
        separate KQ mul_mat, soft_max and KQV mul_mat over a transposed V cache (llama-graph.cpp build_attn_mha),
        writing and re-reading the score matrix: noflash_kv_factor × slower."""
        k, g = self.k, self.geo
        t_read = g.batch_kv_read(batch, context, self.shared_prefix) / (k.eta_bw * k.eta_kv * self.bw)
        # + the recurrent layers' state update, one per sequence per step (hybrid.state_flops)
        t_flops = (2 * batch * g.attn_keys(self.keys_per_query(batch, context)) + batch * g.state_flops) / (
            k.eta_attn * self.eta_attn_decode(batch) * self.flops)
        slow = self.engine.noflash(self.flash_attn, k.noflash_kv_factor)
        return max(t_read, t_flops) * slow

    def eta_attn_decode(self, batch: int) -> float:
        """Decode attention's FLOP efficiency relative to η_attn: the constant eta_attn_decode (unset: 1) when the
        engine's decode step runs the vector attention kernel (Engine.decode_attn_vec: llama.cpp picks
        kernel_flash_attn_ext_vec for fewer than 20 queries per KV stream, one per sequence with per-sequence
        streams, the whole batch with a unified cache), else 1: the tiled matrix kernel of prefill. [1]"""
        queries = batch if self.unified_kv else 1
        if self.engine.decode_attn_vec(self.flash_attn, queries, self.geo.attn_heads):
            return self.k.eta_attn_decode or 1.0
        return 1.0

    def mm_flops(self, rows: float) -> float:
        """FLOPs of ``rows`` (padded) token rows through the dense weights and lm_head in one matrix-matrix pass
        (routed experts: expert_time). [FLOP]"""
        g = self.geo
        return rows * 2 * (g.matmul_params - g.expert_matmul_params + g.head_params)

    def eta_mm_decode(self) -> float:
        """Efficiency of the batched-decode matrix-matrix kernel: η_c_decode × the prefill η_c · q of this chip
        and weight class. Same kernel as prefill (ggml-metal-common.cpp ggml_metal_op_mul_mat_use_mm: ne11 > 8
        -> kernel_mul_mm), so generation and dequantization cost carry over; η_c_decode is what one 32-column
        tile achieves relative to a full prefill (fitted on M2 Ultra llama-batched-bench rows)."""
        return min(1.0, self.k.eta_c_decode * self.eta_prefill())

    def eta_prefill(self) -> float:
        """Prefill matrix efficiency of this chip and weight class: η_c × the dequantization factor q. [1]"""
        return self.k.eta_c * (self.k.quant_prefill_factor or {}).get(self.geo.quant_class, 1.0)

    def step_time(self, batch: int, context: float) -> float:
        """One decode step; a wrapper's measured decode_factor (calibration.fit.fit_wrapper_factors: its rate /
        the engine's) stretches the engine's step."""
        fixed, t_mem, t_cmp = self.step_parts(batch, context)
        return (fixed + max(t_mem, t_cmp)) / (self.k.decode_factor or 1.0)

    def decode_time(self, batch: int, start: float, gen: int) -> float:
        """Time to generate ``gen`` tokens per sequence from ``start`` cached tokens (Simpson over depth). [s]"""
        if gen <= 1:
            return self.step_time(batch, start) * max(gen, 1)
        a, b = start, start + gen - 1
        mean = (self.step_time(batch, a) + 4 * self.step_time(batch, (a + b) / 2) + self.step_time(batch, b)) / 6
        return mean * gen

    def knee(self, contexts: float | list[float], cap: int = MAX_KNEE_BATCH) -> int | None:
        """Smallest batch where the compute term overtakes the memory term at any of ``contexts`` (the decode
        window's depths). Scanned, not bisected: the matrix-vector regime (B <= mv_max_batch) and the mm tile
        padding make compute/memory flip more than once; every batch up to 512, then doubling."""
        ctxs = contexts if isinstance(contexts, list) else [contexts]

        def cb(b: int) -> bool:
            return any(c >= m for _, m, c in (self.step_parts(b, x) for x in ctxs))
        b = 1
        while b <= cap:
            if cb(b):
                return b
            b = b + 1 if b < 512 else b * 2
        return None

    # ---- prefill
    def prefill_time(self, prompt: int, depth: int = 0, batch: int = 1) -> tuple[float, str]:
        """Time to prefill ``prompt`` new tokens in each of ``batch`` sequences on ``depth`` cached tokens. [s]"""
        g, k = self.geo, self.k
        if prompt <= 0:
            return 0.0, "compute"
        tokens = prompt * batch
        n_chunks = self.engine.prefill_steps(prompt, batch, self.chunk, self.prefill_batch)
        per_chunk_tokens = tokens / n_chunks
        ct = int(math.ceil(per_chunk_tokens))
        # routed experts: each chunk's rows per expert padded to the tile (expert_time)
        t_mm = (2 * (g.matmul_params - g.expert_matmul_params) * tokens / (self.eta_prefill() * self.flops)
                + n_chunks * self.expert_time(per_chunk_tokens))
        t_rd = n_chunks * (g.dense_bytes + g.expert_bytes * g.expert_reads(ct, self.expert_mm_min()) / k.moe_bw_factor
                           ) / (k.eta_bw * self.bw)
        head = 2 * g.head_params * batch / (k.eta_c * self.flops)  # logits of the last position only
        bound = "compute" if t_mm >= t_rd else "bandwidth"
        t = n_chunks * self.fixed_time() + max(t_mm, t_rd) + self.prefill_attn_time(prompt, depth, batch) + head
        return t / (k.prefill_factor or 1.0), bound  # a wrapper's measured prefill_factor (as step_time)

    def reported_prefill_time(self, prompt: int, depth: int = 0, batch: int = 1) -> float:
        """The time a runtime's own prompt speed divides the prompt by. [s] llama-bench's pp: the prefill alone.
        mlx-lm's "Prompt: N tokens, X tokens-per-sec" (mlx_lm/generate.py stream_generate: prompt_tps = prompt.size /
        prompt_time, taken when the first token is out): generate_step prefills the first P − 1 tokens in
        prefill_step_size chunks and runs the last one through _step with the first sampled token, a decode step at
        depth D + P, so its prompt speed is P / TTFT (one sequence; BatchGenerator keeps its own stats)."""
        t, _ = self.prefill_time(prompt, depth, batch)
        if self.engine.last_prompt_token_decodes and batch == 1 and prompt > 0:
            return first_token_time(self, prompt, depth, 1, t) + self.wire_time()
        return t

    def wire_time(self) -> float:
        """Time a call of the engine's generate loop spends making the weights resident before its first token. [s]

        mlx-lm: stream_generate runs inside ``with wired_limit(model, [generation_stream])`` (mlx_lm/generate.py,
        ml-explore/mlx-lm d78bf58e): ``mx.set_wired_limit(max_recommended_working_set_size)`` on entry and back to the
        old limit (0 unless the caller set one) on exit. Raising the limit adds every allocation that fits to the
        Metal residency set and commits it (mlx/backend/metal/resident.cpp ResidencySet::resize, ml-explore/mlx
        939e425c7; the set keeps a standing requestResidency), lowering it removes them: each call wires the whole
        model again, and the prompt's timer (``tic``, taken inside the context) waits for it with the first command
        buffer. Its cost per GB of weights (t_wire_s_per_gb) is fitted (unset: 0). mlx_lm.server sets the limit
        once at start-up (mlx_lm/server.py main), so its requests do not pay it: only the reported prompt speed,
        not the serving TTFT, carries this time."""
        return self.geo.weight_bytes / 1e9 * (self.k.t_wire_s_per_gb or 0.0)

    def prefill_attn_time(self, prompt: int, depth: int = 0, batch: int = 1) -> float:
        """The causal attention part of prefill_time: prefill_attn_flops at η_attn (× the no-flash slowdown). [s]

        Unfused (``attn_unfused``: MLX on a CPU stream, where mlx fast.cpp ScaledDotProductAttention::use_fallback
        returns true for Device::cpu): the fallback computes scores = Q·Kᵀ, masks them (the causal mask is applied
        to computed scores, not skipped), softmax, then scores·V, as ordinary matmuls. So every query of a chunk
        meets every key up to the chunk's end, and the FLOPs run at the device's matmul efficiency η_c, not at
        a fused attention kernel's η_attn (unfused_attn_flops). On the GPU the same fallback runs the layers
        Engine.unfused_prefill_layers names (mlx-lm: head sizes without a fused kernel, gemma2's soft-cap): their
        rectangle at η_c (gpu_unfused_attn_flops) plus their score matrices' trips through memory (score_bytes),
        the other layers causal at η_attn."""
        k = self.k
        if self.attn_unfused:
            return (self.unfused_attn_flops(prompt, depth, batch) + self.prefill_state_flops(prompt, batch)) / (
                k.eta_c * self.flops)
        fa = self.engine.noflash(self.flash_attn, k.noflash_attn_factor)
        t = (self.prefill_attn_flops(prompt, depth, batch) * fa + self.prefill_state_flops(prompt, batch)) / (
            k.eta_attn * self.flops)
        if self.geo.score_heads or self.geo.score_heads_swa:
            # layers unfused on the GPU (Engine.unfused_prefill_layers): their two matmuls at η_c like any matmul,
            # plus the score matrix's score_passes trips through memory at the weight stream's η_bw (score_bytes)
            t += (self.gpu_unfused_attn_flops(prompt, depth, batch) / (k.eta_c * self.flops)
                  + self.score_bytes(prompt, depth, batch) / (k.eta_bw * self.bw))
        return t

    def prefill_state_flops(self, prompt: int, batch: int) -> float:
        """Recurrent layers in prefill: the scan / delta rule updates each sequence's state once per prompt token,
        linear in the prompt (llama.cpp ggml_gated_delta_net / ggml_ssm_scan, mlx gated_delta_kernel /
        ssm_update), at the attention kernels' efficiency. [FLOP]"""
        return self.geo.state_flops * prompt * batch

    def score_bytes(self, prompt: int, depth: int, batch: int) -> float:
        """Memory traffic of the materialised score matrices over a chunked prefill: score_passes × 2 bytes (bf16,
        the activations' dtype) × Σ_layers H × Σ_chunks (queries × keys), the rectangle unfused_attn_flops computes
        (sliding layers with a bounded cache: keys up to W + chunk). [bytes]"""
        g = self.geo
        full, swa = self._rect_keys(prompt, depth)
        return g.score_passes * SCORE_ELEMENT_BYTES * batch * (g.score_heads * full + g.score_heads_swa * swa)

    def _rect_keys(self, prompt: int, depth: int) -> tuple[float, float]:
        """Σ over the chunks of (queries × keys up to the chunk's end): full layers, and sliding layers capped at
        W + chunk (the rotating cache plus the chunk; uncapped without a window). [1]"""
        g, c = self.geo, max(self.chunk, 1)
        full = _chunk_keys(prompt, depth, c, None)
        return full, (_chunk_keys(prompt, depth, c, g.window + c) if g.window else full)

    def unfused_attn_flops(self, prompt: int, depth: int, batch: int) -> float:
        """Attention FLOPs of an unfused prefill of every layer: each chunk of ``chunk`` queries times all D +
        end-of-chunk keys (sliding-window layers: at most W + chunk keys, the rotating cache plus the chunk),
        2 · Σ H·(d_qk + d_v) per query-key pair. [FLOP]"""
        g = self.geo
        full, swa = self._rect_keys(prompt, depth)
        dims = g.attn_full if g.prefill_attn_full is None else g.prefill_attn_full
        return 2 * batch * (dims * full + g.attn_swa * swa)

    def gpu_unfused_attn_flops(self, prompt: int, depth: int, batch: int) -> float:
        """unfused_attn_flops over the layers the engine prefills unfused on the GPU (Geometry.unfused_full /
        unfused_swa). [FLOP]"""
        g = self.geo
        full, swa = self._rect_keys(prompt, depth)
        return 2 * batch * (g.unfused_full * full + g.unfused_swa * swa)


def prefill_steps(runtime_family: str, prompt: int, batch: int, chunk: int, prefill_batch: int = 1) -> int:
    """Prefill graph evaluations for ``batch`` prompts of ``prompt`` tokens: the engine's rule (Engine.prefill_steps;
    llama.cpp n_ubatch tokens per graph over all sequences, mlx-lm ``chunk`` tokens of up to ``prefill_batch``
    sequences per step)."""
    return by_name(runtime_family).prefill_steps(prompt, batch, chunk, prefill_batch)


def _chunk_keys(prompt: int, depth: int, chunk: int, cap: int | None) -> float:
    """Σ over the chunks of a prompt of (queries in the chunk) × min(D + tokens up to its end, cap), in closed form:
    m full chunks of c, then r = P − m·c; the first j0 full chunks stay under the cap."""
    m, r = divmod(prompt, chunk)
    j0 = m if cap is None else min(max((cap - depth) // chunk, 0), m)
    total = chunk * j0 * depth + chunk * chunk * j0 * (j0 + 1) / 2 + chunk * (m - j0) * (cap or 0)
    end = depth + prompt
    return total + r * (end if cap is None else min(end, cap))


def _keys_sum(prompt: float, depth: float, window: float | None) -> float:
    """Σ_{i=1..P} min(D + i, W) ≈ ∫_0^P min(D + x, W) dx: keys attended by P causal queries."""
    if window is None or depth + prompt <= window:
        return prompt * depth + prompt * prompt / 2
    if depth >= window:
        return prompt * window
    x0 = window - depth
    return x0 * depth + x0 * x0 / 2 + (prompt - x0) * window


def _causal_keys(g: Geometry, prompt: int, depth: int) -> float:
    """Attention MACs of a P-token causal prefill on D cached tokens, over the layers a fused kernel runs (all
    but Geometry.unfused_full / unfused_swa). [1]"""
    full = (g.attn_full if g.prefill_attn_full is None else g.prefill_attn_full) - g.unfused_full
    return full * _keys_sum(prompt, depth, None) + (g.attn_swa - g.unfused_swa) * _keys_sum(prompt, depth, g.window)


# --------------------------------------------------------------------------- likely range
DEEP_CONTEXT = 4096  # tokens: above it decode reads more KV than a short chat does (regime boundary of the ranges)


def regime(phase: str, prompt: int, depth: int, batch: int, mv_max_batch: int = 8) -> str:
    """Which residual distribution a rate falls in: decode | decode_deep | decode_batched | prefill | prefill_deep.
    The ranges are fitted per (runtime, regime) by calibration.fit from out-of-source residuals."""
    if phase == "decode":
        if batch > mv_max_batch:
            return "decode_batched"
        return "decode_deep" if depth + prompt >= DEEP_CONTEXT else "decode"
    return "prefill_deep" if depth + prompt >= 2 * DEEP_CONTEXT else "prefill"


def likely_range(k: SpeedConstants, rate: float, phase: str, prompt: int, depth: int, batch: int,
                 ceiling: float | None = None) -> tuple[float, float]:
    """80 % range (low, high) of a predicted ``rate``: rate × the 10th / 90th percentile of measured / predicted
    in this regime (falling back to the phase's own; no table = no spread). The high end is capped at
    ``ceiling`` (decode: BW / bytes per step, which no measurement can beat)."""
    table = k.likely_range or {}
    r = regime(phase, prompt, depth, batch, k.mv_max_batch or 8)
    lo, hi = table.get(r) or table.get(phase) or (1.0, 1.0)
    high = rate * hi if ceiling is None else min(rate * hi, max(ceiling, rate))
    return min(rate * lo, rate), max(high, rate)


def roofline(geo: Geometry, chip: Chip, resolved: ResolvedSpeedConstants, runtime_family: str,
             flash_attn: bool = True, chunk: int = 512, reference_chips: list[Chip] | None = None,
             prefill_batch: int = 1) -> Roofline:
    k = resolved.constants
    missing = k.missing()
    if missing:
        raise InputError(f"calibration for {runtime_family} on {chip.label} lacks {', '.join(missing)}; "
                         "fix profiles/calibration/default__*.yaml")
    peak, _ = peak_flops(chip, reference_chips)
    if chip.gpu_matrix_units:
        peak *= k.matrix_unit_factor
    return Roofline(geo=geo, bw=bandwidth(chip), flops=peak, k=k, runtime_family=runtime_family,
                    flash_attn=flash_attn, chunk=chunk, prefill_batch=prefill_batch, calibration=resolved.source,
                    attn_unfused=unfused_attention(runtime_family, chip))


def unfused_attention(runtime_family: str, chip: Chip) -> bool:
    """Whether the engine's prefill attention runs unfused on this chip (Engine.unfused_attention: MLX on a CPU
    stream; llama.cpp's CPU backend has a flash-attention kernel of its own)."""
    return by_name(runtime_family).unfused_attention(chip)


def roofline_for(mm: MemoryModel, chip: Chip, resolved: ResolvedSpeedConstants, geo: Geometry,
                 reference_chips: list[Chip] | None = None) -> Roofline:
    """The roofline of one memory model on one chip: its engine, flash attention, and the one prefill chunk rule
    (Engine.prefill_chunk: llama.cpp the memory model's -ub, mlx-lm prefill_step_size)."""
    eng, rt = mm.engine, mm.runtime
    return roofline(geo, chip, resolved, eng.name, flash_attn=mm.flash_attn, chunk=eng.prefill_chunk(mm),
                    reference_chips=reference_chips, prefill_batch=rt.prefill_batch)


def first_token_time(rf: Roofline, prompt: int, depth: int, batch: int, t_prefill: float) -> float:
    """Time to first token [s] of ``batch`` prompts of ``prompt`` new tokens on ``depth`` cached (``t_prefill``: their
    prefill), the one rule of every command (plan, predict, recommend, buy, models) and of the serve simulation
    (planner/serve.py, which applies the same steps one by one):

    * llama.cpp samples the first token from the logits of the prompt's last token, right after the batch that
      holds it (tools/server/server-context.cpp: the slot samples after that batch's llama_decode, n_decoded = 1,
      t_prompt_processing ends there): TTFT = the prefill.
    * mlx-lm prefills all but the last prompt token in chunks, then runs the last token as the first decode step
      (mlx_lm/generate.py generate_step: ``while total_prompt_tokens - prompt_processed_tokens > 1`` ... then
      ``_step(input_tokens=prompt)``; mlx_lm.server's BatchGenerator moves a prompt with one token left to the
      generation batch): TTFT = the prefill of prompt - 1 tokens + one decode step.
    * No new prompt token (all cached): the first token is one decode step."""
    if prompt <= 0:
        return rf.step_time(batch, depth)
    if rf.engine.last_prompt_token_decodes:
        return rf.prefill_time(prompt - 1, depth, batch)[0] + rf.step_time(batch, depth + prompt - 1)
    return t_prefill


def estimate(rf: Roofline, prompt: int, gen: int, depth: int = 0, batch: int = 1, calibration: str | None = None,
             notes: list[str] | None = None, knee: bool = True) -> ThroughputEstimate:
    """Prefill of ``prompt`` tokens on ``depth`` cached, then ``gen`` decoded tokens, for ``batch`` sequences.
    ``calibration`` defaults to the roofline's own source string (set by :func:`roofline`). ``knee=False`` skips
    the knee scan (a few hundred step evaluations) for callers that do not report it (the buy sweep)."""
    if batch < 1 or prompt < 0 or gen < 0 or depth < 0:
        raise InputError("[[batch]] must be ≥ 1 and [[prompt]]/[[gen]]/[[depth]] ≥ 0")
    t_pf, pf_bound = rf.prefill_time(prompt, depth, batch)
    start = depth + prompt
    t_dec = rf.decode_time(batch, start, max(gen, 1))
    g_eff = max(gen, 1)
    per_seq = g_eff / t_dec
    ttft = first_token_time(rf, prompt, depth, batch, t_pf)
    # the other gen - 1 tokens take a decode step each, from depth `start` on (from `start + 1` when the first
    # token was itself the decode step at `start`: no new prompt token)
    t_rest = rf.decode_time(batch, start + (0 if prompt else 1), gen - 1) if gen > 1 else 0.0
    _, t_mem, t_cmp = rf.step_parts(batch, start)
    step_bytes = rf.step_bytes(batch, start)
    # the prompt speed of a running server: its wiring of the weights is done once (Roofline.wire_time), so only a
    # one-shot call's report (mlx_lm.generate, mlx_lm.benchmark: what the fit compares with) pays it
    wire = rf.wire_time() if prompt and batch == 1 and rf.engine.last_prompt_token_decodes else 0.0
    t_rep = rf.reported_prefill_time(prompt, depth, batch) if prompt else 0.0
    pf = (prompt * batch / (t_rep - wire)) if prompt else 0.0
    if wire >= 0.05:
        notes = [*(notes or []), f"a one-shot mlx_lm.generate call reports {prompt / t_rep:,.0f} tok/s for this "
                                 f"prompt: it first wires the weights ({wire:.2f} s); a running server does not"]
    return ThroughputEstimate(
        prefill_tok_s=pf,
        decode_tok_s_range=likely_range(rf.k, per_seq, "decode", prompt, depth, batch, rf.bw / step_bytes),
        prefill_tok_s_range=likely_range(rf.k, pf, "prefill", prompt, depth, batch),
        ttft_s=ttft,
        decode_tok_s=per_seq * batch,
        decode_tok_s_per_seq=per_seq,
        time_per_request_s=ttft + t_rest,
        bound="compute" if t_cmp > t_mem else "bandwidth",
        prefill_bound=pf_bound,
        bytes_per_step=int(step_bytes),
        flops_per_token=rf.step_flops(1, start),
        decode_ceiling_tok_s=rf.bw / step_bytes,
        knee_batch=rf.knee([start, start + (max(gen, 1) - 1) / 2, start + max(gen, 1) - 1]) if knee else None,
        batch=batch, prompt_tokens=prompt, gen_tokens=gen, depth=depth,
        peak_flops=rf.flops, bandwidth_bytes_s=rf.bw,
        calibration=rf.calibration if calibration is None else calibration, notes=notes or [])


def predict(mm: MemoryModel, chip: Chip, resolved: ResolvedSpeedConstants, quant_kind: str, quant_mode: str | None,
            prompt: int, gen: int, depth: int = 0, batch: int = 1,
            reference_chips: list[Chip] | None = None) -> ThroughputEstimate:
    """One workload on one Mac: the memory model's geometry + the chip's peaks + the resolved calibration."""
    rf = roofline_for(mm, chip, resolved, geometry(mm, quant_kind, quant_mode), reference_chips)
    _, basis = peak_flops(chip, reference_chips)
    notes = [f"peak GPU FLOPS: {basis}"] if basis.startswith("derived") else []
    if chip.gpu_matrix_units:
        notes.append(f"GPU matrix units: compute × {resolved.constants.matrix_unit_factor:.2f}")
    return estimate(rf, prompt, gen, depth, batch, calibration=resolved.source, notes=notes)
