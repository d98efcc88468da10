"""Local GGUF files written with gguf.GGUFWriter (real shapes, sparse data): exact bytes and derived config."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from gguf_gen import LLAMA8B_KV, Q, llama_tensors, nbytes, write_gguf, write_llama8b

from cli.main import main
from planner import architecture as arch
from planner import profiles
from planner.errors import PlannerError, UnsupportedArchitectureError
from planner.memory import kv_layout, memory_model
from sources import resolve_model
from sources.errors import SourceError
from sources.ggufmeta import parse_header


def test_llama_8b_exact_bytes_and_config(tmp_path):
    p = tmp_path / "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf"
    total = write_llama8b(p)
    r = resolve_model(str(p))
    assert r.source == "gguf" and r.runtime_hint == "llama.cpp" and r.quant_id == "Q4_K_M"
    w = r.exact_weights
    assert w.exact and w.total_bytes == total
    assert w.by_type == {"Q4_K": 3_655_139_328, "Q6_K": 1_256_693_760, "F32": 1_064_960}
    assert w.n_params == 8_030_261_248
    c = r.profile.config
    assert (c.model_type, c.num_hidden_layers, c.hidden_size, c.num_attention_heads, c.num_key_value_heads,
            c.head_dim, c.intermediate_size, c.vocab_size, c.max_position_embeddings, c.tie_word_embeddings) == (
        "llama", 32, 4096, 32, 8, 128, 14336, 128256, 131072, False)


def test_own_header_parser_agrees_with_gguf_reader(tmp_path):
    p = tmp_path / "m.gguf"
    write_llama8b(p)
    kv, tensors = parse_header(_head(p, 4 * 2**20), str(p))
    r = resolve_model(str(p))
    assert sum(t.n_bytes for t in tensors) == r.exact_weights.total_bytes
    assert kv["llama.block_count"] == 32 and kv["general.file_type"] == 15


def test_agreement_with_catalog_llama_3_1_8b(tmp_path):
    """Catalog llama-3.1-8b vs a GGUF of it: same KV per token; Q4_K_M weights within the preset's rounding."""
    p = tmp_path / "llama-q4km.gguf"
    write_llama8b(p)
    r = resolve_model(str(p))
    cat = profiles.load_model("llama-3.1-8b")
    rt, table = profiles.load_runtime("llama.cpp"), profiles.ggml_types()
    assert kv_layout(r.profile, rt, "f16", table) == kv_layout(cat, rt, "f16", table)
    assert kv_layout(r.profile, rt, "f16", table).bytes_per_token == 131072
    est = memory_model(cat, rt, profiles.load_quant("Q4_K_M", "gguf"), table).weights
    assert est.n_params == r.exact_weights.n_params
    assert abs(est.total_bytes - r.exact_weights.total_bytes) / r.exact_weights.total_bytes < 0.01
    assert arch.n_params(r.profile.config) == arch.n_params(cat.config)


def test_split_gguf_is_summed(tmp_path):
    ts = llama_tensors(n_layers=2, h=256, heads=4, kv_heads=2, hd=64, ffn=512, vocab=1024)
    kv = {**LLAMA8B_KV, "block_count": 2, "embedding_length": 256, "feed_forward_length": 512,
          "attention.head_count": 4, "attention.head_count_kv": 2, "vocab_size": 1024}
    a = write_gguf(tmp_path / "tiny-Q4_K_M-00001-of-00002.gguf", "llama", kv, ts[:10], file_type=15)
    b = write_gguf(tmp_path / "tiny-Q4_K_M-00002-of-00002.gguf", "llama", {}, ts[10:])
    r = resolve_model(str(tmp_path / "tiny-Q4_K_M-00001-of-00002.gguf"))
    assert r.exact_weights.total_bytes == a + b
    assert any("2 shards" in n for n in r.notes)
    (tmp_path / "tiny-Q4_K_M-00002-of-00002.gguf").unlink()
    with pytest.raises(SourceError, match="missing"):
        resolve_model(str(tmp_path / "tiny-Q4_K_M-00001-of-00002.gguf"))


