"""`plan recommend` and `plan buy` on the command line: output, JSON, and one-line errors with exit 2."""

import json
from pathlib import Path

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


def test_budget_below_every_mac_is_an_answer_exit_0(capsys):
    # issue 32: "nothing at this price" answers (exit 0) and names the cheapest Mac; exit 2 is for bad input only
    rc = main(["buy", "--model", "llama-3.1-8b", "--budget", "100"])
    out = capsys.readouterr().out.strip()
    assert rc == 0 and "below every Mac" in out and "\n" not in out


def test_impossible_target_is_a_best_effort_answer_exit_0(capsys):
    # never a dead end: no Mac reaches 200 tok/s per user for a 70B; the answer says by how much and what would help
    rc = main(["buy", "--model", "llama-3.3-70b", "--users", "4", "--min-tok-s", "200"])
    out = capsys.readouterr().out
    assert rc == 0 and "No Mac meets every target" in out and "decode speed per user: want ≥ 200 tok/s" in out
    assert "missed by" in out and "What would change the answer" in out and "fewer users than 4" in out


def test_buy_70b_lists_the_m4_max_configurations_exit_0(capsys):
    rc = main(["buy", "--model", "llama-3.3-70b"])
    out = capsys.readouterr().out
    assert rc == 0
    for ram in (64, 128):
        line = next(x for x in out.splitlines() if f"Mac Studio M4 Max 40-core GPU {ram} GB" in x)
        assert "estimated" in line and "$" in line


def test_buy_budget_binds_the_picks_exit_0(capsys):
    import re

    rc = main(["buy", "--model", "qwen3-30b-a3b", "--users", "4", "--budget", "2500"])
    out = capsys.readouterr().out
    assert rc == 0 and "within $2,500" in out
    picks = [x for x in out.splitlines() if x.startswith(("Cheapest", "Best value", "Fastest"))]
    assert picks and all(int(p.replace(",", "")) <= 2500 for x in picks for p in re.findall(r"\$([\d,]+)", x))


def test_buy_bad_user_price_one_line_exit_2(capsys):
    rc = main(["buy", "--model", "llama-3.1-8b", "--price", "Mac Studio M2 Ultra 192GB=3500"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "several configurations" in err and "\n" not in err


def test_recommend_needs_chip_or_ram(capsys):
    rc = main(["recommend", "--model", "llama-3.1-8b"])
    assert rc == 2 and "--chip" in capsys.readouterr().err


def test_buy_sets_clusters_against_one_mac(capsys):
    # DeepSeek-V3 4-bit (~336 GiB) fits one 512 GB M3 Ultra; 2 linked 256 GB Ultras hold it too (layers split by
    # memory), so both appear; a pipeline runs its stages one after another, so the cluster decodes no faster than
    # one Mac on the same engine and quant (the "vs one Mac" line)
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


def test_buy_clusters_are_in_the_json_answer_and_the_agents_answer(capsys):
    # `plan buy --clusters --json` (and the agents' buy with clusters) dropped the clusters the text lists: the JSON
    # carries the same candidates, cheapest first, the text's first row among them
    from cli.questions import answer

    argv = ["buy", "--model", "deepseek-v3", "--min-tok-s", "5", "--max-ttft", "120", "--clusters"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert main([*argv, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["clusters"]
    assert got and [c["price_usd"] for c in got] == sorted(c["price_usd"] for c in got)
    first = got[0]
    assert f"${first['price_usd']:,.0f}  {first['macs']}" in text
    agents = answer("buy", {"model": ["deepseek-v3"], "min_tok_s": 5, "max_ttft": 120, "clusters": True})
    assert agents["clusters"] == got
    assert main(argv[:-1] + ["--json"]) == 0 and json.loads(capsys.readouterr().out)["clusters"] == []


def test_recommend_honours_a_name_that_pins_format_and_quant_as_plan_does(capsys):
    # `plan --model qwen3:8b-q8_0` opens with llama.cpp Q8_0 (the name pins GGUF Q8_0); `plan recommend` with the
    # same name searched every runtime and quant and ranked llama.cpp Q5_K_M first
    for name, runtime, quant in (("qwen3:8b-q8_0", "llama.cpp", "Q8_0"),
                                 ("mlx-community/Qwen3-8B-4bit", "mlx-lm", "mlx-4bit-g64")):
        argv = ["--model", name, "--chip", "M4 Max", "--ram", "64", "--json"]
        assert main(["recommend", *argv]) == 0
        rec = json.loads(capsys.readouterr().out)
        assert {(o["runtime"], o["quant"]) for o in rec["options"]} == {(runtime, quant)}
        assert main(argv) == 0
        top = json.loads(capsys.readouterr().out)["bottom_line"]["option"]
        assert (top["runtime"], top["quant"], top["kv_type"]) == (rec["options"][0]["runtime"], quant,
                                                                  rec["options"][0]["kv_type"])


def test_recommend_says_why_not_higher_quality(capsys):
    """The CLI prints the shared ranking's reason: 70B Q8_0 (69.8 GiB of weights) cannot fit a 64 GB Mac, so the
    lossless option is out and the answer says so."""
    rc = main(["recommend", "--model", "llama-3.3-70b", "--ram", "64", "--workload", "chat", "--quant", "Q4_K_M",
               "--quant", "Q8_0"])
    out = capsys.readouterr().out
    assert rc == 0 and "Not a higher-quality option because no option of higher quality than Q4_K_M" in out


def test_buy_prices_file_in_the_catalog_columns(tmp_path, capsys):
    # a quote file with mac_configs.csv's own columns: one used M2 Ultra Mac Studio at $3,400
    src = (Path(__file__).resolve().parent.parent / "calibration" / "data" / "mac_configs.csv").read_text().splitlines()
    row = next(x for x in src if x.startswith("Mac Studio,2023-06,M2 Ultra,24,76,192,"))
    quotes = tmp_path / "quotes.csv"
    quotes.write_text(src[0] + "\n" + row.replace(",6599,", ",3400,") + "\n")
    rc = main(["buy", "--model", "llama-3.3-70b", "--prices", str(quotes)])
    lines = [x for x in capsys.readouterr().out.splitlines() if "M2 Ultra 76-core GPU 192 GB" in x]
    # its table row (a pick line such as "Best value" may name it first): the user's price, marked, discontinued
    assert rc == 0 and any("$3,400" in x and " user " in x and "discontinued" in x for x in lines), lines
