"""A misbehaving hub (tests/sources/fakehub.py on 127.0.0.1): ignores Range, never stops sending, drips one byte
at a time, serves a 200 MB config.json. The real client runs in a child capped at a normal run's address space
+ 200 MB; each answer is one line, exit 2 (or the right answer), and nothing is written to the user's HF cache."""

from __future__ import annotations

import json

import pytest
from bounded import assert_one_line, run_bounded
from fakehub import Repo, fixture_config
from gguf_gen import write_llama8b
from st_gen import llama_8b, shard

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
GGUF = "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf"


@pytest.fixture
def child_env(hub, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_DEADLINE", "3")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    return tmp_path / "hf-home"


def plan(repo: str, *extra: str):
    return run_bounded(["--model", repo, "--ram", "64", *extra])


def llama_repo(**misbehave) -> Repo:
    return Repo({"config.json": fixture_config(LLAMA), **shard(llama_8b(), 4)}, misbehave=misbehave)


@pytest.mark.parametrize("where", ["api", "config.json", "model.safetensors.index.json",
                                   "model-00001-of-00004.safetensors"])
def test_endless_body(hub, child_env, where):
    hub.repos["x/endless"] = llama_repo(**{where: "endless"})
    line = assert_one_line(plan("x/endless"), "x/endless")
    assert "over" in line and "MiB" in line or "did not finish" in line, line


@pytest.mark.parametrize("where", ["api", "config.json"])
def test_one_byte_at_a_time_hits_the_deadline(hub, child_env, where):
    hub.repos["x/drip"] = llama_repo(**{where: "drip"})
    assert_one_line(plan("x/drip"), "x/drip", "did not finish answering within 3 s")


def test_200_mb_config_json(hub, child_env):
    hub.repos["x/huge"] = llama_repo(**{"config.json": "huge"})
    assert_one_line(plan("x/huge"), "x/huge/config.json", "over 4 MiB")


def test_server_ignoring_range_on_a_gguf(hub, child_env, tmp_path):
    p = tmp_path / GGUF
    write_llama8b(p)  # 4.9 GB apparent (sparse): the whole body if Range were ignored
    hub.repos["x/gguf"] = Repo({GGUF: p}, misbehave={GGUF: "ignore_range"})
    r = plan("x/gguf", "--json")
    assert r.rc == 0, r.err[-500:]
    assert json.loads(r.out)["model"]["params"] == 8_030_261_248


def test_nothing_written_to_the_user_hf_cache(hub, child_env, tmp_path):
    hub.repos["someone/llama"] = llama_repo()
    r = plan("someone/llama")
    assert r.rc == 0, r.err[-500:]
    written = [p for d in (child_env, tmp_path / "hf") for p in d.rglob("*") if p.is_file()]  # HF_HOME, HF_HUB_CACHE
    assert written == []
    assert list((tmp_path / "cache" / "hub").glob("*.json"))  # the planner's own cache has the answer
    assert not list((tmp_path / "cache" / "hub").glob(".tmp-*"))


def test_failed_cache_write_leaves_no_temp_file(hub, tmp_path, monkeypatch):
    import os

    from sources import hub as hubmod

    hub.repos[LLAMA] = llama_repo()
    real = os.fdopen

    def full_disk(fd, *a, **k):
        f = real(fd, *a, **k)
        f.write = lambda _s: (_ for _ in ()).throw(OSError(28, "No space left on device"))
        return f

    monkeypatch.setattr(hubmod.os, "fdopen", full_disk)
    assert hubmod.resolve_hub(LLAMA).exact_weights is not None  # the answer still comes back
    assert list((tmp_path / "cache" / "hub").glob("*")) == []


def test_cache_keeps_the_newest_entries(tmp_path):
    from sources.hub import _cache_prune

    for i in range(10):
        p = tmp_path / f"e{i}.json"
        p.write_text("{}")
        import os

        os.utime(p, (1000 + i, 1000 + i))
    _cache_prune(tmp_path, keep=3)
    assert sorted(p.name for p in tmp_path.glob("*.json")) == ["e7.json", "e8.json", "e9.json"]
