"""Reasoning models: the wait for the answer's first token after the thinking (issue 35)."""

from __future__ import annotations

import pytest

from cli.plan import _recommendation, run_plan
from planner.advice import THINKING_BUDGETS, answer_wait
from planner.format import fmt_seconds
from planner.plan import PlanRequest


def test_answer_wait_by_hand():
    # 2 s to the first thinking token, then 4,000 thinking tokens at 40 tok/s: 2 + 100 = 102 s
    assert answer_wait(2.0, 40.0, 4000) == pytest.approx(102.0)
    assert answer_wait(2.0, 40.0, 0) == pytest.approx(2.0)


def test_a_stated_budget_gives_the_wait_at_the_bottom_lines_option():
    given = {"model": "qwen3-8b", "chip": "M4 Pro", "ram": 48, "thinking_tokens": 3000}
    sp = _recommendation(PlanRequest(**given)).options[0].speed
    text = run_plan(given)
    want = fmt_seconds(sp.ttft_s + 3000 / sp.decode_tok_s_per_user)
    assert f"after 3,000 thinking tokens the answer's first token comes at {want}" in text


def test_a_reasoning_model_shows_the_budgets_and_a_chat_model_does_not():
    text = run_plan({"model": "deepseek-r1-distill-qwen-14b", "chip": "M4 Pro", "ram": 48})
    assert "Thinking:" in text and all(f"{t:,} tokens →" in text for t in THINKING_BUDGETS)
    assert "Thinking:" not in run_plan({"model": "llama-3.1-8b", "chip": "M4 Pro", "ram": 48})
