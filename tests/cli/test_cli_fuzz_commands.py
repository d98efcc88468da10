"""Every subcommand's options through the same generators (issue 34): numbers that are NaN, infinite, negative,
beyond Python's int-from-string limit or of the wrong kind; strings with newlines, escapes and 3,000 characters.
A run ends with exit 0, or exit 2 and one line 'plan: error: ...'; a bad value never exits 0; no traceback.
The plain question has its own, larger fuzz (test_cli_fuzz.py); this covers the others with one set of values."""

from __future__ import annotations

import contextlib
import io
import random

import pytest

from cli.main import main
from planner import profiles as P

SEED = 20261205
N_PER_COMMAND = 25

HUGE = "9" * 5000                       # beyond sys.get_int_max_str_digits()
INT_BAD = [HUGE, "1e999", "nan", "", "x", "1.5", "-5"]
FLOAT_BAD = ["nan", "inf", "-inf", "-1", HUGE, "1e999", "", "x"]
POS_FLOAT_BAD = [*FLOAT_BAD, "0"]
TEXT_BAD = ["", "\x1b[2J", "a" * 3000, "x\ny", "\u202e"]
TOKENS_BAD = ["nan", "1024:inf", "p50=100,p99=5000", "p50=x", "1" + "0" * 30, HUGE, "-1"]
RAM_GOOD, RAM_BAD = ["64", "128"], [*POS_FLOAT_BAD, "7", "65"]
PRICE = "Mac Studio M4 Max 128GB"

# command -> (fixed arguments, {option: (good values, bad values)})
COMMANDS: dict[str, tuple[list[str], dict[str, tuple[list[str], list[str]]]]] = {
    "serve": (["serve", "--model", "llama-3.1-8b", "--chip", "M4 Max", "--gpu-cores", "40", "--no-sweep",
               "--duration", "10min"], {
        "--ram": (RAM_GOOD, RAM_BAD), "--slots": (["1", "4"], [*INT_BAD, "0", "513"]),
        "--rate": (["20/min", "1/s"], ["1e999", "1e30/s", "1e-300/s", "1000000/s", "0", "x", HUGE]),
        "--duration": (["10min", "90s"], ["0.0000001s", "-1h", HUGE, "1e999", "x"]),
        "--seed": (["0", "7"], [*INT_BAD, "-1"]), "--max-ttft-p95": (["5", "0.5"], POS_FLOAT_BAD),
        "--cached-prefix": (["0", "0.5"], ["nan", "inf", "-1", "1", "x"]),
        "--slot-context": (["4096"], [*INT_BAD, "0", "63"]), "--prompt": (["1500", "p50=500,p90=2000"], TOKENS_BAD),
        "--gen": (["300"], TOKENS_BAD), "--runtime": (["llama.cpp", "mlx-lm"], ["vllm", *TEXT_BAD]),
    }),
    "finetune": (["finetune", "--model", "llama-3.1-8b"], {
        "--ram": (RAM_GOOD, RAM_BAD), "--scale": (["20", "1"], POS_FLOAT_BAD), "--layers": (["16", "-1"], [*INT_BAD, "0"]),
        "--rank": (["8"], [*INT_BAD, "0"]), "--batch": (["4"], [*INT_BAD, "0"]), "--epochs": (["1"], POS_FLOAT_BAD),
        "--seq-len": (["2048"], [*INT_BAD, "1"]), "--wired-limit": (["49152"], [*INT_BAD, "0"]),
        "--chip": (["M4 Max"], ["M9", *TEXT_BAD]),
    }),
    "buy": (["buy", "--model", "llama-3.1-8b"], {
        "--price": ([f"{PRICE}=3499"], [f"{PRICE}=nan", f"{PRICE}=inf", f"{PRICE}=-1", f"{PRICE}={HUGE}",
                                        f"Mac Studio M4 Max {HUGE}GB=3499", "x", *TEXT_BAD]),
        "--budget": (["5000"], POS_FLOAT_BAD), "--users": (["1", "4"], [*INT_BAD, "0"]),
        "--prompt": (["2000"], TOKENS_BAD), "--max-ttft": (["5"], POS_FLOAT_BAD),
        "--min-tok-s": (["10"], POS_FLOAT_BAD),
    }),
    "models": (["models", "--ram", "64"], {
        "--max-params": (["14", "70"], POS_FLOAT_BAD), "--top": (["0", "5"], [*INT_BAD, "-1"]),
        "--users": (["1"], [*INT_BAD, "0"]), "--context": (["8192"], [*INT_BAD, "0"]),
        "--min-tok-s": (["5"], POS_FLOAT_BAD),
    }),
    "recommend": (["recommend", "--model", "llama-3.1-8b"], {
        "--ram": (RAM_GOOD, RAM_BAD), "--users": (["2"], [*INT_BAD, "0"]), "--prompt": (["2000"], TOKENS_BAD),
        "--top": (["3"], [*INT_BAD, "0"]), "--max-ttft": (["5"], POS_FLOAT_BAD),
    }),
    "predict": (["predict", "--chip", "M3 Max", "--gpu-cores", "40", "--model", "llama-3.1-8b", "--quant", "Q4_K_M"], {
        "--ram": (["64"], RAM_BAD), "--depth": (["0", "4096"], [*INT_BAD, "99999999999"]),
        "--batch": (["1", "4"], [*INT_BAD, "0"]), "--prompt": (["512"], TOKENS_BAD),
    }),
    "cluster": (["cluster", "--model", "llama-3.3-70b"], {
        "--macs": (["2x Mac Studio M3 Ultra 512GB"], [f"{HUGE}x Mac Studio M3 Ultra 512GB",
                                                      f"2x Mac Studio M3 Ultra {HUGE}GB", "1e9x Mac Studio M3 Ultra 512GB",
                                                      *TEXT_BAD]),
        "--users": (["1"], [*INT_BAD, "0"]), "--context": (["8192"], [*INT_BAD, "0"]),
    }),
    "plan": (["--model", "llama-3.1-8b"], {
        "--ram": (RAM_GOOD, RAM_BAD), "--guardrail": (["balanced", "custom:40"], ["custom:inf", "custom:nan",
                                                                                  "custom:-1", *TEXT_BAD]),
        "--users": (["1", "4"], [*INT_BAD, "0"]), "--context": (["8192"], [*INT_BAD, "0"]),
    }),
}
REQUIRED = {"finetune": "--ram", "recommend": "--ram", "plan": "--ram", "cluster": "--macs"}


