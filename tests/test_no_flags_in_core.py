"""The core speaks of inputs, never of the `plan` CLI's flags; each edge spells an input its own way.

Rule: no option of any `plan` command (collected from the typer application, every subcommand) occurs in
planner/**/*.py -- messages, notes, docstrings, field descriptions or comments -- except inside a runtime's own
command line (llama-server, mlx_lm.server, lms load ... also use `--model`, `--prompt`, `--batch-size`):

- a runtime command line is a runtime command name (RUNTIME_COMMAND) followed by its arguments, each ``-x`` or
  ``--xx`` with at most one value (a word not starting with '-', or an f-string placeholder), within one string
  literal (implicitly concatenated pieces are one literal) or one comment;
- in the modules that build launch lines (LAUNCH_MODULES), a string literal that starts with ``" -"`` is an
  argument fragment appended to such a line (``server += f" --kv-bits {kv_bits}"``) and may hold any option.

A core message names an input by a marker ``[[key]]`` (planner/inputs.py); cli/words.py spells it as the flag,
app/readings.py as the form's label, cli/questions.py as the question's argument.
"""

from __future__ import annotations

import ast
import io
import json
import re
import tokenize
from pathlib import Path

import pytest

from planner import capacity, profiles
from planner.errors import InputError, PlannerError
from planner.inputs import KEYS, MARK

ROOT = Path(__file__).resolve().parent.parent
PLANNER = ROOT / "planner"
LAUNCH_MODULES = {"recipes.py", "cluster/recipe.py", "finetune.py"}
RUNTIME_COMMAND = (r"(?:llama-(?:server|cli|bench|quantize|perplexity)|rpc-server|mlx_lm\.[a-z_]+|mlx_vlm\.[a-z_]+"
                   r"|mlx\.launch|mlx\.distributed_config|lms [a-z]+|ollama [a-z]+|convert_hf_to_gguf(?:\.py)?)")
ARG = r"(?:\s+(?:--?[A-Za-z][\w-]*(?:[ =][^\s-]\S*)?|\$\(.*?\)\S*|[^\s-]\S*/\S*))"  # -x [value] | $(...) | a path
LAUNCH_LINE = re.compile(rf"(?<![\w.-]){RUNTIME_COMMAND}{ARG}*")


def cli_flags() -> set[str]:
    """Every long option of every `plan` command (the typer application's own parameters)."""
    from typer.main import get_command

    from cli.commands import app

    out: set[str] = set()

    def walk(cmd) -> None:
        for p in getattr(cmd, "params", []):
            out.update(o for o in (*p.opts, *getattr(p, "secondary_opts", [])) if o.startswith("--"))
        for sub in getattr(cmd, "commands", {}).values():
            walk(sub)

    walk(get_command(app))
    return out


def _literal_text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    return None


def pieces(path: Path) -> list[tuple[int, str, bool]]:
    """(line, text, is a string literal) of every string literal (f-strings with ``{}`` for their values, nested
    f-strings once) and every comment of a module."""
    src = path.read_text()
    out: list[tuple[int, str, bool]] = []
    inner: set[int] = set()
    tree = ast.parse(src)
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            inner.update(id(v) for v in node.values)
            for v in node.values:  # a string inside a placeholder is a literal of its own
                if isinstance(v, ast.FormattedValue):
                    inner.update(id(n) for n in ast.walk(v.value) if isinstance(n, ast.JoinedStr | ast.Constant))
    for node in ast.walk(tree):
        text = _literal_text(node)
        if text is not None and (id(node) not in inner or isinstance(node, ast.JoinedStr)):
            out.append((node.lineno, text, True))
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.COMMENT:
            out.append((tok.start[0], tok.string, False))
    return out


def flag_mentions(text: str, flags: set[str]) -> list[tuple[int, str]]:
    return [(m.start(), m.group(0)) for m in re.finditer(r"(?<![\w-])--[a-z][a-z0-9-]*(?![\w-])", text)
            if m.group(0) in flags]


def violations(path: Path, flags: set[str], root: Path = PLANNER) -> list[str]:
    rel = path.relative_to(root).as_posix()
    bad = []
    for line, text, literal in pieces(path):
        if literal and rel in LAUNCH_MODULES and text.startswith(" -"):
            continue
        spans = [m.span() for m in LAUNCH_LINE.finditer(text)]
        for pos, flag in flag_mentions(text, flags):
            if not any(a <= pos < b for a, b in spans):
                bad.append(f"planner/{rel}:{line}: {flag} in {text.strip()[:90]!r}")
    return bad


