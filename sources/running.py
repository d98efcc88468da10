"""What is running: the model servers on this machine (127.0.0.1 only, short timeouts, bounded replies).

Replies read, with where their shape is defined:

- **llama-server** (llama.cpp tools/server/server-context.cpp, the copy vendored in llama_cpp_python 0.3.36):
  ``GET /props`` -> ``default_generation_settings.n_ctx`` (the context of one slot, ``n_ctx_slot()``),
  ``total_slots`` (``-np``), ``model_path``, ``model_alias``, ``model_ftype`` (``get_res_props``);
  ``GET /slots`` -> one object per slot with ``id``, ``n_ctx``, ``is_processing`` (``server_slot::to_json``; 501
  unless ``--slots``, which is on by default); ``GET /v1/models`` -> ``data[0].meta`` with ``size`` (weight bytes),
  ``n_params``, ``n_ctx``, ``n_ctx_train`` (``get_res_model_info``); ``GET /metrics`` -> Prometheus text of
  ``llamacpp:<name> <value>`` lines (tools/server/server-task.cpp; 501 unless ``--metrics``). The KV cache type is
  in none of them: llama-server's default is f16 (common/common.h ``cache_type_k = GGML_TYPE_F16``).
- **Ollama** (github.com/ollama/ollama @ fb30760996871fa9460115c753afd2c60d4ab0f7, api/types.go and docs/api.md):
  ``GET /api/ps`` -> ``{"models": [{name, model, size, digest, details: {format, family, parameter_size,
  quantization_level}, expires_at, size_vram, context_length}]}`` (``ProcessModelResponse``); ``POST /api/show``
  ``{"model": name}`` -> ``{parameters, details, model_info: {"general.parameter_count", ...}}`` (``ShowResponse``).
- **LM Studio** (lmstudio-ai/docs 1_developer/2_rest/list.md and endpoints.md): ``GET /api/v1/models`` ->
  ``{"models": [{key, format, quantization: {name, bits_per_weight}, size_bytes, max_context_length,
  loaded_instances: [{id, config: {context_length, flash_attention, offload_kv_cache_to_gpu}}]}]}`` (LM Studio
  0.4); older ``GET /api/v0/models`` -> ``{"data": [{id, compatibility_type, quantization, state, max_context_length}]}``.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

HOST = "127.0.0.1"
TIMEOUT_S = 1.5
MAX_REPLY_BYTES = 8 * 2**20     # /props carries the chat template (~10 KB); /api/v1/models lists every model
DEFAULT_PORTS = {"llama-server": 8080, "ollama": 11434, "lmstudio": 1234}   # each project's default port
Server = Literal["llama-server", "ollama", "lmstudio"]


class Loaded(BaseModel):
    """One model loaded in one server."""

    model_config = ConfigDict(frozen=True)
    server: Server
    url: str
    model: str
    path: str | None = Field(None, description="The model file (llama-server model_path)")
    format: str | None = None
    quant: str | None = None
    context: int | None = Field(None, description="Context of one sequence / slot [tokens]")
    slots: int | None = Field(None, description="Parallel sequences (llama-server -np)")
    busy_slots: int | None = None
    kv_type: str | None = Field(None, description="KV cache type when the server says it, else None")
    memory_bytes: int | None = Field(None, description="Memory the server reports for it [bytes]")
    memory_basis: str = Field("", description="What memory_bytes counts (size_vram, weights only, ...)")
    params: int | None = None
    metrics: dict[str, float] = Field(default_factory=dict)


class Probe(BaseModel):
    model_config = ConfigDict(frozen=True)
    loaded: list[Loaded]
    answered: list[str] = Field(description="Servers that answered: 'llama-server http://127.0.0.1:8080'")
    silent: list[str] = Field(description="Servers tried that did not answer")


class NoReply(Exception):
    pass


def _opener():
    return urllib.request.build_opener(urllib.request.ProxyHandler({}))   # never through a proxy


def get(port: int, path: str, body: dict | None = None, timeout: float = TIMEOUT_S) -> bytes:
    """GET (or POST ``body`` as JSON) http://127.0.0.1:port/path; at most MAX_REPLY_BYTES; NoReply on any failure."""
    if not isinstance(port, int) or not 0 < port < 65536:
        raise ValueError(f"port {port!r}")
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"http://{HOST}:{port}{path}", data=data,
                                 headers={"Content-Type": "application/json"} if data else {})
    try:
        with _opener().open(req, timeout=timeout) as r:
            raw = r.read(MAX_REPLY_BYTES + 1)
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise NoReply(str(getattr(e, "reason", e))) from None
    if len(raw) > MAX_REPLY_BYTES:
        raise NoReply(f"reply over {MAX_REPLY_BYTES // 2**20} MiB")
    return raw


def get_json(port: int, path: str, body: dict | None = None):
    try:
        return json.loads(get(port, path, body))
    except (ValueError, RecursionError):
        raise NoReply(f"{path}: not JSON") from None


def _int(v) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


# --------------------------------------------------------------------------- llama-server
METRIC_RE = re.compile(r"^llamacpp:([a-z_]+)\s+([-+0-9.eE]+|nan|inf)\s*$", re.M)


