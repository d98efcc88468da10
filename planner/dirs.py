"""Where profiles are found (no pydantic here, so a caller that only needs the folders does not import the core's
models). planner.profiles re-exports these functions."""

from __future__ import annotations

import functools
import os
from pathlib import Path


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
    try:
        import platformdirs
    except ImportError:  # pragma: no cover
        return None
    return Path(platformdirs.user_config_dir("mac-llm-planner")) / "profiles"
