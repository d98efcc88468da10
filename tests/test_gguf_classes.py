"""llama-quantize's per-tensor classes that hold for every preset (profiles/quants/ggml-types.yaml llama_quantize),
as the vendored src/llama-quant.cpp applies them: hand-derived types and byte counts."""

from __future__ import annotations

import pytest

from planner import profiles as P
from planner.architecture import Tensor
from planner.memory import gguf_tensor_type, gguf_weights, quantize_counters, use_more_bits

TABLE = P.ggml_types()
TYPES = {t.name: t for t in TABLE.types}
CLASSES = TABLE.llama_quantize


def _type(t: Tensor, model: str, preset: str, ts: list[Tensor] | None = None) -> str:
    m = P.load_model(model)
    counters = quantize_counters(m.config, ts or [t], CLASSES)
    return gguf_tensor_type(t, P.load_quant(preset, "gguf"), m, TYPES, counters, None, CLASSES)


# --------------------------------------------------------------------------- attn_qkv / attn_kv_b are attn_v
def test_phi4_fused_qkv_takes_attn_v_rules():
    """Phi-4 (phi3 arch, 40 layers, hidden 5120, 40 heads, 10 KV heads, head 128) keeps qkv_proj fused:
    blk.N.attn_qkv [5120 -> 7680]. category_is_attn_v: Q4_K_M gives it Q6_K on use_more_bits(i, 40) layers
    (i < 5, i >= 35, (i - 5) % 3 == 2: 20 layers), Q4_K on the other 20. attn_output [5120 -> 5120] stays Q4_K.
    Rows of 5120: Q6_K 20 blocks x 210 B = 4200 B, Q4_K 20 x 144 B = 2880 B."""
    assert sum(use_more_bits(i, 40) for i in range(40)) == 20
    w = gguf_weights(P.load_model("phi-4"), P.load_quant("Q4_K_M", "gguf"), TABLE)
    assert w.by_group["attention"] == 20 * 7680 * 4200 + 20 * 7680 * 2880 + 40 * 5120 * 2880


@pytest.mark.parametrize("preset,first,rest", [("Q3_K_M", "Q5_K", "Q4_K"), ("Q3_K_L", "Q5_K", "Q5_K"),
                                               ("Q2_K", "Q4_K", "Q4_K"), ("Q8_0", "Q8_0", "Q8_0")])
def test_attn_qkv_counts_with_attn_v(preset, first, rest):
    """Q3_K_M: i_attention_wv < 2 -> Q5_K else Q4_K; Q3_K_L: Q5_K; Q2_K with n_gqa >= 4: Q4_K (phi-4: 40/10)."""
    ts = [Tensor("attn_qkv", i, 5120, 7680) for i in range(40)]
    got = [_type(t, "phi-4", preset, ts) for t in ts]
    assert got[:2] == [first] * 2 and set(got[2:]) == {rest}


def test_attn_v_like_tensors_share_one_counter_in_file_order():
    """A hybrid whose gated-delta-net layers hold attn_qkv and whose attention layers hold attn_v (Qwen3.5:
    src/models/qwen35.cpp) counts both in n_attention_wv, by layer: Q3_K_M's 'first 2' are layers 0 and 1
    whatever their kind."""
    ts = [Tensor("attn_qkv" if i % 4 != 3 else "attn_v", i, 4096, 1024) for i in range(8)]
    got = [_type(t, "llama-3.1-8b", "Q3_K_M", ts) for t in ts]
    assert got == ["Q5_K", "Q5_K"] + ["Q4_K"] * 6


# --------------------------------------------------------------------------- token embeddings
@pytest.mark.parametrize("model,preset,want", [
    ("gemma-3-4b", "Q4_K_M", "Q6_K"),    # tied (no output.weight): the output's rule, Q6_K
    ("gemma-3-4b", "Q8_0", "Q8_0"),
    ("llama-3.1-8b", "Q4_K_M", "Q4_K"),  # untied: token_embd has no Q4_K_M rule, the base type
])
def test_per_layer_token_embd_is_a_token_embedding(model, preset, want):
    """tensor_name_match_token_embd: per_layer_token_embd.weight (Gemma 3n / Gemma 4) is TOKEN_EMBD."""
    t = Tensor("per_layer_token_embd", None, 256 * 32, 262144, group="embedding")
    assert _type(t, model, preset) == want
    te = Tensor("token_embd", None, 256 * 32, 262144, group="embedding")
    assert _type(te, model, preset) == want


