"""docs/architecture.md is true: its import table is the one tests/test_layers.py enforces, and every file it
names exists."""

from __future__ import annotations

import re
from pathlib import Path

from tests import test_layers

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def test_import_table_is_the_enforced_one():
    rows = re.findall(r"^\| `(\w+)` \| ([^|]+) \|", DOC, flags=re.MULTILINE)
    table = {pkg: set() if "nothing" in may else {p.strip() for p in may.split(",")} for pkg, may in rows}
    assert table == test_layers.ALLOWED


def test_named_files_exist():
    named = re.findall(r"`((?:planner|sources|calibration|cli|app|scripts|tests|profiles|docs)/[\w./{},<>-]+)`", DOC)
    assert len(named) > 20
    for path in named:
        if any(c in path for c in "<{*"):  # a pattern: its folder exists
            path = path.split("<")[0].split("{")[0].split("*")[0].rsplit("/", 1)[0]
        assert (ROOT / path).exists(), path
