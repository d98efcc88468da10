"""The "What can I run?" page in a real headless browser (Streamlit + Debian chromium via Playwright): the table
holds the same rows as `plan models --ram 64 --chip "M4 Max"` (planner.models.what_runs) and the chart rendered."""

from __future__ import annotations

import pytest

from tests.app.test_browser import ARTIFACTS, TIMEOUT_MS, _open_page, _pick, _wait_idle, browser, page, server  # noqa: F401 (fixtures)

pytestmark = pytest.mark.requires_browser


def test_what_can_i_run_page(page):  # noqa: F811
    from playwright.sync_api import expect

    from app.models_page import PAGE_TITLE, table_rows
    from planner import profiles
    from planner.models import Query, what_runs

    expect.set_options(timeout=TIMEOUT_MS)
    _open_page(page, PAGE_TITLE)
    # the page opens on an M4 Max 40-core with 64 GB, any task, 8K context, one user
    expected = what_runs(Query(ram_gb=64, chip=profiles.resolve_chip("m4-max-40gpu")))
    want = table_rows(expected, expected.rows)
    expect(page.get_by_test_id("stAlert").first).to_contain_text(f"{len(expected.rows)} models")
    rows = page.get_by_test_id("stTable").first.locator("tbody tr")
    expect(rows).to_have_count(len(want))
    for i in (0, 1, len(want) - 1):
        cells = [c.strip() for c in rows.nth(i).locator("td").all_inner_texts()]
        for col in ("model", "runtime", "quant", "decode tok/s", "range", "score", "memory left"):
            assert want[i][col] in cells, (i, col, want[i][col], cells)
    chart = page.locator(".js-plotly-plot").first
    expect(chart).to_contain_text("decode speed")
    assert chart.locator(".main-svg").count() >= 1
    assert page.get_by_test_id("stException").count() == 0

    # no chip: the speed columns go away
    _pick(page, "Chip", "(no chip: memory only)")
    expect(page.get_by_test_id("stAlert").first).to_contain_text("GB (pick a chip for speed)")
    _wait_idle(page)
    header = page.get_by_test_id("stTable").first.locator("thead")
    expect(header).not_to_contain_text("decode tok/s")
    expect(header).to_contain_text("memory left")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "app-what-can-i-run.png"), full_page=True)
