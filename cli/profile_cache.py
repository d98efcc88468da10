"""The validated-profile cache kept between runs (an edge: the core reads YAML profiles and keeps nothing on disk).

Validating the catalog's YAML with pydantic is most of a cold `plan models`; the validated objects are kept in the
user's cache dir, one pickle per code version, and handed to the core through
:func:`planner.profiles.use_validated_store`. Every command line, the web app, the Python API and the agent servers
call :func:`install` once at start-up.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
import sys
from pathlib import Path
from typing import Any

from planner import profiles

# the C unpickler (what pickle.loads is): a warm run reads and never writes, so it does not import pickle.py (its
# pure-Python pickler and a regular expression: ~0.5 % of a start-up)
try:
    from _pickle import loads as _loads
except ImportError:  # an interpreter without the accelerator
    from pickle import loads as _loads

from .cache_dir import cache_dir as cache_dir  # re-exported: the one cache dir of the CLI


@functools.cache
def schema_fingerprint() -> str:
    """Changes whenever the core's code (or Python, or pydantic) changes: the modules that define the cached
    classes, and those that compute the values kept beside the profiles (planner.profiles.derived: the GGUF preset
    sizes of planner/memory.py, from planner/architecture.py's tensors...). Every module of the core counts, so no
    list can miss one."""
    import pydantic

    here = Path(profiles.__file__).resolve().parent
    parts = [sys.version, pydantic.VERSION]

    def walk(d: str, rel: str) -> None:
        try:
            with os.scandir(d) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return
        for e in entries:
            if e.name.endswith(".py"):
                try:
                    st = e.stat()
                    parts.append(f"{rel}{e.name}:{st.st_mtime_ns}:{st.st_size}")
                except OSError:
                    parts.append(f"{rel}{e.name}:missing")
            elif e.is_dir(follow_symlinks=False) and not e.name.startswith(("_", ".")):
                walk(e.path, f"{rel}{e.name}/")

    walk(str(here), "")
    return hashlib.sha1("|".join(parts).encode()).hexdigest()[:16]


class DiskStore:
    """(path, class) -> ((mtime, size), the validated object pickled on its own), written once at process exit when
    something new was validated. Each object is unpickled only when asked for: a run pays for the profiles it
    reads, not for every profile validated before (all 170 models after one `plan models`). The pickle lives in the
    user's own cache dir (as trusted as their profile dir); a file or an entry that does not read is a miss. The
    file is replaced atomically (a reader sees the old or the new file, never half of one)."""

    def __init__(self) -> None:
        self.entries: dict | None = None
        self.objects: dict = {}  # key -> object unpickled (or validated) in this process
        self.dirty = False

    def file(self) -> Path | None:
        d = cache_dir()
        return None if d is None else d / f"profiles-{schema_fingerprint()}.pickle"

    def _load(self) -> dict:
        if self.entries is None:
            self.entries = {}
            f = self.file()
            try:
                data = _loads(f.read_bytes()) if f is not None and f.is_file() else {}
                self.entries = data if isinstance(data, dict) else {}
            except Exception:  # noqa: BLE001 - a stale or corrupt cache is only a miss
                self.entries = {}
        return self.entries

    def get(self, key: tuple, stamp: tuple | None) -> Any:
        hit = self._load().get(key) if stamp is not None else None
        if hit is None or not isinstance(hit, tuple) or len(hit) != 2 or hit[0] != stamp:
            return None
        if key not in self.objects:
            try:
                self.objects[key] = _loads(hit[1])
            except Exception:  # noqa: BLE001 - a corrupt entry is only a miss
                return None
        return self.objects[key]

    def put(self, key: tuple, stamp: tuple, obj: Any) -> None:
        import pickle

        self._load()[key] = (stamp, pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))
        self.objects[key] = obj
        if not self.dirty:
            self.dirty = True
            atexit.register(self.save)

    def save(self) -> None:
        import pickle

        f = self.file()
        if f is None or not self.dirty or self.entries is None:
            return
        try:
            f.parent.mkdir(parents=True, exist_ok=True)
            tmp = f.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(pickle.dumps(self.entries, protocol=pickle.HIGHEST_PROTOCOL))
            os.replace(tmp, f)
            self.dirty = False
            for old in f.parent.glob("profiles-*.pickle"):  # caches of other code versions
                if old != f:
                    old.unlink(missing_ok=True)
        except OSError:  # a read-only cache dir only costs speed
            pass


def install() -> DiskStore:
    """Give the core the on-disk store (once per process; a second call keeps the first store)."""
    current = profiles._STORE
    if isinstance(current, DiskStore):
        return current
    store = DiskStore()
    profiles.use_validated_store(store)
    return store
