"""planner/format.py: how answers word their inputs."""

from planner.format import cached_label


def test_a_cached_share_below_one_never_reads_as_the_whole_prompt():
    # qa: --cached-prefix 0.9999 was stated "100 % of each prompt cached" (the TTFT still prefills a token, and 1 is
    # refused as an input)
    assert cached_label(0.75) == "75 % of each prompt cached"
    assert cached_label(0) == "no prompt cached"
    assert cached_label(0.9999) == "99.99 % of each prompt cached"
    for share in (0.99999, 0.9999999, 1 - 1e-15):
        assert not cached_label(share).startswith("100 ")
