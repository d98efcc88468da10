"""Hostile model files: each gives one line and exit 2, in a child capped at a normal run's address space + 200 MB.

A regression (a per-layer list built before validation, an unbounded GGUF array, a FIFO opened for reading) fails
by exceeding the memory cap (MemoryError traceback) or the subprocess time cap, not by a timing assertion.
"""

from __future__ import annotations

import json
import os
import shutil
import struct

import hostile_gen as hg
import pytest
from bounded import assert_one_line, run_bounded, run_module

from cli.main import main
from sources import resolve_model
from sources.bounds import MAX_GGUF_ARRAY, MAX_GGUF_KV, MAX_GGUF_TENSORS, loads_json, read_capped
from sources.errors import SourceError


def plan_line(path, *needles) -> str:
    return assert_one_line(run_bounded(["--model", str(path), "--ram", "64"]), *needles)


# --------------------------------------------------------------------------- 1. memory bombs
def test_config_billion_layers_with_sliding_window(tmp_path):
    d = hg.config(tmp_path / "m", num_hidden_layers=10**9, sliding_window=4096)
    plan_line(d, "num_hidden_layers", "1000000000")


def test_gguf_billion_layers_with_sliding_window(tmp_path):
    plan_line(hg.gguf_config(tmp_path / "m"), "block_count", "1000000000")


def test_gguf_array_of_2_pow_62(tmp_path):
    p = hg.gguf_huge_array(tmp_path / "m")
    assert p.stat().st_size < 400  # a few hundred bytes
    plan_line(p, f"array of {2**62} items")


@pytest.mark.parametrize("build,needle", [
    (hg.gguf_many_keys, f"{1_000_000} keys"),
    (hg.gguf_many_tensors, f"{1_000_000} tensors"),
    (hg.gguf_many_strings, f"array of {4_000_000} items"),
])
def test_gguf_million_entries(tmp_path, build, needle):
    plan_line(build(tmp_path / "m"), needle)


def test_bounds_leave_room_for_real_models():
    # largest real values (sources/bounds.py comments): vocab 262,208 (Gemma 3), ~1,100 tensors, ~60 keys
    assert MAX_GGUF_ARRAY >= 4 * 262_208 and MAX_GGUF_TENSORS >= 16 * 1_138 and MAX_GGUF_KV >= 1000


def test_gguf_tensor_of_2_pow_126_elements(tmp_path):
    plan_line(hg.gguf_giant_tensor(tmp_path / "m"), "token_embd.weight")


# --------------------------------------------------------------------------- 3. FIFOs and devices
def test_fifo_gguf_in_folder_is_skipped(tmp_path):
    hg.fifo(tmp_path / "m", "m.gguf")
    plan_line(tmp_path / "m", "no config.json or .gguf")


def test_fifo_gguf_named_directly(tmp_path):
    plan_line(hg.fifo(tmp_path / "m", "m.gguf"), "not a regular file")


def test_fifo_config_json(tmp_path):
    hg.fifo(tmp_path / "m", "config.json")
    plan_line(tmp_path / "m", "not a regular file")


def test_dev_zero_safetensors_is_skipped(tmp_path):
    d = hg.config(tmp_path / "m")
    (d / "model.safetensors").symlink_to("/dev/zero")
    r = run_bounded(["--model", str(d), "--ram", "64"])
    assert r.rc == 0, r.err[-500:]  # the device is not a weights file: weights are estimated from the config


