"""planner/setups.py: serving-setup flags that do not apply to the chosen runtimes are refused with one line."""

import pytest

from cli.main import main


@pytest.mark.parametrize("args,msg", [
    (["--app-version", "0.5"], "--app-version applies to Ollama or LM Studio"),
    (["--guardrail", "strict", "-r", "ollama"], "--guardrail applies to LM Studio"),
    (["--draft-model", "llama-3.2-1b", "-r", "ollama"], "--draft-model applies to llama.cpp and mlx-lm"),
    (["--draft-model", "llama-3.2-1bb"], "unknown draft model --draft-model 'llama-3.2-1bb'"),
    (["--image-size", "640x480"], "--image-size needs --images"),
    # was ignored: the wait after the thinking needs the chip's decode speed, and without --chip there is none
    (["--thinking-tokens", "2000"], "--thinking-tokens needs --chip"),
])
def test_flags_that_do_not_apply_are_one_clear_line(capsys, args, msg):
    assert main(["--model", "llama-3.1-8b", "--ram", "16", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert msg in err and "\n" not in err


def test_thinking_tokens_with_a_chip_are_honoured_in_the_bottom_line(capsys):
    """With a chip the stated budget is answered (the wait after that many thinking tokens), so the refusal above is
    only of an option that would be ignored."""
    assert main(["--model", "qwen3-8b", "--chip", "M4 Max", "--ram", "64", "--thinking-tokens", "2000"]) == 0
    assert "after 2,000 thinking tokens" in capsys.readouterr().out
