"""Where profiles are found (no pydantic here, so a caller that only needs the folders does not import the core's
models). planner.profiles re-exports these functions."""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

APP = "mac-llm-planner"
# The per-user folders platformdirs gives on the two platforms the planner runs on (platformdirs 4.14
# unix.py _UnixDefaults, macos.py _MacOSDefaults, _xdg.py XDGMixin: an absolute $XDG_<KIND>_HOME wins on both), read
# here without importing platformdirs: its unix module imports tempfile, shutil, bz2 and lzma, ~3 % of a one-shot
# answer's start-up. Other platforms ask platformdirs. tests/test_dirs.py checks both against platformdirs itself.
_DEFAULTS = {"darwin": {"cache": "~/Library/Caches", "config": "~/Library/Application Support"},
             "posix": {"cache": "~/.cache", "config": "~/.config"}}


def builtin_dir() -> Path:
    env = os.environ.get("MAC_LLM_PLANNER_PROFILES")
    if env:
        return Path(env)
    return _shipped_dir()


@functools.cache
def _shipped_dir() -> Path:
    """The profiles shipped with the package (resolved once: realpath costs a stat per path component)."""
    here = Path(__file__).resolve().parent
    installed = here / "_profiles"
    return installed if installed.is_dir() else here.parent / "profiles"


def user_dir() -> Path | None:
    env = os.environ.get("MAC_LLM_PLANNER_USER_PROFILES")
    if env:
        return Path(env)
    return user_app_dir("config") / "profiles"


def user_app_dir(kind: str) -> Path:
    """The planner's per-user ``kind`` folder ("cache" or "config"): ``$XDG_<KIND>_HOME/mac-llm-planner`` when that
    variable is an absolute path, else ``~/Library/Caches`` / ``~/Library/Application Support`` (macOS) or
    ``~/.cache`` / ``~/.config`` (Linux and other POSIX systems) with the app's name, as platformdirs says."""
    plat = "darwin" if sys.platform == "darwin" else "posix" if os.name == "posix" else None
    if plat is None:  # pragma: no cover - Windows: platformdirs' rules
        import platformdirs

        return Path(getattr(platformdirs, f"user_{kind}_dir")(APP))
    xdg = os.environ.get(f"XDG_{kind.upper()}_HOME", "")
    if os.path.isabs(xdg):
        return Path(xdg) / APP
    return Path(os.path.expanduser(_DEFAULTS[plat][kind])) / APP
