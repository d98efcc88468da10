"""Recurrent hybrids against the real runtimes: a tiny random-weight model of each architecture the pinned versions
run, its cache after a prompt and its weights, compared with planner/hybrid.py.

mlx-lm (0.32.2): the model class mlx_lm.utils.load builds from config.json (``Model(ModelArgs.from_dict(config))``),
run on a prompt; the caches' ``nbytes`` after the prompt (KVCache as allocated, in 256-token steps; ArraysCache
whole) and the parameter count against the planner. Activations float32 here, so the conv state is 4 B per element
(the planner's 2 B is the bf16 of a real checkpoint; the test swaps the element size, not the formula).
llama.cpp: a tiny GGUF written with gguf-py, loaded by the pinned llama-cpp-python; the recurrent (RS) and KV buffer
sizes from ``llama_memory_breakdown`` / its log against the planner.
"""

from __future__ import annotations

import datetime as dt
import re
import shutil
import subprocess

import pytest

from planner import architecture as arch
from planner.schema import ModelProfile
from sources.hfconfig import from_hf_config

# tiny Qwen3.5-MoE: 8 layers, every 4th full attention (layer_types as the real configs list them)
Q35_MOE = {
    "model_type": "qwen3_5_moe",
    "text_config": {
        "model_type": "qwen3_5_moe_text", "vocab_size": 256, "hidden_size": 64, "num_hidden_layers": 8,
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32, "max_position_embeddings": 4096,
        "tie_word_embeddings": False, "attention_bias": False, "linear_conv_kernel_dim": 4,
        "linear_key_head_dim": 32, "linear_value_head_dim": 32, "linear_num_key_heads": 2,
        "linear_num_value_heads": 4, "moe_intermediate_size": 32, "shared_expert_intermediate_size": 48,
        "num_experts_per_tok": 2, "num_experts": 8, "rms_norm_eps": 1e-6, "full_attention_interval": 4,
        "layer_types": ["full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(8)],
        "rope_parameters": {"rope_theta": 10000.0, "partial_rotary_factor": 0.25, "rope_type": "default",
                            "mrope_section": [2, 1, 1]},
    },
}
# a flat dense config (mlx-lm qwen3_5.py ModelArgs.from_dict wraps it; it refuses model_type "qwen3_5_text")
Q35_DENSE = {**Q35_MOE["text_config"], "model_type": "qwen3_5", "intermediate_size": 96,
             "num_experts": 0, "num_experts_per_tok": 0}
PROMPT = 37


def _profile(cfg):
    return ModelProfile(id="tiny", name="tiny", params_b=1e-3, sources=["test"], verified=dt.date(2026, 12, 5),
                        config=cfg)


def _mlx_model(raw: dict):
    pytest.importorskip("mlx.core")
    pytest.importorskip("mlx_lm")
    from mlx_lm.utils import _get_classes

    model_class, args_class = _get_classes(config=raw)
    return model_class(args_class.from_dict(raw))


@pytest.mark.requires_mlx
@pytest.mark.parametrize("raw", [Q35_MOE, Q35_DENSE], ids=["qwen3_5_moe", "qwen3_5"])
def test_mlx_qwen35_cache_and_params(raw):
    import mlx.core as mx
    from mlx.utils import tree_flatten

    model = _mlx_model(raw)
    cfg = from_hf_config(raw)
    # parameters: mlx-lm's module tree (no MTP, no vision tower) vs the planner's tensor list
    n_mlx = sum(v.size for _, v in tree_flatten(model.parameters()))
    assert n_mlx == arch.n_params(cfg)
    cache = model.make_cache()
    model(mx.array([[5 + i % 200 for i in range(PROMPT)]]), cache=cache)
    mx.eval([c.state for c in cache])
    state = kv = 0
    for c in cache:
        if hasattr(c, "keys"):  # KVCache: keys/values allocated in 256-token steps (cache.py KVCache.step)
            kv += c.nbytes
        else:  # ArraysCache(size=2): conv state + gated-delta state
            state += sum(a.nbytes for a in c.cache if a is not None)
    layers = arch.cache_layers(cfg)
    per_tok = sum(c.k_elems + c.v_elems for c in layers) * 4  # float32 activations here
    assert kv == per_tok * 256  # 37 tokens -> one 256-token step, the planner's kv_step rule
    # planner's mlx figure with conv at 2 B (bf16); the tiny model runs in float32: conv at 4 B
    tc = raw.get("text_config", raw)
    conv = (tc["linear_conv_kernel_dim"] - 1) * (2 * tc["linear_num_key_heads"] * tc["linear_key_head_dim"]
                                               + tc["linear_num_value_heads"] * tc["linear_value_head_dim"])
    n_lin = sum(c.kind == "linear" for c in layers)
    assert state == sum(c.mlx_state_bytes for c in layers) + n_lin * conv * 2


# tiny Nemotron-H (Nemotron 3 Nano layout: Mamba-2, attention, routed + shared relu2 experts, a dense relu2 MLP)
NEMOTRON_H = {
    "model_type": "nemotron_h", "vocab_size": 256, "hidden_size": 64, "intermediate_size": 96,
    "max_position_embeddings": 4096, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
    "attention_bias": False, "mamba_num_heads": 4, "mamba_head_dim": 16, "mamba_proj_bias": False,
    "ssm_state_size": 16, "conv_kernel": 4, "n_groups": 2, "mlp_bias": False, "layer_norm_epsilon": 1e-5,
    "use_bias": False, "use_conv_bias": True, "hybrid_override_pattern": "M*EM-E", "n_routed_experts": 4,
    "n_shared_experts": 1, "moe_intermediate_size": 32, "moe_shared_expert_intermediate_size": 48,
    "num_experts_per_tok": 2, "n_group": 1, "topk_group": 1, "norm_topk_prob": True, "routed_scaling_factor": 1.0,
    "tie_word_embeddings": False,
}
# Nemotron 3 Super's latent MoE: experts at moe_latent_size between ffn_latent_down / ffn_latent_up
NEMOTRON_LATENT = dict(NEMOTRON_H, moe_latent_size=32)
# tiny Granite 4.0-H (granitemoehybrid): Mamba-2 + attention mixers, routed SwiGLU experts + shared MLP every layer;
# d_inner = 4 x 32 = 2 x hidden, which llama.cpp granite-hybrid.cpp asserts
GRANITE_H = {
    "model_type": "granitemoehybrid", "vocab_size": 256, "hidden_size": 64, "intermediate_size": 32,
    "num_hidden_layers": 4, "max_position_embeddings": 4096, "num_attention_heads": 4, "num_key_value_heads": 2,
    "attention_bias": False, "embedding_multiplier": 1.0, "attention_multiplier": 1.0, "logits_scaling": 1.0,
    "residual_multiplier": 1.0, "layer_types": ["mamba", "mamba", "attention", "mamba"], "rms_norm_eps": 1e-6,
    "num_local_experts": 4, "num_experts_per_tok": 2, "shared_intermediate_size": 48, "mamba_n_heads": 4,
    "mamba_d_head": 32, "mamba_proj_bias": False, "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_n_groups": 1,
    "mamba_conv_bias": True, "tie_word_embeddings": True,
}


# tiny Falcon-H1: attention and Mamba-2 side by side in every layer (mamba_d_ssm = heads x head dim)
FALCON_H1 = {
    "model_type": "falcon_h1", "vocab_size": 256, "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 3,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "max_position_embeddings": 4096,
    "attention_bias": False, "mamba_d_ssm": 128, "mamba_n_heads": 4, "mamba_d_head": 32, "mamba_n_groups": 1,
    "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_conv_bias": True, "mamba_proj_bias": False,
    "mamba_rms_norm": True, "mamba_norm_before_gate": False, "rms_norm_eps": 1e-5, "tie_word_embeddings": False,
    "projectors_bias": False, "mlp_bias": False,
}


# tiny LFM2 (conv, conv, attention, conv; FFN 2/3 x 192 = 128, a multiple of 64) and LFM2-MoE (1 dense layer)
LFM2 = {
    "model_type": "lfm2", "vocab_size": 256, "hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4,
    "num_key_value_heads": 2, "max_position_embeddings": 4096, "norm_eps": 1e-5, "conv_bias": False,
    "conv_L_cache": 3, "block_dim": 64, "block_multiple_of": 64, "block_ffn_dim_multiplier": 1.0,
    "block_auto_adjust_ff_dim": True, "block_ff_dim": 192,
    "layer_types": ["conv", "conv", "full_attention", "conv"], "tie_word_embeddings": True,
}
LFM2_MOE = {
    "model_type": "lfm2_moe", "vocab_size": 256, "hidden_size": 64, "intermediate_size": 96,
    "moe_intermediate_size": 32, "num_hidden_layers": 4, "num_experts": 4, "num_experts_per_tok": 2,
    "norm_topk_prob": True, "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 4096,
    "use_expert_bias": True, "num_dense_layers": 1, "norm_eps": 1e-5, "conv_bias": False, "conv_L_cache": 3,
    "layer_types": ["conv", "full_attention", "conv", "conv"], "tie_word_embeddings": True,
}

# tiny Jamba: attention every 4th layer from layer 2, experts on odd layers (Mamba-1 mixers elsewhere)
JAMBA = {
    "model_type": "jamba", "vocab_size": 256, "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 4,
    "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 4096, "rms_norm_eps": 1e-6,
    "attn_layer_offset": 2, "attn_layer_period": 4, "expert_layer_offset": 1, "expert_layer_period": 2,
    "num_experts": 4, "num_experts_per_tok": 2, "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2,
    "mamba_dt_rank": 8, "mamba_conv_bias": True, "mamba_proj_bias": False, "tie_word_embeddings": False,
}

# tiny Kimi Linear in the published config's form (linear_attn_config; mlx-lm reads it): KDA on layers 1, 2, 4
# (1-based), MLA on layer 3, a dense first layer, then routed + shared experts
KIMI_LINEAR = {
    "model_type": "kimi_linear", "vocab_size": 256, "hidden_size": 64, "num_hidden_layers": 4,
    "num_attention_heads": 4, "num_key_value_heads": 4, "intermediate_size": 96, "head_dim": 32,
    "rope_theta": 10000.0, "rms_norm_eps": 1e-5, "model_max_length": 4096, "num_experts": 4,
    "moe_intermediate_size": 32, "num_experts_per_token": 2, "num_shared_experts": 1, "first_k_dense_replace": 1,
    "moe_layer_freq": 1, "kv_lora_rank": 32, "q_lora_rank": None, "qk_nope_head_dim": 32, "qk_rope_head_dim": 16,
    "v_head_dim": 32, "tie_word_embeddings": False,
    "linear_attn_config": {"kda_layers": [1, 2, 4], "full_attn_layers": [3], "num_heads": 4, "head_dim": 32,
                           "short_conv_kernel_size": 4},
}


@pytest.mark.requires_mlx
@pytest.mark.parametrize("raw", [NEMOTRON_H, NEMOTRON_LATENT, GRANITE_H, FALCON_H1, LFM2, LFM2_MOE, JAMBA,
                                 KIMI_LINEAR],
                         ids=["nemotron_h", "nemotron_h_latent", "granitemoehybrid", "falcon_h1", "lfm2", "lfm2_moe",
                              "jamba", "kimi_linear"])
def test_mlx_mamba2_cache_and_params(raw):
    import mlx.core as mx
    from mlx.utils import tree_flatten

    model = _mlx_model(raw)
    cfg = from_hf_config(raw)
    assert sum(v.size for _, v in tree_flatten(model.parameters())) == arch.n_params(cfg)
    cache = model.make_cache()
    model(mx.array([[5 + i % 200 for i in range(PROMPT)]]), cache=cache)
    mx.eval([c.state for c in cache])
    flat = [x for c in cache for x in (c.caches if hasattr(c, "caches") else [c])]  # Falcon-H1: CacheList
    kv = sum(c.nbytes for c in flat if hasattr(c, "keys"))
    state = sum(a.nbytes for c in flat if not hasattr(c, "keys") for a in c.cache if a is not None)
    layers = arch.cache_layers(cfg)
    assert len(flat) == len(layers)  # no cache for the E / - blocks; two for a Falcon-H1 layer
    # float32, one 256-token KVCache step (MLA: the latent and the rope key, k_elems)
    assert kv == sum(c.k_elems + c.v_elems for c in layers) * 4 * 256
    n_m = sum(c.kind == "linear" for c in layers)
    if cfg.conv_L_cache:  # LFM2: the whole state is the conv rows
        conv = (cfg.conv_L_cache - 1) * cfg.hidden_size
    elif cfg.model_type == "kimi_linear":  # q, k, v conv rows
        conv = 3 * (cfg.linear_conv_kernel_dim - 1) * cfg.linear_num_value_heads * cfg.linear_value_head_dim
    elif cfg.model_type == "jamba":  # conv rows and scan state both in the activation dtype: 4 B here, 2 planned
        conv = (cfg.conv_kernel - 1) * cfg.mamba_d_inner + cfg.ssm_state_size * cfg.mamba_d_inner
    else:
        H, P, N, G = cfg.mamba_num_heads, cfg.mamba_head_dim, cfg.ssm_state_size, cfg.n_groups
        conv = (cfg.conv_kernel - 1) * ((cfg.mamba_d_inner or H * P) + 2 * G * N)
    assert state == sum(c.mlx_state_bytes for c in layers) + n_m * conv * 2  # conv at 4 B here, 2 B planned


# llama.cpp: nemotron_h_moe turns every FFN block into experts (nemotron-h.cpp: n_expert != 0), so its tiny model
# has no dense "-" block; the dense arch gets one
LLAMA_CASES = [
    (Q35_MOE, "qwen35moe"),
    (Q35_DENSE, "qwen35"),
    (dict(NEMOTRON_H, hybrid_override_pattern="M*EMEE"), "nemotron_h_moe"),
    (dict(NEMOTRON_LATENT, hybrid_override_pattern="M*EMEE"), "nemotron_h_moe"),
    (dict(NEMOTRON_H, hybrid_override_pattern="M*M-", n_routed_experts=None, n_shared_experts=None,
          num_experts_per_tok=None), "nemotron_h"),
    (GRANITE_H, "granitehybrid"),
    (FALCON_H1, "falcon-h1"),
    (LFM2, "lfm2"),
    (LFM2_MOE, "lfm2moe"),
    (JAMBA, "jamba"),
    (KIMI_LINEAR, "kimi-linear"),
]
# "(256 cells, 2 layers, 8/8 seqs)": cells per stream, one stream per sequence (not unified)
KV_LOG = re.compile(r"llama_kv_cache: size =\s*([\d.]+) MiB \(\s*(\d+) cells,\s*\d+ layers,\s*(\d+)/\d+ seqs")
RS_LOG = re.compile(r"llama_memory_recurrent: size =\s*[\d.]+ MiB \(\s*\d+ cells,\s*\d+ layers,\s*(\d+) seqs.*"
                    r"R \(f32\):\s*([\d.]+) MiB, S \(f32\):\s*([\d.]+) MiB")
MODEL_LOG = re.compile(r"CPU_Mapped model buffer size =\s*([\d.]+) MiB")


@pytest.mark.requires_llama_cpp
@pytest.mark.parametrize(("raw", "gguf_arch"), LLAMA_CASES,
                         ids=[a + ("-latent" if r.get("moe_latent_size") else "") for r, a in LLAMA_CASES])
def test_llama_cpp_loads_planner_tensors_and_allocates_its_state(raw, gguf_arch, tmp_path):
    """The GGUF holds exactly the planner's tensors (llama.cpp loads it: no missing, extra or misshapen tensor);
    the KV buffer, the recurrent R and S buffers and the model buffer it logs equal the planner's bytes to the
    log's 0.01 MiB. llama-batched-bench -npl 8 sizes the context for 8 sequences (n_seq_max = 8)."""
    exe = shutil.which("llama-batched-bench")
    if exe is None:
        pytest.skip("llama-batched-bench not built (scripts/bootstrap.sh)")
    from sources.ggufmeta import config_from_gguf, read_header

    from .hybrid_gguf import write

    cfg = from_hf_config(raw)
    path = tmp_path / f"{gguf_arch}.gguf"
    nbytes = write(cfg, gguf_arch, path)
    with open(path, "rb") as f:  # the planner's own GGUF reader gives back the same layout
        kv, ts = read_header(f, str(path))
    back, _ = config_from_gguf(kv, ts, str(path))
    assert arch.cache_layers(back) == arch.cache_layers(cfg) and arch.n_params(back) == arch.n_params(cfg)
    seqs = 8
    run = subprocess.run([exe, "-m", str(path), "-c", "2048", "-b", "64", "-ub", "64", "-npp", "4", "-ntg", "1",
                          "-npl", str(seqs), "-t", "2", "-lv", "4"], capture_output=True, text=True, timeout=300)
    log = run.stdout + run.stderr
    assert run.returncode == 0, log[-2000:]
    layers = arch.cache_layers(cfg)
    mib = 2**20
    kv_m = KV_LOG.search(log)
    per_tok = sum(c.k_elems + c.v_elems for c in layers) * 2  # f16 K and V
    cells = int(kv_m.group(2)) * int(kv_m.group(3))
    assert cells == 2048
    assert abs(float(kv_m.group(1)) - cells * per_tok / mib) <= 0.0051
    rs = RS_LOG.search(log)
    assert int(rs.group(1)) == seqs
    r = sum(c.state_f32_elems for c in layers) * 4 * seqs  # planner: r + s per sequence, F32
    assert abs(float(rs.group(2)) + float(rs.group(3)) - r / mib) <= 0.011
    w = float(MODEL_LOG.search(log).group(1))
    assert nbytes == arch.n_params(cfg) * 4
    assert abs(w - nbytes / mib) <= 0.0051 + len(ts) * 32 / mib  # tensor data aligned to 32 B


@pytest.mark.requires_mlx
@pytest.mark.parametrize("raw", [Q35_MOE, NEMOTRON_H, NEMOTRON_LATENT, GRANITE_H, FALCON_H1, LFM2, LFM2_MOE, JAMBA,
                                 KIMI_LINEAR],
                         ids=["qwen3_5_moe", "nemotron_h", "nemotron_h_latent", "granitemoehybrid", "falcon_h1", "lfm2",
                              "lfm2_moe", "jamba", "kimi_linear"])
def test_mlx_quantized_weight_bytes(raw):
    """mlx_lm.utils.quantize_model at 4 bits, group 32 (the model's own quant_predicate: 8-bit routers) on the float32
    tiny model: the bytes of every parameter against planner.memory.mlx_weights (activation_bytes 4 here)."""
    from mlx.utils import tree_flatten
    from mlx_lm.utils import quantize_model

    from planner import memory as M
    from planner import profiles as P

    model = _mlx_model(raw)
    quantize_model(model, {}, group_size=32, bits=4)
    got = sum(v.nbytes for _, v in tree_flatten(model.parameters()))
    rt = P.load_runtime("mlx-lm").model_copy(update={"activation_bytes": 4})
    # float32 model: the scales and biases are float32 too (4 B each per group, bf16 checkpoints: 2)
    q4 = P.load_quant("mlx-4bit-g32", "mlx").model_copy(update={"scale_bytes": 4, "bias_bytes": 4})
    want = M.mlx_weights(_profile(from_hf_config(raw)), q4, rt).total_bytes
    assert got == want


# K-quant rows need 256-wide inputs: Qwen3.5-MoE at hidden 256, 2 q heads / 1 kv head x 128, 2 + 2 linear heads x 128,
# experts of 256, 16 experts (8 would trigger llama-quant.cpp's n_expert == 8 branches, also modelled)
Q35_MOE_256 = dict(Q35_MOE, text_config=dict(
    Q35_MOE["text_config"], hidden_size=256, num_attention_heads=2, num_key_value_heads=1, head_dim=128,
    linear_key_head_dim=128, linear_value_head_dim=128, linear_num_key_heads=2, linear_num_value_heads=2,
    moe_intermediate_size=256, shared_expert_intermediate_size=256, num_experts=16))


@pytest.mark.requires_llama_cpp
@pytest.mark.parametrize("mtp", [False, True], ids=["no-mtp", "mtp"])
@pytest.mark.parametrize("preset", ["Q4_K_M", "Q3_K_M", "Q2_K", "IQ4_XS"])
def test_llama_quantize_presets_of_qwen35(preset, mtp, tmp_path):
    """llama-quantize of a GGUF holding the planner's tensors: every tensor's type and the total bytes equal
    planner.memory.gguf_weights, i.e. the gated-delta-net attn_qkv takes the attn_v rules and counter
    (llama-quant.cpp category_is_attn_v) and, with an MTP block in the file, the counters run over
    n_layer_all = layers + 1 and the MTP attn_v, whose bytes the plan leaves out (llama.cpp does not load it)."""
    exe = shutil.which("llama-quantize")
    if exe is None:
        pytest.skip("llama-quantize not built (scripts/bootstrap.sh)")
    from planner import memory as M
    from planner import profiles as P
    from sources.ggufmeta import config_from_gguf, exact_weights, mtp_layers, read_header

    from .hybrid_gguf import write

    raw = Q35_MOE_256
    if mtp:
        raw = dict(raw, text_config=dict(raw["text_config"], mtp_num_hidden_layers=1))
    cfg = from_hf_config(raw)
    src, dst = tmp_path / "f32.gguf", tmp_path / f"{preset}.gguf"
    write(cfg, "qwen35moe", src, mtp_from=3 if mtp else None)
    run = subprocess.run([exe, str(src), str(dst), preset, "2"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    with open(dst, "rb") as f:
        kv, ts = read_header(f, str(dst))
    back, _ = config_from_gguf(kv, ts, str(dst))
    assert (back.mtp_num_hidden_layers or 0) == (1 if mtp else 0) and back.num_hidden_layers == 8
    got = exact_weights(ts, n_layers=mtp_layers(back))
    want = M.gguf_weights(_profile(cfg), P.load_quant(preset), P.ggml_types())
    assert got.by_type == want.by_type and got.total_bytes == want.total_bytes


@pytest.mark.requires_llama_cpp
def test_llama_cpp_skips_the_qwen35_mtp_block(tmp_path):
    """A Qwen3.5 GGUF with its MTP block (as the converter writes it by default): llama.cpp maps only the trunk
    (qwen35moe.cpp mtp_flags = TENSOR_SKIP without --spec-type draft-mtp) and gives the MTP layer no KV cache
    (create_memory filter_attn: il < n_layer()), so the model buffer is the planner's weights, not the file's."""
    exe = shutil.which("llama-batched-bench")
    if exe is None:
        pytest.skip("llama-batched-bench not built (scripts/bootstrap.sh)")
    from .hybrid_gguf import write

    raw = dict(Q35_MOE_256, text_config=dict(Q35_MOE_256["text_config"], mtp_num_hidden_layers=1))
    cfg = from_hf_config(raw)
    path = tmp_path / "mtp.gguf"
    file_bytes = write(cfg, "qwen35moe", path, mtp_from=3)
    run = subprocess.run([exe, "-m", str(path), "-c", "512", "-b", "64", "-ub", "64", "-npp", "4", "-ntg", "1",
                          "-npl", "2", "-t", "2", "-lv", "4"], capture_output=True, text=True, timeout=300)
    log = run.stdout + run.stderr
    assert run.returncode == 0, log[-2000:]
    w = float(MODEL_LOG.search(log).group(1))
    assert abs(w - arch.n_params(cfg) * 4 / 2**20) <= 0.01 < (file_bytes - arch.n_params(cfg) * 4) / 2**20
    assert re.search(r"llama_kv_cache: size =.*\(\s*\d+ cells,\s*2 layers", log)  # the 2 trunk full-attention layers


# 256-wide variants (K-quant rows) of the other hybrids, for llama-quantize
WIDE = [
    (dict(NEMOTRON_H, hidden_size=256, num_attention_heads=2, num_key_value_heads=1, head_dim=128,
          mamba_head_dim=64, intermediate_size=256, moe_intermediate_size=256,
          moe_shared_expert_intermediate_size=256, hybrid_override_pattern="M*EMEE"), "nemotron_h_moe"),
    (dict(NEMOTRON_H, hidden_size=256, num_attention_heads=2, num_key_value_heads=1, head_dim=128,
          mamba_head_dim=64, intermediate_size=256, moe_intermediate_size=256, moe_latent_size=256,
          moe_shared_expert_intermediate_size=256, hybrid_override_pattern="M*EMEE"), "nemotron_h_moe"),
    (dict(GRANITE_H, hidden_size=256, num_attention_heads=2, num_key_value_heads=1, mamba_d_head=128,
          intermediate_size=256, shared_intermediate_size=256), "granitehybrid"),
    (dict(FALCON_H1, hidden_size=256, num_attention_heads=2, num_key_value_heads=1, head_dim=128, mamba_d_ssm=256,
          mamba_d_head=64, intermediate_size=256), "falcon-h1"),
    (dict(LFM2, hidden_size=256, num_attention_heads=2, num_key_value_heads=1, block_dim=256, block_multiple_of=256,
          block_ff_dim=384), "lfm2"),
    (dict(JAMBA, hidden_size=256, num_attention_heads=2, num_key_value_heads=1, intermediate_size=256,
          mamba_dt_rank=256), "jamba"),
    # KDA head dim 128 and MLA nope 128 rows fall back from Q4_K (llama-quant.cpp tensor_type_fallback)
    (dict(KIMI_LINEAR, hidden_size=256, num_attention_heads=2, num_key_value_heads=2, intermediate_size=256,
          moe_intermediate_size=256, kv_lora_rank=256, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128,
          linear_attn_config=dict(KIMI_LINEAR["linear_attn_config"], num_heads=2, head_dim=128)), "kimi-linear"),
]


@pytest.mark.requires_llama_cpp
@pytest.mark.parametrize(("raw", "gguf_arch"), WIDE,
                         ids=[a + ("-latent" if r.get("moe_latent_size") else "") for r, a in WIDE])
def test_llama_quantize_q4_k_m_of_other_hybrids(raw, gguf_arch, tmp_path):
    """Q4_K_M by llama-quantize vs planner.memory.gguf_weights, type by type (the SSM / short-conv projections are
    llama-quant.cpp category OTHER: the base type; conv kernels and norms stay F32)."""
    exe = shutil.which("llama-quantize")
    if exe is None:
        pytest.skip("llama-quantize not built (scripts/bootstrap.sh)")
    from planner import memory as M
    from planner import profiles as P
    from sources.ggufmeta import exact_weights, read_header

    from .hybrid_gguf import write

    cfg = from_hf_config(raw)
    src, dst = tmp_path / "f32.gguf", tmp_path / "q.gguf"
    write(cfg, gguf_arch, src)
    run = subprocess.run([exe, str(src), str(dst), "Q4_K_M", "2"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    with open(dst, "rb") as f:
        _, ts = read_header(f, str(dst))
    got = exact_weights(ts)
    want = M.gguf_weights(_profile(cfg), P.load_quant("Q4_K_M"), P.ggml_types())
    assert got.by_type == want.by_type and got.total_bytes == want.total_bytes