def _case(rng: random.Random, name: str) -> tuple[list[str], bool]:
    fixed, pools = COMMANDS[name]
    argv, bad = list(fixed), False
    flags = rng.sample(sorted(pools), k=min(len(pools), rng.choice([1, 2, 3])))
    if REQUIRED.get(name) and REQUIRED[name] not in flags:
        flags.append(REQUIRED[name])
    if name == "plan" and "--guardrail" in flags:
        argv += ["-r", "lm-studio"]
    for f in flags:
        good, badv = pools[f]
        if rng.random() < 0.4:
            argv.append(f"{f}={rng.choice(badv)}")  # = keeps values starting with '-' as values
            bad = True
        else:
            argv += [f, rng.choice(good)]
    return argv, bad


CASES = [(name, *_case(random.Random(f"{SEED}-{name}-{i}"), name)) for name in COMMANDS for i in range(N_PER_COMMAND)]


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    for var in ("HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "MAC_LLM_PLANNER_USER_PROFILES"):
        (tmp_path / var).mkdir()
        monkeypatch.setenv(var, str(tmp_path / var))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    P.clear_cache()
    yield tmp_path
    P.clear_cache()


@pytest.mark.slow  # ~200 in-process runs; make test runs it, make test-fast skips it
def test_every_command_with_the_same_generators(sandbox):
    failures, seen = [], {0: 0, 2: 0}
    for name, argv, bad in CASES:
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc = main(argv)
        except BaseException as e:  # noqa: BLE001 - an escaping exception is what we look for
            failures.append(f"{name} {[a[:40] for a in argv]}: escaped {type(e).__name__}: {str(e)[:200]}")
            continue
        seen[rc] = seen.get(rc, 0) + 1
        lines = err.getvalue().strip().splitlines()
        problem = None
        if rc not in (0, 2) or "Traceback" in out.getvalue() + err.getvalue():
            problem = f"exit {rc}: {err.getvalue()[-300:]!r}"
        elif rc == 2 and (len(lines) != 1 or not lines[0].startswith("plan: error: ") or len(lines[0]) > 1500):
            problem = f"not one short error line: {err.getvalue()[:300]!r}"
        elif rc == 0 and bad:
            problem = "exit 0 despite a bad value"
        elif "\x1b" in out.getvalue() + err.getvalue():
            problem = "an escape sequence reached the terminal"
        if problem:
            failures.append(f"{name} {[a[:40] for a in argv]}: {problem}")
    assert not failures, f"{len(failures)} of {len(CASES)} runs misbehaved:\n" + "\n".join(failures[:30])
    assert seen[0] > 40 and seen[2] > 40, seen  # both outcomes exercised


def test_case_count_covers_every_command():
    assert {name for name, _, _ in CASES} == set(COMMANDS) and len(CASES) >= 200