def test_dev_zero_config_json(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").symlink_to("/dev/zero")
    plan_line(tmp_path / "m", "not a regular file")


def test_read_capped_refuses_big_file(tmp_path):
    p = tmp_path / "config.json"
    with open(p, "wb") as f:
        f.truncate(200 * 2**20)  # sparse: 200 MB declared, nothing on disk
    with pytest.raises(SourceError, match="larger than 4 MiB"):
        read_capped(p, 4 * 2**20)


# --------------------------------------------------------------------------- 4. one line, not a traceback
def _cli_line(capsys, path) -> str:
    assert main(["--model", str(path), "--ram", "64"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_deeply_nested_config_json(tmp_path):
    hg.write(tmp_path / "m", "config.json", hg.deep_json())
    plan_line(tmp_path / "m", "nested deeper than")


def test_deeply_nested_safetensors_header(tmp_path, capsys):
    d = hg.config(tmp_path / "m")
    hg.safetensors(d, hg.deep_json())
    assert "nested deeper than" in _cli_line(capsys, d)


def test_nesting_just_under_recursion_limit():
    with pytest.raises(SourceError, match="nested deeper than 64"):
        loads_json(b"[" * 900 + b"]" * 900, "x.json")
    assert loads_json(b'{"a": {"b": [1]}}', "x.json") == {"a": {"b": [1]}}


@pytest.mark.parametrize("over,needle", [
    ({"model_type": ["llama"]}, "model_type must be a short string"),
    ({"model_type": {"a": 1}}, "model_type must be a short string"),
    ({"model_type": "gemma3_text", "sliding_window": 512, "sliding_window_pattern": "six"},
     "sliding_window_pattern is 'six'"),
    ({"num_key_value_heads": 3, "num_attention_heads": 4, "hidden_size": 512}, "not a multiple of"),
    ({"hidden_size": 16, "num_attention_heads": 32, "num_key_value_heads": 32}, "head_dim is 0"),
    ({"model_type": "mixtral", "num_local_experts": 2, "num_experts_per_tok": 8}, "8 active experts of 2"),
    ({"num_hidden_layers": -3}, "num_hidden_layers"),
])
def test_bad_config_values(tmp_path, capsys, over, needle):
    assert needle in _cli_line(capsys, hg.config(tmp_path / "m", **over))


@pytest.mark.parametrize("shape", [["ab"], [1e999], [-4, 4], [2**40, 2**40], [True]])
def test_bad_safetensors_shapes(tmp_path, capsys, shape):
    d = hg.config(tmp_path / "m")
    raw = json.dumps({"w": {"dtype": "F16", "shape": shape, "data_offsets": [0, 8]}})
    hg.safetensors(d, raw.encode())
    assert "malformed safetensors entry" in _cli_line(capsys, d)


def test_split_gguf_of_zero_parts(tmp_path, capsys):
    p = hg.write(tmp_path, "x-00001-of-00000.gguf", b"GGUF")
    assert "not a valid part number" in _cli_line(capsys, p)


def test_gguf_string_where_integer_expected(tmp_path, capsys):
    kv = [hg.kv_str("general.architecture", "llama"), hg.kv_str("llama.block_count", "many"),
          hg.kv_u32("llama.embedding_length", 64), hg.kv_u32("llama.attention.head_count", 4),
          hg.kv_u32("llama.vocab_size", 256)]
    p = hg.write(tmp_path, "m.gguf", hg.gguf_head(0, len(kv)) + b"".join(kv))
    assert "llama.block_count is str, expected an integer" in _cli_line(capsys, p)


def test_folder_listed_but_not_entered(tmp_path, capsys):
    d = hg.config(tmp_path / "m")
    d.chmod(0o444)
    try:
        if os.geteuid() == 0:  # root enters any folder: ask from a child without the DAC-override capabilities
            setpriv = shutil.which("setpriv")
            if not setpriv:
                pytest.skip("root enters any folder, and util-linux setpriv is not installed to drop that right")
            r = run_module("cli.main:run", ["--model", str(d), "--ram", "64"],
                           wrap=[setpriv, "--bounding-set", "-dac_override,-dac_read_search"])
            assert_one_line(r, "permission denied")
        else:
            assert "permission denied" in _cli_line(capsys, d)
    finally:
        d.chmod(0o755)


def test_real_sized_gguf_header_still_reads(tmp_path):
    # a 262,144-entry string vocab (Gemma 3 size) and 1,200 tensors parse as before
    n = 262_144
    kv = hg.llama_kv()
    vocab = hg.gstr("tokenizer.ggml.tokens") + struct.pack("<IIQ", hg.T_ARRAY, hg.T_STRING, n) \
        + b"".join(hg.gstr(f"tok{i}") for i in range(n))
    ti = [hg.tensor_info(f"blk.{i // 12}.t{i % 12}.weight", (64, 64)) for i in range(1200)]
    p = hg.write(tmp_path, "m.gguf", hg.gguf_head(len(ti), len(kv) + 1) + b"".join(kv) + vocab + b"".join(ti))
    with open(p, "r+b") as f:  # the data section (every tensor at offset 0 here): alignment + one 64x64 F32
        f.truncate(p.stat().st_size + 32 + 64 * 64 * 4)
    r = resolve_model(str(p))
    assert r.exact_weights.n_params == 1200 * 64 * 64
    # the file reader refills its buffer mid-vocab (1 MiB first read); the buffer parser sees it all at once
    from sources.ggufmeta import NeedMore, parse_header
    from sources.local import read_gguf

    blob = p.read_bytes()
    assert parse_header(blob, "m.gguf") == read_gguf(p)
    with pytest.raises(NeedMore):
        parse_header(blob[: len(blob) // 2], "m.gguf")


# --------------------------------------------------------------------------- work bounded by the layer count
def test_repeated_mlp_only_layers_cost_work_linear_in_layers(tmp_path, capsys, monkeypatch):
    """A 2.4 MB config: 10,000 layers and mlp_only_layers naming one layer 400,000 times (issue 34). The list is a
    set of layers (duplicates dropped) and a whole plan asks is_moe_layer at most a few times per layer: a
    membership test in the list per layer, or ffn_width recomputed per call, was quadratic and ran for minutes."""
    from planner.schema import ModelConfig

    n = 10_000
    d = hg.config(tmp_path / "m", model_type="qwen3_moe", num_hidden_layers=n, num_experts=8,
                  num_experts_per_tok=2, moe_intermediate_size=128, mlp_only_layers=[n - 1] * 400_000)
    calls = [0]
    orig = ModelConfig.is_moe_layer

    def counted(self, i):
        calls[0] += 1
        return orig(self, i)

    monkeypatch.setattr(ModelConfig, "is_moe_layer", counted)
    assert main(["--model", str(d), "--ram", "64"]) == 0
    capsys.readouterr()
    assert calls[0] <= 10 * n, calls[0]
    cfg = resolve_model(str(d)).profile.config
    assert cfg.mlp_only_layers == [n - 1]
    assert not cfg.is_moe_layer(n - 1) and cfg.is_moe_layer(n - 2)
