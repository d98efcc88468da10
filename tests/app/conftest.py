"""A failing browser test's report carries the Streamlit server's last output (the page alone rarely says why)."""

from __future__ import annotations

import pytest


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.failed and "page" in getattr(item, "fixturenames", ()):
        from tests.app.test_browser import BROWSER_EVENTS, SERVER_LOGS

        if BROWSER_EVENTS:
            report.sections.append(("browser events", "\n".join(BROWSER_EVENTS[-20:])))
        if SERVER_LOGS and SERVER_LOGS[-1].exists():
            report.sections.append(("streamlit server log (tail)", SERVER_LOGS[-1].read_text(errors="replace")[-4000:]))
    return report
