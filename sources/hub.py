"""Hugging Face Hub source: config.json, safetensors headers, GGUF headers by HTTP range read; answers cached on disk.

Uses the real huggingface_hub client (HfApi.model_info, hf_hub_download, get_safetensors_metadata,
get_hf_file_metadata + a ranged GET through huggingface_hub.utils.get_session()). HF_ENDPOINT, HF_TOKEN and
HF_HUB_OFFLINE are read at call time. Errors become one-line HubError / SourceError messages.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import time
from pathlib import Path

from planner.errors import PlannerError

from .errors import HubError, SourceError, missing_part

CACHE_TTL_S = 24 * 3600
HEADER_FIRST = 2 * 2**20      # first ranged read [bytes]; grows x4 until the header parses
HEADER_MAX = 256 * 2**20      # give up beyond this (a GGUF header is a few MiB: tokenizer strings)
CACHE_VERSION = 1


def _truthy(v: str | None) -> bool:
    return (v or "").strip().lower() in ("1", "on", "yes", "true")


def offline() -> bool:
    return _truthy(os.environ.get("HF_HUB_OFFLINE")) or _truthy(os.environ.get("TRANSFORMERS_OFFLINE"))


def endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


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
    import platformdirs

    return Path(platformdirs.user_cache_dir("mac-llm-planner")) / "hub"


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
    """Atomic: write a temp file in the same folder, then rename over the entry."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(resolved.model_dump_json())
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache only costs a refetch


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
    try:
        resolved = _fetch(repo, file, quant)
    except PlannerError:
        raise
    except ImportError as e:
        raise missing_part(e, f"--model {repo} (a Hugging Face repo)") from None
    except Exception as e:  # noqa: BLE001 - map every client/network failure to one line
        raise _map_error(e, repo) from None
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
        return HubError(f"no network: cannot reach {endpoint()} for {repo} ({e.__class__.__name__}); use a catalog id "
                        "(plan models) or a local path")
    if isinstance(e, HfHubHTTPError):
        status = getattr(getattr(e, "response", None), "status_code", None)
        if status in (401, 403):
            return HubError(f"{repo} needs authorisation ({status}): it is gated or private, set HF_TOKEN")
        return HubError(f"{repo}: the Hub answered {status or 'an error'}; try again later or use a catalog id")
    first = (str(e).splitlines() or [""])[0][:100]
    return HubError(f"{repo}: cannot read the model from the Hub ({e.__class__.__name__}: {first})")


# --------------------------------------------------------------------------- fetch
def _fetch(repo: str, file: str | None, quant: str | None):
    from huggingface_hub import HfApi
    from huggingface_hub.utils import disable_progress_bars

    disable_progress_bars()  # the CLI's stderr is for one-line errors only
    api = HfApi(endpoint=endpoint(), token=token())
    t = _timeout("HF_HUB_ETAG_TIMEOUT")
    info = api.model_info(repo, files_metadata=True, timeout=t)
    siblings = {s.rfilename: s.size for s in (info.siblings or [])}
    ggufs = [n for n in siblings if n.lower().endswith(".gguf")]
    want_gguf = bool(ggufs) and (file is not None or "config.json" not in siblings
                                 or (quant is not None and not _looks_mlx(quant)))
    if want_gguf:
        return _fetch_gguf(api, repo, info.sha, siblings, ggufs, file, quant)
    if "config.json" not in siblings:
        raise HubError(f"{repo} has neither config.json nor .gguf files; is it a language model repo?")
    return _fetch_config(api, repo, info.sha, siblings)


def _looks_mlx(q: str) -> bool:
    return bool(re.search(r"bit|mlx|mxfp|nvfp", q, re.IGNORECASE))


