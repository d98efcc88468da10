"""Tiny model builders: deterministic, loadable, exact sizes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from calibration.errors import CalibrationError
from calibration.runners import inspect_model, safetensors_header
from calibration.tinymodels import SIZES, LlamaSpec, build_hf_llama, read_hf_spec

TINY = SIZES["tiny"]


def test_tiny_spec_matches_reference_size() -> None:
    assert TINY.n_params == 3_672_320  # 3.67 M params, 14.7 MB in f32
    assert TINY.head_dim == 64


def test_bench_preset_is_k_quant_friendly_and_100_to_300_mb_at_fp16() -> None:
    b = SIZES["bench"]
    assert b.hidden % 256 == 0 and b.ffn % 256 == 0 and b.kv_heads * b.head_dim % 256 == 0
    assert 100e6 <= b.n_params * 2 <= 400e6


def test_hf_folder_layout(tiny_hf: Path) -> None:
    for f in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
              "special_tokens_map.json"):
        assert (tiny_hf / f).is_file(), f
    config = json.loads((tiny_hf / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"]
    assert config["torch_dtype"] == "float32"
    assert "chat_template" in json.loads((tiny_hf / "tokenizer_config.json").read_text())
    assert read_hf_spec(tiny_hf) == LlamaSpec()
    header = safetensors_header(tiny_hf / "model.safetensors")
    n = 0
    for t in header.values():
        size = 1
        for s in t["shape"]:
            size *= s
        n += size
    assert n == TINY.n_params


def test_tokenizer_is_byte_level_and_padded_to_vocab(tiny_hf: Path) -> None:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tiny_hf / "tokenizer.json"))
    assert tok.get_vocab_size() == TINY.vocab
    ids = tok.encode("The quick brown fox jumps over the lazy dog. ünïcödé 🦊").ids
    assert ids[0] == 0  # BOS
    assert all(0 <= i < TINY.vocab for i in ids)
    assert tok.decode(ids, skip_special_tokens=True) == "The quick brown fox jumps over the lazy dog. ünïcödé 🦊"


def test_builder_is_deterministic(tmp_path: Path) -> None:
    pytest.importorskip("safetensors")
    digests = []
    for name in ("a", "b"):
        d = build_hf_llama(tmp_path / name, layers=1, vocab=512)
        digests.append([hashlib.sha256((d / f).read_bytes()).hexdigest()
                        for f in ("model.safetensors", "tokenizer.json")])
    assert digests[0] == digests[1]


def test_bad_inputs_raise_calibration_error(tmp_path: Path) -> None:
    pytest.importorskip("safetensors")
    with pytest.raises(CalibrationError, match="size"):
        build_hf_llama(tmp_path / "x", size="huge")
    with pytest.raises(CalibrationError, match="ffn"):
        build_hf_llama(tmp_path / "y", ffn=688)
    (tmp_path / "z").mkdir()
    (tmp_path / "z" / "f").write_text("x")
    with pytest.raises(CalibrationError, match="not empty"):
        build_hf_llama(tmp_path / "z")


def test_gguf_builds_have_exact_sizes(tiny_gguf: dict[str, Path]) -> None:
    expected_bytes = {"F32": 4 * TINY.n_params}
    for ft, path in tiny_gguf.items():
        info = inspect_model(path)
        assert info.format == "gguf" and info.quant == ft
        assert info.n_params == TINY.n_params
        assert (info.n_layers, info.hidden, info.n_heads, info.n_kv_heads, info.vocab, info.ffn) == (
            TINY.layers, TINY.hidden, TINY.heads, TINY.kv_heads, TINY.vocab, TINY.ffn)
        assert 0 < info.weights_bytes < path.stat().st_size
        if ft in expected_bytes:
            assert info.weights_bytes == expected_bytes[ft]
    sizes = {ft: inspect_model(p).weights_bytes for ft, p in tiny_gguf.items()}
    assert sizes["F32"] > sizes["F16"] > sizes["Q8_0"] > sizes["Q4_0"]


@pytest.mark.requires_llama_cpp
def test_q4_k_m_by_llama_cpp(tiny_q4km: Path, tiny_gguf: dict[str, Path]) -> None:
    info = inspect_model(tiny_q4km)
    assert info.quant == "Q4_K_M"
    assert info.n_params == TINY.n_params
    assert info.weights_bytes < inspect_model(tiny_gguf["Q8_0"]).weights_bytes


@pytest.mark.requires_llama_cpp
def test_gguf_loads_in_llama_cpp_and_tokenizes_like_hf(tiny_gguf: dict[str, Path], tiny_hf: Path) -> None:
    llama_cpp = pytest.importorskip("llama_cpp")
    from tokenizers import Tokenizer

    llm = llama_cpp.Llama(str(tiny_gguf["F16"]), n_ctx=256, n_threads=1, verbose=False)
    text = "The quick brown fox jumps over the lazy dog."
    hf_ids = Tokenizer.from_file(str(tiny_hf / "tokenizer.json")).encode(text).ids
    assert llm.tokenize(text.encode(), add_bos=True) == hf_ids
    out = llm.create_completion(text, max_tokens=4, temperature=0.0)
    assert out["usage"]["completion_tokens"] >= 1


@pytest.mark.requires_mlx
def test_mlx_models_load_and_generate(tiny_mlx: dict[str, Path]) -> None:
    from mlx_lm import generate, load

    f32, q4 = inspect_model(tiny_mlx["mlx-f32"]), inspect_model(tiny_mlx["mlx-4bit-g64"])
    assert (f32.quant, q4.quant) == ("mlx-f32", "mlx-4bit-g64")
    assert f32.n_params == q4.n_params == TINY.n_params
    assert f32.weights_bytes == 4 * TINY.n_params
    assert q4.weights_bytes < f32.weights_bytes / 4
    model, tok = load(str(tiny_mlx["mlx-4bit-g64"]))
    text = generate(model, tok, "hello world", max_tokens=4)
    assert isinstance(text, str)