def qwen3moe(path: Path, n_layers=48, h=2048, E=128, fe=768, V=151936):
    ts = [("token_embd.weight", (h, V), Q.Q4_K)]
    for i in range(n_layers):
        p = f"blk.{i}."
        ts += [(p + "attn_norm.weight", (h,), Q.F32), (p + "attn_q.weight", (h, 4096), Q.Q4_K),
               (p + "attn_k.weight", (h, 512), Q.Q4_K), (p + "attn_v.weight", (h, 512), Q.Q6_K),
               (p + "attn_output.weight", (4096, h), Q.Q4_K), (p + "attn_q_norm.weight", (128,), Q.F32),
               (p + "attn_k_norm.weight", (128,), Q.F32), (p + "ffn_norm.weight", (h,), Q.F32),
               (p + "ffn_gate_inp.weight", (h, E), Q.F32), (p + "ffn_gate_exps.weight", (h, fe, E), Q.Q4_K),
               (p + "ffn_up_exps.weight", (h, fe, E), Q.Q4_K), (p + "ffn_down_exps.weight", (fe, h, E), Q.Q6_K)]
    ts += [("output_norm.weight", (h,), Q.F32), ("output.weight", (h, V), Q.Q6_K)]
    kv = {"block_count": n_layers, "context_length": 40960, "embedding_length": h, "feed_forward_length": 6144,
          "attention.head_count": 32, "attention.head_count_kv": 4, "attention.key_length": 128,
          "attention.value_length": 128, "expert_count": E, "expert_used_count": 8,
          "expert_feed_forward_length": fe}
    return write_gguf(path, "qwen3moe", kv, ts, file_type=15), ts


def test_moe_qwen3moe(tmp_path):
    total, ts = qwen3moe(tmp_path / "Qwen3-30B-A3B-Q4_K_M.gguf")
    r = resolve_model(str(tmp_path / "Qwen3-30B-A3B-Q4_K_M.gguf"))
    c = r.profile.config
    assert (c.model_type, c.num_experts, c.num_experts_per_tok, c.moe_intermediate_size, c.head_dim) == (
        "qwen3_moe", 128, 8, 768, 128)
    w = r.exact_weights
    assert w.total_bytes == total
    exps = sum(nbytes(ne, t) for n, ne, t in ts if n.endswith("_exps.weight"))
    assert w.by_group["experts"] == exps
    assert w.by_group["router"] == 48 * 2048 * 128 * 4
    assert w.n_params == arch.n_params(profiles.load_model("qwen3-30b-a3b").config) + 48 * 2 * 128  # + q/k norms


def test_swa_gemma3(tmp_path):
    h, n, V = 5376, 62, 262144
    ts = [("token_embd.weight", (h, V), Q.Q4_K)]
    for i in range(n):
        ts += [(f"blk.{i}.attn_q.weight", (h, 4096), Q.Q4_K), (f"blk.{i}.attn_k.weight", (h, 2048), Q.Q4_K),
               (f"blk.{i}.attn_v.weight", (h, 2048), Q.Q6_K), (f"blk.{i}.attn_output.weight", (4096, h), Q.Q4_K),
               (f"blk.{i}.ffn_gate.weight", (h, 21504), Q.Q4_K), (f"blk.{i}.ffn_up.weight", (h, 21504), Q.Q4_K),
               (f"blk.{i}.ffn_down.weight", (21504, h), Q.Q6_K), (f"blk.{i}.attn_norm.weight", (h,), Q.F32)]
    kv = {"block_count": n, "context_length": 131072, "embedding_length": h, "feed_forward_length": 21504,
          "attention.head_count": 32, "attention.head_count_kv": 16, "attention.key_length": 128,
          "attention.value_length": 128, "attention.sliding_window": 1024}
    total = write_gguf(tmp_path / "gemma-3-27b-it-Q4_K_M.gguf", "gemma3", kv, ts, file_type=15)
    mm = write_gguf(tmp_path / "mmproj-F16.gguf", "clip", {}, [("v.patch_embd.weight", (14, 14, 3, 1152), Q.F16)])
    r = resolve_model(str(tmp_path / "gemma-3-27b-it-Q4_K_M.gguf"))
    c = r.profile.config
    assert c.model_type == "gemma3_text" and c.tie_word_embeddings and c.sliding_window == 1024
    assert c.layer_types == profiles.load_model("gemma-3-27b").config.layer_types  # 52 local + 10 global
    assert r.exact_weights.total_bytes == total and r.exact_weights.vision_bytes == mm == r.vision_bytes
    rt, table = profiles.load_runtime("llama.cpp"), profiles.ggml_types()
    assert kv_layout(r.profile, rt, "f16", table) == kv_layout(profiles.load_model("gemma-3-27b"), rt, "f16", table)


