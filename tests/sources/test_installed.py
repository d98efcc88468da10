"""`plan models --installed` over fixture trees in the real layouts of Ollama, LM Studio, the HF cache, llama.cpp's
cache and a --dir folder, built in tmp_path from tiny real files (GGUFs by gguf-py, safetensors headers + data).

Layouts: sources/installed.py cites the code each one is read from (ollama manifest/paths.go, types/model/name.go,
huggingface_hub file_download.py, llama.cpp common/common.cpp)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

pytest.importorskip("gguf")
from gguf_gen import Q, llama_tensors, nbytes, write_gguf  # noqa: E402
from st_gen import _q, header_bytes  # noqa: E402

from cli.contract import SCHEMA_VERSION  # noqa: E402
from cli.main import main  # noqa: E402
from planner import profiles  # noqa: E402
from sources.installed import scan  # noqa: E402

H, HEADS, KVH, HD, FFN, V, L = 256, 4, 2, 64, 512, 512, 2
KV = {"block_count": L, "context_length": 4096, "embedding_length": H, "feed_forward_length": FFN,
      "attention.head_count": HEADS, "attention.head_count_kv": KVH, "rope.freq_base": 10000.0,
      "attention.layer_norm_rms_epsilon": 1e-5, "vocab_size": V, "rope.dimension_count": HD,
      "general.name": "Tiny Llama"}
CONFIG = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": H, "intermediate_size": FFN,
          "num_hidden_layers": L, "num_attention_heads": HEADS, "num_key_value_heads": KVH, "head_dim": HD,
          "vocab_size": V, "max_position_embeddings": 4096, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
          "tie_word_embeddings": False}


def tiny_gguf(path: Path) -> Path:
    """A 2-layer Llama in the Q4_K_M tensor mix (general.file_type 15 = MOSTLY_Q4_K_M)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_gguf(path, "llama", KV, llama_tensors(L, H, HEADS, KVH, HD, FFN, V), file_type=15)
    return path


