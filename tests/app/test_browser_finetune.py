"""The fine-tune page in a real headless browser: the verdict, limits and command line are those of
`plan finetune` (planner.finetune.plan_finetune) for the same inputs, and the memory chart is drawn."""

from __future__ import annotations

import pytest

from tests.app.test_browser import ARTIFACTS, TIMEOUT_MS, _open_page, _pick, _wait_idle, browser, page, server  # noqa: F401 (fixtures)

pytestmark = pytest.mark.requires_browser


def test_finetune_page(page):  # noqa: F811
    from playwright.sync_api import expect

    from app.finetune_page import PAGE_TITLE, summary_lines
    from planner.finetune import FinetuneRequest, plan_finetune

    expect.set_options(timeout=TIMEOUT_MS)
    _open_page(page, PAGE_TITLE)
    # defaults: llama-3.1-8b, no chip, 32 GB, 4-bit QLoRA, 2048 x 4, 16 layers, rank 8
    p = plan_finetune(FinetuneRequest(model="llama-3.1-8b", ram=32.0, quant="4bit", dataset_tokens=2_000_000))
    alert = page.get_by_test_id("stAlert").first
    first = summary_lines(p)[0].replace("**", "")
    expect(alert).to_contain_text(first.split(";")[0])
    expect(alert).to_contain_text(f"Largest batch at 2,048 tokens: {p.max_batch}")
    expect(page.locator(".js-plotly-plot").first).to_contain_text("Peak memory of one optimizer step")
    expect(page.get_by_test_id("stCode").first).to_contain_text("mlx_lm.lora --model")

    # checkpointing on: the verdict follows the core again
    page.get_by_test_id("stCheckbox").get_by_text("Gradient checkpointing").click()
    _wait_idle(page)
    p2 = plan_finetune(FinetuneRequest(model="llama-3.1-8b", ram=32.0, quant="4bit", grad_checkpoint=True,
                                       dataset_tokens=2_000_000))
    expect(page.get_by_test_id("stAlert").first).to_contain_text(summary_lines(p2)[0].replace("**", "").split(";")[0])
    expect(page.get_by_test_id("stCode").first).to_contain_text("--grad-checkpoint")
    assert page.get_by_test_id("stException").count() == 0
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "app-finetune.png"), full_page=True)