def _fetch_config(api, repo: str, sha: str | None, siblings: dict):
    from huggingface_hub import hf_hub_download

    from . import _from_config_and_tensors
    from .hfconfig import from_hf_config
    from .local import header_entries, read_config_json, safetensors_weights

    cfg_path = hf_hub_download(repo, "config.json", revision=sha, endpoint=endpoint(),
                               cache_dir=os.environ.get("HF_HUB_CACHE") or None,
                               etag_timeout=_timeout("HF_HUB_ETAG_TIMEOUT"), token=token())
    raw = read_config_json(Path(cfg_path))
    src = f"{repo}/config.json"
    cfg = from_hf_config(raw, src)
    entries: list = []
    if any(n.endswith(".safetensors") for n in siblings):
        meta = api.get_safetensors_metadata(repo, revision=sha, timeout=_timeout("HF_HUB_DOWNLOAD_TIMEOUT"))
        for fname, fm in meta.files_metadata.items():
            hdr = {name: {"dtype": ti.dtype, "shape": ti.shape, "data_offsets": ti.data_offsets}
                   for name, ti in fm.tensors.items()}
            entries += header_entries(hdr, f"{repo}/{fname}")
    return _from_config_and_tensors(raw, cfg, entries, source="hub", id_=repo.lower(), name=repo,
                                    url=f"{endpoint()}/{repo}", hf_repo=repo, weights_fn=safetensors_weights)


def _fetch_gguf(api, repo: str, sha: str | None, siblings: dict, ggufs: list[str], file: str | None,
                quant: str | None):
    from . import ResolvedModel, _known_quant, _pick_gguf, make_profile
    from .ggufmeta import config_from_gguf, exact_weights, quant_from_gguf
    from .local import SPLIT_RE

    pick = _pick_gguf(ggufs, file, quant, repo)
    m = SPLIT_RE.match(pick.rsplit("/", 1)[-1])
    shards = [pick]
    if m:
        n = int(m["n"])
        prefix = pick[: len(pick) - len(pick.rsplit("/", 1)[-1])] + m["prefix"]
        shards = [f"{prefix}-{i:05d}-of-{n:05d}.gguf" for i in range(1, n + 1)]
        missing = [s for s in shards if s not in siblings]
        if missing:
            raise HubError(f"{repo}: split GGUF {pick} lacks {', '.join(missing[:2])} on the Hub")
    kv, tensors = _remote_header(repo, shards[0], sha, siblings.get(shards[0]))
    for s in shards[1:]:
        tensors += _remote_header(repo, s, sha, siblings.get(s))[1]
    src = f"{repo}/{pick}"
    cfg, notes = config_from_gguf(kv, tensors, src)
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
    w = exact_weights(tensors, vision)
    qid = quant_from_gguf(kv, pick)
    known = _known_quant(qid, "gguf")
    if qid and not known:
        notes.append(f"quant {qid} is not one of our presets; exact bytes used as read")
    name = kv.get("general.name") if isinstance(kv.get("general.name"), str) else repo
    prof = make_profile(cfg, id_=f"{repo}/{pick}".lower(), name=f"{name} ({pick.rsplit('/', 1)[-1]})",
                        source_url=f"{endpoint()}/{repo}/blob/main/{pick}", hf_repo=repo, vision_bytes=vision)
    return ResolvedModel(profile=prof, source="hub", exact_weights=w, quant_id=known or qid, runtime_hint="llama.cpp",
                         vision_bytes=vision, files=[f"{repo}/{s}" for s in shards], notes=notes)


def _remote_header(repo: str, fname: str, sha: str | None, size: int | None):
    """Ranged GETs of the GGUF header (metadata + tensor infos), growing until it parses."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url
    from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status

    from .ggufmeta import NeedMore, parse_header

    url = hf_hub_url(repo, fname, revision=sha, endpoint=endpoint())
    t = _timeout("HF_HUB_DOWNLOAD_TIMEOUT")
    meta = get_hf_file_metadata(url, token=token(), timeout=_timeout("HF_HUB_ETAG_TIMEOUT"), endpoint=endpoint())
    total = meta.size or size
    n = HEADER_FIRST
    src = f"{repo}/{fname}"
    while True:
        end = n - 1 if total is None else min(n, total) - 1
        r = get_session().get(url, headers={**build_hf_headers(token=token()), "Range": f"bytes=0-{end}"}, timeout=t,
                              follow_redirects=True)
        hf_raise_for_status(r)
        buf = r.content
        try:
            return parse_header(buf, src)
        except NeedMore:
            if (total is not None and len(buf) >= total) or len(buf) < end + 1 or n >= HEADER_MAX:
                raise SourceError(f"{src} is not a valid GGUF (header ends after {len(buf)} bytes): "
                                  "re-upload or pick another file") from None
            n *= 4
