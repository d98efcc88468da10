"""planner.hybrid: tensors, cache layers and state FLOPs of the recurrent hybrids, numbers derived by hand.

Configs: the transformers 5.25 config classes' defaults (configuration_qwen3_5.py / configuration_qwen3_5_moe.py),
which are the published Qwen3.5-9B-class and Qwen3.5-35B-A3B text configs, written out here so the test does not
depend on the library. Formulas: llama.cpp src/llama-hparams.cpp n_embd_r / n_embd_s, src/llama-memory-recurrent.cpp;
mlx-lm mlx_lm/models/qwen3_5.py make_cache + gated_delta.py.
"""

from __future__ import annotations

import datetime as dt

import pytest

from planner import architecture as arch
from planner import hybrid
from planner import memory as M
from planner import profiles as P
from planner.schema import ModelConfig, ModelProfile
from sources.hfconfig import from_hf_config

MiB = 2**20
LT40 = ["full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(40)]
# Qwen3_5MoeConfig().to_dict() (transformers 5.25): the VLM wrapper with the LM under text_config
QWEN35_MOE_RAW = {
    "model_type": "qwen3_5_moe", "tie_word_embeddings": False,
    "vision_config": {"depth": 27, "hidden_size": 1152},
    "text_config": {
        "model_type": "qwen3_5_moe_text", "vocab_size": 248320, "hidden_size": 2048, "num_hidden_layers": 40,
        "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256, "max_position_embeddings": 32768,
        "tie_word_embeddings": False, "attention_bias": False, "linear_conv_kernel_dim": 4,
        "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_num_key_heads": 16,
        "linear_num_value_heads": 32, "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512,
        "num_experts_per_tok": 8, "num_experts": 256, "layer_types": LT40, "mtp_num_hidden_layers": 1,
        "rope_parameters": {"rope_theta": 10000.0, "partial_rotary_factor": 0.25, "rope_type": "default"},
    },
}
# Qwen3_5Config().to_dict()["text_config"] (dense): 32 layers, 8 full
QWEN35_DENSE_RAW = {
    "model_type": "qwen3_5_text", "vocab_size": 248320, "hidden_size": 4096, "intermediate_size": 12288,
    "num_hidden_layers": 32, "num_attention_heads": 16, "num_key_value_heads": 4, "head_dim": 256,
    "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
    "linear_num_key_heads": 16, "linear_num_value_heads": 32, "tie_word_embeddings": False,
    "layer_types": ["full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(32)],
}


def profile(cfg: ModelConfig, mid: str = "tiny") -> ModelProfile:
    return ModelProfile(id=mid, name=mid, params_b=1.0, sources=["test"], verified=dt.date(2026, 12, 5), config=cfg)


def test_qwen35_moe_reader_unwraps_text_config():
    cfg = from_hf_config(QWEN35_MOE_RAW)
    assert cfg.model_type == "qwen3_5_moe"
    assert cfg.num_hidden_layers == 40 and cfg.mtp_num_hidden_layers == 1
    assert cfg.layer_types.count("full_attention") == 10
    assert cfg.intermediate_size == 512  # no dense FFN in the file: the expert width stands in


def test_qwen35_moe_kv_only_on_full_layers():
    cfg = from_hf_config(QWEN35_MOE_RAW)
    cl = arch.cache_layers(cfg)
    full = [c for c in cl if c.kind == "full"]
    lin = [c for c in cl if c.kind == "linear"]
    assert len(full) == 10 and len(lin) == 30
    # f16 KV: 10 full layers x 2 (K, V) x 2 kv heads x 256 x 2 B = 20 KiB/token
    assert sum(c.k_elems + c.v_elems for c in full) * 2 == 10 * 2 * 2 * 256 * 2 == 20_480
    # llama.cpp: n_embd_r = (4-1) x (32x128 + 2 x 16 x 128) = 3 x 8192, n_embd_s = 128 x 4096, F32, per layer
    assert sum(c.state_f32_elems for c in lin) * 4 == 30 * (3 * (4096 + 2 * 16 * 128) + 128 * 4096) * 4
    assert sum(c.state_f32_elems for c in lin) * 4 / MiB == pytest.approx(62.8125)
    # mlx-lm: conv (3, 2x2048 + 4096) bf16 + state (32, 128, 128) f32
    assert sum(c.mlx_state_bytes for c in lin) == 30 * (3 * 8192 * 2 + 32 * 128 * 128 * 4)


def test_qwen35_moe_memory_per_user():
    cfg = from_hf_config(QWEN35_MOE_RAW)
    m = M.memory_model(profile(cfg), P.load_runtime("llama.cpp"), P.load_quant("Q4_K_M"), P.ggml_types(),
                       kv_type="f16")
    assert m.kv.bytes_per_token == 20_480
    assert m.kv.state_bytes_per_seq == 30 * (3 * 8192 + 128 * 4096) * 4
    e1, e4 = m.estimate(8192, 1), m.estimate(8192, 4)
    assert e4.recurrent_state == 4 * e1.recurrent_state  # one state per sequence, constant in context
    assert m.estimate(65536, 1).recurrent_state == e1.recurrent_state


def test_qwen35_moe_tensors():
    cfg = from_hf_config(QWEN35_MOE_RAW)
    h, V, E, f, sf = 2048, 248320, 256, 512, 512
    kd, vd, Hv = 16 * 128, 32 * 128, 32
    lin = h * (2 * kd + vd) + h * vd + 2 * h * Hv + 4 * (2 * kd + vd) + 2 * Hv + 128 + vd * h
    full = h * 2 * 16 * 256 + 2 * h * 2 * 256 + 16 * 256 * h + 2 * 256        # q (x2 gate), k, v, o, q/k norm
    moe = h * E + 3 * E * h * f + 3 * h * sf + h                               # router, experts, shared, shexp gate
    norms = 2 * h
    expected = 2 * V * h + h + 30 * lin + 10 * full + 40 * (moe + norms)
    assert arch.n_params(cfg) == expected
    names = {t.name for t in arch.tensors(cfg) if t.layer == 0}
    assert {"attn_qkv", "attn_gate", "ssm_beta", "ssm_alpha", "ssm_conv1d", "ssm_out"} <= names
    assert "attn_q" in {t.name for t in arch.tensors(cfg) if t.layer == 3}
    assert max(t.layer or 0 for t in arch.tensors(cfg)) == 39  # the MTP block (layer 40) is not loaded


def test_qwen35_dense_layout():
    cfg = from_hf_config(QWEN35_DENSE_RAW)
    assert cfg.model_type == "qwen3_5" and not cfg.is_moe
    ffn = [t for t in arch.tensors(cfg) if t.group == "ffn"]
    assert len(ffn) == 3 * 32 and all(max(t.ne0, t.ne1) == 12288 for t in ffn)
    cl = arch.cache_layers(cfg)
    # 8 full layers x 2 x 4 kv x 256 x 2 B = 32 KiB/token; 24 linear layers' state
    assert sum(c.k_elems + c.v_elems for c in cl) * 2 == 8 * 2 * 4 * 256 * 2
    assert sum(c.state_f32_elems for c in cl) == 24 * (3 * (4096 + 4096) + 128 * 4096)


def test_qwen35_q4_k_m_treats_attn_qkv_as_attn_v():
    # llama-quant.cpp category_is_attn_v: attn_qkv counts with attn_v; Q4_K_M gives Q6_K where
    # use_more_bits(i, n): i < n/8 or i >= 7n/8 or (i - n/8) % 3 == 2, with n = 41 attn_v-like tensors (one a
    # layer, plus the MTP block's attn_v, which the converter writes and llama-quantize counts: n_layer_all = 41)
    cfg = from_hf_config(QWEN35_MOE_RAW)
    w = M.gguf_weights(profile(cfg), P.load_quant("Q4_K_M"), P.ggml_types())
    n = 41
    more = [i for i in range(40) if M.use_more_bits(i, n)]
    types = {t.name: t for t in P.ggml_types().types}
    qkv = 2048 * (2 * 2048 + 4096)
    v = 2048 * 2 * 256
    want_q6 = sum(qkv if (i + 1) % 4 else v for i in more)
    got_q6 = w.by_type["Q6_K"] - 2048 * 248320 * types["Q6_K"].bytes_per_block // 256  # less the output head
    # ffn_down (routed 256 x and shared, 2048 rows of 512) is Q6_K on the same use_more_bits(i, n_layer_all = 41)
    down = sum(2048 * 512 * (256 + 1) for i in more)
    assert got_q6 == (want_q6 + down) * types["Q6_K"].bytes_per_block // 256


def test_state_flops_gated_delta_rule():
    cfg = from_hf_config(QWEN35_MOE_RAW)
    # per linear layer: 7 x Hv x Dv x Dk (decay, k-read, rank-1 update, q-read) + conv 2 x 4 x (2kd + vd)
    assert hybrid.state_flops(cfg) == 30 * (7 * 32 * 128 * 128 + 2 * 4 * 8192)


# Nemotron 3 Nano 30B-A3B cache shape (pattern, hidden, attention and Mamba sizes: the 2026 survey's [3p] copy of
# nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B config.json); the FFN / expert widths and vocab below are round test sizes,
# not the model's (a fixture for the formulas, not a catalog profile)
NANO_PATTERN = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME"
NEMOTRON_NANO_RAW = {
    "model_type": "nemotron_h", "vocab_size": 1000, "hidden_size": 2688, "intermediate_size": 1024,
    "num_attention_heads": 32, "num_key_value_heads": 2, "head_dim": 128, "max_position_embeddings": 4096,
    "mamba_num_heads": 64, "mamba_head_dim": 64, "ssm_state_size": 128, "n_groups": 8, "conv_kernel": 4,
    "use_conv_bias": True, "mamba_proj_bias": False, "hybrid_override_pattern": NANO_PATTERN,
    "n_routed_experts": 128, "n_shared_experts": 1, "moe_intermediate_size": 1024,
    "moe_shared_expert_intermediate_size": 2048, "num_experts_per_tok": 4, "tie_word_embeddings": False,
}


def test_nemotron_h_pattern_and_cache():
    cfg = from_hf_config(NEMOTRON_NANO_RAW)
    assert cfg.num_hidden_layers == 52
    bt = cfg.layers_block_type
    assert (bt.count("mamba"), bt.count("moe"), bt.count("attention")) == (23, 23, 6)
    cl = arch.cache_layers(cfg)
    assert len(cl) == 29  # MoE layers hold no cache (llama.cpp filter n_ff == 0; mlx-lm make_cache skips E)
    # f16 KV: 6 attention layers x 2 x 2 kv x 128 x 2 B = 6 KiB/token
    assert sum(c.k_elems + c.v_elems for c in cl) * 2 == 6 * 2 * 2 * 128 * 2 == 6144
    # llama.cpp F32: (k-1)(d_inner + 2 G N) + N d_inner per Mamba layer, d_inner = 64 x 64
    per = 3 * (4096 + 2 * 8 * 128) + 128 * 4096
    assert sum(c.state_f32_elems for c in cl) * 4 == 23 * per * 4
    assert 23 * per * 4 / MiB == pytest.approx(47.6, abs=0.05)
    # mlx-lm: conv bf16 + state (64, 64, 128) f32
    assert sum(c.mlx_state_bytes for c in cl) == 23 * (3 * 6144 * 2 + 64 * 64 * 128 * 4)


def test_nemotron_h_tensors():
    cfg = from_hf_config(NEMOTRON_NANO_RAW)
    h, V, E, fe, fs = 2688, 1000, 128, 1024, 2048
    d_in, conv, H = 4096, 4096 + 2 * 8 * 128, 64
    mamba = h * (2 * d_in + 2 * 8 * 128 + H) + 4 * conv + conv + 3 * H + d_in + d_in * h
    attn = h * 32 * 128 + 2 * h * 2 * 128 + 32 * 128 * h
    moe = h * E + E + 2 * E * h * fe + 2 * h * fs
    expected = 2 * V * h + h + 52 * h + 23 * mamba + 6 * attn + 23 * moe
    assert arch.n_params(cfg) == expected
    # active: 4 of 128 routed experts per MoE layer, the rest whole (embedding gather excluded, head included)
    assert arch.active_params(cfg) == expected - V * h - 23 * 124 * 2 * h * fe


def test_layers_block_type_list_equals_pattern():
    raw = dict(NEMOTRON_NANO_RAW, hybrid_override_pattern=None,
               layers_block_type=[{"M": "mamba", "E": "moe", "*": "attention"}[c] for c in NANO_PATTERN])
    assert from_hf_config(raw).layers_block_type == from_hf_config(NEMOTRON_NANO_RAW).layers_block_type


def test_granite_h_spellings_and_state():
    raw = {"model_type": "granitemoehybrid", "vocab_size": 1000, "hidden_size": 1536, "intermediate_size": 512,
           "num_attention_heads": 12, "num_key_value_heads": 4, "layer_types": ["mamba"] * 3 + ["attention"],
           "mamba_n_heads": 48, "mamba_d_head": 64, "mamba_d_state": 128, "mamba_n_groups": 1, "mamba_d_conv": 4,
           "num_local_experts": 8, "num_experts_per_tok": 2, "shared_intermediate_size": 1024}
    cfg = from_hf_config(raw)
    cl = arch.cache_layers(cfg)
    assert [c.kind for c in cl] == ["linear"] * 3 + ["full"]
    assert cl[0].state_f32_elems == 3 * (48 * 64 + 2 * 128) + 128 * 48 * 64
    assert cl[3].k_elems == 4 * 128


def test_state_flops_mamba2():
    cfg = from_hf_config(NEMOTRON_NANO_RAW)
    assert hybrid.state_flops(cfg) == 23 * (6 * 64 * 64 * 128 + 2 * 4 * 6144)


def test_falcon_h1_parallel_layers_hold_kv_and_state():
    # transformers FalconH1Config defaults (configuration_falcon_h1.py): 32 layers, hidden 4096, 32 q / 8 kv heads
    # (head_dim 128), mamba_d_ssm 1024, 128 heads x 8, 1 group, state 256, conv 4, no mamba RMS norm
    raw = {"model_type": "falcon_h1", "vocab_size": 128000, "hidden_size": 4096, "intermediate_size": 14336,
           "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "mamba_d_ssm": 1024,
           "mamba_n_heads": 128, "mamba_d_head": 8, "mamba_n_groups": 1, "mamba_d_state": 256, "mamba_d_conv": 4,
           "mamba_conv_bias": True, "mamba_proj_bias": False}
    cfg = from_hf_config(raw)
    assert cfg.mamba_rms_norm is False  # the transformers default when the file leaves it out
    cl = arch.cache_layers(cfg)
    assert [c.kind for c in cl] == ["linear", "full"] * 32  # llama.cpp filter_attn and filter_recr both true
    assert sum(c.k_elems + c.v_elems for c in cl) * 2 == 32 * 2 * 8 * 128 * 2  # f16 KV per token
    # llama.cpp: (k-1)(d_inner + 2 G N) + N d_inner, d_inner = mamba_d_ssm = 1024
    assert sum(c.state_f32_elems for c in cl) == 32 * (3 * (1024 + 2 * 256) + 256 * 1024)
    # mlx-lm: conv bf16 + state (128 heads, 8, 256) f32
    assert sum(c.mlx_state_bytes for c in cl) == 32 * (3 * 1536 * 2 + 128 * 8 * 256 * 4)
    h = 4096
    mamba = h * (2 * 1024 + 2 * 256 + 128) + 4 * 1536 + 1536 + 3 * 128 + 1024 * h
    attn = h * 4096 + 2 * h * 1024 + 4096 * h
    mlp = 3 * h * 14336
    assert arch.n_params(cfg) == 2 * 128000 * h + h + 32 * (2 * h + mamba + attn + mlp)


def test_jamba_mamba1_layout():
    # transformers JambaConfig defaults (configuration_jamba.py): 32 layers, hidden 4096, 32 q / 8 kv heads,
    # attention at i % 8 == 4, experts (16, top 2) at i % 2 == 1, d_state 16, conv 4, expand 2, dt_rank 256
    raw = {"model_type": "jamba", "vocab_size": 65536, "hidden_size": 4096, "intermediate_size": 14336,
           "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "num_experts": 16,
           "num_experts_per_tok": 2, "expert_layer_period": 2, "expert_layer_offset": 1, "attn_layer_period": 8,
           "attn_layer_offset": 4, "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2, "mamba_dt_rank": 256,
           "mamba_conv_bias": True}
    cfg = from_hf_config(raw)
    assert [i for i, b in enumerate(cfg.layers_block_type) if b == "attention"] == [4, 12, 20, 28]
    assert [i for i in range(32) if cfg.is_moe_layer(i)] == list(range(1, 32, 2))
    cl = arch.cache_layers(cfg)
    d = 8192
    # llama.cpp: (k-1) d_inner + N d_inner per Mamba layer (no groups), F32; mlx-lm both in bf16
    assert sum(c.state_f32_elems for c in cl) == 28 * (3 * d + 16 * d)
    assert sum(c.mlx_state_bytes for c in cl) == 28 * (3 * d + 16 * d) * 2
    assert sum(c.k_elems + c.v_elems for c in cl) * 2 == 4 * 2 * 8 * 128 * 2
    h = 4096
    mamba = h * 2 * d + 4 * d + d + d * (256 + 32) + 256 + 256 * d + d + 2 * 16 + 16 * d + d + d * h
    attn = h * h + 2 * h * 1024 + h * h
    moe = h * 16 + 3 * 16 * h * 14336
    dense = 3 * h * 14336
    assert arch.n_params(cfg) == 2 * 65536 * h + h + 32 * 2 * h + 28 * mamba + 4 * attn + 16 * moe + 16 * dense


def test_jamba_expert_offset_the_runtimes_disagree_on_is_refused():
    from planner.errors import UnsupportedArchitectureError
    raw = {"model_type": "jamba", "hidden_size": 64, "num_hidden_layers": 8, "num_attention_heads": 4,
           "vocab_size": 100, "intermediate_size": 128, "mamba_d_state": 16, "num_experts": 4,
           "num_experts_per_tok": 2, "expert_layer_period": 4, "expert_layer_offset": 1}
    with pytest.raises(UnsupportedArchitectureError, match="expert_layer_offset 1"):
        from_hf_config(raw)


@pytest.mark.parametrize("mt", ["nemotron_h", "granitemoehybrid"])
def test_mamba2_without_block_types_is_refused(mt):
    from planner.errors import UnsupportedArchitectureError
    cfg = ModelConfig(model_type=mt, hidden_size=1024, num_hidden_layers=4, num_attention_heads=8,
                      intermediate_size=2048, vocab_size=1000)
    with pytest.raises(UnsupportedArchitectureError, match="one block type per layer"):
        arch.cache_layers(cfg)


def test_lfm2_conv_state_and_ffn_width():
    # transformers Lfm2Config defaults (configuration_lfm2.py): hidden 2560, intermediate 12288, auto-adjusted FFN
    # (multiple_of 256, multiplier 1.0), conv_L_cache 3, 32 q / 8 kv heads; here 10 conv + 6 attention layers
    lt = ["conv", "conv", "full_attention"] * 5 + ["conv"]
    raw = {"model_type": "lfm2", "vocab_size": 65536, "hidden_size": 2560, "intermediate_size": 12288,
           "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8, "conv_bias": False,
           "conv_L_cache": 3, "block_multiple_of": 256, "block_ffn_dim_multiplier": 1.0,
           "block_auto_adjust_ff_dim": True, "layer_types": lt}
    cfg = from_hf_config(raw)
    assert cfg.intermediate_size == 8192  # int(2 x 12288 / 3) = 8192, already a multiple of 256
    assert cfg.tie_word_embeddings
    cl = arch.cache_layers(cfg)
    assert [c.kind for c in cl].count("linear") == 11 and [c.kind for c in cl].count("full") == 5
    # llama.cpp n_embd_r = 2560 x (3 - 1), F32; mlx-lm (B, 2, 2560) bf16
    assert sum(c.state_f32_elems for c in cl) * 4 == 11 * 2 * 2560 * 4
    assert sum(c.mlx_state_bytes for c in cl) == 11 * 2 * 2560 * 2
    assert sum(c.k_elems + c.v_elems for c in cl) * 2 == 5 * 2 * 8 * 80 * 2  # head_dim 2560 / 32 = 80
    h = 2560
    conv = 3 * h + 3 * h * h + h * h
    attn = 2 * 80 + h * h + 2 * h * 8 * 80 + h * h
    assert arch.n_params(cfg) == 65536 * h + h + 16 * (2 * h + 3 * h * 8192) + 11 * conv + 5 * attn


def test_lfm2_moe_leading_dense_layers():
    raw = {"model_type": "lfm2_moe", "vocab_size": 65536, "hidden_size": 2048, "intermediate_size": 7168,
           "moe_intermediate_size": 1792, "num_hidden_layers": 4, "num_attention_heads": 32, "num_key_value_heads": 8,
           "num_experts": 32, "num_experts_per_tok": 4, "use_expert_bias": True, "num_dense_layers": 2,
           "conv_L_cache": 3, "layer_types": ["conv", "conv", "full_attention", "conv"]}
    cfg = from_hf_config(raw)
    assert [cfg.is_moe_layer(i) for i in range(4)] == [False, False, True, True]
    ts = arch.tensors(cfg)
    assert {t.layer for t in ts if t.name == "ffn_gate" and t.ne1 == 7168} == {0, 1}  # dense, no 2/3 adjustment
    assert {t.layer for t in ts if t.name == "exp_probs_b"} == {2, 3}


def test_kimi_linear_kda_state_and_mla_cache():
    # transformers KimiLinearConfig defaults (configuration_kimi_linear.py, the Kimi-Linear-48B-A3B shape): 27 layers,
    # 6 MLA (layer_types), hidden 2304, 32 heads, KDA 32 heads x 128, conv 4, kv_lora_rank 512, rope 64, nope 128,
    # v 128, 256 experts top 8 + 1 shared (moe 1024), layer 0 dense (mlp_layer_types)
    lt = ["full_attention" if i % 4 == 3 else "linear_attention" for i in range(27)]  # one full every 4th here
    raw = {"model_type": "kimi_linear", "vocab_size": 163840, "hidden_size": 2304, "intermediate_size": 9216,
           "moe_intermediate_size": 1024, "num_hidden_layers": 27, "num_attention_heads": 32,
           "num_key_value_heads": 32, "num_shared_experts": 1, "kv_lora_rank": 512, "q_lora_rank": None,
           "qk_rope_head_dim": 64, "v_head_dim": 128, "qk_nope_head_dim": 128, "num_experts_per_token": 8,
           "num_experts": 256, "mlp_layer_types": ["dense"] + ["sparse"] * 26, "layer_types": lt,
           "linear_head_dim": 128, "linear_num_heads": 32, "linear_conv_kernel_dim": 4}
    cfg = from_hf_config(raw)
    assert cfg.first_k_dense_replace == 1 and cfg.n_shared_experts == 1
    cl = arch.cache_layers(cfg)
    n_full = lt.count("full_attention")
    assert [c.kind for c in cl].count("mla") == n_full == 6
    # MLA: latent 512 + rope key 64 per token per layer, no V (llama.cpp is_mla; mlx-lm caches both parts)
    assert sum(c.k_elems for c in cl) == 6 * 576 and sum(c.v_elems for c in cl) == 0
    # KDA, llama.cpp: 3 (k-1) H d + d d H per layer, F32; mlx-lm: three conv rows bf16 + (H, d, d) f32
    assert sum(c.state_f32_elems for c in cl) == 21 * (3 * 3 * 4096 + 128 * 128 * 32)
    assert sum(c.mlx_state_bytes for c in cl) == 21 * (3 * 3 * 4096 * 2 + 32 * 128 * 128 * 4)
    assert hybrid.state_flops(cfg) == 21 * (7 * 32 * 128 * 128 + 2 * 4 * 3 * 4096)


def test_kimi_linear_published_form_equals_flat_form():
    # moonshotai's config.json nests the KDA sizes (linear_attn_config, kda_layers 1-based), mlx-lm reads that form
    base = {"model_type": "kimi_linear", "vocab_size": 1000, "hidden_size": 256, "intermediate_size": 512,
            "moe_intermediate_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 4,
            "num_experts": 8, "num_experts_per_token": 2, "num_shared_experts": 1, "kv_lora_rank": 64,
            "qk_rope_head_dim": 16, "qk_nope_head_dim": 32, "v_head_dim": 32}
    nested = dict(base, first_k_dense_replace=1, moe_layer_freq=1,
                  linear_attn_config={"kda_layers": [1, 2, 4], "full_attn_layers": [3], "num_heads": 4,
                                      "head_dim": 64, "short_conv_kernel_size": 4})
    flat = dict(base, mlp_layer_types=["dense", "sparse", "sparse", "sparse"], linear_num_heads=4, linear_head_dim=64,
                linear_conv_kernel_dim=4,
                layer_types=["linear_attention", "linear_attention", "full_attention", "linear_attention"])
    a, b = from_hf_config(nested), from_hf_config(flat)
    assert arch.cache_layers(a) == arch.cache_layers(b) and arch.n_params(a) == arch.n_params(b)


def test_mlx_jamba_prefill_holds_the_chunk_states():
    # jamba.py ssm_step: new_state and dtA, (S, d_inner, N) each in the activation dtype, for the whole chunk
    raw = {"model_type": "jamba", "vocab_size": 1000, "hidden_size": 4096, "intermediate_size": 14336,
           "num_hidden_layers": 8, "num_attention_heads": 32, "num_key_value_heads": 8, "num_experts": 16,
           "num_experts_per_tok": 2, "mamba_d_state": 16, "mamba_expand": 2, "mamba_dt_rank": 256}
    cfg = from_hf_config(raw)
    assert hybrid.mlx_prefill_transient(cfg, 2048, 2) == 2 * 2048 * 8192 * 16 * 2  # 1 GiB
    assert hybrid.mlx_prefill_transient(from_hf_config(QWEN35_MOE_RAW), 2048, 2) == 0


def test_mlx_keeps_the_nemotron_router_unquantized():
    # nemotron_h.py MoEGate.weight is an mx.array, not an nn.Linear: mlx_lm.utils.quantize_model leaves it in bf16;
    # qwen3_5_moe quantizes its router Linear at 8 bits (quant_predicate)
    rt = P.load_runtime("mlx-lm")
    q4 = P.load_quant("mlx-4bit-g64", "mlx")
    nem = M.mlx_weights(profile(from_hf_config(NEMOTRON_NANO_RAW)), q4, rt)
    assert "router" not in nem.by_group
    q35 = M.mlx_weights(profile(from_hf_config(QWEN35_MOE_RAW)), q4, rt)
    assert q35.by_group["router"] == 40 * ((2048 * 256 + 2048) + (2048 * 256 + 2048) // 64 * 4)  # 8 bit + 2 x 2 B / 64


def _tiny_cases():
    from tests.crosscheck import test_crosscheck_hybrid as X
    return [(X.Q35_MOE, "qwen35moe"), (X.Q35_DENSE, "qwen35"), (dict(X.NEMOTRON_H, hybrid_override_pattern="M*EMEE"),
            "nemotron_h_moe"), (X.GRANITE_H, "granitehybrid"), (X.FALCON_H1, "falcon-h1"), (X.LFM2, "lfm2"),
            (X.LFM2_MOE, "lfm2moe"), (X.JAMBA, "jamba"), (X.KIMI_LINEAR, "kimi-linear")]


@pytest.mark.parametrize("case", range(9))
def test_gguf_reader_round_trip(case, tmp_path):
    """sources/ggufmeta.py reads back, from llama.cpp metadata keys alone, the layout the GGUF was written from
    (the writer follows llama.cpp's converters: conversion/qwen.py, nemotron, granite, falcon_h1, lfm2, jamba,
    kimi_linear)."""
    from sources.ggufmeta import config_from_gguf, read_header
    from tests.crosscheck.hybrid_gguf import write

    raw, gguf_arch = _tiny_cases()[case]
    cfg = from_hf_config(raw)
    path = tmp_path / "m.gguf"
    write(cfg, gguf_arch, path)
    with open(path, "rb") as f:
        kv, ts = read_header(f, str(path))
    back, _ = config_from_gguf(kv, ts, str(path))
    assert back.model_type == cfg.model_type
    assert arch.cache_layers(back) == arch.cache_layers(cfg)
    assert [(t.name, t.n_elements) for t in arch.tensors(back)] == [(t.name, t.n_elements) for t in arch.tensors(cfg)]


def test_qwen35_without_layer_types_takes_the_interval_of_4():
    # mlx_lm/models/qwen3_5.py: layer i is linear iff (i + 1) % full_attention_interval != 0, default 4
    raw = {k: v for k, v in QWEN35_DENSE_RAW.items() if k != "layer_types"}
    cfg = from_hf_config(raw)
    assert [i for i in range(32) if cfg.layer_type(i) == "full_attention"] == list(range(3, 32, 4))
