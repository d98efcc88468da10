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
    # A's 2 of 2 rows and B's 0 of 1: every source counting once, (100 + 0) / 2 = 50 %; of all rows 2 of 3 = 67 %
    assert "holds 50.0 % of a held-out source's rows, every source counting once (66.7 % of all its held-out rows)" in s
    assert "misses the target for decode error, range coverage" in s


def test_range_coverage_counts_every_source_once():
    """A 36-row source with 34 rows inside and eight one-row sources, two inside: of all rows (34 + 2) / 44 =
    81.8 % (inside 75-85 %), every source counting once (34/36 + 2 × 1 + 6 × 0) / 9 = 32.7 %. Rows of one
    source in two regimes pool: C's 1 of 2 and 1 of 2 are one source at 50 %."""
    cells = {("ollama", "decode", "A"): (34, 36)}
    cells |= {("ollama", "decode", f"u{i}"): (int(i < 2), 1) for i in range(8)}
    rows_pct, src_pct = R.coverage_shares(cells)
    assert rows_pct == pytest.approx(36 / 44 * 100)
    assert src_pct == pytest.approx((34 / 36 + 2) / 9 * 100)
    assert src_pct == pytest.approx(32.72, abs=0.005)
    two = {("ollama", "decode", "C"): (1, 2), ("ollama", "decode_deep", "C"): (1, 2), ("ollama", "decode", "D"): (1, 1)}
    assert R.coverage_shares(two) == pytest.approx((60.0, 75.0))


def test_same_chip_spread_is_each_sources_gap_to_its_peers_median_on_that_chip():
    """Three llama.cpp decode sources on one chip, predicted 10 tok/s: A measures 10 (offset 0), B 12 (log 1.2),
    C 8 (log 0.8); D alone on another chip has no peer. A's peers' median is log(sqrt(1.2 * 0.8)) = log 0.9798:
    gap |1 / 0.9798 - 1| = 2.06 %; B's peers A, C: median log sqrt(0.8) -> |1.2 / 0.8944 - 1| = 34.16 %; C's peers
    A, B: |0.8 / 1.0954 - 1| = 26.97 %. Mean (2.06 + 34.16 + 26.97) / 3 = 21.06 % over 3 pairs."""
    from calibration import fit as F
    from planner import profiles
    from tests.calibration.test_fit import _geo

    c, other = profiles.resolve_chip("m2-max-38gpu"), profiles.resolve_chip("m4-max-40gpu")

    def rec(src, value, chip=c):
        return F.FitRecord(runtime="llama.cpp", chip=chip, geo=_geo(), phase="decode", prompt=0, gen=1, depth=0,
                           batch=1, value=value, source=src)

    held = [("llama.cpp", rec("A", 10.0), 10.0), ("llama.cpp", rec("B", 12.0), 10.0),
            ("llama.cpp", rec("C", 8.0), 10.0), ("llama.cpp", rec("D", 5.0, other), 10.0)]
    (n, gap), = R.same_chip_spread(held).values()
    assert n == 3
    assert gap == pytest.approx((abs(1 / (0.96 ** 0.5) - 1) + abs(1.2 / 0.8 ** 0.5 - 1) + abs(0.8 / 1.2 ** 0.5 - 1))
                                / 3 * 100)
    assert gap == pytest.approx(21.06, abs=0.01)
    cov = {("llama.cpp", "decode", s): (1, 1) for s in "ABCD"}
    (s,) = R.summary_sentences(held, cov)
    assert "Sources measuring the same chip decode 21 % apart from each other's median (3 source-chip pairs)." in s