def read_llama_server(port: int) -> list[Loaded]:
    props = get_json(port, "/props")
    if not isinstance(props, dict) or "total_slots" not in props:
        raise NoReply("/props has no total_slots: not a llama-server")
    gen = props.get("default_generation_settings") or {}
    ctx = _int(gen.get("n_ctx")) if isinstance(gen, dict) else None
    slots = _int(props.get("total_slots"))
    busy = None
    try:
        sl = get_json(port, "/slots")
        if isinstance(sl, list):
            busy = sum(1 for s in sl if isinstance(s, dict) and s.get("is_processing"))
            ctx = ctx or next((_int(s.get("n_ctx")) for s in sl if isinstance(s, dict)), None)
    except NoReply:
        pass
    size = params = None
    try:
        meta = (get_json(port, "/v1/models").get("data") or [{}])[0].get("meta") or {}
        size, params = _int(meta.get("size")), _int(meta.get("n_params"))
    except (NoReply, AttributeError, IndexError, TypeError):
        pass
    metrics = {}
    try:
        text = get(port, "/metrics").decode("utf-8", "replace")
        metrics = {k: float(v) for k, v in METRIC_RE.findall(text)}
    except NoReply:
        pass
    path = props.get("model_path") if isinstance(props.get("model_path"), str) else None
    name = props.get("model_alias") if isinstance(props.get("model_alias"), str) else None
    if name == path:   # without --alias, llama-server names the model by its path: show the file name
        name = None
    return [Loaded(server="llama-server", url=f"http://{HOST}:{port}", model=name or (path or "?").rsplit("/", 1)[-1],
                   path=path, format="gguf", quant=props.get("model_ftype") if isinstance(props.get("model_ftype"),
                                                                                           str) else None,
                   context=ctx, slots=slots, busy_slots=busy, memory_bytes=size,
                   memory_basis="weights (/v1/models meta.size); KV and compute buffers not reported",
                   params=params, metrics=metrics)]


# --------------------------------------------------------------------------- Ollama
def read_ollama(port: int) -> list[Loaded]:
    ps = get_json(port, "/api/ps")
    if not isinstance(ps, dict) or not isinstance(ps.get("models"), list):
        raise NoReply("/api/ps has no models list: not Ollama")
    out = []
    for m in ps["models"]:
        if not isinstance(m, dict):
            continue
        name = str(m.get("name") or m.get("model") or "?")
        d = m.get("details") if isinstance(m.get("details"), dict) else {}
        params = None
        try:
            show = get_json(port, "/api/show", {"model": name})
            info = show.get("model_info") if isinstance(show, dict) else None
            params = _int((info or {}).get("general.parameter_count"))
        except (NoReply, AttributeError):
            pass
        vram, size = _int(m.get("size_vram")), _int(m.get("size"))
        out.append(Loaded(server="ollama", url=f"http://{HOST}:{port}", model=name, format=d.get("format"),
                          quant=d.get("quantization_level"), context=_int(m.get("context_length")), slots=None,
                          memory_bytes=vram if vram is not None else size,
                          memory_basis="size_vram (/api/ps): weights + KV + buffers on the GPU", params=params))
    return out


# --------------------------------------------------------------------------- LM Studio
def read_lmstudio(port: int) -> list[Loaded]:
    url = f"http://{HOST}:{port}"
    try:
        v1 = get_json(port, "/api/v1/models")
    except NoReply:
        v1 = None
    if isinstance(v1, dict) and isinstance(v1.get("models"), list):
        out = []
        for m in v1["models"]:
            if not isinstance(m, dict):
                continue
            q = m.get("quantization") if isinstance(m.get("quantization"), dict) else {}
            for inst in m.get("loaded_instances") or []:
                cfg = inst.get("config") if isinstance(inst, dict) and isinstance(inst.get("config"), dict) else {}
                out.append(Loaded(server="lmstudio", url=url, model=str(inst.get("id") or m.get("key")),
                                  format=m.get("format"), quant=q.get("name"),
                                  context=_int(cfg.get("context_length")), memory_bytes=_int(m.get("size_bytes")),
                                  memory_basis="weights (size_bytes of /api/v1/models); KV not reported"))
        return out
    v0 = get_json(port, "/api/v0/models")
    if not isinstance(v0, dict) or not isinstance(v0.get("data"), list):
        raise NoReply("/api/v0/models has no data list: not LM Studio")
    return [Loaded(server="lmstudio", url=url, model=str(m.get("id")), format=m.get("compatibility_type"),
                   quant=m.get("quantization"),
                   context=_int(m.get("loaded_context_length")) or _int(m.get("max_context_length")),
                   memory_basis="not reported by /api/v0 (LM Studio before 0.4)")
            for m in v0["data"] if isinstance(m, dict) and m.get("state") == "loaded"]


READERS = {"llama-server": read_llama_server, "ollama": read_ollama, "lmstudio": read_lmstudio}


def probe(ports: dict[str, list[int]] | None = None) -> Probe:
    """Ask each server kind on each of its ports (default: each project's default port)."""
    ports = ports or {k: [v] for k, v in DEFAULT_PORTS.items()}
    loaded, answered, silent = [], [], []
    for kind, ps in ports.items():
        for p in ps:
            label = f"{kind} http://{HOST}:{p}"
            try:
                loaded += READERS[kind](p)
                answered.append(label)
            except NoReply:
                silent.append(label)
    return Probe(loaded=loaded, answered=answered, silent=silent)
