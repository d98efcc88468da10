"""app/models_page.py without a browser: the table rows and the quality-vs-speed chart hold the core's numbers."""

from __future__ import annotations

import pytest

pytest.importorskip("plotly")

from app.models_page import quality_speed_chart, table_rows  # noqa: E402
from planner import profiles  # noqa: E402
from planner.format import fmt_tok_s  # noqa: E402
from planner.models import Query, what_runs  # noqa: E402


def test_chart_points_are_the_scored_rows():
    r = what_runs(Query(ram_gb=64, chip=profiles.resolve_chip("m4-max-40gpu"), task="chat"))
    fig = quality_speed_chart(r)
    pts = {(t, x, y) for tr in fig.data for t, x, y in zip(tr.hovertext, tr.x, tr.y)}  # every name in the hover
    want = {(x.model, x.decode_tok_s_per_user, x.score) for x in r.rows if x.score is not None}
    assert pts == want and want
    assert fig.layout.xaxis.type == "log" and "MMLU-Pro" in fig.layout.yaxis.title.text


def test_without_chip_no_speed_columns_and_memory_axis():
    r = what_runs(Query(ram_gb=16))
    rows = table_rows(r, r.rows)
    assert rows and all("decode tok/s" not in d and "prefill tok/s" not in d for d in rows)
    assert "memory left" in quality_speed_chart(r).layout.xaxis.title.text


def test_table_has_the_range_column_with_a_chip():
    r = what_runs(Query(ram_gb=64, chip=profiles.resolve_chip("m4-max-40gpu"), max_params_b=9))
    d, x = table_rows(r, r.rows)[0], r.rows[0]
    assert d["decode tok/s"] == fmt_tok_s(x.decode_tok_s_per_user) and d["model"] == x.model
    if x.decode_tok_s_range is not None:
        assert d["range"] == f"{fmt_tok_s(x.decode_tok_s_range[0])}–{fmt_tok_s(x.decode_tok_s_range[1])}"


def test_chart_labels_do_not_overlap_and_log_ticks_are_labelled():
    """Issue 35: model names printed on top of each other; a log axis printed bare minor digits between decades."""
    import math

    r = what_runs(Query(ram_gb=64, chip=profiles.resolve_chip("m4-max-40gpu"), task="chat"))
    fig = quality_speed_chart(r)
    shown = [(math.log10(x), y) for tr in fig.data for t, x, y in zip(tr.text, tr.x, tr.y) if t]
    xs = [math.log10(x) for tr in fig.data for x in tr.x]
    ys = [y for tr in fig.data for y in tr.y]
    wx, wy = max(xs) - min(xs), max(ys) - min(ys)
    assert len(shown) >= 3
    for i, (x1, y1) in enumerate(shown):   # no two labels within a label's box (6 % of the x span, 4 % of y)
        for x2, y2 in shown[i + 1:]:
            assert abs(x1 - x2) > 0.06 * wx or abs(y1 - y2) > 0.04 * wy
    tv = list(fig.layout.xaxis.tickvals)
    assert all(round(v / 10 ** math.floor(math.log10(v)), 6) in (1, 2, 5) for v in tv)
    assert len(fig.layout.xaxis.ticktext) == len(tv) and min(tv) <= min(10 ** x for x in xs)
