"""planner.deployment: the one place a command's Mac is resolved (rules, each on both sides)."""

from __future__ import annotations

import pytest

from planner import profiles
from planner.deployment import resolve_bin, resolve_mac
from planner.errors import InputError


def _bins(name: str):
    return sorted((c for c in profiles.all_chips() if c.name == name), key=lambda c: c.gpu_cores)


def test_ram_sold_with_one_bin_names_that_bin_without_a_note():
    small, big = _bins("M3 Max")
    only_small = next(r for r in small.ram_options_gb if r not in big.ram_options_gb)
    only_big = next(r for r in big.ram_options_gb if r not in small.ram_options_gb)
    assert resolve_bin("M3 Max", None, only_small) == (small, None)
    assert resolve_bin("M3 Max", None, only_big) == (big, None)


def test_ram_sold_with_both_bins_answers_for_the_slower_with_a_note_naming_the_other():
    small, big = _bins("M3 Max")
    assert small.memory_bandwidth_gb_s != big.memory_bandwidth_gb_s
    both = sorted(set(small.ram_options_gb) & set(big.ram_options_gb))
    ram = both[0] if both else None  # no shared size: leave RAM out, which leaves both bins possible
    chip, note = resolve_bin("M3 Max", None, ram)
    assert chip == small
    assert note is not None and f"{big.gpu_cores}-core" in note and "[[gpu_cores]]" in note


def test_gpu_cores_pick_the_bin_and_contradictions_are_refused():
    small, big = _bins("M3 Max")
    assert resolve_bin("M3 Max", big.gpu_cores, None) == (big, None)
    with pytest.raises(InputError, match="gpu_cores 7"):
        resolve_bin("M3 Max", 7, None)


def test_ram_the_chip_is_not_sold_with_is_refused_naming_what_is():
    with pytest.raises(InputError, match="ram 7"):
        resolve_mac("M3 Max", None, 7)


def test_without_a_chip_the_ram_alone_and_without_both_a_refusal():
    mac = resolve_mac(None, None, 64)
    assert mac.chip is None and mac.ram_gb == 64
    with pytest.raises(InputError, match="ram"):
        resolve_mac(None, None, None)
    with pytest.raises(InputError, match="gpu_cores needs chip"):
        resolve_mac(None, 40, 64)


def test_without_ram_the_chip_bins_largest_option():
    chip = _bins("M4 Max")[-1]
    mac = resolve_mac("M4 Max", chip.gpu_cores, None)
    assert mac.ram_gb == max(chip.ram_options_gb)


def test_ram_inside_the_chips_range_that_apple_does_not_sell_is_answered_with_a_note():
    from planner.deployment import check_ram

    chip = next(c for c in _bins("M4 Pro") if c.gpu_cores == 20)
    sold = chip.ram_options_gb
    gap = next(r for r in range(min(sold), max(sold)) if r not in sold)
    mac = resolve_mac("M4 Pro", 20, gap)
    assert mac.ram_gb == gap and "does not sell" in mac.bin_note and str(sold[0]) in mac.bin_note
    assert check_ram(chip, sold[0]) is None
    with pytest.raises(InputError, match=f"ram {max(sold) * 2}"):
        check_ram(chip, max(sold) * 2)
    with pytest.raises(InputError):
        check_ram(chip, min(sold) - 1)
