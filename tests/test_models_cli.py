"""`plan models` on the command line: the catalog list, the ranking for a Mac (text and JSON), one-line errors."""

import json

from cli.main import main


def test_catalog_list_unchanged(capsys):
    rc = main(["models"])
    out = capsys.readouterr().out
    assert rc == 0 and "llama-3.3-70b" in out and "max ctx" in out


def test_ranking_with_chip_has_speed_columns(capsys):
    rc = main(["models", "--ram", "64", "--chip", "M4 Max", "--task", "chat"])
    out = capsys.readouterr().out
    assert rc == 0 and "M4 Max 40-core GPU, 64 GB" in out
    header = next(ln for ln in out.splitlines() if ln.lstrip().startswith("#"))
    for col in ("runtime", "quant", "kv", "decode tok/s", "range", "prefill tok/s", "score", "mem left"):
        assert col in header
    assert "Quality = " in out


def test_ranking_without_chip_has_no_speed(capsys):
    rc = main(["models", "--ram", "16"])
    out = capsys.readouterr().out
    header = next(ln for ln in out.splitlines() if ln.lstrip().startswith("#"))
    assert rc == 0 and "decode" not in header and "prefill" not in header
    assert "speed needs a chip" in out


def test_json(capsys):
    rc = main(["models", "--ram", "24", "--chip", "M4 Pro", "--gpu-cores", "20", "--max-params", "9", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert rc == 0 and d["rows"] and all(r["params_b"] <= 9 for r in d["rows"])
    assert [r["rank"] for r in d["rows"]] == list(range(1, len(d["rows"]) + 1))
    assert all(r["decode_tok_s_per_user"] > 0 and r["memory_left_bytes"] > 0 for r in d["rows"] if r["meets"])


def test_best_effort_is_an_answer_not_an_error(capsys):
    rc = main(["models", "--ram", "64", "--chip", "M4 Max", "--min-tok-s", "100000"])
    out = capsys.readouterr().out
    assert rc == 0 and "Nothing meets every filter" in out and "--min-tok-s 100000 binds" in out


def test_bad_input_one_line(capsys):
    for argv, want in ((["models", "--ram", "64", "--task", "poetry"], "--task"),
                       (["models", "--ram", "-3"], "--ram"),
                       (["models", "--chip", "M4 Max"], "give --ram"),
                       (["models", "--ram", "64", "--chip", "M9 Ultra"], "--chip"),
                       (["models", "--ram", "64", "--users", "0"], "--users")):
        rc = main(argv)
        err = capsys.readouterr().err.strip()
        assert rc == 2 and want in err and "\n" not in err and "Traceback" not in err, (argv, err)


def test_caveated_score_is_marked_and_explained(capsys):
    # llama-2-7b's MMLU-Pro is a third-party figure for the base model (profiles/models/llama-2-7b.yaml)
    rc = main(["models", "--ram", "16", "--family", "llama", "--top", "0"])
    out = capsys.readouterr().out
    row = next(ln for ln in out.splitlines() if " llama-2-7b " in ln)
    assert rc == 0 and "19.4*" in row
    assert "* the score does not compare like for like" in out
    main(["models", "--ram", "16", "--family", "llama", "--json"])
    d = json.loads(capsys.readouterr().out)
    r = next(x for x in d["rows"] if x["model"] == "llama-2-7b")
    assert r["score_caveats"] == ["third-party", "base-model"]
    maker = next(x for x in d["rows"] if x["model"] == "llama-3.1-8b")  # Meta's own card
    assert maker["score_caveats"] == []


def test_no_caveat_note_when_no_row_has_one(capsys):
    rc = main(["models", "--ram", "64", "--family", "llama", "--max-params", "71", "--top", "1"])
    out = capsys.readouterr().out
    assert rc == 0 and "like for like" not in out


def test_models_and_plan_say_the_same_excess_of_the_smallest_that_does_not_fit(capsys):
    """Nothing selected fits: `plan models` names its smallest row's need and how far over it is in plan's words and
    figures (SmallestNeed.over: need + the runtime's margin beyond the most the GPU may have with the limit raised),
    not against the default limit without the margin (0.3 GiB there against plan's 6.4 MiB, gpt-oss-20b on 16 GB)."""
    from planner.format import fmt_bytes

    assert main(["--model", "gpt-oss-20b", "--ram", "16", "--json"]) == 0
    p = json.loads(capsys.readouterr().out)
    n, most = p["smallest"], p["wired"]["max_raise_bytes"]
    words = (f"needs {fmt_bytes(n['memory_bytes'])} and its runtime's {fmt_bytes(n['margin_bytes'])} margin, "
             f"{fmt_bytes(n['memory_bytes'] + n['margin_bytes'] - most)} over the {fmt_bytes(most)} the GPU may have")
    assert main(["--model", "gpt-oss-20b", "--ram", "16"]) == 0
    assert words in capsys.readouterr().out.splitlines()[0]
    assert main(["models", "--ram", "16", "--family", "gpt", "--json"]) == 0
    (line,) = [b for b in json.loads(capsys.readouterr().out)["binding"] if b.startswith("memory binds")]
    assert words in line and f"({n['runtime']} {n['quant']}, KV cache {n['kv_type']})" in line
