"""The real huggingface_hub client against a local FakeHub (HF_ENDPOINT); fixtures are published config.json files
and safetensors headers with the published tensor shapes. No client function is patched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakehub import Repo, fixture_config
from gguf_gen import write_llama8b
from st_gen import gemma3_27b, llama_8b, qwen3_30b_a3b_mlx4, shard

from cli.main import main
from planner import architecture as arch
from planner import profiles
from planner.errors import PlannerError
from sources import resolve_model
from sources.errors import HubError
from sources.hub import resolve_hub

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
QWEN_MLX = "mlx-community/Qwen3-30B-A3B-4bit"
GEMMA = "google/gemma-3-27b-it"
GGUF_REPO = "bartowski/Meta-Llama-3.1-8B-Instruct-GGUF"


def add_llama(hub, name=LLAMA, **kw):
    hub.repos[name] = Repo({"config.json": fixture_config(LLAMA), **shard(llama_8b(), 4)}, **kw)


def test_hf_repo_config_and_safetensors(hub):
    add_llama(hub)
    r = resolve_hub(LLAMA)
    assert r.source == "hub" and r.profile.hf_repo == LLAMA
    assert r.exact_weights.total_bytes == 16_060_522_496  # published model.safetensors.index.json total_size
    assert r.exact_weights.n_params == 8_030_261_248
    assert r.quant_id == "mlx-bf16" and r.runtime_hint is None
    cat = profiles.load_model("llama-3.1-8b").config
    assert r.profile.config.model_dump(exclude={"torch_dtype"}) == cat.model_dump(exclude={"torch_dtype"})


def test_mlx_repo_quantization_block(hub):
    hub.repos[QWEN_MLX] = Repo({"config.json": fixture_config(QWEN_MLX), **shard(qwen3_30b_a3b_mlx4(), 4)})
    r = resolve_hub(QWEN_MLX)
    assert r.quant_id == "mlx-4bit-g64" and r.runtime_hint == "mlx-lm"
    assert any("48 modules override" in n for n in r.notes)
    from st_gen import header_bytes

    _, data = header_bytes(qwen3_30b_a3b_mlx4())
    assert r.exact_weights.total_bytes == data
    assert r.exact_weights.by_group["router"] == 48 * (128 * 512 * 4 + 2 * 128 * 32 * 2)
    assert r.profile.config.num_experts == 128
    # the mlx estimate for the catalog model agrees with the exact bytes within 1 %
    from planner.memory import mlx_weights

    est = mlx_weights(profiles.load_model("qwen3-30b-a3b"), profiles.load_quant("mlx-4bit-g64", "mlx"),
                      profiles.load_runtime("mlx-lm"))
    assert abs(est.total_bytes - data) / data < 0.01


def test_vlm_text_config_and_vision_bytes(hub):
    hub.repos[GEMMA] = Repo({"config.json": fixture_config(GEMMA), **shard(gemma3_27b(), 12)})
    r = resolve_hub(GEMMA)
    c = r.profile.config
    assert c.model_type == "gemma3_text" and c.vocab_size == 262208 and c.tie_word_embeddings
    assert c.layer_types.count("full_attention") == 10
    assert r.vision_bytes == r.exact_weights.vision_bytes > 0
    assert r.profile.vision_params_b == pytest.approx(0.42, abs=0.02)
    # the file also has Gemma's pre/post-FFN norms and q/k norms, which the layout model leaves out
    extra_norms = 62 * (2 * 5376 + 2 * 128)
    assert r.exact_weights.n_params == arch.n_params(profiles.load_model("gemma-3-27b").config) + extra_norms


def test_gguf_only_repo_range_read(hub, tmp_path):
    p = tmp_path / "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf"
    total = write_llama8b(p)  # sparse: 4.9 GB apparent, header read by HTTP range
    hub.repos[GGUF_REPO] = Repo({"Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf": p,
                                 "Meta-Llama-3.1-8B-Instruct-Q8_0.gguf": p, "README.md": b"hi"})
    with pytest.raises(PlannerError, match="pick one with --quant"):
        resolve_hub(GGUF_REPO)
    r = resolve_hub(GGUF_REPO, quant="Q4_K_M")
    assert r.exact_weights.total_bytes == total and r.quant_id == "Q4_K_M" and r.runtime_hint == "llama.cpp"
    assert any("Range" in q or "resolve" in q for q in hub.requests)
    r2 = resolve_hub(GGUF_REPO, file="Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf")
    assert r2.exact_weights == r.exact_weights


def test_dispatch_org_name_not_in_catalog_goes_to_hub(hub, capsys):
    add_llama(hub, name="someone/my-llama-finetune")
    r = resolve_model("someone/my-llama-finetune")
    assert r.source == "hub"
    rc = main(["--model", "someone/my-llama-finetune", "--ram", "32", "--json"])
    assert rc == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["model"]["params"] == 8_030_261_248


def test_cache_then_offline(hub, monkeypatch):
    add_llama(hub)
    resolve_hub(LLAMA)
    n = len(hub.requests)
    resolve_hub(LLAMA)
    assert len(hub.requests) == n  # answered from the disk cache
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert resolve_hub(LLAMA).exact_weights.total_bytes == 16_060_522_496
    with pytest.raises(HubError, match="offline .* catalog id"):
        resolve_hub("someone/never-seen")
    assert len(hub.requests) == n


def _one_line_exit(argv, capsys) -> str:
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_404(hub, capsys):
    with pytest.raises(HubError, match="no such repo .* check the id"):
        resolve_hub("nobody/nothing")
    assert "no such repo" in _one_line_exit(["--model", "nobody/nothing", "--ram", "16"], capsys)


def test_gated_401(hub, capsys):
    add_llama(hub, name="gated-org/Secret-Model", gated=True)
    with pytest.raises(HubError, match="gated.*HF_TOKEN"):
        resolve_hub("gated-org/Secret-Model")
    assert "HF_TOKEN" in _one_line_exit(["--model", "gated-org/Secret-Model", "--ram", "16"], capsys)


def test_token_is_sent(hub, monkeypatch):
    add_llama(hub, name="gated-org/Secret-Model", gated=True)
    monkeypatch.setenv("HF_TOKEN", "hf_test_token")
    monkeypatch.delenv("HF_HUB_DISABLE_IMPLICIT_TOKEN")
    assert resolve_hub("gated-org/Secret-Model").exact_weights is not None


def test_timeout(hub, monkeypatch, capsys):
    add_llama(hub, name="slow/repo", sleep=2.0)
    monkeypatch.setenv("HF_HUB_ETAG_TIMEOUT", "0.3")
    monkeypatch.setenv("HF_HUB_DOWNLOAD_TIMEOUT", "0.3")
    with pytest.raises(HubError, match="no network: .* catalog id .* local path"):
        resolve_hub("slow/repo")
    assert "no network" in _one_line_exit(["--model", "slow/repo", "--ram", "16"], capsys)


def test_no_server(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens on the discard port
    monkeypatch.setenv("MAC_LLM_PLANNER_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    assert "no network" in _one_line_exit(["--model", "org/unreachable", "--ram", "16"], capsys)


def test_missing_head_counts_in_hub_config(hub, capsys):
    cfg = json.loads(fixture_config(LLAMA))
    del cfg["num_attention_heads"]
    hub.repos["x/broken"] = Repo({"config.json": json.dumps(cfg).encode()})
    assert "missing num_attention_heads" in _one_line_exit(["--model", "x/broken", "--ram", "16"], capsys)
    hub.repos["x/malformed"] = Repo({"config.json": b"{not json"})
    assert "not valid JSON" in _one_line_exit(["--model", "x/malformed", "--ram", "16"], capsys)


def test_missing_hub_package_names_the_install_command(tmp_path):
    import os
    import subprocess
    import sys

    code = ("import sys; sys.modules['huggingface_hub'] = None\nfrom cli.main import main\n"
            "sys.exit(main(['--model', 'someorg/Some-Finetune-8B', '--ram', '16']))")
    env = {**os.environ, "HF_HUB_OFFLINE": "0", "MAC_LLM_PLANNER_CACHE_DIR": str(tmp_path)}
    r = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2], capture_output=True,
                       text=True, timeout=120, env=env)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert f"{sys.executable} -m pip install 'huggingface-hub>=0.24'" in r.stderr
