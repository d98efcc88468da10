"""Catalog profiles added from third-party or composite config readings (scripts/stubs/catalog3/): the rules behind
the numbers that are not a plain copy of a card."""

from planner import architecture as A
from planner import profiles as P


def test_glm47_flash_card_total_excludes_the_mtp_layer_the_runtimes_skip():
    # The checkpoint's safetensors total (31,221,488,576) = the 47 trunk layers the planner lays out + the MTP layer 47,
    # which has its own embedding and head (DeepSeek-V3-style nextn block: eh_proj 2h x h, enorm, hnorm, shared_head
    # norm) and one MoE decoder layer. mlx-lm's glm4_moe_lite sanitize drops it and llama.cpp skips it unless
    # load_mtp, so the profile counts the card's 30B, not the 31.2B file.
    m = P.load_model("zai-org/GLM-4.7-Flash")
    c = m.config
    h, v, heads = c.hidden_size, c.vocab_size, c.num_attention_heads
    qk = c.qk_nope_head_dim + c.qk_rope_head_dim
    attn = (h * c.q_lora_rank + c.q_lora_rank + c.q_lora_rank * heads * qk
            + h * (c.kv_lora_rank + c.qk_rope_head_dim) + c.kv_lora_rank
            + c.kv_lora_rank * heads * (c.qk_nope_head_dim + c.v_head_dim) + heads * c.v_head_dim * h)
    n_exp = c.n_routed_experts
    moe = (n_exp + c.n_shared_experts) * 3 * h * c.moe_intermediate_size + n_exp * h + n_exp
    mtp = 2 * v * h + 2 * h * h + 3 * h + attn + moe + 2 * h
    total = A.n_params(c) + mtp
    # 64 router-bias elements per trunk MoE layer (46 x 64 = 2,944) are the only elements the planner leaves out
    assert abs(total - 31_221_488_576) <= 46 * 64
    assert abs(A.n_params(c) / 1e9 / m.params_b - 1) < 0.01