def test_the_cli_flags_are_collected():
    flags = cli_flags()
    # the plain question's, a subcommand's and an alias of a subcommand's option are all there
    assert {"--wired-limit", "--model", "--kwh-price", "--slot-context", "--max-seq-length", "--macs"} <= flags
    assert len(flags) > 60


def test_no_cli_flag_in_the_core():
    flags = cli_flags()
    files = sorted(PLANNER.rglob("*.py"))
    assert PLANNER / "cluster" / "recipe.py" in files
    bad = [v for f in files for v in violations(f, flags)]
    assert not bad, "the core names inputs by key ([[wired_limit]], planner/inputs.py), not by flag:\n" + "\n".join(bad)


def test_every_mention_is_seen():
    """Each flag written in a core file is in a piece the check reads (no mention hides from the parser)."""
    flags = cli_flags()
    for f in sorted(PLANNER.rglob("*.py")):
        raw = len(flag_mentions(f.read_text(), flags))
        seen = sum(len(flag_mentions(t, flags)) for _, t, _ in pieces(f))
        assert seen >= raw, f"{f}: {raw} mentions, {seen} in literals and comments"


def test_the_check_fails_on_a_flag_in_a_message(tmp_path):
    flags = cli_flags()
    bad = tmp_path / "capacity.py"
    bad.write_text('def f(x):\n    raise ValueError(f"--wired-limit {x} MB must be positive")  # or --ram\n')
    launch = tmp_path / "recipes.py"
    launch.write_text('CMD = f"mlx_lm.server --model {1} --prompt-concurrency 2"\nNOTE = "give --model a catalog id"\n')
    v = violations(bad, flags, tmp_path)
    assert len(v) == 2 and ": --wired-limit in " in v[0] and ": --ram in " in v[1]   # the message and the comment
    v = violations(launch, flags, tmp_path)
    assert len(v) == 1 and "give --model" in v[0]   # the launch line's --model is the runtime's, the note's is ours


def test_every_marker_in_the_core_is_a_known_input():
    unknown = {(f.relative_to(ROOT).as_posix(), k) for f in PLANNER.rglob("*.py") for k in MARK.findall(f.read_text())
               if k not in KEYS}
    assert not unknown


def test_every_input_has_a_flag_and_a_label():
    from app.readings import LABELS
    from cli.words import FLAGS

    flags = cli_flags()
    assert set(KEYS) <= set(FLAGS) and set(KEYS) <= set(LABELS)
    for key, spelled in FLAGS.items():
        assert [w for w in spelled.split() if w.startswith("--") and w not in flags] == [], key


# ------------------------------------------------------------------------------ one error, each edge's words


def _too_large_wired_limit() -> InputError:
    with pytest.raises(InputError) as exc:
        capacity.wired_limit(16, profiles.load_macos("15"), 20000)
    return exc.value


def test_the_error_carries_its_input():
    e = _too_large_wired_limit()
    assert e.fields["input"] == "wired_limit"
    assert e.template == "[[wired_limit]] 20000 MB must be between 1 and the RAM size (16384 MB)"
    assert str(e) == "wired_limit 20000 MB must be between 1 and the RAM size (16384 MB)"  # plain Python: the key


def test_the_cli_says_the_flag():
    from cli.words import said

    assert said(_too_large_wired_limit()) == "--wired-limit 20000 MB must be between 1 and the RAM size (16384 MB)"