def deepseek2(path: Path, mla_keys: bool = True):
    h, n, V, H = 7168, 61, 129280, 128
    ts = [("token_embd.weight", (h, V), Q.Q4_K), ("output.weight", (h, V), Q.Q6_K)]
    for i in range(n):
        p = f"blk.{i}."
        ts += [(p + "attn_q_a.weight", (h, 1536), Q.Q4_K), (p + "attn_q_b.weight", (1536, H * 192), Q.Q4_K),
               (p + "attn_kv_a_mqa.weight", (h, 576), Q.Q4_K), (p + "attn_kv_b.weight", (512, H * 256), Q.Q4_K),
               (p + "attn_output.weight", (H * 128, h), Q.Q4_K), (p + "attn_kv_a_norm.weight", (512,), Q.F32)]
        if i < 3:
            ts += [(p + "ffn_gate.weight", (h, 18432), Q.Q4_K), (p + "ffn_up.weight", (h, 18432), Q.Q4_K),
                   (p + "ffn_down.weight", (18432, h), Q.Q6_K)]
        else:
            ts += [(p + "ffn_gate_inp.weight", (h, 256), Q.F32), (p + "exp_probs_b.bias", (256,), Q.F32),
                   (p + "ffn_gate_exps.weight", (h, 2048, 256), Q.Q4_K),
                   (p + "ffn_up_exps.weight", (h, 2048, 256), Q.Q4_K),
                   (p + "ffn_down_exps.weight", (2048, h, 256), Q.Q6_K),
                   (p + "ffn_gate_shexp.weight", (h, 2048), Q.Q4_K), (p + "ffn_up_shexp.weight", (h, 2048), Q.Q4_K),
                   (p + "ffn_down_shexp.weight", (2048, h), Q.Q6_K)]
    kv = {"block_count": n, "context_length": 163840, "embedding_length": h, "feed_forward_length": 18432,
          "attention.head_count": H, "attention.kv_lora_rank": 512, "attention.q_lora_rank": 1536,
          "rope.dimension_count": 64, "expert_count": 256, "expert_used_count": 8, "expert_shared_count": 1,
          "expert_feed_forward_length": 2048, "leading_dense_block_count": 3}
    if mla_keys:  # llama.cpp conversion/deepseek.py: MLA as MQA with large heads
        kv.update({"attention.head_count_kv": 1, "attention.key_length": 576, "attention.value_length": 512,
                   "attention.key_length_mla": 192, "attention.value_length_mla": 128})
    else:
        kv.update({"attention.head_count_kv": H, "attention.key_length": 192, "attention.value_length": 128})
    return write_gguf(path, "deepseek2", kv, ts, file_type=15)


def test_mla_deepseek2(tmp_path):
    total = deepseek2(tmp_path / "DeepSeek-V3-Q4_K_M.gguf")
    r = resolve_model(str(tmp_path / "DeepSeek-V3-Q4_K_M.gguf"))
    c = r.profile.config
    assert (c.model_type, c.kv_lora_rank, c.qk_rope_head_dim, c.qk_nope_head_dim, c.v_head_dim, c.n_routed_experts,
            c.n_shared_experts, c.first_k_dense_replace) == ("deepseek_v3", 512, 64, 128, 128, 256, 1, 3)
    assert r.exact_weights.total_bytes == total
    rt, table = profiles.load_runtime("llama.cpp"), profiles.ggml_types()
    lay = kv_layout(r.profile, rt, "f16", table)
    assert lay.bytes_per_token == 61 * 576 * 2 == kv_layout(profiles.load_model("deepseek-v3"), rt, "f16", table).bytes_per_token
    assert r.profile.params_b == pytest.approx(671, rel=0.01)
    old = deepseek2(tmp_path / "old-DeepSeek-Q4_K_M.gguf", mla_keys=False)
    r2 = resolve_model(str(tmp_path / "old-DeepSeek-Q4_K_M.gguf"))
    assert r2.exact_weights.total_bytes == old and any("key_length_mla" in n for n in r2.notes)


