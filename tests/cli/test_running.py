"""`plan running` against recorded Ollama and LM Studio replies served from 127.0.0.1 by a tiny http.server.

The replies follow the shapes of the projects' own documentation and code: Ollama docs/api.md `GET /api/ps` and
api/types.go ProcessModelResponse / ShowResponse (ollama @ fb30760996871fa9460115c753afd2c60d4ab0f7); LM Studio
1_developer/2_rest/list.md (`GET /api/v1/models`) and endpoints.md (`GET /api/v0/models`) of lmstudio-ai/docs.
The real llama-server is read in tests/calibration/test_running_llama_server.py."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from cli.contract import SCHEMA_VERSION
from cli.main import main
from sources.running import probe

GiB = 2**30
OLLAMA_PS = {"models": [{
    "name": "mistral:latest", "model": "mistral:latest", "size": 5137025024,
    "digest": "2ae6f6dd7a3dd734790bbbf58b8909a606e0e7e97e94b7604e0aa7ae4490e6d8",
    "details": {"parent_model": "", "format": "gguf", "family": "llama", "families": ["llama"],
                "parameter_size": "7.2B", "quantization_level": "Q4_0"},
    "expires_at": "2024-06-04T14:38:31.83753-07:00", "size_vram": 5137025024, "context_length": 4096}]}
OLLAMA_SHOW = {"parameters": "stop \"[INST]\"", "details": OLLAMA_PS["models"][0]["details"],
               "model_info": {"general.architecture": "llama", "general.parameter_count": 7248023552,
                              "llama.context_length": 32768}}
LMS_V1 = {"models": [
    {"type": "llm", "publisher": "lmstudio-community", "key": "gemma-3-270m-it-qat",
     "display_name": "Gemma 3 270m Instruct Qat", "architecture": "gemma3",
     "quantization": {"name": "Q4_0", "bits_per_weight": 4}, "size_bytes": 241410208, "params_string": "270M",
     "loaded_instances": [{"id": "gemma-3-270m-it-qat", "config": {"context_length": 4096}}],
     "max_context_length": 32768, "format": "gguf", "capabilities": {"vision": False, "trained_for_tool_use": False},
     "description": None},
    {"type": "embedding", "publisher": "gaianet", "key": "text-embedding-nomic-embed-text-v1.5-embedding",
     "display_name": "Nomic Embed Text v1.5", "quantization": {"name": "F16", "bits_per_weight": 16},
     "size_bytes": 274290560, "params_string": None, "loaded_instances": [], "max_context_length": 2048,
     "format": "gguf"}]}
LMS_V0 = {"object": "list", "data": [
    {"id": "qwen2-vl-7b-instruct", "object": "model", "type": "vlm", "publisher": "mlx-community",
     "arch": "qwen2_vl", "compatibility_type": "mlx", "quantization": "4bit", "state": "loaded",
     "max_context_length": 32768},
    {"id": "meta-llama-3.1-8b-instruct", "object": "model", "type": "llm", "publisher": "lmstudio-community",
     "arch": "llama", "compatibility_type": "gguf", "quantization": "Q4_K_M", "state": "not-loaded",
     "max_context_length": 131072}]}


def serve(routes: dict[str, object]):
    """A 127.0.0.1 server answering GET/POST path -> JSON (404 elsewhere); returns (server, port)."""
    class H(BaseHTTPRequestHandler):
        def _answer(self):
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n) if n else b""
            key = self.path if self.command == "GET" else f"POST {self.path} {json.loads(body).get('model')}"
            if key not in routes:
                self.send_error(404)
                return
            data = json.dumps(routes[key]).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _answer

        def log_message(self, *a):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, srv.server_address[1]


@pytest.fixture
def servers():
    made = []

    def make(routes):
        srv, port = serve(routes)
        made.append(srv)
        return port

    yield make
    for s in made:
        s.shutdown()
        s.server_close()


def test_ollama_ps_and_show(servers):
    port = servers({"/api/ps": OLLAMA_PS, "POST /api/show mistral:latest": OLLAMA_SHOW})
    p = probe({"ollama": [port]})
    (m,) = p.loaded
    assert (m.model, m.quant, m.context, m.memory_bytes, m.params) == (
        "mistral:latest", "Q4_0", 4096, 5137025024, 7248023552)
    assert p.answered == [f"ollama http://127.0.0.1:{port}"]


def test_lmstudio_v1_lists_only_loaded_instances_and_v0_falls_back(servers):
    v1 = servers({"/api/v1/models": LMS_V1})
    v0 = servers({"/api/v0/models": LMS_V0})
    p = probe({"lmstudio": [v1, v0]})
    assert [(m.model, m.format, m.quant, m.context, m.memory_bytes) for m in p.loaded] == [
        ("gemma-3-270m-it-qat", "gguf", "Q4_0", 4096, 241410208),
        ("qwen2-vl-7b-instruct", "mlx", "4bit", 32768, None)]


def test_headroom_is_the_gpu_limit_minus_what_is_loaded(servers, capsys):
    """64 GB on macOS 15: the default limit is 75 % of RAM (profiles/macos/macos-15.yaml, above 32 GB) = 48 GiB;
    loaded: Ollama's size_vram 5,137,025,024 + LM Studio's 241,410,208 bytes."""
    o = servers({"/api/ps": OLLAMA_PS, "POST /api/show mistral:latest": OLLAMA_SHOW})
    lm = servers({"/api/v1/models": LMS_V1})
    rc = main(["running", "--ram", "64", "--macos", "15", "--ollama-port", str(o), "--lmstudio-port", str(lm), "--json"])
    d = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert d["in_use_bytes"] == 5137025024 + 241410208
    assert d["headroom_bytes"] == d["wired_limit_bytes"] - d["in_use_bytes"]
    assert d["wired_limit_bytes"] == 48 * GiB
    assert "gpu_limit_bytes" not in d and d["ram_gb"] == 64.0   # one name per fact, as every command's JSON
    assert next(iter(d)) == "schema_version" and d["schema_version"] == SCHEMA_VERSION  # as every --json answer


def test_nothing_answering_is_an_answer_not_an_error(servers, capsys):
    port = servers({})            # answers 404 to everything: no server of those kinds
    rc = main(["running", "--llama-port", str(port), "--ollama-port", str(port), "--lmstudio-port", str(port)])
    out = capsys.readouterr().out
    assert rc == 0 and "No model server answered" in out


def test_bad_port_is_one_line(capsys):
    rc = main(["running", "--ollama-port", "70000"])
    err = capsys.readouterr().err
    assert rc != 0 and "--ollama-port 70000" in err and "Traceback" not in err
