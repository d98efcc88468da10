"""sources.hfconfig.from_hf_config on the config.json shapes the catalog met: hybrids refused with the reason,
VLM wrappers unwrapped, key spellings and defaults normalised. Configs hold the real keys of the named repos."""

from __future__ import annotations

import pytest

from cli.main import main
from planner.errors import UnsupportedArchitectureError
from sources.hfconfig import from_hf_config

BASE = {"hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 8,
        "intermediate_size": 2048, "vocab_size": 1000}

HYBRIDS = {
    # ibm-granite/granite-4.0-h-small
    "granite-4.0-h": {"model_type": "granitemoehybrid", "mamba_d_state": 128, "mamba_d_conv": 4, "mamba_expand": 2,
                      "mamba_n_heads": 128, "layer_types": ["mamba", "mamba", "mamba", "attention"]},
    # ai21labs/AI21-Jamba-Mini-1.6
    "jamba": {"model_type": "jamba", "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2,
              "attn_layer_period": 8, "attn_layer_offset": 4},
    # tiiuae/Falcon-H1-7B-Instruct
    "falcon-h1": {"model_type": "falcon_h1", "mamba_d_state": 256, "mamba_d_conv": 4, "mamba_n_heads": 128},
    # nvidia/Nemotron-H-8B-Base-8K
    "nemotron-h": {"model_type": "nemotron_h", "hybrid_override_pattern": "M-M-", "ssm_state_size": 128},
}


def test_state_space_hybrids_are_refused():
    # plain Mamba / RWKV and other state-space models without a layout (planner/hybrid.py)
    raw = {**BASE, "model_type": "mamba2", "ssm_state_size": 128}
    with pytest.raises(UnsupportedArchitectureError, match="Mamba/state-space layers are not laid out"):
        from_hf_config(raw, "mamba2/config.json")


@pytest.mark.parametrize("name", ["granite-4.0-h", "nemotron-h"])
def test_mamba2_hybrids_read_their_block_lists(name):
    # planner/hybrid.py lays them out; these partial configs lack Mamba-2 head sizes, which the layout refuses
    from planner import architecture as arch
    cfg = from_hf_config({**BASE, **HYBRIDS[name]}, f"{name}/config.json")
    assert cfg.layers_block_type == {"granite-4.0-h": ["mamba", "mamba", "mamba", "attention"],
                                     "nemotron-h": ["mamba", "mlp", "mamba", "mlp"]}[name]
    with pytest.raises(UnsupportedArchitectureError, match="Mamba-2 layers need mamba_num_heads"):
        arch.cache_layers(cfg)


def test_lightning_attention_is_refused():
    # MiniMaxAI/MiniMax-M1-80k: attn_type_list 0 = lightning attention, 1 = softmax (7 of every 8 layers linear)
    raw = {**BASE, "model_type": "minimax_m1", "attn_type_list": [0, 0, 0, 1]}
    with pytest.raises(UnsupportedArchitectureError, match="lightning"):
        from_hf_config(raw)


def test_minimax_m2_all_softmax_is_read():
    raw = {**BASE, "model_type": "minimax_m2", "num_local_experts": 16, "num_experts_per_tok": 2,
           "attn_type_list": [1, 1, 1, 1]}
    cfg = from_hf_config(raw)
    assert cfg.model_type == "minimax_m2" and cfg.n_experts == 16 and cfg.layer_types is None


def test_refusal_is_one_line_from_the_cli(tmp_path, capsys):
    (tmp_path / "config.json").write_text(
        '{"model_type": "mamba2", "hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 8,'
        ' "intermediate_size": 2048, "vocab_size": 1000, "mamba_d_state": 128}')
    assert main(["--model", str(tmp_path), "--ram", "64"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Mamba" in err and "Traceback" not in err


def test_qwen2_gets_its_qkv_bias():
    # transformers modeling_qwen2.py builds q/k/v with bias=True; Qwen2.5 configs carry no key for it
    assert from_hf_config({**BASE, "model_type": "qwen2"}).attention_bias is True
    assert from_hf_config({**BASE, "model_type": "llama"}).attention_bias is False


def test_window_as_long_as_the_context_does_not_slide():
    # microsoft/Phi-3.5-mini-instruct: sliding_window 262144 > max_position_embeddings 131072
    cfg = from_hf_config({**BASE, "model_type": "phi3", "sliding_window": 262144, "max_position_embeddings": 131072})
    assert cfg.sliding_window is None and cfg.layer_types is None
    # mistralai/Mistral-7B-v0.1: a 4096 window in a 32768 context slides on every layer
    cfg = from_hf_config({**BASE, "model_type": "mistral", "sliding_window": 4096, "max_position_embeddings": 32768})
    assert cfg.sliding_window == 4096 and cfg.layer_types == ["sliding_attention"] * 4


def test_qwen25_vl_flat_config_reads_as_qwen2():
    # Qwen/Qwen2.5-VL-7B-Instruct: the text model's keys sit at the top level next to vision_config
    raw = {**BASE, "model_type": "qwen2_5_vl", "vision_config": {"depth": 32, "hidden_size": 1280}}
    cfg = from_hf_config(raw)
    assert cfg.model_type == "qwen2" and cfg.attention_bias is True


def test_qwen25_vl_nested_config_reads_as_qwen2():
    # the same model saved by newer transformers: text_config with model_type qwen2_5_vl_text
    raw = {"model_type": "qwen2_5_vl", "text_config": {**BASE, "model_type": "qwen2_5_vl_text"}}
    assert from_hf_config(raw).model_type == "qwen2"


def test_exaone_num_layers():
    # LGAI-EXAONE/EXAONE-3.5-7.8B-Instruct spells the layer count num_layers
    raw = {k: v for k, v in BASE.items() if k != "num_hidden_layers"} | {"model_type": "exaone", "num_layers": 32}
    assert from_hf_config(raw).num_hidden_layers == 32


def test_llama4_wrapper():
    # meta-llama/Llama-4-Scout-17B-16E-Instruct: text_config model_type llama4_text, no layer_types in the file
    tc = {**BASE, "model_type": "llama4_text", "num_hidden_layers": 8, "num_local_experts": 16,
          "num_experts_per_tok": 1, "intermediate_size_mlp": 4096, "attention_chunk_size": 8192}
    cfg = from_hf_config({"model_type": "llama4", "text_config": tc, "vision_config": {"hidden_size": 1408}})
    assert cfg.model_type == "llama4"
    assert cfg.layer_types == ["chunked_attention"] * 3 + ["full_attention"] + ["chunked_attention"] * 3 + [
        "full_attention"]
    assert cfg.shared_expert_intermediate_size == 2048 and cfg.interleave_moe_layer_step == 1


def test_qwen3_vl_text_configs_read_as_qwen3():
    # Qwen/Qwen3-VL-8B-Instruct and Qwen/Qwen3-VL-30B-A3B-Instruct text_config model_types
    dense = {"model_type": "qwen3_vl", "text_config": {**BASE, "model_type": "qwen3_vl_text"}}
    assert from_hf_config(dense).model_type == "qwen3"
    moe = {"model_type": "qwen3_vl_moe", "text_config": {**BASE, "model_type": "qwen3_vl_moe_text", "num_experts": 8,
                                                          "num_experts_per_tok": 2, "moe_intermediate_size": 256}}
    assert from_hf_config(moe).model_type == "qwen3_moe"
