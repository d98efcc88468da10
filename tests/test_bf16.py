"""planner/bf16.py: MLX options of a bfloat16 model on an M1 or M2 (no native bfloat16) carry the measured gain of
a float16 build; nothing else does."""

from __future__ import annotations

from datetime import date

import pytest

from planner import bf16, profiles
from planner.plan import PlanRequest, plan


def _notes(**kw) -> list[str]:
    return [n for n in plan(PlanRequest(**kw)).notes if "bfloat16" in n]


def test_gains_by_hand():
    """oMLX #3277, M1 Ultra decode 28.29 -> 32.26 tok/s: 32.26 / 28.29 - 1 = 14.03 %; Rapid-MLX #3154, M2 Max
    prefill 133 -> 178 tok/s: 178 / 133 - 1 = 33.83 %. One run per phase: each range is that run's gain."""
    g = bf16.gains(profiles.bf16_table())
    assert g["decode"] == pytest.approx((32.26 / 28.29 - 1,) * 2)
    assert g["prefill"] == pytest.approx((178 / 133 - 1,) * 2)
    text = bf16.note(profiles.bf16_table(), "M1")
    assert "prefilled 34 % faster and decoded 14 % faster in 2 public A/B runs on M1/M2 Macs" in text
    assert "mlx_lm.convert --dtype float16" in text


def test_every_run_is_on_a_generation_that_emulates_bfloat16():
    table = profiles.bf16_table()
    assert table.generations == ["M1", "M2"]
    for r in table.runs:
        assert any(f" {g} " in f" {r.mac} " for g in table.generations), r.mac
        assert r.fp16_tok_s > r.bf16_tok_s  # the A/Bs the note cites measured a gain


def test_an_mlx_plan_of_a_bfloat16_model_on_m1_or_m2_says_so():
    assert profiles.load_model("qwen3-8b").config.torch_dtype == "bfloat16"
    assert len(_notes(model="qwen3-8b", chip="M1 Max", ram=64)) == 1
    assert len(_notes(model="qwen3-8b", chip="M2 Ultra", ram=192, runtimes=["mlx-lm"])) == 1


def test_no_note_on_m3_and_later_without_mlx_or_for_a_float16_model():
    assert _notes(model="qwen3-8b", chip="M3 Max", ram=64) == []  # native bfloat16 from M3 on
    assert _notes(model="qwen3-8b", chip="M1 Max", ram=64, runtimes=["llama.cpp", "ollama"]) == []  # GGUF: no bf16
    assert profiles.load_model("llama-2-7b").config.torch_dtype == "float16"
    assert _notes(model="llama-2-7b", chip="M1 Max", ram=64) == []  # its builds are float16
    assert _notes(model="qwen3-8b", ram=64) == []  # no chip


def test_applies_needs_all_three():
    t = bf16.Bf16Table(id="b", name="n", generations=["M1"], sources=["s"], verified=date.today(), runs=[
        bf16.DtypeRun(mac="M1", engine="e", model="m", phase="decode", bf16_tok_s=10, fp16_tok_s=12, what="w",
                      source="s")])
    assert bf16.applies(t, "M1", "bfloat16", True)
    assert not bf16.applies(t, "M2", "bfloat16", True)
    assert not bf16.applies(t, "M1", "float16", True)
    assert not bf16.applies(t, "M1", "bfloat16", False)
    assert bf16.gains(t) == {"decode": pytest.approx((0.2, 0.2))}
    assert "decoded 20 % faster in 1 public A/B run on" in bf16.note(t, "M1")


def test_buy_flags_mlx_rows_on_m1_and_m2_only():
    """plan buy: every MLX row of a bfloat16 model on an M1 or M2 carries the flag (14-34 %: the two runs' gains),
    no other row does."""
    from planner.buy import buy
    from planner.workload import Targets, custom_workload

    wl = custom_workload("chat").model_copy(update={"targets": Targets()})
    r = buy(["qwen3-8b"], wl, include_discontinued=True, runtimes=["mlx-lm", "llama.cpp"])
    flag = "no native bfloat16: a float16 MLX build ran 14–34 % faster (measured)"
    old = [x for x in r.per_mac if x.chip_label.startswith(("M1", "M2"))]
    assert old and any(x.runtime == "mlx-lm" for x in old)
    for x in r.per_mac:
        want = x.runtime == "mlx-lm" and x.chip_label.startswith(("M1", "M2"))
        assert (flag in x.flags) == want, (x.label, x.runtime, x.flags)
