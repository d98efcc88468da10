"""Drive `plan` (cli.main.main, in-process) through hundreds of generated argument lists.

Every run must end with exit 0, or exit 2 and exactly one line on stderr that names a bad input; no traceback and
no exception may escape main(); `--json` output must parse (as a Plan); nothing may be written outside tmp dirs
(an audit hook records every write-mode open / mkdir / rename / remove while main() runs).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from cli.main import main
from planner import profiles as P
from planner.plan import Plan

SEED = 20261129
N_RANDOM = 420  # + the hand-written cases below; docs/invariants.md reports the total

# flag -> (good values, bad values); names: words the error line may use to name the flag
POOLS: dict[str, tuple[list[str], list[str]]] = {
    "--model": (["llama-3.3-70b", "llama-3.1-8b", "qwen3-30b-a3b", "gemma-3-27b", "gpt-oss-20b", "deepseek-v3",
                 "qwen3-next-80b-a3b", "Llama 3.3 70B Instruct", "meta-llama/Llama-3.1-8B-Instruct", "llama3.1:8b",
                 "LLAMA-3.1-8B", "mistral-7b"],
                ["", " ", "llama-9000", "☃", "../../etc/passwd", "a" * 3000, "\n", "llama-3.3-70b\nrm -rf",
                 "~nosuchuser/model", "x.gguf", "/", "b" * 300 + ".gguf", "org/" + "c" * 200,
                 "%s%n%x", "\x00", "DROP TABLE models;", "🦙", "\u202eb07-3.3-amall", "-"]),
    "--ram": (["8", "16", "24", "32", "36", "48", "64", "96", "128", "192", "256", "512", "64.0"],
              ["0", "-1", "-64", "65", "1e308", "inf", "-inf", "nan", "", "abc", "64GB", "1e-300", "9" * 400,
               "0x40", "63.5", "١٢٨٫٥", "∞"]),
    "--chip": (["M3 Max", "m4-pro-20gpu", "M1", "M2 Ultra", "Apple M4 Max", "m3-ultra-80gpu"],
               ["M9", "", "Ⅿ3", "M3 Maxx", "x" * 500, "\t", "m3-max-41gpu"]),
    "--gpu-cores": (["40", "30", "20", "80"], ["0", "-1", "10" * 20, "x", "", "1.5", "4e1"]),
    "--runtime": (["llama.cpp", "mlx-lm", "ollama", "mlx", "llamacpp", " llama.cpp\n"], ["vllm", "", "tensorrt"]),
    "--quant": (["Q4_K_M", "Q8_0", "4bit", "mlx-8bit-g32", "mxfp4", "MXFP4_MOE", "bf16", "q5_k_m", "IQ4_XS"],
                ["Q9_K", "", "q4_k_mm", "🙂", "Q4_K_M\nQ8_0", "-1"]),
    "--context": (["1", "256", "4096", "8192", "131072", "1000000", "10000000"],
                  ["0", "-5", "1" + "0" * 20, "8k", "1e3", "", "10000001", "nan"]),
    "--users": (["1", "2", "4", "16", "4096", "1.0"], ["0", "-1", "4097", "9" * 30, "many", "", "1.5"]),
    "--kv-type": (["f16", "q8_0", "q4_0", "kv8", "kv4", "bf16", "8bit"], ["q2", "", "f16\nx", "☃", "Q8_0 "]),
    "--wired-limit": (["49152", "1", "30000", "8192"], ["0", "-1", "9" * 30, "x", "", "49152.5"]),
    "--macos": (["15", "26", "sequoia", "tahoe", "14"], ["99", "", "windows", "15\n16", "🍎"]),
    "--ubatch": (["512", "1", "2048", "65536"], ["0", "-1", "65537", "9" * 30, "x"]),
}
NAMES = {"--model": ["model"], "--ram": ["ram"], "--chip": ["chip"], "--gpu-cores": ["gpu"],
         "--runtime": ["runtime"], "--quant": ["quant"], "--context": ["context"], "--users": ["users"],
         "--kv-type": ["kv"], "--wired-limit": ["wired"], "--macos": ["macos"], "--ubatch": ["ubatch"]}
REPEATABLE = {"--runtime", "--quant"}
JUNK = [["--bogus"], ["-z"], ["extra-positional"], ["--ram=64"], ["--model=llama-3.1-8b"], ["--json", "--json"],
        ["--flash-attn"], ["--no-flash-attn"], ["--"], ["-m"], ["--users"], ["--help"]]


@dataclass
class Case:
    argv: list[str]
    bad: set[str] = field(default_factory=set)      # flags given a bad value
    junk: bool = False                                # unknown flag / dangling flag / positional

    @property
    def present(self) -> set[str]:
        short = {"-m": "--model", "-r": "--runtime", "-q": "--quant", "-c": "--context", "-u": "--users"}
        return {short.get(a, a.split("=")[0]) for a in self.argv if a.startswith("-")}


def _random_case(rng: random.Random) -> Case:
    argv: list[str] = []
    bad: set[str] = set()
    flags = [f for f in POOLS if f != "--model" and rng.random() < 0.25]
    if rng.random() < 0.92:
        flags.insert(0, "--model")
    for f in flags:
        good, badv = POOLS[f]
        reps = rng.choice([1, 1, 1, 2]) if f in REPEATABLE else 1
        for _ in range(reps):
            if rng.random() < 0.15:
                argv += [f, rng.choice(badv)]
                bad.add(f)
            else:
                argv += [f, rng.choice(good)]
    if "--ram" not in flags and "--chip" not in flags and rng.random() < 0.8:
        argv += ["--ram", rng.choice(POOLS["--ram"][0])]
    if rng.random() < 0.3:
        argv.append(rng.choice(["--flash-attn", "--no-flash-attn"]))
    if rng.random() < 0.5:
        argv.append("--json")
    junk = False
    if rng.random() < 0.12:
        extra = rng.choice(JUNK)
        pos = rng.randrange(len(argv) + 1)
        argv[pos:pos] = extra
        junk = True
    return Case(argv, bad, junk)


HAND: list[Case] = [
    Case([]),
    Case(["--json"]),
    Case(["--help"]),
    Case(["--model"], junk=True),
    Case(["--model", "llama-3.3-70b"]),                              # no RAM, no chip
    Case(["--model", "llama-3.3-70b", "--ram"], junk=True),
    Case(["--model", "llama-3.3-70b", "--ram", "64", "--bogus"], junk=True),
    Case(["--model", "llama-3.3-70b", "--ram", "64", "-x", "1"], junk=True),
    Case(["--model", "llama-3.3-70b", "--ram", "64", "positional"], junk=True),
    Case(["--model", "llama-3.3-70b", "--ram", "64", "--json"]),
    Case(["--model", "llama-3.3-70b", "--ram", "64", "--users", "16", "--context", "131072", "--json"]),
    Case(["--model", "llama-3.3-70b", "--chip", "M3 Max"]),           # binned chip: slower bin, with a note
    Case(["--model", "llama-3.3-70b", "--chip", "M3 Max", "--gpu-cores", "40", "--ram", "24"]),
    Case(["--model", "llama-3.3-70b", "--gpu-cores", "40", "--ram", "64"]),
    Case(["--model", "llama-3.3-70b", "--ram", "64", "--kv-type", "q4_0", "--no-flash-attn"]),
    Case(["--model", "gemma-3-27b", "--ram", "64", "-r", "mlx-lm", "--kv-type", "kv4"]),
    Case(["--model", "llama-3.1-8b", "--ram", "64", "-r", "mlx-lm", "-q", "Q4_K_M"]),
    Case(["--model", "llama-3.1-8b", "--ram", "64", "--wired-limit", "70000"], bad={"--wired-limit"}),
    Case(["--model", "llama-3.1-8b", "--ram", "8", "--users", "4096", "--context", "10000000", "--json"]),
    Case(["--model", "llama-3.1-8b", "--ram", "768", "--ubatch", "65536", "--no-flash-attn", "--json"]),
    Case(["--model", "deepseek-v3", "--ram", "8", "--json"]),
    Case(["--model", "qwen3-next-80b-a3b", "--ram", "512", "-r", "ollama", "--json"]),
    Case(["models", "--json"]),
    Case(["models"]),
]


def _cases() -> list[Case]:
    rng = random.Random(SEED)
    return HAND + [_random_case(rng) for _ in range(N_RANDOM)]


CASES = _cases()
N_CASES = len(CASES)


# --------------------------------------------------------------------------- write audit
class _WriteAudit:
    def __init__(self):
        self.active = False
        self.writes: list[tuple[str, str]] = []
        sys.addaudithook(self)

    def __call__(self, event: str, args):
        if not self.active:
            return
        if event == "open":
            path, mode, flags = (list(args) + [None, None, None])[:3]
            if isinstance(path, int) or path is None:
                return
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC))
            if writing:
                self.writes.append((event, os.fsdecode(path)))
        elif event in ("os.mkdir", "os.rename", "os.replace", "os.remove", "os.rmdir", "os.truncate",
                       "os.symlink", "os.link", "os.chmod", "shutil.rmtree", "shutil.copyfile",
                       "shutil.move") and args and not isinstance(args[0], int):
            self.writes.append((event, os.fsdecode(args[0])))


_AUDIT: _WriteAudit | None = None


def _audit() -> _WriteAudit:
    global _AUDIT
    if _AUDIT is None:
        _AUDIT = _WriteAudit()
    return _AUDIT


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    for var, sub in [("HOME", "home"), ("XDG_CONFIG_HOME", "config"), ("XDG_CACHE_HOME", "cache"),
                     ("XDG_DATA_HOME", "data"), ("XDG_STATE_HOME", "state"),
                     ("MAC_LLM_PLANNER_USER_PROFILES", "user-profiles"), ("TMPDIR", "tmp")]:
        (tmp_path / sub).mkdir()
        monkeypatch.setenv(var, str(tmp_path / sub))
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.chdir(tmp_path)
    P.clear_cache()
    yield tmp_path
    P.clear_cache()


def _run(argv: list[str]) -> tuple[int | str, str, str]:
    out, err = io.StringIO(), io.StringIO()
    audit = _audit()
    audit.active = True
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(list(argv))
    except BaseException as e:  # noqa: BLE001 - an escaping exception is exactly what we look for
        rc = f"escaped {type(e).__name__}: {e}"[:300]
    finally:
        audit.active = False
    return rc, out.getvalue(), err.getvalue()


def _problems(case: Case, rc, out: str, err: str) -> list[str]:
    p = []
    if isinstance(rc, str):
        return [rc]
    if "Traceback" in out + err:
        p.append("traceback in output")
    if rc not in (0, 2):
        p.append(f"exit code {rc}")
    if rc == 2 and "--json" in case.argv:
        # issue 32: under --json an error is {"schema_version", "error": {"code", "message"}} on stdout
        try:
            e = json.loads(out)["error"]
            err, out = f"plan: error: {e['message']}\n", ""
            if not e["code"] or err.strip() == "plan: error:":
                p.append(f"JSON error without code or message: {e!r}")
        except (ValueError, KeyError, TypeError) as x:
            p.append(f"--json error is not a JSON error object ({x}): {out[:200]!r}")
    if rc == 2:
        lines = err.strip("\n").splitlines()
        if len(lines) != 1:
            p.append(f"{len(lines)} stderr lines: {err[:200]!r}")
        elif not lines[0].startswith("plan: error: "):
            p.append(f"stderr not 'plan: error: ...': {lines[0][:200]!r}")
        else:
            low = lines[0].lower()
            # the line must name an input: one of the bad ones, or (when an earlier check fires first, e.g. an
            # ambiguous --chip, a missing --model or --ram) another flag of this command line
            suspects = case.bad | (case.present & set(NAMES)) | {"--model", "--ram"}
            values = [v.strip().lower()[:40] for a, v in zip(case.argv, case.argv[1:]) if a in suspects]
            named = (any(n in low for f in suspects for n in NAMES.get(f, []))
                     or any(len(v) > 1 and v in low for v in values) or case.junk)
            if not named:
                p.append(f"error names none of {sorted(suspects)}: {lines[0][:200]!r}")
            if len(lines[0]) > 1500:
                p.append("error line longer than 1500 chars")
    if rc == 0:
        if "--help" in case.argv:  # eager: help wins over any bad value
            return p
        if case.bad and not case.junk:  # junk may repeat a flag (--model=...) and override the bad value
            p.append(f"exit 0 despite bad {sorted(case.bad)}")
        if err.strip():
            p.append(f"stderr on success: {err[:200]!r}")
        if "--json" in case.argv and "--help" not in case.argv and case.argv[:1] != ["models"]:
            try:
                data = json.loads(out)
                assert data.pop("schema_version", None) is not None, "no schema_version"
                Plan.model_validate(data)
            except Exception as e:  # noqa: BLE001
                p.append(f"--json stdout is not a Plan: {str(e)[:200]}")
        elif case.argv[:1] == ["models"] and "--json" in case.argv:
            try:
                json.loads(out)
            except ValueError as e:
                p.append(f"models --json is not JSON: {e}")
    return p


@pytest.mark.slow  # ~450 in-process runs; make test runs it, make test-fast skips it
def test_cli_fuzz(sandbox):
    failures = []
    stats = {0: 0, 2: 0}
    for case in CASES:
        rc, out, err = _run(case.argv)
        if rc in stats:
            stats[rc] += 1
        for prob in _problems(case, rc, out, err):
            failures.append(f"{[a[:40] for a in case.argv]!r}: {prob[:300]}")
    writes = [(e, p) for e, p in _audit().writes if not Path(p).resolve().is_relative_to(sandbox.resolve())
              and not p.startswith("/dev/")]
    assert not writes, f"wrote outside the sandbox: {writes[:10]}"
    assert not failures, f"{len(failures)} of {N_CASES} runs misbehaved:\n" + "\n".join(failures[:40])
    print(f"\ncli fuzz: {N_CASES} argument lists, exit 0: {stats[0]}, exit 2: {stats[2]}")
    # the generator must exercise both outcomes a lot
    assert stats[0] > 100 and stats[2] > 150, stats


def test_fuzz_case_count():
    assert N_CASES >= 400


def test_audit_hook_catches_a_write(sandbox, tmp_path_factory):
    outside = tmp_path_factory.getbasetemp().parent / "definitely-outside.txt"
    audit = _audit()
    n = len(audit.writes)
    audit.active = True
    try:
        with open(outside, "w") as f:
            f.write("x")
    finally:
        audit.active = False
        outside.unlink()
    assert audit.writes[n:] and audit.writes[n][1] == str(outside)
