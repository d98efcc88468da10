"""Shared numeric bounds of the subcommands (cli/bounds.py): the issue's nonsense inputs that exited 0 or raised a
traceback now give one line, exit 2, naming the flag."""

from __future__ import annotations

import pytest

from cli.bounds import check_macs, check_options, check_tokens
from cli.main import main
from planner.errors import InputError

MAC = "2x Mac Studio M3 Ultra 512GB"


@pytest.mark.parametrize("argv,flag", [
    (["cluster", "--model", "llama-3.3-70b", "--macs", MAC, "--users", "706116372591203739056"], "--users"),
    (["cluster", "--model", "llama-3.3-70b", "--macs", MAC, "--context", "2147483648"], "--context"),
    (["cluster", "--model", "llama-3.3-70b", "--macs", "1e9x Mac Studio M3 Ultra 512GB"], "--macs"),
    (["predict", "--chip", "M3 Max", "--model", "llama-2-7b", "--quant", "Q4_K_M", "--depth", "99999999999"],
     "--depth"),
    (["predict", "--chip", "M3 Max", "--model", "llama-2-7b", "--quant", "Q4_K_M", "--batch", "100000000"], "--batch"),
    (["recommend", "--model", "llama-3.1-8b", "--ram", "64", "--prompt", "1024:nan"], "--prompt"),
    (["recommend", "--model", "llama-3.1-8b", "--ram", "nan"], "--ram"),
    (["buy", "--model", "llama-3.1-8b", "--budget", "nan"], "--budget"),
    (["buy", "--model", "llama-3.1-8b", "--gen", "1024:inf"], "--gen"),
    (["buy", "--model", "llama-3.1-8b", "--max-ttft", "inf"], "--max-ttft"),
])
def test_nonsense_is_one_line(capsys, argv, flag):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err and flag in err, err


def test_real_values_pass():
    check_options(context=131072, users=64, prompt="1024:0.6,8192:0.4", gen="p50=512,p90=2048", budget=4999.0,
                  depth=32768, batch=8, ram=512.0, min_tok_s=10.0, max_ttft=2.5)
    check_macs("2x Mac Studio M3 Ultra 512GB, 1x MacBook Pro M4 Max 128GB")
    check_macs("Mac mini M4 Pro 64GB + Mac mini M4 Pro 64GB")


@pytest.mark.parametrize("text", ["1e12", "1024:1e999", "-inf", "x" * 20_000])
def test_token_strings(text):
    with pytest.raises(InputError):
        check_tokens("--prompt", text)


