"""`plan running` reads back a real llama-server started by the test (the one scripts/bootstrap.sh full builds):
its model file, slot context and slots from /props, /slots and /v1/models, on 127.0.0.1."""

from __future__ import annotations

import json
import shutil

import pytest

pytestmark = pytest.mark.requires_llama_cpp


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not shutil.which("llama-server"):
        pytest.skip("llama-server not built (scripts/bootstrap.sh full)")
    pytest.importorskip("httpx")
    pytest.importorskip("tokenizers")
    from calibration.serve_check import LlamaServer
    from calibration.tinymodels import build_gguf, build_hf_llama

    root = tmp_path_factory.mktemp("running")
    gguf = build_gguf(build_hf_llama(root / "hf"), root / "tiny-Q8_0.gguf", "Q8_0")
    # -c is split over the -np slots (server-context.cpp): 2 slots x 512 tokens
    with LlamaServer(gguf, slots=2, slot_context=512, threads=1, pin=False) as srv:
        yield srv, gguf


def test_model_context_slots_read_back(server):
    from sources.running import probe

    srv, gguf = server
    p = probe({"llama-server": [srv.port]})
    (m,) = p.loaded
    assert m.path == str(gguf) and m.context == 512 and m.slots == 2 and m.busy_slots == 0
    assert m.memory_bytes and m.memory_bytes < gguf.stat().st_size   # /v1/models meta.size: the tensors only


def test_headroom_and_more_users(server, capsys):
    """The planner's memory for that file at 2 slots x 512 tokens (KV f16); headroom = limit - it; one more
    slot costs its KV (2 x layers x kv_heads x head_dim x 512 x 2 bytes for this llama, hand-derived below)."""
    from cli.main import main
    from sources.local import read_gguf

    srv, gguf = server
    rc = main(["running", "--ram", "16", "--llama-port", str(srv.port), "--json"])
    d = json.loads(capsys.readouterr().out)
    assert rc == 0
    (row,) = d["rows"]
    assert d["headroom_bytes"] == d["wired_limit_bytes"] - row["memory_bytes"] > 0
    kv, _ = read_gguf(gguf)
    arch = kv["general.architecture"]
    n_layer, heads_kv = kv[f"{arch}.block_count"], kv[f"{arch}.attention.head_count_kv"]
    head_dim = kv[f"{arch}.embedding_length"] // kv[f"{arch}.attention.head_count"]
    assert row["kv_type"] == "f16"
    assert row["kv_per_user_bytes"] == 2 * n_layer * heads_kv * head_dim * 512 * 2   # K and V, f16
