"""Issue 32, options documented once: docs/cli.md is generated from every command's --help (and current), every
command's --help ends with an example, and the examples run."""

from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path

import pytest

from cli.commands import EXAMPLES, app
from cli.main import main

ROOT = Path(__file__).resolve().parents[2]
RUNNABLE = ["", "predict", "recommend", "buy", "cluster", "models", "finetune"]  # no Mac, server or download


def _gen():
    spec = importlib.util.spec_from_file_location("gen_cli_docs", ROOT / "scripts" / "gen_cli_docs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_docs_cli_md_is_generated_and_current():
    assert _gen().main(["--check"]) == 0, "run python scripts/gen_cli_docs.py"


def test_every_command_has_an_example_at_the_end_of_its_help():
    commands = {c.name for c in app.registered_commands}
    assert commands and set(EXAMPLES) == commands | {""}
    gen = _gen()
    for name, example in EXAMPLES.items():
        page = gen.help_page(name)
        assert page.rstrip().endswith(f"Example:\n    {example}"), name
        assert example.startswith("plan" + (f" {name}" if name else ""))
        # the example uses only this command's own flags
        for flag in re.findall(r"(?<!\S)(--[a-z][a-z0-9-]*)", example):
            assert re.search(rf"(^|[\s,/]){re.escape(flag)}\b", page.split("Example:")[0], re.M), (name, flag)


@pytest.mark.parametrize("name", RUNNABLE)
def test_the_example_runs(name, capsys):
    argv = shlex.split(EXAMPLES[name])[1:]
    assert main(argv) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.strip()