@pytest.mark.parametrize("arch_name,msg", [("mamba", "state-space"), ("bert", "not supported yet"),
                                           ("llama4", "not supported yet")])
def test_unsupported_architectures_refused(tmp_path, arch_name, msg):
    p = tmp_path / "x.gguf"
    write_gguf(p, arch_name, {"block_count": 2, "embedding_length": 64, "attention.head_count": 2},
               [("token_embd.weight", (64, 32), Q.F32)])
    with pytest.raises(UnsupportedArchitectureError, match=msg):
        resolve_model(str(p))


def test_missing_head_count_is_one_line(tmp_path):
    p = tmp_path / "x.gguf"
    write_gguf(p, "llama", {"block_count": 2, "embedding_length": 64}, [("token_embd.weight", (64, 32), Q.F32)])
    with pytest.raises(SourceError, match="attention.head_count"):
        resolve_model(str(p))


def _head(p: Path, n: int) -> bytes:
    with open(p, "rb") as f:
        return f.read(n)


def _cli(argv, capsys):
    rc = main(argv)
    err = capsys.readouterr().err
    return rc, err


def test_truncated_and_wrong_magic_give_one_line(tmp_path, capsys):
    good = tmp_path / "good.gguf"
    write_llama8b(good)
    head = _head(good, 300_000)
    bad = tmp_path / "trunc.gguf"
    bad.write_bytes(head[:5000])
    magic = tmp_path / "magic.gguf"
    magic.write_bytes(b"GGML" + head[4:5000])
    for p, want in ((bad, "is not a valid GGUF"), (magic, "wrong magic")):
        with pytest.raises(SourceError, match=want):
            resolve_model(str(p))
        rc, err = _cli(["--model", str(p), "--ram", "16"], capsys)
        assert rc == 2 and err.count("\n") == 1 and "re-download" in err and "Traceback" not in err


def test_cli_plans_a_gguf_with_exact_weights(tmp_path, capsys):
    p = tmp_path / "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf"
    total = write_llama8b(p)
    import json

    rc = main(["--model", str(p), "--ram", "16", "--json"])
    out = capsys.readouterr().out
    assert rc == 0
    plan = json.loads(out)
    assert [(o["runtime"], o["quant"]) for o in plan["options"]] == [("llama.cpp", "Q4_K_M")]
    assert plan["options"][0]["weights"]["total_bytes"] == total and plan["options"][0]["weights"]["exact"]


def test_cli_missing_file(capsys):
    rc, err = _cli(["--model", "/nonexistent/x.gguf", "--ram", "16"], capsys)
    assert rc == 2 and err.count("\n") == 1 and "no such GGUF" in err


def test_catalog_path_unchanged():
    r = resolve_model("llama-3.3-70b")
    assert r.source == "catalog" and r.exact_weights is None
    with pytest.raises(PlannerError):
        resolve_model("not-a-model-at-all")


def test_header_with_tokenizer_arrays_agrees_with_gguf_reader(tmp_path):
    """The local reader reads the header only (never the data region): a header with tokenizer string arrays
    gives the same tensors as gguf.GGUFReader (the reference reader)."""
    import gguf

    from sources import local

    kv = {**LLAMA8B_KV, "tokenizer.ggml.model": "gpt2",
          "tokenizer.ggml.tokens": [f"token-{i}" for i in range(20_000)],
          "tokenizer.ggml.merges": [f"m{i} n{i}" for i in range(20_000)]}
    p = tmp_path / "tok.gguf"
    total = write_gguf(p, "llama", kv, llama_tensors(), file_type=15)
    got_kv, tensors = local.read_gguf(p)
    ref = gguf.GGUFReader(p, "r")
    assert [(t.name, t.n_bytes) for t in tensors] == [(t.name, int(t.n_bytes)) for t in ref.tensors]
    assert sum(t.n_bytes for t in tensors) == total
    assert got_kv["tokenizer.ggml.tokens"] == 20_000 and got_kv["llama.block_count"] == 32


