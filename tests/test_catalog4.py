"""2026 catalog additions (scripts/stubs/2026/): the published totals the profiles' params_b come from, rebuilt from
their parts, and the architectures added for them."""

import pytest

from planner import architecture as A
from planner import profiles as P


def _qwen35_vision(depth, h, inter, out, patch=16, temporal=2, merge=2, pos=2304):
    # transformers qwen3_5 Qwen3_5VisionModel (the module tree in the model-info reports the stubs cite): Conv3d patch
    # embed with bias, position table, per block 2 LayerNorms + qkv + proj + fc1 + fc2 (all with bias), merger LN +
    # fc1 (h*merge^2 square) + fc2 to the text width
    hm = h * merge * merge
    block = 4 * h + (3 * h * h + 3 * h) + (h * h + h) + (h * inter + inter) + (inter * h + h)
    return 3 * temporal * patch * patch * h + h + pos * h + depth * block + 2 * h + hm * hm + hm + hm * out + out


def _qwen35_mtp(c):
    # mtp.* tensors: fc (2h -> h), one gated full-attention layer (q_proj doubled for the output gate, q/k norms),
    # a SwiGLU MLP, input/post-attention norms, pre_fc_norm_embedding/hidden and the final norm
    h, hd = c.hidden_size, c.head_dim
    attn = h * c.num_attention_heads * hd * 2 + 2 * h * c.num_key_value_heads * hd + c.num_attention_heads * hd * h
    return 2 * h * h + attn + 2 * hd + 3 * h * c.intermediate_size + 5 * h


@pytest.mark.parametrize("name, vision, hub_total", [
    ("Qwen/Qwen3.5-0.8B", (12, 768, 3072, 1024), 873_438_784),
    ("Qwen/Qwen3.5-2B", (24, 1024, 4096, 2048), 2_274_069_824),
    ("Qwen/Qwen3.5-4B", (24, 1024, 4096, 2560), 4_659_865_088),
])
def test_qwen35_small_hub_totals_are_text_plus_vision_plus_mtp(name, vision, hub_total):
    # The cards' 0.8B/2B/4B round the Hub's safetensors totals, which hold the text model the runtimes load, the
    # vision tower and the multi-token-prediction layer (mtp_num_hidden_layers 1, outside num_hidden_layers)
    m = P.load_model(name)
    tower = _qwen35_vision(*vision)
    assert A.n_params(m.config) + tower + _qwen35_mtp(m.config) == hub_total
    assert m.vision_params_b == pytest.approx(tower / 1e9, abs=5e-4)
    assert m.params_b == pytest.approx(hub_total / 1e9, abs=5e-4)


def test_qwen35_0_8b_text_count_is_what_llama_cpp_loads():
    # llama.cpp's loaded parameter count for Qwen3.5-0.8B-Q4_K_M.gguf (no vision, no MTP): 752,393,024
    assert A.n_params(P.load_model("Qwen/Qwen3.5-0.8B").config) == 752_393_024


def test_qwen38_27b_has_qwen36_27b_text_model_and_hub_total():
    # Both Hub totals are 27,781,427,952: same text config, same MTP layer, and the vision share left over equals
    # Qwen3.6-27B's tower (depth 27, width 1152, MLP 4304, out 5120)
    q38, q36 = P.load_model("Qwen/Qwen3.8-27B"), P.load_model("Qwen/Qwen3.6-27B")
    assert A.n_params(q38.config) == A.n_params(q36.config)
    assert [cl.kind for cl in A.cache_layers(q38.config)] == [cl.kind for cl in A.cache_layers(q36.config)]
    rest = 27_781_427_952 - A.n_params(q38.config) - _qwen35_mtp(q38.config)
    assert rest == _qwen35_vision(27, 1152, 4304, 5120)
    assert q38.vision_params_b == pytest.approx(rest / 1e9, abs=5e-4)


@pytest.mark.parametrize("name, paper_b", [("tiiuae/Falcon-H1-7B-Instruct", 7.59), ("tiiuae/Falcon-H1-3B-Instruct", 3.15)])
def test_falcon_h1_layout_rounds_to_the_technical_report_size(name, paper_b):
    # Falcon-H1 technical report Table 1 gives two decimals; the planner's count must round to it
    assert round(A.n_params(P.load_model(name).config) / 1e9, 2) == paper_b
