"""Local MLX/HF folders, bad configs, and a fuzz of the GGUF path (only PlannerError may escape)."""

from __future__ import annotations

import json
import os

import pytest
from fakehub import fixture_config
from gguf_gen import LLAMA8B_KV, llama_tensors, write_gguf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from st_gen import header_bytes, qwen3_30b_a3b_mlx4, shard

from cli.main import main
from planner.errors import PlannerError
from planner.plan import PlanRequest, plan
from sources import resolve_model
from sources.errors import SourceError
from sources.ggufmeta import parse_header

QWEN_MLX = "mlx-community/Qwen3-30B-A3B-4bit"


def mlx_folder(tmp_path):
    d = tmp_path / "Qwen3-30B-A3B-4bit"
    d.mkdir()
    (d / "config.json").write_bytes(fixture_config(QWEN_MLX))
    for name, data in shard(qwen3_30b_a3b_mlx4(), 4).items():
        (d / name).write_bytes(data)
    return d


def test_mlx_folder_exact_and_plan_restricted(tmp_path):
    d = mlx_folder(tmp_path)
    r = resolve_model(str(d))
    _, data = header_bytes(qwen3_30b_a3b_mlx4())
    assert r.source == "folder" and r.quant_id == "mlx-4bit-g64" and r.runtime_hint == "mlx-lm"
    assert r.exact_weights.total_bytes == data
    p = plan(PlanRequest(model=str(d), ram=64), r)
    assert [(o.runtime, o.quant) for o in p.options] == [("mlx-lm", "mlx-4bit-g64")]
    assert p.options[0].weights.exact and p.options[0].memory.weights == data


def test_an_mlx_folder_without_a_runtime_is_served_by_mlx_lm_as_plan_answers_it(tmp_path):
    """One rule (planner/deployment.py resolve_runtime): the folder's MLX weights pick mlx-lm in `plan serve` as in
    `plan`, with the folder's exact bytes; was llama.cpp's default, refused for MLX weights."""
    from planner.serve_plan import setup

    d = mlx_folder(tmp_path)
    r = resolve_model(str(d))
    s = setup("M4 Max", 40, 128, r, None, None)
    assert (s.rt.id, s.mm.quant_id) == ("mlx-lm", "mlx-4bit-g64")
    assert s.mm.weights.total_bytes == r.exact_weights.total_bytes
    assert any("MLX weights" in n for n in s.names["notes"])


def test_an_mlx_folder_asked_of_llama_cpp_is_the_same_model_converted_with_a_note(tmp_path):
    """--runtime llama.cpp on an MLX folder: the folder's 4-bit in llama.cpp's format (Q4_K_M, estimated bytes), with
    a note naming the runtime for these files, in `plan` and `plan serve` alike. `plan` refused it."""
    from planner.serve_plan import setup

    d = mlx_folder(tmp_path)
    r = resolve_model(str(d))
    p = plan(PlanRequest(model=str(d), ram=64, runtimes=["llama.cpp"]), r)
    assert [(o.runtime, o.quant, o.weights.exact) for o in p.options] == [("llama.cpp", "Q4_K_M", False)]
    assert any("cannot load" in n and "[[runtime]] mlx-lm" in n for n in p.notes)
    s = setup("M4 Max", 40, 128, r, None, "llama.cpp")
    assert (s.rt.id, s.mm.quant_id) == ("llama.cpp", "Q4_K_M")
    assert any("does not load" in n for n in s.names["notes"])


def test_hf_folder_unquantized_keeps_all_options(tmp_path):
    d = tmp_path / "llama"
    d.mkdir()
    (d / "config.json").write_bytes(fixture_config("meta-llama/Llama-3.1-8B-Instruct"))
    from st_gen import llama_8b

    for name, data in shard(llama_8b(), 2).items():
        (d / name).write_bytes(data)
    r = resolve_model(str(d))
    assert r.quant_id == "mlx-bf16" and r.runtime_hint is None
    p = plan(PlanRequest(model=str(d), ram=32, quants=["Q4_K_M", "bf16"]), r)
    ex = {(o.runtime, o.quant): o.weights.exact for o in p.options}
    assert ex == {("llama.cpp", "Q4_K_M"): False, ("llama.cpp", "BF16"): False, ("mlx-lm", "mlx-bf16"): True}


