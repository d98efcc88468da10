"""`plan cluster`: text and JSON output, recipes per engine, bad input -> one line on stderr, exit 2."""

from __future__ import annotations

import json

import pytest

from cli.main import main


def run(capsys, *args):
    code = main(["cluster", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_deepseek_two_ultras_text(capsys):
    code, out, err = run(capsys, "--model", "deepseek-v3", "--macs", "2x Mac Studio M3 Ultra 512GB", "--link", "tb5")
    assert code == 0, err
    for s in ("GPU limit", "Binding constraint", "One Mac Studio M3 Ultra", ("mlx.launch --hostfile hosts.json "
              "--backend jaccl"), "pipeline_generate.py", "Decode by number of Macs"):
        assert s in out, s


def test_json_llama_rpc_recipe(capsys):
    code, out, err = run(capsys, "--model", "llama-3.1-405b", "--macs", "2x Mac Studio M3 Ultra 256GB",
                         "--engine", "llama.cpp-rpc", "--link", "10gbe", "--quant", "Q4_K_M", "--json")
    assert code == 0, err
    r = json.loads(out)
    plan, rec = r["plan"], r["recipe"]
    assert plan["engine"] == "llama.cpp-rpc" and plan["transport"]["backend"] == "rpc"
    layers = sum(n["layers"][1] - n["layers"][0] for n in plan["nodes"])
    assert layers == 126
    assert any(c.startswith("on mac2.local: rpc-server") for c in rec["commands"])
    head = rec["commands"][-1]
    assert "--rpc mac2.local:50052" in head and "-ngl 99" in head and "--tensor-split" in head


def test_tensor_ring_hostfile_and_warning(capsys):
    code, out, err = run(capsys, "--model", "qwen3-8b", "--macs", "2x Mac Studio M3 Ultra 96GB", "--link", "tb4",
                         "--mode", "tensor", "--json")
    assert code == 0, err
    r = json.loads(out)
    assert r["recipe"]["hostfile"][0]["ssh"] == "mac1.local"
    assert any("tensor parallel over TCP" in n for n in r["plan"]["notes"])
    assert r["plan"]["slower_than_single"] is True


@pytest.mark.parametrize("args", [
    ["--macs", "2x Mac Studio M3 Ultra"],
    ["--macs", "2x Mac Studio M7 Ultra 512GB"],
    ["--macs", "Mac mini M3 Ultra 512GB"],
    ["--macs", ""],
    ["--macs", "2x Mac Studio M3 Ultra 512GB", "--link", "carrier-pigeon"],
    ["--macs", "2x Mac Studio M3 Ultra 512GB", "--engine", "vllm"],
    ["--macs", "2x Mac Studio M3 Ultra 512GB", "--engine", "llama.cpp-rpc", "--mode", "tensor"],
    ["--macs", "2x Mac Studio M3 Ultra 512GB", "--users", "0"],
])
def test_bad_input_one_line_exit_2(capsys, args):
    code, _out, err = run(capsys, "--model", "deepseek-v3", *args)
    assert code == 2
    assert err.startswith("plan: error:") and err.count("\n") == 1


def test_a_cluster_that_does_not_fit_prints_no_speed_and_the_ways_out(capsys):
    code, out, err = run(capsys, "--model", "kimi-k2", "--macs", "2x Mac Studio M3 Ultra 512GB", "--quant", "mlx-8bit")
    assert code == 0, err
    assert "tok/s per user" not in out and "Cluster: does not fit" in out
    assert "a smaller quant" in out and "(3 in all)" in out


@pytest.mark.parametrize("engine", ["mlx", "llama.cpp-rpc"])
def test_without_a_quant_a_cluster_serves_the_quant_predict_answers(capsys, engine):
    """gpt-oss ships its experts in MXFP4 (profile native_quant): `plan predict` and `plan serve` answer that format
    without --quant; `plan cluster` took mlx-4bit-g64 / Q4_K_M, another model size for the same question."""
    from planner import profiles

    m = profiles.load_model("gpt-oss-120b")
    fmt, runtime = ("mlx", "mlx-lm") if engine == "mlx" else ("gguf", "llama.cpp")
    code, out, err = run(capsys, "--model", "gpt-oss-120b", "--macs", "2x Mac Studio M4 Max 128GB", "--engine", engine,
                         "--json")
    assert code == 0, err
    code2 = main(["predict", "--model", "gpt-oss-120b", "--chip", "M4 Max", "--ram", "128", "--runtime", runtime,
                  "--json"])
    pr = json.loads(capsys.readouterr().out)
    assert code2 == 0 and json.loads(out)["plan"]["quant"] == pr["quant"] == m.native_quant.preset_for(fmt)


def test_rdma_needs_the_links_macos(capsys):
    """tb5's RDMA needs macOS 26.2+ (profiles/links/tb5.yaml min_macos, Apple TN3205): under --macos 15 the Macs talk
    TCP (ring) at the link's TCP rate, and the answer says why; under 26, JACCL."""
    from planner.cluster.links import load_link

    tb5 = load_link("tb5")
    got = {}
    for macos in ("15", "26"):
        code, out, err = run(capsys, "--model", "llama-3.3-70b", "--macs", "2x Mac Studio M4 Max 64GB", "--macos", macos,
                             "--json")
        assert code == 0, err
        got[macos] = json.loads(out)["plan"]
    assert got["26"]["transport"]["backend"] == "jaccl"
    assert got["15"]["transport"]["backend"] == "ring" and got["15"]["transport"]["bytes_s"] == tb5.achieved_bytes_s
    assert any("needs macOS 26.2" in n for n in got["15"]["notes"])
    assert got["15"]["speed"]["decode_tok_s_per_user"] < got["26"]["speed"]["decode_tok_s_per_user"]


def test_a_context_over_the_models_is_capped_as_every_command_caps_it(capsys):
    """kimi-k2 holds 131,072 tokens (config max_position_embeddings): `plan` and `plan recommend` cap a longer
    --context at it and say so; `plan cluster` sized the KV cache of 10,000,000 tokens."""
    from planner import profiles

    n = profiles.load_model("kimi-k2").config.max_position_embeddings
    macs = ["--model", "kimi-k2", "--macs", "4x Mac Studio M3 Ultra 512GB", "--json"]
    code, out, err = run(capsys, *macs, "--context", "10000000")
    assert code == 0, err
    capped = json.loads(out)["plan"]
    code, out, err = run(capsys, *macs, "--context", str(n))
    asked = json.loads(out)["plan"]
    assert capped["context"] == n and any(f"maximum of {n:,} tokens: capped at {n:,}" in x for x in capped["notes"])
    assert [s["kv_bytes"] for s in capped["nodes"]] == [s["kv_bytes"] for s in asked["nodes"]]


@pytest.mark.parametrize("model", ["gemma-4-31b", "qwen3-4b", "llama-3.1-8b"])
@pytest.mark.parametrize("engine, runtime, quant", [("mlx", "mlx-lm", "mlx-4bit-g64"),
                                                    ("llama.cpp-rpc", "llama.cpp", "Q4_K_M")])
def test_a_cluster_of_one_mac_holds_what_plan_says_that_mac_holds(capsys, model, engine, runtime, quant):
    """A tied embedding (gemma-4-31b, qwen3-4b: tie_word_embeddings) is one tensor that serves as the input
    embedding and the head: `plan cluster` stored it twice, 1.16 GB more than `plan` for gemma-4-31b Q4_K_M on the
    same Mac; an untied model (llama-3.1-8b) agreed already."""
    from planner import profiles

    assert profiles.load_model(model).config.tie_word_embeddings == (model != "llama-3.1-8b")
    code, out, err = run(capsys, "--model", model, "--macs", "1x Mac Studio M4 Max 128GB", "--engine", engine,
                         "--quant", quant, "--json")
    assert code == 0, err
    (node,) = json.loads(out)["plan"]["nodes"]
    assert main(["--model", model, "--chip", "M4 Max", "--gpu-cores", "40", "--ram", "128", "--runtime", runtime,
                 "--quant", quant, "--json"]) == 0
    (o,) = json.loads(capsys.readouterr().out)["options"]
    assert node["weights_bytes"] == o["memory"]["weights"] and node["total_bytes"] == o["memory"]["total"]


def test_the_cached_share_is_an_input_stated_even_without_a_fit(capsys):
    """--cached-prefix (planner/points.py CachedPrefix): the JSON states the share asked for, also when the model
    does not fit and no TTFT is given; a share outside [0, 1) is one line naming the flag."""
    code, out, err = run(capsys, "--model", "llama-3.3-70b", "--macs", "1x Mac mini M4 16GB", "--cached-prefix", "0.5",
                         "--json")
    assert code == 0, err
    p = json.loads(out)["plan"]
    assert not p["fits"] and p["speed"] is None and p["cached_prefix_share"] == 0.5
    code, out, err = run(capsys, "--model", "llama-3.1-8b", "--macs", "1x Mac mini M4 16GB", "--cached-prefix", "1.5")
    assert code == 2 and "--cached-prefix 1.5" in err and len(err.strip().splitlines()) == 1
