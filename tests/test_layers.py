"""The direction of every import between the top-level packages (docs/architecture.md).

planner (the pure core) imports no other package of the project; sources (file and hub readers) and calibration
import the core; the surfaces (cli, app) import whatever they render. An arrow back (the core importing an edge,
or calibration importing the CLI) fails here, with the file and line.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ["planner", "sources", "calibration", "cli", "app", "mac_llm_planner"]
ALLOWED = {
    "planner": set(),
    "sources": {"planner"},
    "calibration": {"planner", "sources"},
    "cli": {"planner", "sources", "calibration"},
    "app": {"planner", "sources", "calibration", "cli"},  # cli/profile_cache.py: the validated-profile cache the edges share
    "mac_llm_planner": {"planner", "sources", "cli"},  # the public Python API: an edge over the CLI's questions
}


def _imports(path: Path) -> list[tuple[int, str]]:
    """Top-level project packages named by absolute imports in one file (relative imports stay inside)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name.split(".")[0]) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.lineno, node.module.split(".")[0]))
    return [(line, pkg) for line, pkg in out if pkg in PACKAGES]


@pytest.mark.parametrize("pkg", PACKAGES)
def test_imports_point_one_way(pkg):
    files = sorted((ROOT / pkg).rglob("*.py"))
    assert files, f"{pkg}/ has no modules"
    wrong = [f"{p.relative_to(ROOT)}:{line} imports {other}"
             for p in files for line, other in _imports(p) if other != pkg and other not in ALLOWED[pkg]]
    assert not wrong, "\n".join(wrong)


def test_checker_sees_a_back_arrow(tmp_path):
    # the check itself can fail: a core file importing the CLI is reported
    f = tmp_path / "bad.py"
    f.write_text("from cli.main import run\nimport sources.hub\nfrom . import x\n")
    assert _imports(f) == [(1, "cli"), (2, "sources")]