def tiny_mlx(folder: Path, bits: int = 4, g: int = 64) -> int:
    """config.json with mlx_lm's quantization block + one safetensors file; returns the safetensors' size."""
    folder.mkdir(parents=True, exist_ok=True)
    t = _q("model.embed_tokens", [V], H, bits, g)
    for i in range(L):
        p = f"model.layers.{i}."
        t += [(p + "input_layernorm.weight", "BF16", [H]), (p + "post_attention_layernorm.weight", "BF16", [H])]
        t += _q(p + "self_attn.q_proj", [HEADS * HD], H, bits, g) + _q(p + "self_attn.k_proj", [KVH * HD], H, bits, g)
        t += _q(p + "self_attn.v_proj", [KVH * HD], H, bits, g) + _q(p + "self_attn.o_proj", [H], HEADS * HD, bits, g)
        t += _q(p + "mlp.gate_proj", [FFN], H, bits, g) + _q(p + "mlp.up_proj", [FFN], H, bits, g)
        t += _q(p + "mlp.down_proj", [H], FFN, bits, g)
    t += [("model.norm.weight", "BF16", [H])] + _q("lm_head", [V], H, bits, g)
    hdr, data = header_bytes(t)
    (folder / "model.safetensors").write_bytes(hdr + bytes(data))
    (folder / "config.json").write_text(json.dumps({**CONFIG, "quantization": {"group_size": g, "bits": bits}}))
    return len(hdr) + data


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An empty home: no default folder of this machine is read."""
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    for k in ("OLLAMA_MODELS", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME", "LLAMA_CACHE"):
        monkeypatch.delenv(k, raising=False)
    return h


def _blob(root: Path, data: bytes) -> dict:
    d = hashlib.sha256(data).hexdigest()
    (root / "blobs").mkdir(parents=True, exist_ok=True)
    (root / "blobs" / f"sha256-{d}").write_bytes(data)
    return {"digest": f"sha256:{d}", "size": len(data)}


def ollama_tree(root: Path, tmp: Path, host="registry.ollama.ai", ns="library", model="tiny", tag="latest") -> int:
    """manifests/<host>/<ns>/<model>/<tag> + blobs/sha256-<digest> (ollama manifest/manifest.go, paths.go)."""
    g = tiny_gguf(tmp / f"src-{model}.gguf").read_bytes()
    layer = {"mediaType": "application/vnd.ollama.image.model", **_blob(root, g)}
    tmpl = {"mediaType": "application/vnd.ollama.image.template", **_blob(root, b"{{ .Prompt }}")}
    cfg = {"mediaType": "application/vnd.docker.container.image.v1+json", **_blob(root, b'{"model_format":"gguf"}')}
    man = {"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json", "config": cfg,
           "layers": [layer, tmpl]}
    p = root / "manifests" / host / ns / model / tag
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(man))
    return layer["size"] + tmpl["size"] + cfg["size"]


def test_ollama_manifests_name_bytes_and_run_command(home, tmp_path, monkeypatch):
    root = tmp_path / "ollama-models"
    monkeypatch.setenv("OLLAMA_MODELS", str(root))
    size = ollama_tree(root, tmp_path)
    size2 = ollama_tree(root, tmp_path, host="hf.co", ns="someorg", model="tiny-gguf", tag="Q4_K_M")
    ms = {m.name: m for m in scan().models}
    # DisplayShortest: the default host and namespace are dropped, any other host is kept
    assert set(ms) == {"tiny:latest", "hf.co/someorg/tiny-gguf:Q4_K_M"}
    m = ms["tiny:latest"]
    assert m.source == "ollama" and m.format == "gguf" and m.quant == "Q4_K_M"
    assert m.bytes == size          # manifest.go Size(): every layer + the config, as `ollama list`
    assert ms["hf.co/someorg/tiny-gguf:Q4_K_M"].bytes == size2
    assert m.run == "ollama run tiny:latest"
    assert Path(m.files[0]).parent == root / "blobs"


def test_ollama_broken_manifest_and_missing_blob_are_one_line_each(home, tmp_path, monkeypatch):
    root = tmp_path / "om"
    monkeypatch.setenv("OLLAMA_MODELS", str(root))
    ollama_tree(root, tmp_path)
    bad = root / "manifests" / "registry.ollama.ai" / "library" / "bad" / "latest"
    bad.parent.mkdir(parents=True)
    bad.write_text("{not json")
    for b in (root / "blobs").iterdir():
        if b.stat().st_size > 1000:
            b.unlink()
    ms = {m.name: m for m in scan().models}
    assert "not valid JSON" in ms["bad:latest"].error
    assert "missing" in ms["tiny:latest"].error and "ollama pull tiny:latest" in ms["tiny:latest"].error


def test_lmstudio_gguf_with_projector_split_and_mlx_folder(home):
    root = home / ".lmstudio" / "models"
    g = tiny_gguf(root / "pub" / "Tiny-GGUF" / "Tiny-Q4_K_M.gguf")
    mm = root / "pub" / "Tiny-GGUF" / "mmproj-Tiny-F16.gguf"
    write_gguf(mm, "clip", {}, [("v.patch_embd.weight", (64, 64), Q.F16)])
    s1 = tiny_gguf(root / "pub" / "Big-GGUF" / "Big-Q4_K_M-00001-of-00002.gguf")
    s2 = tiny_gguf(root / "pub" / "Big-GGUF" / "Big-Q4_K_M-00002-of-00002.gguf")
    st = tiny_mlx(root / "mlx-community" / "Tiny-4bit")
    ms = {m.name: m for m in scan().models}
    assert set(ms) == {"pub/Tiny-GGUF/Tiny-Q4_K_M.gguf", "pub/Big-GGUF/Big-Q4_K_M-00001-of-00002.gguf",
                       "mlx-community/Tiny-4bit"}
    t = ms["pub/Tiny-GGUF/Tiny-Q4_K_M.gguf"]
    assert t.bytes == g.stat().st_size + mm.stat().st_size and t.run == f"llama-server -m {g}"
    big = ms["pub/Big-GGUF/Big-Q4_K_M-00001-of-00002.gguf"]
    assert big.bytes == s1.stat().st_size + s2.stat().st_size and len(big.files) == 2
    x = ms["mlx-community/Tiny-4bit"]
    assert (x.format, x.quant, x.bytes) == ("mlx", "mlx-4bit-g64", st)
    assert x.run == f"mlx_lm.server --model {root / 'mlx-community' / 'Tiny-4bit'}"


def test_hf_cache_reads_the_revision_refs_main_names(home, tmp_path, monkeypatch):
    """models--org--name/snapshots/<rev>/ of symlinks into blobs/ (huggingface_hub file_download.py)."""
    cache = tmp_path / "hf"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    repo = cache / "models--mlx-community--Tiny-8bit"
    src = tmp_path / "src"
    size = tiny_mlx(src, bits=8, g=32)
    (repo / "blobs").mkdir(parents=True)
    for rev, files in (("aaa111", ["config.json", "model.safetensors"]), ("old000", ["config.json"])):
        snap = repo / "snapshots" / rev
        snap.mkdir(parents=True)
        for f in files:
            data = (src / f).read_bytes()
            blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
            blob.write_bytes(data)
            os.symlink(os.path.relpath(blob, snap), snap / f)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("aaa111")
    os.utime(repo / "snapshots" / "old000", (2e9, 2e9))   # newer on disk, but not the one refs/main names
    ms = scan().models
    assert [(m.name, m.source, m.quant, m.bytes) for m in ms] == [
        ("mlx-community/Tiny-8bit", "hf-cache", "mlx-8bit-g32", size)]
    assert "snapshots/aaa111" in ms[0].path


def test_llama_cache_flat_files_and_a_named_dir(home, tmp_path, monkeypatch):
    lc = tmp_path / "llama-cache"
    monkeypatch.setenv("LLAMA_CACHE", str(lc))
    g = tiny_gguf(lc / "org_Tiny-GGUF_Tiny-Q4_K_M.gguf")
    d = tiny_gguf(tmp_path / "mine" / "deep" / "x.gguf")
    ms = {m.name: m for m in scan([str(tmp_path / "mine")]).models}
    assert ms["org_Tiny-GGUF_Tiny-Q4_K_M.gguf"].source == "llama.cpp-cache"
    assert ms["org_Tiny-GGUF_Tiny-Q4_K_M.gguf"].bytes == g.stat().st_size
    assert ms["deep/x.gguf"].source == "folder" and ms["deep/x.gguf"].bytes == d.stat().st_size


def test_cli_json_has_a_verdict_and_speed_for_each_model(home, tmp_path, monkeypatch, capsys):
    """A 2-layer model fits any Mac: verdict 'fits', a decode speed, and memory + headroom = the GPU limit."""
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path / "om"))
    ollama_tree(tmp_path / "om", tmp_path)
    tiny_mlx(home / ".lmstudio" / "models" / "mlx-community" / "Tiny-4bit")
    rc = main(["models", "--installed", "--ram", "16", "--chip", "M4", "--gpu-cores", "10", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert rc == 0 and len(d["models"]) == 2
    assert next(iter(d)) == "schema_version" and d["schema_version"] == SCHEMA_VERSION  # as every --json answer
    for m in d["models"]:
        assert m["verdict"] == "fits" and m["decode_tok_s_per_user"] > 0 and m["error"] is None
        assert m["memory_bytes"] + m["headroom_bytes"] == d["wired_limit_bytes"]
    assert {m["runtime"] for m in d["models"]} == {"ollama", "mlx-lm"}
    # one name per fact, as every command's JSON: the chip profile id and its label, the GPU limit
    assert (d["chip"], d["chip_label"], d["ram_gb"]) == ("m4-10gpu", profiles.resolve_chip("m4-10gpu").label, 16.0)
    assert "gpu_limit_bytes" not in d
    rc = main(["models", "--installed", "--ram", "16", "--chip", "M4", "--gpu-cores", "10"])
    out = capsys.readouterr().out
    assert rc == 0 and "ollama run tiny:latest" in out and "fits" in out


def test_weights_bytes_are_the_file_sizes_not_the_tensor_sum(home, tmp_path):
    """Exact bytes on disk include the GGUF header: above the tensor bytes, equal to os.stat."""
    g = tiny_gguf(tmp_path / "d" / "t.gguf")
    tensors = sum(nbytes(ne, t) for _, ne, t in llama_tensors(L, H, HEADS, KVH, HD, FFN, V))
    (m,) = scan([str(tmp_path / "d")], include_default=False).models
    assert m.bytes == g.stat().st_size > tensors


def test_missing_dir_is_one_line(home, capsys):
    rc = main(["models", "--installed", "--dir", "/nonexistent/models"])
    err = capsys.readouterr().err
    assert rc != 0 and "--dir /nonexistent/models: no such folder" in err and "Traceback" not in err


def test_on_a_stand_in_mac_the_installed_models_are_judged_for_it(tmp_path):
    """No --chip/--ram on a (stand-in) Mac: the first line names it and the verdicts are the typed Mac's."""
    from test_thismac import plan, standins

    env, _ = standins(tmp_path, "m2-pro-19gpu-32gb-macos14")
    home = tmp_path / "home"
    home.mkdir()
    for k in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME", "LLAMA_CACHE"):
        env.pop(k, None)
    env.update(HOME=str(home), OLLAMA_MODELS=str(tmp_path / "om"))
    ollama_tree(tmp_path / "om", tmp_path)
    auto = plan(env, "models", "--installed", "--json")
    assert auto.returncode == 0, auto.stderr
    assert auto.stderr.startswith("This Mac: M2 Pro 19-core GPU, 32 GB")
    typed = plan(env, "models", "--installed", "--json", "--chip", "M2 Pro",
                 "--gpu-cores", "19", "--ram", "32", "--macos", "15")
    a, b = json.loads(auto.stdout), json.loads(typed.stdout)
    assert a["mac"] == b["mac"] == "M2 Pro 19-core GPU, 32 GB"
    assert a["models"] == b["models"] and a["models"][0]["verdict"] == "fits"


def test_the_walk_is_bounded_and_skips_fifos_and_link_loops(home, tmp_path, monkeypatch):
    """A FIFO named *.gguf is never opened (reading it would block), a folder link loop is not followed, and a
    tree larger than the entry budget stops with one note naming the folder."""
    import sources.installed as inst

    d = tmp_path / "d"
    tiny_gguf(d / "a" / "ok.gguf")
    os.mkfifo(d / "a" / "fifo.gguf")
    os.symlink(d, d / "a" / "loop")
    s = scan([str(d)], include_default=False)
    assert [m.name for m in s.models] == ["a/ok.gguf"] and not s.notes
    for i in range(30):
        (d / f"empty{i:02d}").mkdir()
    monkeypatch.setattr(inst, "MAX_ENTRIES", 10)
    s = scan([str(d)], include_default=False)
    assert s.notes == [f"{d}: stopped after 10 entries; name a smaller folder with --dir"]
