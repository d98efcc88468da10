"""docs/adding-a-chip.md is true: its CSV row is the shipped row, the generator turns it into the YAML the page
shows, and that is the shipped chip profile."""

from __future__ import annotations

import csv
import importlib.util
import io
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "adding-a-chip.md").read_text(encoding="utf-8")
DATA = ROOT / "calibration" / "data"


def _block(lang: str, n: int = 0) -> str:
    return re.findall(rf"```{lang}\n(.*?)```", DOC, flags=re.DOTALL)[n]


def _generator():
    spec = importlib.util.spec_from_file_location("gen_hardware_profiles", ROOT / "scripts" / "gen_hardware_profiles.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_example_row_is_the_shipped_row():
    header, row = _block("csv").strip().splitlines()
    shipped = (DATA / "apple_skus.csv").read_text(encoding="utf-8").splitlines()
    assert header == shipped[0] and row in shipped


def test_example_row_generates_the_shown_profile(tmp_path):
    (tmp_path / "apple_skus.csv").write_text(_block("csv"), encoding="utf-8")
    products = (DATA / "mac_products.csv").read_text(encoding="utf-8").splitlines()[0] + "\n"
    (tmp_path / "mac_products.csv").write_text(products, encoding="utf-8")  # no Macs: the chip alone
    _generator().main(["--data-dir", str(tmp_path), "--out-dir", str(tmp_path / "out")])
    (made,) = (tmp_path / "out" / "chips").glob("*.yaml")
    assert made.name == "m4-max-40gpu.yaml"
    made_doc = yaml.safe_load(made.read_text(encoding="utf-8"))
    shown = yaml.safe_load(_block("yaml"))
    assert {k: made_doc[k] for k in shown} == shown
    assert made.read_text(encoding="utf-8") == (ROOT / "profiles" / "chips" / made.name).read_text(encoding="utf-8")


def test_stated_csv_columns_exist():
    cols = next(csv.reader(io.StringIO(_block("csv"))))
    for name in re.findall(r"`(\w+)`", DOC):
        if name.endswith(("_GB", "_GBps", "_tflops", "_basis")) or name in ("source", "status"):
            assert name in cols, name


def test_named_files_exist():
    for path in re.findall(r"`((?:planner|scripts|tests|profiles|calibration)/[\w./-]+\.(?:py|yaml|csv))`", DOC):
        assert (ROOT / path).exists(), path