# --------------------------------------------------------------------------- never quantized
@pytest.mark.parametrize("name,preset,want", [
    ("ssm_conv1d", "Q4_K_M", "F32"), ("ssm_conv1d", "F16", "F32"),
    ("per_layer_model_proj", "Q4_K_M", "BF16"), ("per_layer_model_proj", "F16", "F16"),
    ("per_layer_model_proj", "F32", "F32"), ("altup_proj", "Q4_K_M", "BF16"),
    ("altup_correct_coef", "Q4_K_M", "F32"), ("laurel_l", "Q2_K", "BF16"), ("ffn_gate_inp", "Q4_K_M", "F32"),
])
def test_tensors_llama_quantize_never_quantizes(name, preset, want):
    """tensor_allows_quantization: these keep the converter's type (F32 where conversion/base.py forces it, the
    --outtype otherwise: BF16 from a bf16 checkpoint), even when MLX would quantize them (Tensor.quantizable is
    MLX's too)."""
    assert _type(Tensor(name, 3, 2560, 8960, group="attention"), "gemma-3-4b", preset) == want


# --------------------------------------------------------------------------- FFN layer index
def test_dense_ffn_rules_count_ffn_tensors_not_layers():
    """n_expert <= 1: layer_info returns the running i_ffn_down of n_ffn_down = n_layer_all. With ffn_down in the
    odd layers of 16 only (a Nemotron-H-like dense hybrid), the 8 tensors are i = 0..7 of n = 16:
    use_more_bits(i, 16) holds for i = 0, 1, 4, 7 -> Q6_K at layers 1, 3, 9, 15 under Q4_K_M."""
    ts = [Tensor("attn_v", i, 4096, 1024) for i in range(16)] + \
         [Tensor("ffn_down", i, 14336, 4096, group="ffn") for i in range(1, 16, 2)]
    got = {t.layer: _type(t, "llama-3.1-8b", "Q4_K_M", ts) for t in ts if t.name == "ffn_down"}
    assert [i for i, q in got.items() if q == "Q6_K"] == [1, 3, 9, 15]


def test_moe_ffn_rules_use_the_layer_in_the_name():
    """n_expert > 1: the layer parsed from blk.N (qwen3-30b-a3b, 48 layers), not a count of the FFN tensors:
    with experts in the even layers only, blk.N gets use_more_bits(N, 48)."""
    ts = [Tensor("attn_v", i, 2048, 512) for i in range(48)] + \
         [Tensor("ffn_down_exps", i, 768, 2048, 128, group="experts") for i in range(0, 48, 2)]
    got = {t.layer: _type(t, "qwen3-30b-a3b", "Q4_K_M", ts) for t in ts if t.group == "experts"}
    assert got == {i: "Q6_K" if use_more_bits(i, 48) else "Q4_K" for i in range(0, 48, 2)}
    assert got != {i: "Q6_K" if use_more_bits(j, 48) else "Q4_K" for j, i in enumerate(range(0, 48, 2))}


# --------------------------------------------------------------------------- published sizes
PHI4 = "https://huggingface.co/bartowski/phi-4-GGUF/tree/9a71451b173b12d3cb7768dfe76617838cf549ae"
PHI4_MRADERMACHER = "https://huggingface.co/mradermacher/phi-4-GGUF/tree/main"


@pytest.mark.parametrize("preset,gb,source", [
    ("Q4_K_M", 9.05, PHI4), ("Q3_K_M", 7.36, PHI4), ("Q4_K_S", 8.44, PHI4), ("Q4_0", 8.41, PHI4),
    ("Q5_K_M", 10.6, PHI4_MRADERMACHER), ("Q6_K", 12.0, PHI4_MRADERMACHER), ("Q8_0", 15.6, PHI4_MRADERMACHER),
])
def test_phi4_presets_match_published_sizes(preset, gb, source):
    """File sizes (GB) of phi-4 GGUFs. Not listed: Q3_K_L (7.93) and Q2_K (5.55), made before llama.cpp moved
    attn_qkv into the attn_v class (its own branch then: Q4_K at Q3_K_L, none at Q2_K); the vendored
    llama-quantize writes them at 8.12 and 5.91 GB."""
    got = gguf_weights(P.load_model("phi-4"), P.load_quant(preset, "gguf"), TABLE).total_bytes / 1e9
    assert abs(got / gb - 1) < 0.015, (preset, got, gb, source)
