"""Hugging Face Hub source: config.json, safetensors headers, GGUF headers by HTTP range read; answers cached on disk.

Uses the real huggingface_hub client: its HTTP session (huggingface_hub.utils.get_session), headers
(build_hf_headers: token, user agent), URLs (hf_hub_url), error mapping (hf_raise_for_status), ModelInfo and
get_hf_file_metadata. Every body is read through ``_capped_get``: at most a byte cap (sources/bounds.py) and within an
overall deadline per call (the client's own timeouts are per read, so a server that drips one byte a second, ignores
Range or never stops sending would otherwise hold the CLI forever). config.json and headers are read into memory,
never into the user's huggingface cache; the resolved answer goes to the planner's own capped cache.
HF_ENDPOINT, HF_TOKEN and HF_HUB_OFFLINE are read at call time. Errors become one-line HubError / SourceError.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
import time
from pathlib import Path

from planner.errors import PlannerError

from .bounds import (
    MAX_CONFIG_BYTES,
    MAX_GGUF_HEADER_BYTES,
    MAX_HUB_JSON_BYTES,
    MAX_ST_HEADER_BYTES,
    check_shards,
    hub_deadline,
    hub_total_deadline,
    loads_json,
)
from .errors import HubError, SourceError, missing_part

CACHE_TTL_S = 24 * 3600
HEADER_FIRST = 2 * 2**20      # first ranged read [bytes]; grows x4 until the header parses
HEADER_MAX = MAX_GGUF_HEADER_BYTES  # give up beyond this (a GGUF header is a few MiB: tokenizer strings)
ST_FIRST = 2**16              # first ranged read of a safetensors file (8-byte length + JSON header)
CACHE_VERSION = 2
CACHE_MAX_ENTRIES = 256       # the planner's hub cache keeps the newest answers (each a few KB)
ERROR_BODY_MAX = 2**16        # an error answer is read up to this for its message
_OVERALL: float | None = None  # monotonic deadline of the model being resolved (resolve_hub sets it)


def _truthy(v: str | None) -> bool:
    return (v or "").strip().lower() in ("1", "on", "yes", "true")


def offline() -> bool:
    return _truthy(os.environ.get("HF_HUB_OFFLINE")) or _truthy(os.environ.get("TRANSFORMERS_OFFLINE"))


def endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def shown_endpoint() -> str:
    """HF_ENDPOINT as it may be shown or stored: without user:password@ or ?token= (planner.format.redact_urls)."""
    from planner.format import redact_urls

    return redact_urls(endpoint())


def _timeout(name: str, default: float = 10.0) -> float:
    try:
        return float(os.environ.get(name) or default)
    except ValueError:
        return default


def token() -> str | None:
    """HF_TOKEN read at call time (None: the client's saved login, if any)."""
    return os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN") or None


def cache_dir() -> Path:
    env = os.environ.get("MAC_LLM_PLANNER_CACHE_DIR")
    if env:
        return Path(env) / "hub"
    from planner.dirs import user_app_dir

    return user_app_dir("cache") / "hub"


def _cache_path(repo: str, file: str | None, quant: str | None) -> Path:
    key = json.dumps([CACHE_VERSION, endpoint(), repo, file, (quant or "").upper() or None])
    safe = re.sub(r"[^\w.-]+", "--", repo)
    return cache_dir() / f"{safe}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"


def _cache_read(path: Path, max_age: float | None):
    from . import ResolvedModel

    try:
        if max_age is not None and time.time() - path.stat().st_mtime > max_age:
            return None
        return ResolvedModel.model_validate_json(path.read_text(encoding="utf-8"))
    except Exception:  # noqa: BLE001 - a missing or damaged cache entry is just a miss
        return None


def _cache_write(path: Path, resolved) -> None:
    """Atomic: write a temp file in the same folder, then rename over the entry; a failed write leaves nothing
    behind. The folder keeps the newest CACHE_MAX_ENTRIES answers."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(resolved.model_dump_json())
        os.replace(tmp, path)
        tmp = None
        _cache_prune(path.parent)
    except OSError:
        pass  # a read-only or full cache only costs a refetch
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _cache_prune(folder: Path, keep: int = CACHE_MAX_ENTRIES) -> None:
    entries = []
    for p in folder.glob("*.json"):
        try:
            entries.append((p.lstat().st_mtime, p))
        except OSError:
            continue
    for _, p in sorted(entries, reverse=True)[keep:]:
        with contextlib.suppress(OSError):
            p.unlink()


def resolve_hub(repo: str, file: str | None = None, quant: str | None = None):
    path = _cache_path(repo, file, quant)
    if offline():
        hit = _cache_read(path, None)
        if hit is None:
            raise HubError(f"offline (HF_HUB_OFFLINE) and {repo} is not in the cache: use a catalog id "
                           "(plan models) or a local .gguf / MLX folder path")
        return hit
    hit = _cache_read(path, CACHE_TTL_S)
    if hit is not None:
        return hit
    global _OVERALL
    _OVERALL = time.monotonic() + hub_total_deadline()  # every request of this model within one deadline
    try:
        resolved = _fetch(repo, file, quant)
    except PlannerError:
        raise
    except ImportError as e:
        raise missing_part(e, f"--model {repo} (a Hugging Face repo)") from None
    except Exception as e:  # noqa: BLE001 - map every client/network failure to one line
        if time.monotonic() >= _OVERALL - 0.1:  # a timeout cut short by the overall deadline
            raise _late(repo, -hub_total_deadline()) from None
        raise _map_error(e, repo) from None
    finally:
        _OVERALL = None
    _cache_write(path, resolved)
    return resolved


def _map_error(e: Exception, repo: str) -> PlannerError:
    import httpx2
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    if isinstance(e, GatedRepoError):
        return HubError(f"{repo} is gated: accept its license on huggingface.co and set HF_TOKEN")
    if isinstance(e, RepositoryNotFoundError):
        return HubError(f"no such repo {repo} on the Hugging Face Hub (or it is private): check the id, "
                        "or use a catalog id (plan models)")
    if isinstance(e, RevisionNotFoundError):
        return HubError(f"{repo}: revision not found; check the id")
    if isinstance(e, (httpx2.TimeoutException, httpx2.TransportError, OfflineModeIsEnabled, LocalEntryNotFoundError,
                      ConnectionError, TimeoutError)):
        return HubError(f"no network: cannot reach {shown_endpoint()} for {repo} ({e.__class__.__name__}); use a catalog id "
                        "(plan models) or a local path")
    if isinstance(e, HfHubHTTPError):
        status = getattr(getattr(e, "response", None), "status_code", None)
        if status in (401, 403):
            return HubError(f"{repo} needs authorisation ({status}): it is gated or private, set HF_TOKEN")
        return HubError(f"{repo}: the Hub answered {status or 'an error'}; try again later or use a catalog id")
    from planner.format import redact_urls

    first = redact_urls((str(e).splitlines() or [""])[0])[:100]
    return HubError(f"{repo}: cannot read the model from the Hub ({e.__class__.__name__}: {first})")


# --------------------------------------------------------------------------- bounded HTTP
def _capped_get(url: str, src: str, cap: int, *, rng: tuple[int, int] | None = None, params: dict | None = None):
    """GET through the hub client's session: at most ``cap`` body bytes (a ranged read keeps only the bytes asked for
    when the server ignores Range), within hub_deadline() seconds overall. -> (status, headers, body)."""
    from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status

    limit = hub_deadline()
    deadline = time.monotonic() + limit
    if _OVERALL is not None and deadline > _OVERALL:
        deadline, limit = _OVERALL, -hub_total_deadline()  # negative: the overall deadline binds (_late)
        if time.monotonic() > deadline:
            raise _late(src, limit)
    headers = {**build_hf_headers(token=token()), "Accept-Encoding": "identity"}
    if rng is not None:
        headers["Range"] = f"bytes={rng[0]}-{rng[1]}"
        cap = min(cap, rng[1] - rng[0] + 1)
    timeout = min(_timeout("HF_HUB_DOWNLOAD_TIMEOUT"), abs(limit), max(deadline - time.monotonic(), 0.1))
    with get_session().stream("GET", url, headers=headers, params=params, timeout=timeout,
                              follow_redirects=True) as r:
        if r.status_code >= 400:
            r._content = _read_body(r, ERROR_BODY_MAX, deadline, src, limit, truncate=True)
            hf_raise_for_status(r)
        body = _read_body(r, cap, deadline, src, limit, truncate=rng is not None)
        return r.status_code, r.headers, body


def _read_body(r, cap: int, deadline: float, src: str, limit: float, truncate: bool) -> bytes:
    import zlib

    enc = (r.headers.get("Content-Encoding") or "identity").lower().strip()
    if enc not in ("identity", "gzip", "deflate"):
        raise HubError(f"{src}: the Hub answered with {enc[:20]!r} encoding, which is not read; check HF_ENDPOINT")
    dec = zlib.decompressobj(47) if enc != "identity" else None  # 47: zlib or gzip header, bounded output below
    out = bytearray()
    for chunk in r.iter_raw():
        if dec is not None:
            chunk = dec.decompress(chunk, cap + 1 - len(out))
        out += chunk
        if len(out) > cap:
            if truncate:
                return bytes(out[:cap])
            raise HubError(f"{src}: the Hub's answer is over {cap // 2**20} MiB, more than any real one; "
                           "check HF_ENDPOINT or use a local copy")
        if time.monotonic() > deadline:
            raise _late(src, limit)
    return bytes(out)


def _late(src: str, limit: float) -> HubError:
    if limit < 0:
        return HubError(f"{src}: the Hub did not finish answering for this model within {-limit:.0f} s overall "
                        "(slow, or too many files); try again later, raise HF_HUB_TOTAL_DEADLINE, or use a catalog id")
    return HubError(f"{src}: the Hub did not finish answering within {limit:.0f} s (slow or stalled); try "
                    "again later, raise HF_HUB_DEADLINE, or use a catalog id")


def _model_info(repo: str):
    from huggingface_hub.hf_api import ModelInfo

    _, _, body = _capped_get(f"{endpoint()}/api/models/{repo}", f"{repo} (model info)", MAX_HUB_JSON_BYTES,
                             params={"blobs": True})
    data = loads_json(body, f"{repo} (model info)", cap=MAX_HUB_JSON_BYTES, what="answer")
    if not isinstance(data, dict) or not isinstance(data.get("siblings", []), list):
        raise HubError(f"{repo}: the Hub's model info is not an object with a file list; check HF_ENDPOINT")
    try:
        return ModelInfo(**data)
    except (TypeError, ValueError, KeyError, AttributeError) as e:
        raise HubError(f"{repo}: the Hub's model info is malformed ({e.__class__.__name__}); check HF_ENDPOINT") \
            from None


def _file_url(repo: str, fname: str, sha: str | None) -> str:
    from huggingface_hub import hf_hub_url

    return hf_hub_url(repo, fname, revision=sha, endpoint=endpoint())


# --------------------------------------------------------------------------- fetch
def _fetch(repo: str, file: str | None, quant: str | None):
    from huggingface_hub.utils import disable_progress_bars

    disable_progress_bars()  # the CLI's stderr is for one-line errors only
    info = _model_info(repo)
    siblings = {s.rfilename: s.size for s in (info.siblings or []) if isinstance(s.rfilename, str)}
    ggufs = [n for n in siblings if n.lower().endswith(".gguf")]
    want_gguf = bool(ggufs) and (file is not None or "config.json" not in siblings
                                 or (quant is not None and not _looks_mlx(quant)))
    if want_gguf:
        return _fetch_gguf(None, repo, info.sha, siblings, ggufs, file, quant)
    if "config.json" not in siblings:
        raise HubError(f"{repo} has neither config.json nor .gguf files; is it a language model repo?")
    return _fetch_config(None, repo, info.sha, siblings)


def _looks_mlx(q: str) -> bool:
    return bool(re.search(r"bit|mlx|mxfp|nvfp", q, re.IGNORECASE))


def _fetch_config(api, repo: str, sha: str | None, siblings: dict):
    """config.json (capped, in memory) and the safetensors headers named by the repo (model.safetensors or the
    shards of model.safetensors.index.json, as huggingface_hub get_safetensors_metadata picks them)."""
    from . import _from_config_and_tensors
    from .hfconfig import from_hf_config
    from .local import header_entries, safetensors_weights

    src = f"{repo}/config.json"
    _, _, body = _capped_get(_file_url(repo, "config.json", sha), src, MAX_CONFIG_BYTES)
    raw = loads_json(body, src, what="config.json")
    if not isinstance(raw, dict):
        raise SourceError(f"{src}: expected a JSON object; fix or re-download it")
    cfg = from_hf_config(raw, src)
    entries: list = []
    for fname in _safetensors_files(repo, sha, siblings):
        entries += header_entries(_st_header(repo, fname, sha), f"{repo}/{fname}")
    return _from_config_and_tensors(raw, cfg, entries, source="hub", id_=repo.lower(), name=repo,
                                    url=f"{shown_endpoint()}/{repo}", hf_repo=repo, weights_fn=safetensors_weights)


def _safetensors_files(repo: str, sha: str | None, siblings: dict) -> list[str]:
    if "model.safetensors" in siblings:
        return ["model.safetensors"]
    index = "model.safetensors.index.json"
    if index not in siblings:
        return []
    src = f"{repo}/{index}"
    _, _, body = _capped_get(_file_url(repo, index, sha), src, MAX_HUB_JSON_BYTES)
    wm = loads_json(body, src, cap=MAX_HUB_JSON_BYTES, what=index)
    wm = wm.get("weight_map") if isinstance(wm, dict) else None
    if not isinstance(wm, dict) or not all(isinstance(v, str) for v in wm.values()):
        raise SourceError(f"{src}: no weight_map of file names; re-upload it")
    files = sorted(set(wm.values()))
    check_shards(len(files), src, "a weight_map")
    missing = [f for f in files if f not in siblings]
    if missing:
        raise HubError(f"{src} names {missing[0][:80]}, which the repo does not have")
    return files


def _st_header(repo: str, fname: str, sha: str | None) -> dict:
    """A safetensors header by ranged reads: the u64 length, then the JSON (safetensors format spec)."""
    import struct

    src = f"{repo}/{fname}"
    url = _file_url(repo, fname, sha)
    _, _, head = _capped_get(url, src, ST_FIRST, rng=(0, ST_FIRST - 1))
    if len(head) < 8:
        raise SourceError(f"{src} is not a valid safetensors file (shorter than 8 bytes): re-upload it")
    (n,) = struct.unpack("<Q", head[:8])
    if n > MAX_ST_HEADER_BYTES:
        raise SourceError(f"{src} is not a valid safetensors file (header of {n} bytes, over "
                          f"{MAX_ST_HEADER_BYTES // 2**20} MiB): re-upload it")
    data = head[8:8 + n]
    if len(data) < n:
        data += _capped_get(url, src, n, rng=(8 + len(data), 8 + n - 1))[2]
    if len(data) < n:
        raise SourceError(f"{src} is not a valid safetensors file (truncated header): re-upload it")
    hdr = loads_json(data, f"{src} (safetensors header)", cap=MAX_ST_HEADER_BYTES, what="header")
    if not isinstance(hdr, dict):
        raise SourceError(f"{src} is not a valid safetensors file (header is not an object): re-upload it")
    return hdr


def _fetch_gguf(api, repo: str, sha: str | None, siblings: dict, ggufs: list[str], file: str | None,
                quant: str | None):
    from . import ResolvedModel, _known_quant, _pick_gguf, make_profile
    from .ggufmeta import check_tensors, config_from_gguf, exact_weights, mtp_layers, quant_from_gguf
    from .local import SPLIT_RE

    pick = _pick_gguf(ggufs, file, quant, repo)
    m = SPLIT_RE.match(pick.rsplit("/", 1)[-1])
    shards = [pick]
    if m:
        n = int(m["n"])
        check_shards(n, f"{repo}/{pick}", "a split GGUF")
        prefix = pick[: len(pick) - len(pick.rsplit("/", 1)[-1])] + m["prefix"]
        shards = [f"{prefix}-{i:05d}-of-{n:05d}.gguf" for i in range(1, n + 1)]
        missing = [s for s in shards if s not in siblings]
        if missing:
            raise HubError(f"{repo}: split GGUF {pick} lacks {', '.join(missing[:2])} on the Hub")
    parts = []
    for s in shards:
        size = siblings.get(s)
        parts.append((*_remote_header(repo, s, sha, size), size if isinstance(size, int) and size > 0 else None))
    kv = parts[0][0]
    tensors = [t for _, ts, _ in parts for t in ts]
    src = f"{repo}/{pick}"
    cfg, notes = config_from_gguf(kv, tensors, src)
    checked = check_tensors(parts, src)  # no tensors, parts of two models, data past the end: one line
    notes = checked + notes
    if len(shards) > 1:
        notes.append(f"split GGUF: summed {len(shards)} shards")
    mm = sorted(n for n in siblings if "mmproj" in n.lower() and n.lower().endswith(".gguf"))
    vision = 0
    if mm:
        f16 = [n for n in mm if "f16" in n.lower()]
        proj = (f16 or mm)[0]
        vision = int(siblings.get(proj) or 0)
        if vision:
            notes.append(f"vision projector {proj} counted ({vision / 2**20:,.0f} MiB, file size)")
    w = exact_weights(tensors, vision, mtp_layers(cfg))
    qid = None if any("general.file_type says" in n for n in checked) else quant_from_gguf(kv, pick)
    known = _known_quant(qid, "gguf")
    if qid and not known:
        notes.append(f"quant {qid} is not one of our presets; exact bytes used as read")
    name = kv.get("general.name") if isinstance(kv.get("general.name"), str) else repo
    prof = make_profile(cfg, id_=f"{repo}/{pick}".lower(), name=f"{name} ({pick.rsplit('/', 1)[-1]})",
                        source_url=f"{shown_endpoint()}/{repo}/blob/main/{pick}", hf_repo=repo, vision_bytes=vision)
    return ResolvedModel(profile=prof, source="hub", exact_weights=w, quant_id=known or qid, runtime_hint="llama.cpp",
                         vision_bytes=vision, files=[f"{repo}/{s}" for s in shards], notes=notes)


def _remote_header(repo: str, fname: str, sha: str | None, size: int | None):
    """Ranged GETs of the GGUF header (metadata + tensor infos), growing until it parses, at most HEADER_MAX bytes
    and only the bytes asked for even when the server ignores Range."""
    from .ggufmeta import NeedMore, parse_header

    url = _file_url(repo, fname, sha)
    total = size if isinstance(size, int) and size > 0 else None
    n = HEADER_FIRST
    src = f"{repo}/{fname}"
    while True:
        end = n - 1 if total is None else min(n, total) - 1
        buf = _capped_get(url, src, n, rng=(0, end))[2]
        try:
            return parse_header(buf, src)
        except NeedMore:
            if (total is not None and len(buf) >= total) or len(buf) < end + 1 or n >= HEADER_MAX:
                raise SourceError(f"{src} is not a valid GGUF (header ends after {len(buf)} bytes): "
                                  "re-upload or pick another file") from None
            n = min(n * 4, HEADER_MAX)
