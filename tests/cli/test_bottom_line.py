"""The bottom line: `plan` opens with the option to run and mlx-lm vs llama.cpp, and names the option
`plan recommend` ranks first for the same Mac, model and workload (the chat preset at the request's users and
context)."""

from __future__ import annotations

import json

import pytest

from cli.main import main
from planner.search import speed_available

needs_speed = pytest.mark.skipif(not speed_available(), reason="planner/throughput.py not available")
MAC = ["--chip", "M3 Max", "--gpu-cores", "40", "--ram", "64"]


def _run(capsys, argv):
    assert main(argv) == 0
    return capsys.readouterr().out


@needs_speed
@pytest.mark.parametrize("model", ["llama-3.3-70b", "qwen3-30b-a3b", "llama-3.1-8b"])
def test_plan_opens_with_the_option_recommend_ranks_first(capsys, model):
    doc = json.loads(_run(capsys, ["recommend", "--model", model, *MAC, "--json"]))
    top = doc["options"][0]
    lines = _run(capsys, ["--model", model, *MAC]).splitlines()
    assert lines[0].startswith("Bottom line:")
    assert f"{top['runtime']} {top['quant']} (KV cache {top['kv_type']})" in lines[0]
    assert lines[1].startswith("mlx-lm or llama.cpp? ")
    plan = json.loads(_run(capsys, ["--model", model, *MAC, "--json"]))["bottom_line"]
    assert (plan["option"]["runtime"], plan["option"]["quant"], plan["option"]["kv_type"]) == (
        top["runtime"], top["quant"], top["kv_type"])
    # recommend's own first line is the same verdict
    rec_first = _run(capsys, ["recommend", "--model", model, *MAC]).splitlines()[0]
    assert rec_first == lines[0]


@needs_speed
def test_missed_targets_say_what_binds_and_the_closest(capsys):
    out = _run(capsys, ["recommend", "--model", "llama-3.3-70b", *MAC, "--max-ttft", "1"]).splitlines()[0]
    assert out.startswith("Bottom line: no option meets") and "the closest is" and "TTFT" in out


def test_without_a_chip_the_bottom_line_is_about_memory(capsys):
    lines = _run(capsys, ["--model", "llama-3.1-8b", "--ram", "16"]).splitlines()
    assert lines[0].startswith("Bottom line: run ") and "GPU limit" in lines[0] and "tok/s" not in lines[0]


@needs_speed
def test_a_name_that_pins_a_format_pins_the_bottom_line(capsys):
    line = _run(capsys, ["--model", "mlx-community/Qwen3-30B-A3B-4bit", "--chip", "M4 Pro", "--gpu-cores", "20",
                         "--ram", "48"]).splitlines()[0]
    assert line.startswith("Bottom line: run mlx-lm mlx-4bit-g64 ")


@pytest.mark.parametrize("asked, llama, mlx", [("q8_0", "q8_0", "kv8"), ("kv4", "q4_0", "kv4"),
                                               ("q4_0", "q4_0", "kv4")])
def test_the_bottom_line_keeps_the_asked_kv_type(capsys, asked, llama, mlx):
    # `plan --kv-type q8_0` sized its table with q8_0 but opened with "run llama.cpp Q8_0 (KV cache f16)": the
    # bottom line's option is one of the table's, in each runtime's spelling of the asked type
    plan = json.loads(_run(capsys, ["--model", "llama-3.1-8b", "--ram", "64", "--kv-type", asked, "--json"]))
    o = plan["bottom_line"]["option"]
    assert o["kv_type"] == {"llama.cpp": llama, "mlx-lm": mlx}[o["runtime"]]
    (row,) = [x for x in plan["options"] if (x["runtime"], x["quant"]) == (o["runtime"], o["quant"])]
    assert row["kv_type"] == o["kv_type"] and row["memory"]["total"] == o["memory_bytes"]