def test_the_cli_prints_the_flag(capsys):
    from cli.main import main

    rc = main(["--model", "llama-3.1-8b", "--ram", "16", "--wired-limit", "20000"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.strip() == "plan: error: --wired-limit 20000 MB must be between 1 and the RAM size (16384 MB)"


def test_the_page_says_the_label():
    from app.readings import for_web

    assert for_web(_too_large_wired_limit()) == ("GPU wired limit (Advanced) 20000 MB must be between 1 and the RAM "
                                                 "size (16384 MB)")


def test_the_agents_say_the_argument():
    from cli.questions import QuestionError, answer

    with pytest.raises(QuestionError) as exc:
        answer("plan", {"model": "llama-3.1-8b", "ram": 16, "wired_limit_mb": 20000})
    assert str(exc.value) == "plan: wired_limit_mb 20000 MB must be between 1 and the RAM size (16384 MB)"
    assert exc.value.fields["input"] == "wired_limit"


def test_an_unknown_id_names_its_input_on_each_edge():
    from app.readings import for_web
    from cli.words import said

    with pytest.raises(PlannerError) as exc:
        profiles.load_model("llama-3.1-8bb")
    e = exc.value
    assert e.fields["input"] == "model"
    assert str(e).startswith("unknown model 'llama-3.1-8bb'; did you mean llama-3.1-8b")  # plain Python
    assert said(e).startswith("unknown model --model 'llama-3.1-8bb'; did you mean llama-3.1-8b")
    assert for_web(e).startswith("Unknown model 'llama-3.1-8bb'; did you mean llama-3.1-8b")


def test_a_note_names_its_input_on_each_edge(capsys):
    """The same note of the core (no chip given: how to get speed) as the command line, the agents and the page
    say it."""
    from app.readings import for_web
    from cli.main import main
    from cli.questions import answer

    assert main(["models", "--ram", "16", "--json"]) == 0
    cli_notes = json.loads(capsys.readouterr().out)["notes"]
    agent_notes = answer("what_runs", {"ram": 16})["notes"]
    said_cli = [n for n in cli_notes if n.startswith("speed needs a chip")]
    said_agent = [n for n in agent_notes if n.startswith("speed needs a chip")]
    assert said_cli and said_cli[0].startswith("speed needs a chip: add --chip (e.g. --chip 'M4 Max') for decode")
    assert said_agent and said_agent[0].startswith("speed needs a chip: add chip (e.g. chip 'M4 Max') for decode")
    from planner.models import Query, what_runs

    core = [n for n in what_runs(Query(ram_gb=16)).notes if n.startswith("speed needs a chip")][0]
    assert core.startswith("speed needs a chip: add [[chip]] (e.g. [[chip]] 'M4 Max')")
    assert for_web(core).startswith("Speed needs a chip: add Chip (e.g. Chip 'M4 Max') for decode")


def test_the_fine_tune_lead_on_each_edge():
    """The fitting setting of a fine-tune (gradient checkpointing) as the command line and the page name it."""
    from app.finetune_page import summary_lines
    from cli.finetune import render
    from cli.words import say
    from planner.finetune import FinetuneRequest, plan_finetune

    p = plan_finetune(FinetuneRequest(model="llama-3.1-8b", ram=32, chip="M2 Pro", gpu_cores=19))
    assert p.lead.startswith("fits with gradient checkpointing ([[grad_checkpoint]]): ")
    assert "fits with gradient checkpointing (--grad-checkpoint): " in say(render(p))
    assert any(line.startswith("It fits with gradient checkpointing (“Gradient checkpointing”): ")
               for line in summary_lines(p))


def test_the_python_api_says_the_keyword():
    import mac_llm_planner as api

    with pytest.raises(PlannerError) as exc:
        api.plan(model="llama-3.1-8b", ram=16, wired_limit_mb=20000)
    assert str(exc.value) == "wired_limit_mb 20000 MB must be between 1 and the RAM size (16384 MB)"
    assert exc.value.fields["input"] == "wired_limit"
    notes = api.what_runs(ram=16).notes
    assert any(n.startswith("speed needs a chip: add chip (e.g. chip 'M4 Max')") for n in notes)


def test_the_json_error_carries_the_input(capsys):
    from cli.main import main

    assert main(["--model", "llama-3.1-8b", "--ram", "16", "--wired-limit", "20000", "--json"]) == 2
    err = json.loads(capsys.readouterr().out)["error"]
    assert err == {"code": "input", "input": "wired_limit",
                   "message": "--wired-limit 20000 MB must be between 1 and the RAM size (16384 MB)"}


def test_a_message_naming_another_command_input_on_each_edge():
    """`plan buy --all` on the command line; the page has no such option and names its buy table."""
    from app.readings import for_web
    from cli.words import said
    from planner.buy import match_price

    with pytest.raises(InputError) as exc:
        match_price("Mac Studio M9 Max 128GB=3499")
    e = exc.value
    assert said(e) == ("--price 'Mac Studio M9 Max 128GB=3499': no such configuration in the catalog (product, chip "
                       "and RAM as in `plan buy --all`, e.g. 'Mac Studio M4 Max 128GB=3499')")
    assert for_web(e) == ("“Your prices” 'Mac Studio M9 Max 128GB=3499': no such configuration in the catalog "
                          "(product, chip and RAM as in the full table of “Which Mac should I buy?”, e.g. "
                          "'Mac Studio M4 Max 128GB=3499')")
