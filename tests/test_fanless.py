"""planner/fanless.py: a chip and RAM sold in a fanless Mac carry the measured sustained slowdown, nothing else does."""

from __future__ import annotations

import csv
from datetime import date
from pathlib import Path

import pytest

from planner import fanless, profiles
from planner.plan import PlanRequest, plan

DATA = Path(__file__).resolve().parent.parent / "calibration" / "data"


def _rows() -> dict[int, dict]:
    out = {}
    for f in DATA.glob("measured_benchmarks_*.csv"):
        with f.open(newline="") as fh:
            out.update({int(r["row_id"]): r for r in csv.DictReader(fh)})
    return out


def test_every_run_is_the_measured_rows_it_names():
    """The table's rates are the dataset's rows, read again (same value, same page), not typed twice."""
    rows = _rows()
    for run in profiles.fanless_table().runs:
        first, later = (rows[i] for i in run.rows)
        assert float(first["value"]) == run.first_tok_s and float(later["value"]) == run.later_tok_s
        assert first["source"] == later["source"] == run.source
        assert "Air" in first["device"] + first["notes"] + first["source"]


def test_slowdown_range_by_hand():
    """1 - 5.77/8.67 = 0.33449 (phi4 14B, 5th prompt vs 1st, M2 Air); 1 - 18.859/21.086 = 0.10562 (M4 Air, mean of
    5 trials vs the 1st); 1 - 23.52/28.57 = 0.17676 (M4 Air, last tg512 vs the first), inside them: the note's
    11-33 %."""
    f = fanless.fanless(profiles.fanless_table(), ["Mac mini", "MacBook Air 13"])
    assert f is not None and f.products == ["MacBook Air 13"] and f.runs == 3
    assert f.slowdown == pytest.approx((1 - 18.859 / 21.086, 1 - 5.77 / 8.67))
    assert "11–33 %" in fanless.note(f)


def test_only_macbook_airs_are_fanless():
    table = profiles.fanless_table()
    products = {m.product for m in profiles.all_macs()}
    fanless_ones = {p for p in products if fanless.fanless(table, [p])}
    assert fanless_ones == {p for p in products if p.startswith("MacBook Air")} != set()


def test_a_chip_and_ram_sold_in_a_macbook_air_says_so_and_no_other_does():
    def notes(**kw):
        return [n for n in plan(PlanRequest(model="qwen3-8b", **kw)).notes if "no fan" in n]

    assert len(notes(chip="M4", ram=24)) == 1  # MacBook Air 13 M4 24 GB
    assert notes(chip="M4 Max", ram=64) == []  # MacBook Pro and Mac Studio only
    assert notes(ram=24) == []  # no chip, no product


def test_a_slower_later_run_is_a_positive_slowdown():
    r = fanless.SustainedRun(mac="m", runtime="r", model="x", first_tok_s=10, later_tok_s=8, what="w", rows=[1],
                             source="s")
    assert r.slowdown == pytest.approx(0.2)
    t = fanless.FanlessTable(id="f", name="n", products=["MacBook Air"], runs=[r], sources=["s"], verified=date.today())
    assert fanless.fanless(t, ["MacBook Pro 14"]) is None