def test_truncated_header_is_one_line_not_a_hang(tmp_path):
    from sources import local

    p = tmp_path / "cut.gguf"
    write_llama8b(p)
    with p.open("rb") as f:             # the file is ~5 GB sparse: read only what is kept
        data = f.read(3000)             # the header stops inside the tensor table
    p.write_bytes(data)
    with pytest.raises(SourceError, match="not a valid GGUF"):
        local.read_gguf(p)


def test_missing_gguf_package_names_the_install_command(tmp_path):
    import subprocess
    import sys

    p = tmp_path / "m.gguf"
    write_llama8b(p)
    code = ("import sys; sys.modules['gguf'] = None\nfrom cli.main import main\n"
            f"sys.exit(main(['--model', {str(p)!r}, '--ram', '16']))")
    r = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert f"{sys.executable} -m pip install 'gguf>=0.10'" in r.stderr


# --------------------------------------------------------------------------- impossible files (issue 34)
TINY = dict(n_layers=2, h=256, heads=4, kv_heads=2, hd=64, ffn=512, vocab=1024)
TINY_KV = {**LLAMA8B_KV, "block_count": 2, "embedding_length": 256, "feed_forward_length": 512,
           "attention.head_count": 4, "attention.head_count_kv": 2, "vocab_size": 1024, "rope.dimension_count": 64}


def _line(capsys, *argv) -> str:
    code = main(list(argv))
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, (code, err)
    return err


def test_a_gguf_without_tensors_is_refused(tmp_path, capsys):
    """A header with no tensors was planned as '0 B of weights, fits comfortably'."""
    p = tmp_path / "empty.gguf"
    write_gguf(p, "llama", TINY_KV, [], file_type=15)
    assert "no tensors" in _line(capsys, "--model", str(p), "--ram", "64")


def test_split_parts_of_two_models_are_refused(tmp_path, capsys):
    """Two complete models named as parts 1 and 2 of one split: every tensor appears twice (was summed)."""
    for i in (1, 2):
        write_gguf(tmp_path / f"m-0000{i}-of-00002.gguf", "llama", TINY_KV, llama_tensors(**TINY), file_type=15)
    err = _line(capsys, "--model", str(tmp_path / "m-00001-of-00002.gguf"), "--ram", "64")
    assert "twice" in err and "different models" in err


def test_tensor_data_past_the_end_of_the_file_is_refused(tmp_path, capsys):
    """A header whose tensors lie past the end of the file (a truncated download) was planned as exact weights."""
    p = tmp_path / "cut.gguf"
    write_gguf(p, "llama", TINY_KV, llama_tensors(**TINY), file_type=15)
    size = p.stat().st_size
    with open(p, "r+b") as f:
        f.truncate(size - 1)
    assert f"{size - 1:,} bytes" in _line(capsys, "--model", str(p), "--ram", "64")
    with open(p, "r+b") as f:  # the whole file again: it plans
        f.truncate(size)
    assert resolve_model(str(p)).exact_weights.total_bytes > 0


def test_file_type_contradicting_the_tensors_is_said(tmp_path):
    """general.file_type 15 (Q4_K_M) on F16 tensors: a note, and the quant is not taken from the file type."""
    p = tmp_path / "liar.gguf"
    write_gguf(p, "llama", TINY_KV, llama_tensors(**TINY, q4km=False), file_type=15)
    r = resolve_model(str(p))
    assert r.quant_id is None
    assert any("file_type says Q4_K_M" in n and "F16" in n for n in r.notes), r.notes
    q = tmp_path / "honest.gguf"
    write_gguf(q, "llama", TINY_KV, llama_tensors(**TINY), file_type=15)
    r = resolve_model(str(q))
    assert r.quant_id == "Q4_K_M" and not any("file_type says" in n for n in r.notes)


