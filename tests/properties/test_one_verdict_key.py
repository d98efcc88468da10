"""One name for one fact (issue 32, "One answer everywhere"): the memory verdict is the key ``verdict`` in every
command's --json (schema_version "4"). It was ``fit_verdict`` in `plan predict` and `plan serve`; `plan` and
`recommend` group it with its reason and headroom (``fit.verdict``), the row tables (`buy`, `models`,
`models --installed`, `cluster` nodes) carry it on the row; the key is the same word everywhere.

Every command is run in-process through cli.main with --json, as from the command line (its answers, and its
"no" answers with their closest options), and its JSON is walked: at least one ``verdict`` key, each holding one of
the four verdicts, and no other key holding a verdict, nor the retired ``fit_verdict``, anywhere. The result
models of the commands not run here (running servers, installed files) are walked through their JSON Schema.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from typing import Any

import pytest

from cli.contract import SCHEMA_VERSION
from cli.main import main
from planner.search import speed_available

VERDICTS = {"fits", "tight", "raise-limit", "no-fit"}
RETIRED = {"fit_verdict"}   # schema_version 3's name in `plan predict` and `plan serve`
MAC = ["--chip", "M4 Max", "--gpu-cores", "40", "--ram", "64"]
SERVE = ["--no-sweep", "--duration", "60s", "--rate", "1/min"]
COMMANDS = {
    "plan": ["--model", "llama-3.1-8b", *MAC],
    "plan (no fit)": ["--model", "llama-3.3-70b", "--chip", "M4 Pro", "--ram", "24"],
    "predict": ["predict", "--model", "llama-3.1-8b", *MAC, "--runtime", "llama.cpp", "--quant", "Q4_K_M"],
    "recommend": ["recommend", "--model", "llama-3.1-8b", *MAC],
    "recommend (no fit)": ["recommend", "--model", "llama-3.3-70b", "--ram", "24", "--chip", "M4 Pro"],
    "buy": ["buy", "--model", "llama-3.1-8b"],
    "buy (over budget)": ["buy", "--model", "llama-3.1-8b", "--budget", "100"],
    "serve": ["serve", "--model", "llama-3.1-8b", *MAC, "--quant", "Q4_K_M", *SERVE],
    "models": ["models", *MAC],
    "finetune": ["finetune", "--model", "llama-3.1-8b", *MAC],
    "cluster": ["cluster", "--model", "llama-3.3-70b", "--macs", "2x Mac Studio M3 Ultra 512GB"],
}
# answers whose closest option is a price or a context, not a fitted configuration: no verdict to carry
NO_VERDICT = {"recommend (no fit)", "buy (over budget)"}


def ask(argv: list[str]) -> dict[str, Any]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main([*argv, "--json"])
    assert code == 0, (argv, out.getvalue()[:300])
    data: dict[str, Any] = json.loads(out.getvalue())
    return data


def keys(node: Any, path: str = "") -> Iterator[tuple[str, str, Any]]:
    """(path, key, value) of every key of every object in a JSON value."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield path, k, v
            yield from keys(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from keys(v, f"{path}[{i}]")


def test_the_walk_sees_every_key_so_a_stray_spelling_would_be_caught():
    # the rule below can fail: a nested fit_verdict in a list of objects is found
    found = [k for _, k, _ in keys({"a": [{"b": {"fit_verdict": "fits"}}], "verdict": "tight"})]
    assert found == ["a", "b", "fit_verdict", "verdict"]


@pytest.mark.skipif(not speed_available(), reason="speed model not installed")
@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_says_the_verdict_under_one_key(name):
    data = ask(COMMANDS[name])
    assert data["schema_version"] == SCHEMA_VERSION == "4"
    found = list(keys(data))
    verdicts = [(p, v) for p, k, v in found if k == "verdict"]
    # another key spelling the memory verdict: the retired fit_verdict, or any key holding one of the four verdicts
    # (`runtime_verdicts`, the mlx-lm-or-llama.cpp comparison, is another fact: its codes are faster/same/...)
    strays = [f"{p}.{k}" for p, k, v in found
              if k != "verdict" and (k in RETIRED or (isinstance(v, str) and v in VERDICTS))]
    assert strays == [], f"{name}: the verdict under another key: {strays}"
    assert all(v in VERDICTS for _, v in verdicts), (name, verdicts)
    if name not in NO_VERDICT:
        assert verdicts, f"{name} answers a fit but says no verdict"


def test_the_result_models_of_every_command_name_it_verdict():
    """Every property of every --json answer's schema (docs/schema, scripts/gen_schema.py) and of the commands not
    run above (`plan running`, `plan models --installed`): a key naming the memory verdict is ``verdict``
    (``runtime_verdicts`` is the runtime comparison of `plan`'s bottom line, another fact)."""
    import importlib.util
    from pathlib import Path

    from pydantic import BaseModel

    from cli.running import RunningResult
    from planner.results import Fit, ModelRow, ServeResult
    from sources.installed_fit import InstalledResult, InstalledRow

    spec = importlib.util.spec_from_file_location("gen_schema", Path(__file__).parents[2] / "scripts" / "gen_schema.py")
    assert spec and spec.loader
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)

    def props(s: Any) -> Iterator[str]:
        for _, k, v in keys(s):
            if k == "properties" and isinstance(v, dict):
                yield from v

    models: list[type[BaseModel]] = [*gen._models().values(), InstalledResult, RunningResult]
    names = {p for m in models for p in props(m.model_json_schema())}
    assert "verdict" in names and not names & RETIRED
    assert {p for p in names if "verdict" in p.lower()} <= {"verdict", "runtime_verdicts"}
    for m in (Fit, ModelRow, ServeResult, InstalledRow):
        assert "verdict" in m.model_fields, m