# --------------------------------------------------------------------------- user files through the bounded reader
@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "huge", "binary"])
def test_prices_file_is_read_bounded(capsys, tmp_path, kind):
    """buy --prices reads through planner.bounded_read: /dev/zero and a FIFO are refused without reading (they read
    until memory ran out, or blocked), a CSV over MAX_TABLE_BYTES is refused after cap + 1 bytes."""
    import os

    from planner.bounded_read import MAX_TABLE_BYTES

    p = tmp_path / "prices.csv"
    if kind == "dev-zero":
        p = "/dev/zero"
    elif kind == "fifo":
        os.mkfifo(p)
    elif kind == "huge":
        with open(p, "wb") as f:
            f.write(b"product,chip,ram_GB,us_price_usd\n")
            f.truncate(MAX_TABLE_BYTES + 10)
    else:
        p.write_bytes(b"\xff\xfe\x00" * 100)
    assert main(["buy", "--model", "llama-3.1-8b", "--prices", str(p)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--prices" in err and "Traceback" not in err, err


@pytest.mark.parametrize("name", ["models/mine.yaml", "calibration/m4-max-40gpu__llama.cpp.yaml"])
@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_user_profiles_are_read_bounded(capsys, tmp_path, monkeypatch, name, kind):
    """A user profile (models/<id>.yaml, or calibration/<chip>__<runtime>.yaml, the name `plan calibrate` writes)
    that is a FIFO or a link to /dev/zero hung or exhausted memory: now a model profile is one line naming the
    file, and a calibration file is skipped with a note (as any broken user calibration)."""
    import os

    from planner import profiles as P

    user = tmp_path / "user"
    p = user / name
    p.parent.mkdir(parents=True)
    if kind == "fifo":
        os.mkfifo(p)
    else:
        p.symlink_to("/dev/zero")
    monkeypatch.setenv("MAC_LLM_PLANNER_USER_PROFILES", str(user))
    P.clear_cache()
    try:
        model = "mine" if name.startswith("models/") else "llama-3.1-8b"
        code = main(["--model", model, "--chip", "M4 Max", "--gpu-cores", "40", "--ram", "64"])
        out, err = capsys.readouterr()
    finally:
        P.clear_cache()
    if name.startswith("models/"):
        assert code == 2 and len(err.strip().splitlines()) == 1 and str(p) in err and "regular file" in err, err
    else:
        assert code == 0, err
        assert "user calibration ignored" in out and "regular file" in out


# --------------------------------------------------------------------------- one set of bounds (issue 34)
@pytest.mark.parametrize("argv,needle", [
    (["finetune", "--model", "llama-3.1-8b", "--ram", "7"], "--ram 7"),
    (["finetune", "--model", "llama-3.1-8b", "--chip", "M4", "--gpu-cores", "10", "--ram", "512"], "--ram 512"),
    (["finetune", "--model", "llama-3.1-8b", "--ram", "64", "--scale", "inf"], "--scale"),
    (["finetune", "--model", "llama-3.1-8b", "--ram", "64", "--layers", "0"], "--layers 0"),
    (["buy", "--model", "llama-3.1-8b", "--price", "Mac Studio M4 Max 128GB=nan"], "--price"),
    (["buy", "--model", "llama-3.1-8b", "--price", "Mac Studio M4 Max 128GB=inf"], "--price"),
    (["buy", "--model", "llama-3.1-8b", "--price", "Mac Studio M4 Max 128GB=" + "9" * 5000], "--price"),
    (["cluster", "--model", "llama-3.3-70b", "--macs", "9" * 5000 + "x Mac Studio M3 Ultra 512GB"], "--macs"),
    (["serve", "--model", "llama-3.1-8b", "--chip", "M4 Max", "--max-ttft-p95", "nan"], "--max-ttft-p95"),
    (["--model", "llama-3.1-8b", "--ram", "64", "-r", "lm-studio", "--guardrail", "custom:inf"], "--guardrail"),
    (["models", "--ram", "64", "--max-params", "nan"], "--max-params"),
    (["models", "--ram", "64", "--top=-1"], "--top"),
    (["recommend", "--model", "llama-3.1-8b", "--ram", "64", "--prompt", "p50=100,p99=5000"], "p99"),
    (["--model", "llama-3.1-8b", "--model", "qwen3-30b-a3b", "--ram", "64"], "given twice"),
    (["serve", "--model", "llama-3.1-8b", "-m", "qwen3-30b-a3b", "--chip", "M4 Max"], "given twice"),
])
def test_values_refused_by_every_command(capsys, argv, needle):
    """The issue's values accepted by one command and refused by another: each is one line naming it."""
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err and needle in err, err


def test_a_catalog_only_command_does_not_suggest_a_local_file(capsys, tmp_path):
    """finetune takes catalog ids: given a .gguf it said 'pass a local .gguf' (the thing just passed)."""
    p = tmp_path / "m.gguf"
    p.write_bytes(b"GGUF")
    assert main(["finetune", "--model", str(p), "--ram", "64"]) == 2
    err = capsys.readouterr().err
    assert "pass a local" not in err and "catalog id" in err and "plan serve" in err, err


def test_a_model_failing_its_own_schema_names_no_flag(capsys, tmp_path):
    """A config.json of 2 T parameters: the error named a --params-b flag that does not exist."""
    import json

    (tmp_path / "config.json").write_text(json.dumps({
        "model_type": "llama", "hidden_size": 65536, "num_hidden_layers": 10000, "num_attention_heads": 64,
        "intermediate_size": 1000000, "vocab_size": 1000000}))
    assert main(["--model", str(tmp_path), "--ram", "64"]) == 2
    err = capsys.readouterr().err
    assert "--params-b" not in err and "params_b" in err and "the model's" in err, err
