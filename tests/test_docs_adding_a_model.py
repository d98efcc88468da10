"""docs/adding-a-model.md is true: its example stub generates the shipped profile with the output it shows, and
the tolerances and benchmark names it states are the ones tests/test_catalog.py enforces."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

from tests import test_catalog as catalog

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "adding-a-model.md").read_text(encoding="utf-8")


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC, flags=re.DOTALL)


def test_example_stub_generates_the_shipped_profile(tmp_path):
    stub = tmp_path / "stubs.yaml"
    stub.write_text(_blocks("yaml")[0], encoding="utf-8")
    r = subprocess.run([sys.executable, "scripts/add_model.py", str(stub), "--out-dir", str(tmp_path)],
                       cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    made = yaml.safe_load((tmp_path / "qwq-32b.yaml").read_text(encoding="utf-8"))
    shipped = yaml.safe_load((ROOT / "profiles" / "models" / "qwq-32b.yaml").read_text(encoding="utf-8"))
    assert made["config"] == shipped["config"] and made["params_b"] == shipped["params_b"]
    # the output line the doc shows is the one the script prints
    shown = next(line for line in _blocks("bash")[0].splitlines() if line.startswith("qwq-32b"))
    assert shown.split("#")[0].split() == r.stdout.split()


def test_stated_rules_are_the_enforced_ones():
    assert f"within {round(catalog.TOTAL_TOL * 100)} %" in DOC
    assert f"within {round(catalog.ACTIVE_TOL * 100)} %" in DOC
    assert f"`benchmark: {catalog.CHAT_BENCHMARK}`" in DOC
    assert f"`benchmark: {catalog.EMBEDDING_BENCHMARK}`" in DOC


def test_named_files_exist():
    for path in re.findall(r"`((?:planner|sources|scripts|tests|profiles)/[\w./-]+\.(?:py|yaml))`", DOC):
        assert (ROOT / path).exists(), path
