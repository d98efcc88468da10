"""What the user typed, honoured (issue 35): --ram with a unit."""

from __future__ import annotations

import pytest

from cli.main import main, ram_units


@pytest.mark.parametrize("typed", ["16GB", "16 GB", "16GiB", "16gb", "16G"])
def test_ram_with_a_unit_is_the_same_mac_as_without(typed, capsys):
    # Apple's "16 GB" of unified memory is 16 GiB, the unit --ram counts in: every spelling is --ram 16
    assert ram_units(["--model", "x", "--ram", typed]) == ["--model", "x", "--ram", "16"]
    assert ram_units([f"--ram={typed}"]) == ["--ram=16"]
    assert main(["--model", "qwen3-0.6b", "--ram", typed, "--json"]) == 0
    with_unit = capsys.readouterr().out
    assert main(["--model", "qwen3-0.6b", "--ram", "16", "--json"]) == 0
    assert capsys.readouterr().out == with_unit


def test_ram_in_another_unit_is_refused_in_one_line(capsys):
    assert main(["--model", "qwen3-0.6b", "--ram", "16TB"]) == 2
    err = capsys.readouterr().err
    assert "--ram" in err and len(err.strip().splitlines()) == 1


def test_the_ram_unit_expression_runs_only_on_values_with_a_g():
    """cli.main._ram_unit skips the expression for values without 'g'/'G': under IGNORECASE no other character
    matches a 'g', so the answer is the expression's on every value."""
    import re

    from cli.main import _RAM_UNIT, _ram_unit

    assert [c for c in map(chr, range(0x110000)) if re.fullmatch("(?i)g", c)] == ["G", "g"]
    full = re.compile(_RAM_UNIT, re.IGNORECASE)
    for v in ["16", "16GB", "16 gib", " 16G ", "16gB", "64.0", "x", "g", "16 GB\n", "16.5GiB", "16 MB"]:
        got, want = _ram_unit(v), full.match(v)
        assert (got and got.group(1)) == (want and want.group(1)), v
