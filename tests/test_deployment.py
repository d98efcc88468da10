"""planner.deployment: the one place a command's Mac is resolved (rules, each on both sides)."""

from __future__ import annotations

import pytest

from planner import profiles
from planner.deployment import resolve_bin, resolve_mac
from planner.errors import InputError, UnknownProfileError


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


# --------------------------------------------------------------------------- the quantization (one rule)
def test_a_quant_of_the_other_format_is_answered_at_the_same_bit_class_with_a_structured_note():
    """Q4_K_M asked of mlx-lm is mlx's 4-bit (4bit -> mlx-4bit-g64), 8bit asked of llama.cpp is Q8_0: the size and
    speed follow the bits, not the file. The note is its facts (code + fields), worded with input markers only."""
    from planner.deployment import resolve_quant

    mlx, gguf = profiles.load_runtime("mlx-lm"), profiles.load_runtime("llama.cpp")
    q, conv = resolve_quant("Q4_K_M", mlx)
    assert q.id == profiles.load_quant("4bit", "mlx").id == "mlx-4bit-g64"
    assert conv is not None and (conv.code, conv.asked, conv.asked_format, conv.bits, conv.answered) == (
        "quant_converted", "Q4_K_M", "gguf", 4, "mlx-4bit-g64")
    assert "[[quant]] Q4_K_M" in conv.text() and "--" not in conv.text()
    q, conv = resolve_quant("8bit", gguf)
    assert q.id == "Q8_0" and conv is not None and conv.bits == 8
    assert resolve_quant("Q4_K_M", gguf) == (profiles.load_quant("Q4_K_M", "gguf"), None)
    _, conv = resolve_quant("mlx-4bit-g64", gguf, pinned_by="mlx-community/Qwen3-8B-4bit")  # no quant was asked
    assert conv is not None and conv.text().startswith("mlx-community/Qwen3-8B-4bit holds mlx-4bit-g64")
    assert "[[quant]]" not in conv.text()


def test_asked_quants_for_several_runtimes_convert_only_when_no_runtime_takes_them():
    """Q4_K_M for llama.cpp + mlx-lm: the asked GGUF format chose llama.cpp, mlx-lm is left out with a note;
    Q4_K_M for mlx-lm alone: converted (never a dead end)."""
    from planner.deployment import resolve_quants

    gguf, mlx = profiles.load_runtime("llama.cpp"), profiles.load_runtime("mlx-lm")
    got, notes = resolve_quants(["Q4_K_M"], [gguf, mlx])
    assert [q.id for q in got["llama.cpp"]] == ["Q4_K_M"] and got["mlx-lm"] == []
    assert len(notes) == 1 and "mlx-lm" in notes[0] and "skipped" in notes[0]
    got, notes = resolve_quants(["Q4_K_M"], [mlx])
    assert [q.id for q in got["mlx-lm"]] == ["mlx-4bit-g64"] and "same 4-bit class" in notes[0]
    with pytest.raises(UnknownProfileError, match="did you mean Q4_K_M"):
        resolve_quants(["Q4_K_Mx"], [mlx])  # unknown everywhere: refused with close matches


# --------------------------------------------------------------------------- the runtime (one rule)
@pytest.mark.parametrize("runtime, name, files, quant, want", [
    (None, "mlx-community/Qwen3-8B-4bit", None, None, "mlx-lm"),      # an MLX name pins mlx-lm
    (None, "bartowski/Qwen_Qwen3-8B-GGUF", None, "4bit", "llama.cpp"),  # a GGUF name pins llama.cpp, over the quant
    (None, "qwen3-8b", None, None, "llama.cpp"),                       # nothing pinned: llama.cpp
    (None, "qwen3-8b", None, "4bit", "mlx-lm"),                        # an MLX-only quant pins mlx-lm
    (None, "qwen3-8b", None, "Q4_K_M", "llama.cpp"),
    (None, "My-Folder", "mlx-lm", None, "mlx-lm"),                     # an MLX folder
    (None, "x-Q4_K_M.gguf", "llama.cpp", "4bit", "llama.cpp"),          # a GGUF file, whatever the quant
    ("llama.cpp", "mlx-community/Qwen3-8B-4bit", None, None, "llama.cpp"),  # asked: as asked (the quant rule converts)
])
def test_without_a_runtime_the_format_the_model_pins_picks_it(runtime, name, files, quant, want):
    from planner.deployment import resolve_runtime

    rt, note = resolve_runtime(runtime, name, files, quant)
    assert rt.id == want
    assert (note is not None) == (runtime is None and want == "mlx-lm")  # said when it is not the plain default
    if note:
        assert "[[runtime]]" in note and "--" not in note


def test_models_sized_together_pin_runtime_and_quant_only_when_their_names_agree():
    from planner.deployment import pinned_by_names

    assert pinned_by_names(["mlx-community/Qwen3-8B-4bit"], None)[:2] == (["mlx-lm"], "mlx-4bit-g64")
    assert pinned_by_names(["mlx-community/Qwen3-8B-4bit", "qwen3-8b"], None)[:2] == (None, None)
    assert pinned_by_names(["mlx-community/Qwen3-8B-4bit"], ["llama.cpp"])[:2] == (["llama.cpp"], None)


def test_every_asked_quant_is_answered_somewhere():
    """Q4_K_M and 8bit asked of llama.cpp alone: both answered (8bit as Q8_0, said), none silently dropped; of
    llama.cpp and mlx-lm: each by the runtime of its own format, nothing converted."""
    from planner.deployment import resolve_quants

    gguf, mlx = profiles.load_runtime("llama.cpp"), profiles.load_runtime("mlx-lm")
    got, notes = resolve_quants(["Q4_K_M", "8bit"], [gguf])
    assert [q.id for q in got["llama.cpp"]] == ["Q4_K_M", "Q8_0"] and len(notes) == 1 and "8bit" in notes[0]
    got, notes = resolve_quants(["Q4_K_M", "8bit"], [gguf, mlx])
    assert ([q.id for q in got["llama.cpp"]], [q.id for q in got["mlx-lm"]]) == (["Q4_K_M"], ["mlx-8bit-g64"])
    assert notes == []


def test_an_asked_quant_is_echoed_without_the_spaces_around_it():
    # qa: `-q " 8bit"` on llama.cpp said "--quant  8bit is a mlx format" (the spaces the name is read without)
    from planner import profiles
    from planner.deployment import resolve_quant, resolve_runtime

    _, conv = resolve_quant(" 8bit ", profiles.load_runtime("llama.cpp"))
    assert conv is not None and conv.asked == "8bit" and "[[quant]] 8bit is" in conv.text()
    _, note = resolve_runtime(None, "qwen3-8b", quant=" 4bit")
    assert note is not None and note.startswith("[[quant]] 4bit is an mlx format")
