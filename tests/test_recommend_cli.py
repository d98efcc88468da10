"""`plan recommend` and `plan buy` on the command line: output, JSON, and one-line errors with exit 2."""

import json

from cli.main import main


def test_recommend_text(capsys):
    rc = main(["recommend", "--model", "llama-3.1-8b", "--ram", "16", "--workload", "chat"])
    out = capsys.readouterr().out
    assert rc == 0 and "llama-server -m" in out and "memory-only" in out
    rc = main(["recommend", "--model", "llama-3.1-8b", "--ram", "16", "--runtime", "mlx-lm"])
    out = capsys.readouterr().out
    assert rc == 0 and "mlx_lm.server --model" in out and "mlx_lm.generate" in out


def test_recommend_json(capsys):
    rc = main(["recommend", "--model", "llama-3.1-8b", "--chip", "M4 Max", "--gpu-cores", "40", "--ram", "64",
               "--workload", "agent", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and data["options"] and data["options"][0]["recipe"]["server"]


def test_buy_json(capsys):
    rc = main(["buy", "--model", "llama-3.1-8b", "--workload", "chat", "--users", "2", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and data["cheapest"]["price_usd"] > 0 and data["evaluated"] > 100


def test_unknown_workload_one_line_exit_2(capsys):
    rc = main(["buy", "--model", "llama-3.1-8b", "--workload", "agnet"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "did you mean agent" in err and "\n" not in err


def test_budget_below_every_mac_exit_2(capsys):
    rc = main(["buy", "--model", "llama-3.1-8b", "--budget", "100"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "below every Mac" in err and "\n" not in err


def test_impossible_target_exit_2(capsys):
    rc = main(["buy", "--model", "llama-3.3-70b", "--users", "4", "--min-tok-s", "200"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "no Mac meets 200 tok/s per user" in err and "best reaches" in err and "\n" not in err


def test_recommend_needs_chip_or_ram(capsys):
    rc = main(["recommend", "--model", "llama-3.1-8b"])
    assert rc == 2 and "--chip" in capsys.readouterr().err


def test_buy_sets_clusters_against_one_mac(capsys):
    # DeepSeek-V3 4-bit (~336 GiB) fits one 512 GB M3 Ultra; 2 linked 256 GB Ultras hold it too (layers split by
    # memory), so both appear; a pipeline runs its stages one after another, so the cluster decodes no faster
    import re

    rc = main(["buy", "--model", "deepseek-v3", "--min-tok-s", "5", "--max-ttft", "120", "--clusters"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "Clusters of identical Macs over tb5" in out and "2x Mac Studio M3 Ultra" in out
    single = float(re.search(r"vs one Mac: .*?, ([\d.]+) tok/s/user", out).group(1))
    rows = [re.split(r"\s{2,}", ln.strip()) for ln in out.splitlines() if re.match(r"\$[\d,]+\s+\dx ", ln.strip())]
    assert rows
    for r in rows:
        assert float(r[2]) <= single * 1.05, r


def test_recommend_says_why_not_higher_quality(capsys):
    """The CLI prints the shared ranking's reason: 70B Q8_0 (69.8 GiB of weights) cannot fit a 64 GB Mac, so the
    lossless option is out and the answer says so."""
    rc = main(["recommend", "--model", "llama-3.3-70b", "--ram", "64", "--workload", "chat", "--quant", "Q4_K_M",
               "--quant", "Q8_0"])
    out = capsys.readouterr().out
    assert rc == 0 and "Not a higher-quality option because no option of higher quality than Q4_K_M" in out
