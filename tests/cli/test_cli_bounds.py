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
