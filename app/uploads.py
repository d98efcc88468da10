"""An uploaded config.json becomes a model folder the sources can read (sources.resolve_model).

Uploads go to a private per-user folder (``<planner cache>/uploads``, mode 0700, not the shared temp folder), every
component opened with O_NOFOLLOW so a planted link cannot redirect the write, at most MAX_CONFIG_BYTES written, and
only the newest MAX_UPLOADS kept. ``config_folder`` never raises: it runs before the page's error handling, so any
problem with the bytes is left for ``resolve_model`` to report as one line.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import stat
from pathlib import Path

from planner.errors import PlannerError
from sources.bounds import MAX_CONFIG_BYTES, loads_json

MAX_UPLOADS = 64
MAX_NAME = 80
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


def upload_root() -> Path:
    """``$MAC_LLM_PLANNER_CACHE_DIR/uploads`` or the per-user cache folder (platformdirs), never /tmp."""
    env = os.environ.get("MAC_LLM_PLANNER_CACHE_DIR")
    if env:
        return Path(env) / "uploads"
    from planner.dirs import user_app_dir

    return user_app_dir("cache") / "uploads"


def model_name(data: bytes) -> str:
    """The folder name: the last part of ``_name_or_path`` (a folder model is named after its directory),
    reduced to [A-Za-z0-9_.-] and MAX_NAME characters; "uploaded-model" when there is none."""
    try:
        raw = loads_json(data, "upload") if len(data) <= MAX_CONFIG_BYTES else None
        name = raw.get("_name_or_path") if isinstance(raw, dict) else None
    except PlannerError:
        name = None
    name = str(name or "").rstrip("/").split("/")[-1] if isinstance(name, str) else ""
    return re.sub(r"[^\w.-]+", "-", name, flags=re.ASCII)[:MAX_NAME].strip("-.") or "uploaded-model"


def config_folder(data: bytes, root: Path | None = None) -> str:
    """Store the bytes as <root>/<content hash>/<model name>/config.json and return that folder (at most
    MAX_CONFIG_BYTES + 1 bytes are written: a bigger upload is then refused by the reader, in one line)."""
    base = Path(root) if root is not None else upload_root()
    digest = hashlib.sha256(data).hexdigest()[:16]
    name = model_name(data)
    folder = base / digest / name
    try:
        _store(base, digest, name, data[:MAX_CONFIG_BYTES + 1])
        _prune(base)
    except OSError:
        pass  # the folder then has no readable config.json: resolve_model says so in one line
    return str(folder)


def _store(base: Path, digest: str, name: str, data: bytes) -> None:
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(base, _DIR_FLAGS)
    try:
        st = os.fstat(fd)
        if st.st_uid != os.geteuid():
            raise PermissionError(f"{base} belongs to another user")
        if stat.S_IMODE(st.st_mode) & 0o077:
            os.fchmod(fd, 0o700)
        d1 = _subdir(fd, digest)
        try:
            d2 = _subdir(d1, name)
            try:
                out = os.open("config.json", os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600, dir_fd=d2)
                with os.fdopen(out, "wb") as f:
                    f.write(data)
            finally:
                os.close(d2)
        finally:
            os.close(d1)
    finally:
        os.close(fd)


def _subdir(parent: int, name: str) -> int:
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, 0o700, dir_fd=parent)
    return os.open(name, _DIR_FLAGS, dir_fd=parent)  # a link in its place fails here (ELOOP / ENOTDIR)


def _prune(base: Path, keep: int = MAX_UPLOADS) -> None:
    entries = []
    for p in base.iterdir():
        with contextlib.suppress(OSError):
            st = p.lstat()
            if stat.S_ISDIR(st.st_mode):
                entries.append((st.st_mtime, p))
    for _, p in sorted(entries, reverse=True)[keep:]:
        shutil.rmtree(p, ignore_errors=True)


# --------------------------------------------------------------------------- local paths typed into the page
LOCAL_PATHS_ENV = "MAC_LLM_PLANNER_APP_LOCAL_PATHS"   # "1": allowed, "0": off; `plan app` sets it
LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}


def local_paths_allowed(address: str | None) -> bool:
    """Whether a path typed into the page may be read on the server: yes when the operator says so
    (``plan app --allow-local-paths`` sets LOCAL_PATHS_ENV=1), else only when the server listens on loopback
    (Streamlit with no server.address listens on every interface: off)."""
    env = os.environ.get(LOCAL_PATHS_ENV)
    if env in ("0", "1"):
        return env == "1"
    return (address or "").strip().lower() in LOOPBACK or (address or "").startswith("127.")


def check_model_spec(spec: str, allowed: bool, root: Path | None = None) -> None:
    """Refuse a server-side path when local paths are off (an uploaded config's own folder stays allowed): a user
    of a page served beyond localhost could otherwise list and read the server's folders."""
    from planner.errors import InputError

    if allowed or not spec:
        return
    base = (Path(root) if root is not None else upload_root()).resolve()
    try:
        p = Path(spec).expanduser().resolve()
    except (RuntimeError, OSError, ValueError):
        p = None
    if p is not None and p.is_relative_to(base) and ".." not in Path(spec).parts:
        return
    looks_local = spec.startswith(("/", "~", ".", "\\")) or spec.lower().endswith(".gguf") or (
        p is not None and p.exists())
    if looks_local:
        raise InputError("local paths are off on this server (it listens beyond localhost): give a catalog id or a "
                         "Hugging Face repo id, or upload a config.json (the operator can allow them with "
                         "`plan app --allow-local-paths`)")
