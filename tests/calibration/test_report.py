"""calibration.report: the README's Accuracy section is the report's own output, between its markers."""

from __future__ import annotations

import pytest

pytest.importorskip("scipy", reason="calibration.report imports the speed fit (scipy; make test installs it)")
pytestmark = pytest.mark.requires_scipy

from calibration import report as R  # noqa: E402


def test_readme_accuracy_section_is_generated_by_the_report():
    text = R.README.read_text(encoding="utf-8")
    assert text.count(R.BEGIN) == 1 and text.count(R.END) == 1
    section = text[text.index(R.BEGIN):text.index(R.END)]
    # the stated accuracy is leave-one-source-out, per source group, with the range coverage
    for needle in ("leave-one-source-out (refit without the source group", "LOSO per source group",
                   "80 % likely range: coverage of held-out rows"):
        assert needle in section, needle


def test_write_readme_replaces_only_the_marked_section(tmp_path):
    p = tmp_path / "README.md"
    p.write_text(f"# T\n\nbefore\n{R.BEGIN}\nold\n{R.END}\nafter\n", encoding="utf-8")
    R.write_readme(["table line"], p)
    out = p.read_text(encoding="utf-8")
    assert out.startswith("# T\n\nbefore\n") and out.endswith("\nafter\n")
    assert "table line" in out and "\nold\n" not in out
