"""The CLI's cache dir (validated profiles, cli/profile_cache.py). No pydantic here."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path | None:
    """Where validated profiles are kept between runs: ``$MAC_LLM_PLANNER_CACHE`` ('off' disables it) or the
    user cache dir (``planner.dirs.user_app_dir("cache")``, platformdirs' folder)."""
    env = os.environ.get("MAC_LLM_PLANNER_CACHE")
    if env is not None:
        return None if env in ("", "off") else Path(env)
    from planner.dirs import user_app_dir

    return user_app_dir("cache")
