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


# --------------------------------------------------------------------------- secrets, amplification, escapes (issue 34)
def _plan_in_process(capsys, *argv):
    from cli.main import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("form", ["userinfo", "query"])
def test_credentials_in_hf_endpoint_are_never_shown(hub, tmp_path, monkeypatch, capsys, form):
    """HF_ENDPOINT=http://user:password@host (or ?token=...) pointing at a closed port: the error names the host but
    neither the password nor the token (planner.format.redact_urls)."""
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there
    url = (f"http://user:s3cretpassword@127.0.0.1:{port}" if form == "userinfo"
           else f"http://127.0.0.1:{port}/?token=s3cretpassword")
    monkeypatch.setenv("HF_ENDPOINT", url)
    monkeypatch.setenv("HF_HUB_DEADLINE", "3")
    code, out, err = _plan_in_process(capsys, "--model", "x/nothere", "--ram", "64")
    assert code == 2 and "127.0.0.1" in err and "s3cretpassword" not in out + err, err


def test_credentials_in_hf_endpoint_are_never_stored(hub, tmp_path, monkeypatch, capsys):
    """The same endpoint reachable: the answer and the planner's hub cache carry the host, not the password."""
    hub.repos["someone/llama"] = llama_repo()
    monkeypatch.setenv("HF_ENDPOINT", hub.url.replace("http://", "http://user:s3cretpassword@"))
    code, out, err = _plan_in_process(capsys, "--model", "someone/llama", "--ram", "64", "--json")
    assert code == 0, err
    assert "s3cretpassword" not in out + err
    stored = "".join(p.read_text() for p in (tmp_path / "cache" / "hub").glob("*.json"))
    assert stored and "s3cretpassword" not in stored and "***@127.0.0.1" in stored


def test_99999_gguf_shards_are_refused_before_any_is_read(hub, capsys):
    """A listing of a split GGUF of 99,999 parts: one line, and no shard is requested (was a request each)."""
    from sources.bounds import MAX_SHARDS

    n = 99_999
    hub.repos["x/shards"] = Repo({f"m-{i:05d}-of-{n:05d}.gguf": b"" for i in range(1, n + 1)})
    code, out, err = _plan_in_process(capsys, "--model", "x/shards", "--ram", "64")
    assert code == 2 and len(err.strip().splitlines()) == 1 and f"{MAX_SHARDS:,}" in err, err
    assert not [r for r in hub.requests if "/resolve/" in r], hub.requests[:5]


def test_safetensors_index_of_20000_shards_is_refused_before_any_is_read(hub, capsys):
    n = 20_000
    names = [f"model-{i:05d}-of-{n:05d}.safetensors" for i in range(1, n + 1)]
    index = json.dumps({"weight_map": {f"t{i}": f for i, f in enumerate(names)}}).encode()
    hub.repos["x/many"] = Repo({"config.json": fixture_config(LLAMA), "model.safetensors.index.json": index,
                                **dict.fromkeys(names, b"")})
    code, out, err = _plan_in_process(capsys, "--model", "x/many", "--ram", "64")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "weight_map" in err, err
    assert not [r for r in hub.requests if ".safetensors" in r and "index" not in r]


def test_overall_deadline_bounds_many_requests(hub, monkeypatch):
    """Every request of one model shares one overall deadline (HF_HUB_TOTAL_DEADLINE), not only one per request:
    four shards each answered 0.6 s late cannot take more than the 1 s given."""
    from sources import hub as hubmod
    from sources.errors import HubError

    hub.repos["someone/slow"] = Repo({"config.json": fixture_config(LLAMA), **shard(llama_8b(), 4)}, sleep=0.6)
    monkeypatch.setenv("HF_HUB_TOTAL_DEADLINE", "1")
    with pytest.raises(HubError, match="overall"):
        hubmod.resolve_hub("someone/slow")


def test_escapes_in_a_gguf_name_never_reach_the_terminal(hub, tmp_path, capsys):
    """general.name with ESC sequences (clear screen, window title) and a carriage return that forges a line: the
    answer shows them as escapes (planner.format.safe_text), on stdout and in the stored name."""
    from gguf_gen import LLAMA8B_KV, llama_tensors, write_gguf

    p = tmp_path / "evil.gguf"
    write_gguf(p, "llama", {**LLAMA8B_KV, "general.name": "Evil\x1b[2J\x1b]0;pwned\x07\rFORGED\u202e"},
               llama_tensors(), file_type=15)
    hub.repos["x/evil"] = Repo({"evil.gguf": p})
    code, out, err = _plan_in_process(capsys, "--model", "x/evil", "--ram", "64")
    assert code == 0, err
    assert not any(c in out + err for c in "\x1b\x07\r\u202e"), repr(out[:300])
    assert "Evil\\x1b[2J" in out
