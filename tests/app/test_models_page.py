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
    pts = {(t, x, y) for tr in fig.data for t, x, y in zip(tr.text, tr.x, tr.y)}
    want = {(x.model, x.decode_tok_s, x.score) for x in r.rows if x.score is not None}
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
    assert d["decode tok/s"] == fmt_tok_s(x.decode_tok_s) and d["model"] == x.model
    if x.decode_tok_s_range is not None:
        assert d["range"] == f"{fmt_tok_s(x.decode_tok_s_range[0])}–{fmt_tok_s(x.decode_tok_s_range[1])}"