@pytest.mark.parametrize("flags", [["--no-flash-attn"], ["--ubatch", "4096"]])
def test_the_bottom_line_keeps_the_asked_flash_attention_and_ubatch(capsys, flags):
    # the bottom line sized its option at -fa on / -ub 512 whatever was asked: with --ubatch 4096 it stated 5 GB less
    # than the table's row for the same option (the compute buffer grows with -ub), and its recipe said -fa on
    argv = ["--model", "gemma-3-27b", "--ram", "64", "--runtime", "llama.cpp", *flags, "--json"]
    plan = json.loads(_run(capsys, argv))
    o = plan["bottom_line"]["option"]
    (row,) = [x for x in plan["options"] if (x["quant"], x["kv_type"]) == (o["quant"], o["kv_type"])]
    assert row["memory"]["total"] == o["memory_bytes"]
    assert ("-fa off" in o["recipe"]["server"]) == (flags == ["--no-flash-attn"])
    assert f"-ub {flags[1] if flags[0] == '--ubatch' else 512} " in o["recipe"]["server"]


def test_recommend_refuses_an_unknown_quant_as_plan_does(capsys):
    # `plan recommend --quant Q9_Z` answered "does not fit ... the smallest needs 0.0 GiB" (exit 0)
    for argv in (["recommend", "--model", "llama-3.1-8b", "--ram", "64", "--quant", "Q9_Z"],
                 ["--model", "llama-3.1-8b", "--ram", "64", "--quant", "Q9_Z"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "unknown quantization --quant 'Q9_Z'" in err


def test_a_model_that_fits_nowhere_gets_a_bottom_line_with_what_would_change_it(capsys):
    line = _run(capsys, ["--model", "deepseek-v3", "--ram", "64"]).splitlines()[0]
    assert line.startswith("Bottom line: ") and "does not fit this Mac" in line and "plan buy" in line


def test_versus_words_follow_the_ratio_both_ways():
    from planner.advice import RuntimeVerdict
    from planner.format import versus_text

    fast = RuntimeVerdict(runtime="llama.cpp", other="mlx-lm", other_quant="4bit", code="faster", decode_ratio=1.25,
                          other_meets_targets=True)
    slow = fast.model_copy(update={"code": "slower", "decode_ratio": 0.8})
    assert "decodes 25 % faster than mlx-lm" in versus_text([fast])
    assert "mlx-lm's best (4bit) decodes 25 % faster" in versus_text([slow])


@needs_speed
def test_a_model_larger_than_memory_says_it_can_run_streamed(capsys):
    line = _run(capsys, ["--model", "qwen3-235b-a22b", "--chip", "M4 Max", "--gpu-cores", "40", "--ram", "64",
                         "-r", "llama.cpp"]).splitlines()[0]
    assert "does not fit this Mac" in line and "streamed from the SSD" in line and "tok/s" in line


def test_a_no_fit_states_the_runtime_margin_and_how_far_over_it_is(capsys):
    """The no-fit line names the margin its verdict kept: need + margin − the raised maximum is the stated excess,
    positive (a need under the maximum but over it with the margin once read '11.0 GiB against at most 12.0 GiB')."""
    from planner.format import fmt_bytes

    out = json.loads(_run(capsys, ["--model", "gpt-oss-20b", "--ram", "16", "--json"]))
    top = out["wired"]["max_raise_bytes"]
    small = out["smallest"]
    assert all(o["fit"]["verdict"] == "no-fit" for o in out["options"])
    assert small["margin_bytes"] > 0
    over = small["memory_bytes"] + small["margin_bytes"] - top
    assert over > 0
    line = _run(capsys, ["--model", "gpt-oss-20b", "--ram", "16"]).splitlines()[0]
    assert f"{fmt_bytes(small['margin_bytes'])} margin, {fmt_bytes(over)} over the {fmt_bytes(top)}" in line


@needs_speed
def test_weights_a_token_reads_all_in_ram_are_mapped_not_streamed(capsys):
    """gpt-oss-20b on a 16 GB M4: over what macOS can give the GPU by less than its embedding table, every weight a
    token reads stays in RAM (0 bytes per token): the answer says it runs mapped at full speed, not 'streamed'."""
    argv = ["--model", "gpt-oss-20b", "--chip", "M4", "--ram", "16"]
    opts = [o for o in json.loads(_run(capsys, [*argv, "--json"]))["options"] if o.get("streaming")]
    assert opts and all(o["streaming"]["bytes_per_token_range"][1] == 0 for o in opts)
    text = _run(capsys, argv)
    assert "mapped from the SSD (llama.cpp's default mmap)" in text.splitlines()[0]
    assert "streamed from" not in text and "reads nothing per token from the SSD" in text


def test_a_no_fit_that_a_shorter_context_mends_says_which_context(capsys):
    """The closest answer: when the asked context binds, the longest context an option holds (here only with the
    limit raised); asked again at that context, that option fits with the limit raised."""
    import re

    line = _run(capsys, ["--model", "gpt-oss-20b", "--ram", "16"]).splitlines()[0]
    m = re.search(r"At a shorter context it fits: (\S+) (\S+) holds up to ([\d,]+) tokens for 1 user with the limit "
                  r"raised \(8,192 asked\)", line)
    assert m, line
    n = int(m.group(3).replace(",", ""))
    again = json.loads(_run(capsys, ["--model", "gpt-oss-20b", "--ram", "16", "--context", str(n), "--json"]))
    (opt,) = [o for o in again["options"] if (o["runtime"], o["quant"]) == (m.group(1), m.group(2))]
    assert opt["fit"]["verdict"] == "raise-limit"


@pytest.mark.parametrize("chip", [[], ["--chip", "M4"]])
def test_with_images_the_bottom_line_counts_the_vision_encoder_as_the_table_does(capsys, chip):
    """--images N: the bottom line's option needs the total the plan's table gives that option (weights, KV at the
    image tokens' longer context, buffers and the vision encoder + projector), and the bottom line's runtimes are
    the plan's (mlx-vlm in place of the text-only mlx-lm)."""
    args = ["--model", "qwen3-vl-8b", "--ram", "16", "--images", "2", *chip, "--json"]
    doc = json.loads(_run(capsys, args))
    top = doc["bottom_line"]["option"]
    key = (top["runtime"], top["quant"], top["kv_type"])
    rows = [o for o in doc["options"] if (o["runtime"], o["quant"], o["kv_type"]) == key]
    if not rows:  # a KV type the default table does not list (the search's pick): the table asked for that type
        table = json.loads(_run(capsys, [*args, "--kv-type", top["kv_type"]]))
        rows = [o for o in table["options"] if (o["runtime"], o["quant"], o["kv_type"]) == key]
    (same,) = rows
    assert same["memory"]["vision"] > 0
    assert top["context"] == same["memory"]["context"] == doc["request"]["context"]
    assert top["memory_bytes"] == same["memory"]["total"]
    assert {v["other"] for v in doc["bottom_line"]["runtime_verdicts"]} <= {o["runtime"] for o in doc["options"]}


@pytest.mark.parametrize("model, ram", [("qwen3.6-27b", "16"), ("llama-3.3-70b", "32"), ("deepseek-v3", "64"),
                                        ("gpt-oss-20b", "16")])
def test_plan_and_recommend_name_the_same_smallest_need(capsys, model, ram):
    """Nothing fits: `plan` and `plan recommend` name one smallest need for the same Mac and model (search.smallest_need,
    searching the KV type and saying which), in bytes and in words."""
    from planner.format import fmt_bytes

    p = json.loads(_run(capsys, ["--model", model, "--ram", ram, "--json"]))["smallest"]
    r = json.loads(_run(capsys, ["recommend", "--model", model, "--ram", ram, "--json"]))["answer"]
    assert r["smallest"] == p and r["smallest_memory_bytes"] == p["memory_bytes"]
    words = (f"the smallest option ({p['runtime']} {p['quant']}, KV cache {p['kv_type']}) needs "
             f"{fmt_bytes(p['memory_bytes'])} and its runtime's {fmt_bytes(p['margin_bytes'])} margin")
    assert words in _run(capsys, ["--model", model, "--ram", ram]).splitlines()[0]
    assert words in _run(capsys, ["recommend", "--model", model, "--ram", ram])
