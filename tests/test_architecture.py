"""planner.architecture: the layouts added for the catalog (glm4_moe, minimax_m2) and the architectures it refuses.

Expected numbers are derived by hand from the configs in the comments, never from the code under test.
"""

from __future__ import annotations

import pytest

from planner import architecture as arch
from planner.errors import UnsupportedArchitectureError
from planner.schema import ModelConfig

# zai-org/GLM-4.5-Air config.json (profiles/models/glm-4.5-air.yaml)
GLM_AIR = ModelConfig(
    model_type="glm4_moe", hidden_size=4096, num_hidden_layers=46, num_attention_heads=96, num_key_value_heads=8,
    head_dim=128, intermediate_size=10944, moe_intermediate_size=1408, n_routed_experts=128, n_shared_experts=1,
    num_experts_per_tok=8, first_k_dense_replace=1, vocab_size=151552, attention_bias=True,
    max_position_embeddings=131072,
)
# MiniMaxAI/MiniMax-M2 config.json (profiles/models/minimax-m2.yaml)
MINIMAX_M2 = ModelConfig(
    model_type="minimax_m2", hidden_size=3072, num_hidden_layers=62, num_attention_heads=48, num_key_value_heads=8,
    head_dim=128, intermediate_size=1536, num_local_experts=256, num_experts_per_tok=8, vocab_size=200064,
    max_position_embeddings=196608,
)


def test_glm4_moe_layout():
    h, H, Hkv, hd, V = 4096, 96, 8, 128, 151552
    attn = h * H * hd + 2 * h * Hkv * hd + H * hd * h + (H + 2 * Hkv) * hd  # q, k, v, o + q/k/v bias
    dense = 3 * h * 10944                                                   # layer 0 (first_k_dense_replace=1)
    moe = 128 * 3 * h * 1408 + 3 * h * 1408 + h * 128                       # 128 experts + 1 shared + router
    norms = 2 * h
    expected = 2 * V * h + h + 46 * (attn + norms) + dense + 45 * moe       # untied embedding + head, final norm
    assert arch.n_params(GLM_AIR) == expected                              # 106.85e9, card 106B
    assert sum(1 for i in range(46) if GLM_AIR.is_moe_layer(i)) == 45


def test_glm4_moe_kv_cache_is_plain_gqa():
    # 46 layers x 8 KV heads x 128 x (K + V): 184 KiB per token at f16
    layers = arch.cache_layers(GLM_AIR)
    assert {c.kind for c in layers} == {"full"}
    assert sum(c.k_elems + c.v_elems for c in layers) * 2 == 46 * 8 * 128 * 2 * 2 == 188_416


def test_minimax_m2_layout():
    h, H, Hkv, hd, V, E, f = 3072, 48, 8, 128, 200064, 256, 1536
    per_layer = h * H * hd + 2 * h * Hkv * hd + H * hd * h + E * 3 * h * f + h * E + 2 * h
    expected = 2 * V * h + h + 62 * per_layer
    assert arch.n_params(MINIMAX_M2) == expected                     # 228.7e9, card 230B
    # active: every layer routes 8 of 256 experts; the embedding gather is not counted (untied head is)
    active = V * h + h + 62 * (per_layer - (E - 8) * 3 * h * f)
    assert arch.active_params(MINIMAX_M2) == active                 # 10.4e9, card 10B


# meta-llama/Llama-4-Maverick-17B-128E-Instruct text_config, as sources/hfconfig.py normalises it
MAVERICK = ModelConfig(
    model_type="llama4", hidden_size=5120, num_hidden_layers=48, num_attention_heads=40, num_key_value_heads=8,
    head_dim=128, intermediate_size=8192, intermediate_size_mlp=16384, num_local_experts=128, num_experts_per_tok=1,
    shared_expert_intermediate_size=8192, interleave_moe_layer_step=2, attention_chunk_size=8192,
    vocab_size=202048, max_position_embeddings=1048576,
    layer_types=["full_attention" if (i + 1) % 4 == 0 else "chunked_attention" for i in range(48)],
)


def test_llama4_interleaved_moe_layout():
    h, H, Hkv, hd, V, E = 5120, 40, 8, 128, 202048, 128
    attn = h * H * hd + 2 * h * Hkv * hd + H * hd * h
    moe = E * 3 * h * 8192 + 3 * h * 8192 + h * E  # routed experts + shared expert + router
    dense = 3 * h * 16384                           # intermediate_size_mlp on the other layers
    expected = 2 * V * h + h + 48 * (attn + 2 * h) + 24 * moe + 24 * dense
    assert arch.n_params(MAVERICK) == expected      # 400.7e9 text; card 400B with the 0.87B vision tower
    assert [i for i in range(6) if MAVERICK.is_moe_layer(i)] == [1, 3, 5]


def test_llama4_chunked_layers_cache_one_chunk():
    layers = arch.cache_layers(MAVERICK)
    chunked = [c for c in layers if c.kind == "sliding"]
    assert len(chunked) == 36 and {c.window for c in chunked} == {8192}
    assert sum(1 for c in layers if c.kind == "full") == 12  # layers 3, 7, ..., 47: global NoPE attention


@pytest.mark.parametrize(
    "model_type",
    [
        "minimax_m1",        # MiniMax-M1: lightning (linear) attention hybrid
        "gemma3n",           # Gemma 3n: per-layer embeddings, AltUp, KV sharing
    ],
)
def test_unmodelled_architectures_are_refused(model_type):
    cfg = ModelConfig(model_type=model_type, hidden_size=1024, num_hidden_layers=4, num_attention_heads=8,
                      intermediate_size=2048, vocab_size=1000)
    with pytest.raises(UnsupportedArchitectureError, match=f"model_type '{model_type}' is not supported yet"):
        arch.n_params(cfg)
    with pytest.raises(UnsupportedArchitectureError):
        arch.cache_layers(cfg)


def test_linear_attention_without_its_dimensions_is_refused():
    cfg = ModelConfig(model_type="qwen3_next", hidden_size=1024, num_hidden_layers=4, num_attention_heads=8,
                      intermediate_size=2048, vocab_size=1000, full_attention_interval=4)
    with pytest.raises(UnsupportedArchitectureError, match="linear-attention"):
        arch.n_params(cfg)
