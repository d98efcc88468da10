"""Issue 32, one JSON schema: every command's --json carries schema_version, the same fact has one name in every
command (the chip as its profile id with chip_label beside it, wired_limit_bytes, decode_tok_s_range), and
docs/schema/*.json (scripts/gen_schema.py, from the result models) is current and describes what they print."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from cli.contract import SCHEMA_VERSION
from cli.main import main
from planner import profiles

ROOT = Path(__file__).resolve().parents[2]
MAC = ["--chip", "M4 Max", "--gpu-cores", "40", "--ram", "64"]
RUNS = {
    "plan": ["--model", "llama-3.1-8b", *MAC],
    "predict": ["predict", "--model", "llama-3.1-8b", "--chip", "M4 Max", "--gpu-cores", "40", "--ram", "64",
                "--quant", "Q4_K_M", "--runtime", "llama.cpp"],
    "recommend": ["recommend", "--model", "llama-3.1-8b", *MAC],
    "buy": ["buy", "--model", "llama-3.1-8b", "--users", "2"],
    "serve": ["serve", "--model", "llama-3.1-8b", *MAC, "--no-sweep", "--duration", "60s", "--rate", "2/min"],
    "finetune": ["finetune", "--model", "llama-3.1-8b", *MAC],
    "models": ["models", *MAC, "--top", "3"],
    "models-catalog": ["models"],
    "cluster": ["cluster", "--model", "llama-3.3-70b", "--macs", "2x Mac Studio M4 Max 64GB"],
}
# names retired by schema_version 2: one name per fact
RETIRED = {"gpu_limit_bytes", "limit_bytes", "decode_range", "prefill_range", "fit_verdict"}  # + 4: one verdict key


def _gen():
    spec = importlib.util.spec_from_file_location("gen_schema", ROOT / "scripts" / "gen_schema.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def outputs():
    import contextlib
    import io

    got = {}
    for name, argv in RUNS.items():
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            rc = main([*argv, "--json"])
        assert rc == 0, (name, buf.getvalue()[:300])
        got[name] = json.loads(buf.getvalue())
    return got


def _keys(x, path=""):
    if isinstance(x, dict):
        for k, v in x.items():
            yield path + k, k, v
            yield from _keys(v, path + k + ".")
    elif isinstance(x, list):
        for v in x:
            yield from _keys(v, path + "[].")


def _dicts(x):
    if isinstance(x, dict):
        yield x
        for v in x.values():
            yield from _dicts(v)
    elif isinstance(x, list):
        for v in x:
            yield from _dicts(v)


def test_the_published_schema_is_generated_and_current():
    assert _gen().main(["--check"]) == 0, "run python scripts/gen_schema.py"


def test_every_command_says_its_schema_version(outputs):
    assert set(outputs) == set(RUNS)
    for name, data in outputs.items():
        assert next(iter(data)) == "schema_version" and data["schema_version"] == SCHEMA_VERSION, name


def test_every_answer_validates_against_its_published_schema(outputs):
    jsonschema = pytest.importorskip("jsonschema")
    for name, data in outputs.items():
        schema = json.loads((ROOT / "docs" / "schema" / f"{name}.json").read_text())
        jsonschema.validate(data, schema)
        bad = dict(data, schema_version="0")
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)


def test_errors_and_no_answers_validate_against_their_envelopes(capsys):
    jsonschema = pytest.importorskip("jsonschema")
    main(["recommend", "--model", "nope", "--ram", "64", "--json"])
    jsonschema.validate(json.loads(capsys.readouterr().out), json.loads((ROOT / "docs/schema/error.json").read_text()))
    main(["buy", "--model", "llama-3.1-8b", "--budget", "100", "--json"])
    jsonschema.validate(json.loads(capsys.readouterr().out), json.loads((ROOT / "docs/schema/answer.json").read_text()))


def test_one_name_per_fact(outputs):
    chips = {c.id: c.label for c in profiles.all_chips()}
    seen_chip = 0
    for name, data in outputs.items():
        for path, key, value in _keys(data):
            assert key not in RETIRED, f"{name}: {path} (retired name)"
            if key == "chip" and isinstance(value, str) and not path.startswith("request."):
                assert value in chips, f"{name}: {path} = {value!r} is not a chip profile id"
                seen_chip += 1
        for obj in _dicts(data):
            if "chip_label" in obj and obj["chip"] is not None:
                assert obj["chip_label"] == chips[obj["chip"]], name
    assert seen_chip >= 6
    assert outputs["finetune"]["chip"] == "m4-max-40gpu" and outputs["finetune"]["chip_label"] == chips["m4-max-40gpu"]
    assert all(n["wired_limit_bytes"] > 0 for n in outputs["cluster"]["plan"]["nodes"])
    # the same GPU limit fact in serve, models and predict, under one name
    for name in ("serve", "models", "predict"):
        assert outputs[name]["wired_limit_bytes"] > 0, name
    assert outputs["models"]["rows"][0]["decode_tok_s_range"][0] > 0
    # decode_tok_s is the aggregate of all sequences (predict, buy rows); the speed one user sees is
    # decode_tok_s_per_user in every answer (models rows, buy rows, recommend options)
    row = outputs["models"]["rows"][0]
    assert "decode_tok_s" not in row and row["decode_tok_s_per_user"] > 0
    assert all("decode_tok_s_per_user" in x for x in outputs["buy"]["per_mac"])
