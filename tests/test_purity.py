"""The core stays pure: importing it must not pull in CLI, app, numeric or runtime libraries."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# every top-level module of the core (cli and sources are the edges)
CORE = sorted(".".join(p.relative_to(ROOT / "planner").with_suffix("").parts).removesuffix(".__init__")
              for p in (ROOT / "planner").rglob("*.py") if p.name != "__init__.py" or p.parent != ROOT / "planner")
FORBIDDEN = ["typer", "click", "streamlit", "plotly", "scipy", "mlx", "llama_cpp", "huggingface_hub", "gguf"]


def test_core_modules_import_nothing_heavy():
    """Every core module imported in turn in one fresh interpreter (one child, not one per module: each child
    pays the pydantic import); the first module after which a forbidden package is loaded is named."""
    assert "plan" in CORE and "cluster" in CORE and "throughput" in CORE  # the list is real
    code = (
        "import importlib, json, sys\n"
        "first = {}\n"
        f"for mod in {CORE!r}:\n"
        "    importlib.import_module('planner.' + mod)\n"
        f"    bad = sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r})\n"
        "    if bad:\n"
        "        first = {'planner.' + mod: bad}\n"
        "        break\n"
        "print(json.dumps(first))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], check=False, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1]) == {}, f"imports: {r.stdout.strip()}"


def test_forbidden_list_is_checkable():
    # sanity: the check would notice a forbidden import that is installed (typer is a core dependency of the CLI)
    assert importlib.util.find_spec("typer") is not None
