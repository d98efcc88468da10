"""`plan predict`: the prediction contract (keys, types), quant/runtime spellings, one-line errors."""

from __future__ import annotations

import json

import pytest

from cli.main import main
from planner import profiles
from planner.points import DEFAULT_GEN, DEFAULT_PROMPT

CONTRACT = ["--chip", "M3 Max", "--gpu-cores", "40", "--ram", "64", "--model", "llama-2-7b", "--quant", "Q4_0",
            "--runtime", "llama.cpp", "--prompt", "512", "--gen", "128", "--depth", "0", "--batch", "1",
            "--cached-prefix", "0", "--json"]  # llama-bench's pp512/tg128: a cold prompt
KEYS = ["prefill_tok_s", "decode_tok_s", "decode_tok_s_per_seq", "decode_tok_s_range", "prefill_tok_s_range", "ttft_s", "fits", "peak_memory_bytes",
        "wired_limit_bytes", "bound"]


def run(capsys, args):
    code = main(["predict", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_contract_keys_and_types(capsys):
    code, out, err = run(capsys, CONTRACT)
    assert code == 0, err
    r = json.loads(out)
    for k in KEYS:
        assert k in r, k
    assert isinstance(r["fits"], bool) and r["fits"] is True
    assert r["bound"] in ("bandwidth", "compute")
    assert r["decode_tok_s"] == pytest.approx(r["decode_tok_s_per_seq"])  # batch 1
    assert 0 < r["decode_tok_s_per_seq"] <= r["decode_ceiling_tok_s"]
    assert r["peak_memory_bytes"] < r["wired_limit_bytes"]
    # llama.cpp samples the first token from the prompt's last logits: TTFT is the 512-token prefill
    # (planner/throughput.py first_token_time)
    assert r["ttft_s"] == pytest.approx(512 / r["prefill_tok_s"], rel=1e-9)
    assert r["calibration"].startswith("fitted")


def test_ranges_are_in_the_contract(capsys):
    """predict --json carries the 80 % likely ranges [low, high] around the point rates, and the text shows them."""
    code, out, err = run(capsys, CONTRACT)
    assert code == 0, err
    r = json.loads(out)
    lo, hi = r["decode_tok_s_range"]
    assert lo < r["decode_tok_s_per_seq"] < hi <= r["decode_ceiling_tok_s"]
    lo, hi = r["prefill_tok_s_range"]
    assert lo < r["prefill_tok_s"] < hi
    code, out, err = run(capsys, CONTRACT[:-1])
    assert code == 0, err
    assert out.count("(likely ") == 2


def test_batch_aggregates_and_defaults(capsys):
    args = ["--chip", "M2 Ultra", "--gpu-cores", "76", "--model", "qwen3-30b-a3b", "--quant", "Q8_0",
            "--batch", "8", "--json"]
    code, out, err = run(capsys, args)
    assert code == 0, err
    r = json.loads(out)
    assert r["ram_gb"] == 192  # largest RAM of the chip
    assert r["decode_tok_s"] == pytest.approx(8 * r["decode_tok_s_per_seq"])


def test_single_bin_chip_needs_no_gpu_cores(capsys):
    single = next(c for c in profiles.all_chips()
                  if sum(o.name == c.name for o in profiles.all_chips()) == 1 and c.memory_bandwidth_gb_s)
    code, out, err = run(capsys, ["--chip", single.name, "--model", "llama-3.2-1b", "--quant", "Q8_0", "--json"])
    assert code == 0, err


@pytest.mark.parametrize("quant", ["F16", "BF16", "Q8_0", "Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K", "IQ4_XS"])
def test_gguf_spellings(capsys, quant):
    code, out, err = run(capsys, ["--chip", "M4 Pro", "--gpu-cores", "20", "--model", "llama-3.1-8b", "--quant", quant,
                                  "--runtime", "llama.cpp", "--json"])
    assert code == 0, err
    assert json.loads(out)["quant"] == quant


@pytest.mark.parametrize("quant,qid", [
    ("4bit", "mlx-4bit-g64"), ("5bit", "mlx-5bit-g64"), ("6bit", "mlx-6bit-g64"), ("8bit", "mlx-8bit-g64"),
    ("4bit-g32", "mlx-4bit-g32"), ("4bit-g64", "mlx-4bit-g64"), ("4bit-g128", "mlx-4bit-g128"),
    ("5bit-g32", "mlx-5bit-g32"), ("6bit-g128", "mlx-6bit-g128"), ("8bit-g32", "mlx-8bit-g32"),
    ("8bit-g128", "mlx-8bit-g128"), ("bf16", "mlx-bf16"), ("mxfp4", "mlx-mxfp4")])
def test_mlx_spellings(capsys, quant, qid):
    code, out, err = run(capsys, ["--chip", "M4 Max", "--gpu-cores", "40", "--model", "qwen3-8b", "--quant", quant,
                                  "--runtime", "mlx-lm", "--json"])
    assert code == 0, err
    assert json.loads(out)["quant"] == qid


@pytest.mark.parametrize("runtime", ["llama.cpp", "ollama"])
def test_gguf_runtimes(capsys, runtime):
    code, out, err = run(capsys, ["--chip", "M1 Max", "--gpu-cores", "32", "--model", "mistral-7b", "--quant",
                                  "Q4_K_M", "--runtime", runtime, "--json"])
    assert code == 0, err
    assert json.loads(out)["runtime"] == runtime


@pytest.mark.parametrize("args,needle", [
    (["--chip", "M3 Max", "--gpu-cores", "40", "--model", "llama-2-7b", "--quant", "Q4_Z"], "--quant"),
    (["--chip", "M9 Max", "--model", "llama-2-7b", "--quant", "Q4_0"], "--chip"),
    (["--chip", "M4 Max", "--ram", "24", "--model", "llama-2-7b", "--quant", "Q4_0"], "--ram"),
    (["--chip", "M5 Ultra", "--model", "llama-2-7b", "--quant", "Q4_0"], "bandwidth"),
    (["--chip", "M3 Max", "--gpu-cores", "40", "--ram", "24", "--model", "llama-2-7b", "--quant", "Q4_0"], "--ram"),
    (["--chip", "M3 Max", "--gpu-cores", "40", "--model", "llama-2-7b", "--quant", "Q4_0", "--batch", "0"], "--batch"),
])
def test_bad_input_is_one_line_exit_2(capsys, args, needle):
    code, out, err = run(capsys, args)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and needle in err


def test_text_output(capsys):
    code, out, err = run(capsys, CONTRACT[:-1])
    assert code == 0, err
    assert "prefill" in out and "decode" in out and "calibration" in out


def test_plan_with_chip_has_speed_side_by_side(capsys):
    code = main(["--model", "llama-3.1-8b", "--chip", "M4 Max", "--gpu-cores", "40", "-q", "Q4_K_M", "-q", "4bit",
                 "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    p = json.loads(out)
    runtimes = {o["runtime"] for o in p["options"] if o["speed"]}
    assert runtimes == {"llama.cpp", "mlx-lm"}
    s = p["options"][0]["speed"]
    # no lengths given: the default workload's point (planner/points.py)
    assert (s["prompt_tokens"], s["gen_tokens"]) == (DEFAULT_PROMPT, DEFAULT_GEN)
    assert set(s["decode_tok_s_total"]) >= {"1", "2", "4", "8", "16"}
    assert s["decode_tok_s_total"]["1"] == pytest.approx(s["decode_tok_s_per_seq"]["1"])
    code = main(["--model", "llama-3.1-8b", "--chip", "M4 Max", "--gpu-cores", "40", "-q", "Q4_K_M"])
    out, _ = capsys.readouterr()
    assert f"Speed ({DEFAULT_PROMPT:,}-token prompt" in out


def test_plan_without_chip_has_no_speed(capsys):
    code = main(["--model", "llama-3.1-8b", "--ram", "16", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert all(o["speed"] is None for o in json.loads(out)["options"])


def test_ram_names_the_bin(capsys):
    """An M4 Max with 64 GB is only sold with the 40-core GPU: no --gpu-cores needed, and Q4_K_M on mlx-lm is
    answered in the same 4-bit class (with a note), with ranges."""
    code, out, err = run(capsys, ["--chip", "M4 Max", "--ram", "64", "--model", "llama-3.3-70b", "--quant", "Q4_K_M",
                                  "--runtime", "mlx-lm", "--json"])
    assert code == 0, err
    r = json.loads(out)
    assert r["chip"] == "m4-max-40gpu" and r["quant"] == "mlx-4bit-g64"
    assert any("4-bit class" in n for n in r["notes"])
    assert r["decode_tok_s_range"][0] < r["decode_tok_s_per_seq"] < r["decode_tok_s_range"][1]


def test_ambiguous_bin_takes_the_slower_one_and_says_so(capsys):
    """M3 Max 36 GB is the 30-core bin only; without --ram both bins remain: the 30-core (300 GB/s) answers."""
    code, out, err = run(capsys, ["--chip", "M3 Max", "--ram", "36", "--model", "llama-2-7b", "--quant", "Q4_0",
                                  "--json"])
    assert code == 0, err
    assert json.loads(out)["chip"] == "m3-max-30gpu"
    code, out, err = run(capsys, ["--chip", "M3 Max", "--model", "llama-2-7b", "--quant", "Q4_0", "--json"])
    assert code == 0, err
    r = json.loads(out)
    assert r["chip"] == "m3-max-30gpu"
    assert any("add --gpu-cores" in n for n in r["notes"])


def _predict_json(capsys, *args):
    code, out, err = run(capsys, [*args, "--json"])
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("runtime, default", [("llama.cpp", "Q4_K_M"), ("mlx-lm", "mlx-4bit-g64")])
def test_without_a_quant_predict_answers_the_common_4_bit_download_and_says_so(capsys, runtime, default):
    """No --quant is not a dead end: the answer is the 4-bit class users download most, the same figures as asking
    for it by name, with a note naming it (never mistaken for an asked quantization)."""
    base = ["--chip", "M4 Pro", "--ram", "48", "--model", "qwen3-8b", "--runtime", runtime]
    quiet = _predict_json(capsys, *base)
    named = _predict_json(capsys, *base, "--quant", default)
    assert quiet["quant"] == named["quant"] == default
    for k in ("decode_tok_s", "prefill_tok_s", "peak_memory_bytes", "verdict"):
        assert quiet[k] == named[k], k
    assert any(default in n and "no --quant" in n for n in quiet["notes"])
    assert not any("no --quant" in n for n in named["notes"])


def test_without_a_quant_a_model_that_ships_quantized_is_answered_in_its_own_format(capsys):
    """gpt-oss ships its experts in MXFP4 (profile native_quant): without --quant each runtime gets the format that
    holds the checkpoint as published, not a 4-bit requantization of it."""
    m = profiles.load_model("gpt-oss-20b")
    assert m.native_quant is not None
    for runtime, own in (("llama.cpp", m.native_quant.gguf_preset), ("mlx-lm", m.native_quant.mlx_quant)):
        r = _predict_json(capsys, "--chip", "M4 Max", "--ram", "64", "--model", "gpt-oss-20b", "--runtime", runtime)
        assert r["quant"] == own
        assert any("ships in" in n for n in r["notes"])


def test_a_missing_option_points_to_the_subcommands_own_help(capsys):
    code, out, err = run(capsys, ["--model", "qwen3-8b"])
    assert code == 2
    assert err.count("\n") == 1 and "--chip" in err and "plan predict --help" in err


def test_a_request_over_the_models_context_is_said(capsys):
    """qwen3-8b holds 40,960 tokens (config max_position_embeddings): a longer depth + prompt + gen is still timed,
    but the answer says it is over the model's context; one within it says nothing of the kind."""
    n = profiles.load_model("qwen3-8b").config.max_position_embeddings
    base = ["--chip", "M4 Max", "--ram", "128", "--model", "qwen3-8b", "--gen", "100"]
    over = _predict_json(capsys, *base, "--prompt", str(n), "--depth", "1000")
    assert any(f"{n + 1100:,} tokens, over qwen3-8b's {n:,}-token context" in x for x in over["notes"])
    within = _predict_json(capsys, *base, "--prompt", str(n - 100))
    assert not any("-token context" in x for x in within["notes"])


@pytest.mark.parametrize("name, runtime, quant", [("qwen3:8b-q8_0", "llama.cpp", "Q8_0"),
                                                  ("hf.co/Qwen/Qwen3-8B-GGUF:Q6_K", "llama.cpp", "Q6_K"),
                                                  ("mlx-community/Qwen3-8B-8bit", "mlx-lm", "mlx-8bit-g64")])
def test_a_name_that_pins_a_quant_is_answered_at_it_as_plan_does(capsys, name, runtime, quant):
    """`plan --model qwen3:8b-q8_0` plans Q8_0 (planner.plan.pinned_by_name); predict and serve answered Q4_K_M for
    the same typed name."""
    r = _predict_json(capsys, "--chip", "M4 Max", "--ram", "64", "--model", name, "--runtime", runtime)
    assert r["quant"] == quant and any(f"from the name {name}" in n for n in r["notes"])
    code = main(["serve", "--model", name, "--chip", "M4 Max", "--ram", "64", "--runtime", runtime, "--rate", "1/min",
                 "--duration", "10min", "--no-sweep", "--json"])
    assert code == 0 and json.loads(capsys.readouterr().out)["quant"] == quant
    assert main(["--model", name, "--ram", "64", "--runtime", runtime, "--json"]) == 0
    assert {o["quant"] for o in json.loads(capsys.readouterr().out)["options"]} == {quant}


@pytest.mark.parametrize("cmd", ["predict", "recommend"])
def test_images_of_predict_and_recommend_are_checked_as_plans(capsys, cmd):
    """--images on a text-only model, --image-size without --images: one line naming the input, as `plan` says."""
    mac = ["--chip", "M4 Max", "--gpu-cores", "40", "--ram", "64"]
    for argv, said in ((["--model", "llama-3.1-8b", "--images", "1"], "--images 1: llama-3.1-8b has no vision"),
                       (["--model", "qwen3-vl-8b", "--image-size", "512x512"], "--image-size needs --images")):
        code = main([cmd, *argv, *mac])
        err = capsys.readouterr().err
        assert code != 0 and said in err and "Traceback" not in err, err
        assert main([*argv, *mac]) != 0 and said in capsys.readouterr().err  # plan's words


def test_predict_states_the_kv_cache_type_it_answered(capsys):
    # qa: --kv-type kv8 asked of llama.cpp was answered at q8_0, and neither the text nor the JSON said which KV
    # cache type the figures are for (plan's bottom line and recommend state it)
    base = ["predict", "--model", "qwen3-8b", "--chip", "M4 Pro", "--gpu-cores", "20", "--runtime", "llama.cpp"]
    assert main([*base, "--kv-type", "kv8", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["kv_type"] == "q8_0"
    assert main(base) == 0
    assert "(KV cache f16)" in capsys.readouterr().out.splitlines()[0]