@pytest.mark.parametrize("content,want", [
    (b"{not json", "not valid JSON"),
    (b"[1, 2]", "expected a JSON object"),
    (json.dumps({"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "vocab_size": 1000,
                 "intermediate_size": 100}).encode(), "missing num_attention_heads"),
    (json.dumps({"model_type": "mamba2", "ssm_state_size": 16}).encode(), "not supported yet"),
    (json.dumps({"model_type": "gemma3n_text"}).encode(), "not supported yet"),
    (json.dumps({"model_type": "llama4_text"}).encode(), "missing hidden_size"),
    (json.dumps({"model_type": "mamba"}).encode(), "not supported yet"),
])
def test_bad_configs_one_line(tmp_path, capsys, content, want):
    d = tmp_path / "m"
    d.mkdir()
    (d / "config.json").write_bytes(content)
    with pytest.raises(PlannerError, match=want):
        resolve_model(str(d))
    rc = main(["--model", str(d), "--ram", "16"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and want in err


def test_bad_safetensors_header(tmp_path):
    d = mlx_folder(tmp_path)
    (d / "model-00002-of-00004.safetensors").write_bytes(b"\xff" * 7)
    with pytest.raises(SourceError, match="not a valid safetensors"):
        resolve_model(str(d))


# --------------------------------------------------------------------------- fuzz
def _small_gguf(path) -> bytes:
    kv = {**LLAMA8B_KV, "block_count": 2, "embedding_length": 64, "feed_forward_length": 256,
          "attention.head_count": 4, "attention.head_count_kv": 2, "vocab_size": 256}
    write_gguf(path, "llama", kv, llama_tensors(n_layers=2, h=256, heads=4, kv_heads=2, hd=64, ffn=512, vocab=256))
    return path.read_bytes()


@pytest.fixture(scope="module")
def valid_gguf(tmp_path_factory):
    return _small_gguf(tmp_path_factory.mktemp("g") / "v.gguf")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzz_gguf_only_planner_errors(tmp_path_factory, valid_gguf, data):
    kind = data.draw(st.sampled_from(["random", "truncate", "mutate"]))
    if kind == "random":
        blob = data.draw(st.binary(max_size=2048))
        if data.draw(st.booleans()):
            blob = b"GGUF" + blob
    elif kind == "truncate":
        blob = valid_gguf[: data.draw(st.integers(0, len(valid_gguf)))]
    else:
        b = bytearray(valid_gguf)
        for _ in range(data.draw(st.integers(1, 8))):
            i = data.draw(st.integers(0, min(len(b) - 1, 4096)))
            b[i] = data.draw(st.integers(0, 255))
        blob = bytes(b)
    p = tmp_path_factory.mktemp("f") / "x.gguf"
    p.write_bytes(blob)
    try:
        r = resolve_model(str(p))
        assert r.exact_weights is not None
    except PlannerError as e:
        assert "\n" not in str(e)
    try:
        parse_header(blob, "x.gguf")
    except PlannerError as e:
        assert "\n" not in str(e)
    except Exception as e:  # noqa: BLE001
        from sources.ggufmeta import NeedMore

        assert isinstance(e, NeedMore)
    os.unlink(p)


def test_mlx_folder_quantization_block_pins_the_format_without_safetensors(tmp_path):
    """Issue 35: an MLX folder's config.json says bits 4, group 64 but has no .safetensors yet: the plan is that one
    mlx-lm format (estimated bytes), not every runtime × quant."""
    from planner import profiles

    cfg = profiles.load_model("qwen3-8b").config.model_dump(exclude_none=True)
    cfg.update(architectures=["Qwen3ForCausalLM"], model_type="qwen3", torch_dtype="bfloat16",
               quantization={"bits": 4, "group_size": 64})
    d = tmp_path / "Qwen3-8B-4bit"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(cfg))
    r = resolve_model(str(d))
    assert r.exact_weights is None and r.quant_id == "mlx-4bit-g64"
    p = plan(PlanRequest(model=str(d), ram=16), r)
    assert [(o.runtime, o.quant) for o in p.options] == [("mlx-lm", "mlx-4bit-g64")]
    assert any("weights are estimated" in n for n in p.notes)
