"""Suite-wide setup: the llama.cpp build of scripts/bootstrap.sh (.cache/llama-build/bin) goes on PATH and
LLAMA_CPP_LIB_PATH when present and not already configured, so a local `pytest` finds the same tools CI does;
HF_HUB_OFFLINE=1 so nothing reaches a model hub (the hub tests serve their own endpoint)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

LLAMA_BIN = Path(__file__).resolve().parent.parent / ".cache" / "llama-build" / "bin"

os.environ.setdefault("HF_HUB_OFFLINE", "1")
if LLAMA_BIN.is_dir():
    if not shutil.which("llama-bench"):
        os.environ["PATH"] = f"{LLAMA_BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    os.environ.setdefault("LLAMA_CPP_LIB_PATH", str(LLAMA_BIN))

# validated-profile cache (planner/profiles.py) of this test process: a private temporary dir, never the user's
if "MAC_LLM_PLANNER_CACHE" not in os.environ:
    import tempfile

    os.environ["MAC_LLM_PLANNER_CACHE"] = tempfile.mkdtemp(prefix="plan-test-cache-")
