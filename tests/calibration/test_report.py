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


def test_summary_sentence_states_source_mean_error_bias_and_coverage():
    """Two held-out llama.cpp sources, decode: A predicted 1.1x (2 rows), B 0.8x (1 row). Every source counts
    once: MAPE (10 + 20) / 2 = 15 %, bias median(+10, −20) = −5 %; coverage 2 of 3 rows = 67 %: the 10 % target
    and the 75-85 % coverage are missed, the ±5 % bias is met."""
    from calibration import fit as F
    from planner import profiles
    from tests.calibration.test_fit import _geo

    c = profiles.resolve_chip("m2-max-38gpu")

    def rec(src):
        return F.FitRecord(runtime="llama.cpp", chip=c, geo=_geo(), phase="decode", prompt=0, gen=1, depth=0,
                           batch=1, value=10.0, source=src)

    held = [("llama.cpp", rec("A"), 11.0), ("llama.cpp", rec("A"), 11.0), ("llama.cpp", rec("B"), 8.0)]
    cov = {("llama.cpp", "decode", "A"): (2, 2), ("llama.cpp", "decode", "B"): (0, 1)}
    (s,) = R.summary_sentences(held, cov)
    assert "decode 15.0 % off on average over 2 source groups (median bias -5.0 %, + = too fast; target 10 %)" in s
    assert "holds 67 % of the held-out rows" in s
    assert "misses the target for decode error, range coverage" in s