def test_a_gguf_with_runtime_mlx_is_converted_or_noted(tmp_path, capsys):
    """-r mlx-lm on a GGUF was answered for llama.cpp without a word: alone it is answered for mlx-lm at the file's
    bit class (the deployment stage's quant rule: Q4_K_M -> mlx-4bit-g64) with a note naming the runtime for the
    file; next to llama.cpp the answer says mlx-lm was skipped."""
    import json

    p = tmp_path / "m.gguf"
    write_gguf(p, "llama", TINY_KV, llama_tensors(**TINY), file_type=15)
    assert main(["--model", str(p), "--ram", "64", "-r", "mlx-lm", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert [(o["runtime"], o["quant"]) for o in r["options"]] == [("mlx-lm", "mlx-4bit-g64")]
    assert any("GGUF file, which mlx-lm cannot load" in n and "--runtime llama.cpp" in n for n in r["notes"])
    assert main(["--model", str(p), "--ram", "64", "-r", "mlx-lm", "-r", "llama.cpp"]) == 0
    assert "--runtime mlx-lm skipped" in capsys.readouterr().out


def test_a_gguf_without_vocab_size_resolves_the_same_config(tmp_path):
    """Rule (issue 34): llama.vocab_size is optional (convert_hf_to_gguf writes it for some models only); without
    it the vocabulary comes from token_embd's shape [n_embd, n_vocab] (ggml order), so the config is the same
    (the reader fell back to the hidden size)."""
    with_key, without = tmp_path / "with.gguf", tmp_path / "without.gguf"
    write_gguf(with_key, "llama", TINY_KV, llama_tensors(**TINY), file_type=15)
    write_gguf(without, "llama", {k: v for k, v in TINY_KV.items() if k != "vocab_size"}, llama_tensors(**TINY),
               file_type=15)
    a, b = resolve_model(str(with_key)).profile.config, resolve_model(str(without)).profile.config
    assert b.vocab_size == 1024 != TINY["h"]
    assert a == b


def test_gguf_title_is_its_general_name_and_its_own_context_is_the_workload(tmp_path, capsys):
    """Issue 35: a GGUF's general.name is its title; a 4K-context GGUF is planned at 1 × 4K, not the default 8K."""
    p = tmp_path / "tiny-4k-Q8_0.gguf"
    kv = {**LLAMA8B_KV, "context_length": 4096, "general.name": "Acme Tiny\nChat 4K"}
    write_gguf(p, "llama", kv, llama_tensors(n_layers=2, h=256, heads=4, kv_heads=2, hd=64, ffn=512, vocab=1024),
               file_type=7)
    r = resolve_model(str(p))
    assert r.profile.name == "Acme Tiny Chat 4K" and r.profile.id == "tiny-4k-q8_0"
    assert main(["--model", str(p), "--ram", "16"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Acme Tiny Chat 4K (tiny-4k-q8_0)")
    assert "Workload: 1 × 4K-token context" in out and "8K-token" not in out and "Fit at 1 × 4K" in out


def test_a_file_that_is_not_a_gguf_is_named_as_such_in_every_command(tmp_path, capsys):
    # `plan --model /etc/passwd` said "this command takes a catalog id; a local file works with `plan --model` and
    # `plan serve`" inside `plan --model` and `plan serve` themselves: the file is named as not a GGUF
    txt = tmp_path / "notes.txt"
    txt.write_text("hello\n")
    for argv in (["--model", str(txt), "--ram", "16"], ["serve", "--model", str(txt), "--chip", "M4 Max"]):
        rc, err = _cli(argv, capsys)
        assert rc == 2 and err.count("\n") == 1 and "not a GGUF file" in err and "works with" not in err


def test_a_gguf_without_the_extension_is_read(tmp_path):
    # Ollama keeps its models as ~/.ollama/models/blobs/sha256-<hex>, GGUF files without the .gguf suffix
    good = tmp_path / "good.gguf"
    total = write_llama8b(good)
    blob = tmp_path / ("sha256-" + "ab" * 32)
    os.link(good, blob)  # the same bytes (the file is sparse: no copy)
    r = resolve_model(str(blob))
    assert r.source == "gguf" and r.exact_weights.total_bytes == total


def test_a_folder_named_like_a_gguf_is_read_as_a_folder(tmp_path, capsys):
    # a folder called x.gguf was answered "no such GGUF file; check the path", and it exists
    d = tmp_path / "Model-Q4_K_M.gguf"
    d.mkdir()
    rc, err = _cli(["--model", str(d), "--ram", "16"], capsys)
    assert rc == 2 and err.count("\n") == 1 and "folder has no config.json or .gguf" in err
    write_llama8b(d / "inside.gguf")
    assert resolve_model(str(d)).source == "gguf"
