"""One answer everywhere: every command answers the same Mac, model, quant and workload with the same fit, speed and
time to first token (the issue "One answer everywhere", first "Done when").

A deterministic grid of catalog models × Macs × runtime/quant × workloads (single values, distributions and
p50/p90 lengths; cold and cached prompts) is asked of `plan`, `plan predict`, `plan recommend`, `plan models`,
`plan buy` and `plan serve` (each command's --json, in-process through cli.main like a user's command line) and
of the app's readings (app/readings.py on the core objects the app computes). Numbers must agree exactly (1e-9
relative); where a command legitimately answers something else, the quantity that must agree is compared and the
comment says why.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import math

import pytest

from cli.main import main
from planner import profiles
from planner.format import cached_label, fmt_seconds
from planner.search import speed_available
from planner.workload import gen_point, parse_length, prompt_point

pytestmark = pytest.mark.skipif(not speed_available(), reason="speed model not installed")

EXACT = 1e-9
MACS = [("M4 Max", 40, 64.0), ("M3 Pro", 18, 36.0)]
MODELS = ["llama-3.1-8b", "qwen3-30b-a3b"]                 # dense GQA, MoE
RUNTIMES = [("llama.cpp", "Q4_K_M"), ("mlx-lm", "mlx-4bit-g64")]
# (prompt, gen, cached share): the length forms every command takes; the prompts' p90 are multiples of 16 and the
# cached prefixes multiples of 256 tokens, the grid of the serve simulation's step memo (see test_serve_...)
WORKLOADS = [("1024", "256", 0.0), ("1024:0.6,4096:0.4", "p50=100,p90=301", 0.5), ("p50=1000,p90=3072", "64", 0.75)]
CASES = [(m, mac, rt, wl) for m in MODELS for mac in MACS for rt in RUNTIMES for wl in WORKLOADS]
# every target met by every option, so recommend lists them all (not only the closest) and buy ranks by price
OPEN_TARGETS = ["--min-tok-s", "0.001", "--max-ttft", "1000000", "--max-request", "1000000"]


def close(a: float, b: float, rel: float = EXACT) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-12)


@functools.cache
def ask(*argv: str) -> dict:
    """A command's --json answer, run in-process as from the command line."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main([*argv, "--json"])
    assert code == 0, (argv, out.getvalue()[:300])
    return json.loads(out.getvalue())


def point(wl) -> tuple[int, int, int]:
    """(prompt, gen) a single-point answer uses and the context every command reserves: p90 prompt, mean output
    (planner/workload.py prompt_point / gen_point); context = the longest request (max prompt + max output), the
    context the workload commands reserve, given to `plan` as --context."""
    p, g = parse_length(wl[0], "--prompt"), parse_length(wl[1], "--gen")
    return prompt_point(p), gen_point(g), p.max_tokens + g.max_tokens


def mac_args(mac) -> list[str]:
    chip, cores, ram = mac
    return ["--chip", chip, "--gpu-cores", str(cores), "--ram", f"{ram:g}"]


def workload_args(wl, ctx: int) -> list[str]:
    return ["--prompt", wl[0], "--gen", wl[1], "--cached-prefix", f"{wl[2]:g}", "--context", str(ctx),
            "--users", "1"]


def plan_option(model, mac, rt, wl) -> dict:
    _, _, ctx = point(wl)
    r = ask("--model", model, *mac_args(mac), "--runtime", rt[0], "--quant", rt[1], *workload_args(wl, ctx))
    (o,) = [o for o in r["options"] if o["runtime"] == rt[0] and o["quant"] == rt[1]]
    return o


def recommend_options(model, mac, rt, wl) -> list[dict]:
    _, _, ctx = point(wl)
    return ask("recommend", "--model", model, *mac_args(mac), "--runtime", rt[0], "--workload", "chat",
               *workload_args(wl, ctx), *OPEN_TARGETS, "--top", "500")["options"]


def same_config(o: dict, runtime: str, quant: str, kv: str, slots: int = 1) -> bool:
    return o["runtime"] == runtime and o["quant"] == quant and o["kv_type"] == kv and o["slots"] == slots


@pytest.mark.parametrize("model, mac, rt, wl", CASES)
def test_plan_predict_and_recommend_give_one_answer(model, mac, rt, wl):
    """plan, predict and recommend: the same fit verdict, weights and KV bytes, decode and prefill tok/s and TTFT,
    and every TTFT states the same prompt-cache share."""
    P, G, ctx = point(wl)
    o = plan_option(model, mac, rt, wl)
    sp = o["speed"]
    assert (sp["prompt_tokens"], sp["gen_tokens"], sp["cached_prefix_share"]) == (P, G, wl[2])

    # predict answers at the same point; it reserves exactly the request's tokens (depth 0 + prompt + gen), so its
    # KV bytes and verdict are compared only when that is the plan's context (a single output length)
    pr = ask("predict", "--model", model, *mac_args(mac), "--runtime", rt[0], "--quant", rt[1],
             "--prompt", wl[0], "--gen", wl[1], "--cached-prefix", f"{wl[2]:g}")
    assert (pr["prompt_tokens"], pr["gen_tokens"], pr["cached_prefix_share"]) == (P, G, wl[2])
    assert close(pr["ttft_s"], sp["ttft_s"]) and close(pr["prefill_tok_s"], sp["prefill_tok_s"])
    assert close(pr["decode_tok_s_per_seq"], sp["decode_tok_s_per_seq"]["1"])
    assert close(pr["time_per_request_s"], sp["time_per_request_s"])
    assert pr["weights_bytes"] == o["weights"]["total_bytes"]
    if ctx == P + G:
        assert pr["kv_cache_bytes"] == o["memory"]["kv_cache"] and pr["peak_memory_bytes"] == o["memory"]["total"]
        assert pr["verdict"] == o["fit"]["verdict"]

    # recommend searches KV types and slots: its option with the plan's KV type and one slot (one user)
    (ro,) = [x for x in recommend_options(model, mac, rt, wl) if same_config(x, rt[0], rt[1], o["kv_type"])]
    rs = ro["speed"]
    assert ro["context"] == ctx and ro["memory_bytes"] == o["memory"]["total"]
    assert ro["fit"]["verdict"] == o["fit"]["verdict"]
    assert close(rs["ttft_s"], sp["ttft_s"]) and close(rs["prefill_tok_s"], sp["prefill_tok_s"])
    assert close(rs["decode_tok_s_per_user"], sp["decode_tok_s_per_seq"]["1"])
    assert close(rs["time_per_request_s"], sp["time_per_request_s"])
    assert rs["cached_prefix_share"] == wl[2]


@pytest.mark.parametrize("model, mac, rt, wl", CASES)
def test_models_and_buy_give_the_recommend_answer_for_their_configuration(model, mac, rt, wl):
    """`plan models` and `plan buy` pick their own configuration per model / per Mac: the answer they give for it
    is recommend's for the same configuration on the same Mac."""
    P, G, ctx = point(wl)
    opts = recommend_options(model, mac, rt, wl)
    chip = profiles.resolve_chip(mac[0], mac[1])

    fam = profiles.load_model(model).family
    m = ask("models", *mac_args(mac), "--runtime", rt[0], "--family", fam, "--context", str(ctx), "--users", "1",
            "--prompt", wl[0], "--gen", wl[1], "--cached-prefix", f"{wl[2]:g}")
    assert (m["prompt_tokens"], m["gen_tokens"], m["cached_prefix_share"]) == (P, G, wl[2])
    (row,) = [x for x in m["rows"] if x["model"] == model]
    (ro,) = [x for x in opts if same_config(x, row["runtime"], row["quant"], row["kv_type"])]
    assert row["memory_bytes"] == ro["memory_bytes"] and row["verdict"] == ro["fit"]["verdict"]
    assert close(row["decode_tok_s_per_user"], ro["speed"]["decode_tok_s_per_user"])
    assert close(row["prefill_tok_s"], ro["speed"]["prefill_tok_s"]) and close(row["ttft_s"], ro["speed"]["ttft_s"])

    b = ask("buy", "--model", model, "--runtime", rt[0], "--workload", "chat", *workload_args(wl, ctx),
            *OPEN_TARGETS, "--include-discontinued")
    rows = [x for x in b["per_mac"] if x["chip"] == chip.id and x["ram_gb"] == mac[2]]
    assert rows, "the Mac is in the buy sweep"
    for x in rows:
        (ro,) = [y for y in opts if same_config(y, x["runtime"], x["quant"], x["kv_type"], x["slots"])]
        assert x["memory_bytes"] == ro["memory_bytes"] and x["verdict"] == ro["fit"]["verdict"]
        assert close(x["ttft_s"], ro["speed"]["ttft_s"]) and x["cached_prefix_share"] == wl[2]
        assert close(x["decode_tok_s_per_user"], ro["speed"]["decode_tok_s_per_user"])
        assert close(x["time_per_request_s"], ro["speed"]["time_per_request_s"])


@pytest.mark.parametrize("model, mac, rt, wl", [c for c in CASES if c[1] == MACS[0]])
def test_serve_unloaded_is_the_single_request_answer(model, mac, rt, wl):
    """`plan serve` simulates queueing, so only its unloaded requests must agree: one slot, one request an hour
    (none overlaps), every request at the plan's single point. Their TTFT and their time after the first token
    are the plan's TTFT and time per request minus TTFT. llama.cpp: exactly. mlx-lm: the same rule (prefill of
    all but the last prompt token, then one decode step, throughput.first_token_time), but the simulator advances
    each prompt in --prefill-step-size pieces with its step times memoised on a grid (prompt pieces rounded up to
    16 tokens, depths down to 256, decode read from a piecewise-linear table: planner/serve.py StepModel), while
    the roofline splits a prompt into equal chunks: TTFT within 0.5 % (0.13 % measured), decode within 1e-4."""
    P, G, _ = point(wl)
    sp = plan_option(model, mac, rt, wl)["speed"]
    s = ask("serve", "--model", model, *mac_args(mac), "--runtime", rt[0], "--quant", rt[1], "--slots", "1",
            "--rate", "1/h", "--duration", "10h", "--prompt", str(P), "--gen", str(G),
            "--cached-prefix", f"{wl[2]:g}", "--no-sweep")
    assert s["cached_prefix_share"] == wl[2] and s["n_requests"] > 0
    first, rest = (EXACT, EXACT) if rt[0] == "llama.cpp" else (5e-3, 1e-4)
    assert close(s["ttft_s"]["p50"], sp["ttft_s"], first) and close(s["ttft_s"]["p99"], sp["ttft_s"], first)
    assert close(s["e2e_s"]["p50"] - s["ttft_s"]["p50"], sp["time_per_request_s"] - sp["ttft_s"], rest)


@pytest.mark.parametrize("model, mac, rt, wl", [c for c in CASES if c[0] == MODELS[0]])
def test_the_app_reads_the_same_answer(model, mac, rt, wl):
    """The app's readings (app/readings.py) on the objects the app computes for its form (planner.plan.plan for the
    charts and TTFT reading, planner.advice.recommend for the answer, planner.buy.buy for the buy table) state the
    commands' figures and the same prompt-cache share."""
    from app import readings
    from planner.advice import recommend
    from planner.buy import buy
    from planner.plan import PlanRequest, plan, resolve_mac
    from planner.workload import custom_workload

    P, G, ctx = point(wl)
    o = plan_option(model, mac, rt, wl)
    req = PlanRequest(model=model, chip=mac[0], gpu_cores=mac[1], ram=mac[2], runtimes=[rt[0]], quants=[rt[1]],
                      context=ctx, users=1, prompt=wl[0], gen=wl[1], cached_prefix=wl[2])
    p = plan(req)
    (po,) = [x for x in p.options if x.quant == rt[1]]
    text = readings.ttft_reading(p, [po])
    assert f"waits {fmt_seconds(o['speed']['ttft_s'])} ({cached_label(wl[2])})" in text
    assert close(po.speed.ttft_s, o["speed"]["ttft_s"])

    work = custom_workload("chat", prompt=wl[0], gen=wl[1], users=1, context=ctx, min_tok_s=0.001, max_ttft=1e6,
                           max_request=1e6, cached_prefix=wl[2])
    ram, chip, _ = resolve_mac(req)
    rec = recommend(model, ram, work, chip=chip, runtimes=[rt[0]], top=500, best_effort=True)
    opts = recommend_options(model, mac, rt, wl)
    for row, ro in zip(readings.recommend_rows(rec), opts, strict=True):
        assert (row["runtime"], row["quantization"], row["KV"]) == (ro["runtime"], ro["quant"], ro["kv_type"])
        assert row["first token"] == fmt_seconds(ro["speed"]["ttft_s"])

    b = buy([model], work, runtimes=[rt[0]], include_discontinued=True)
    ask_rows = {x["mac"]: x for x in ask("buy", "--model", model, "--runtime", rt[0], "--workload", "chat",
                                          *workload_args(wl, ctx), *OPEN_TARGETS, "--include-discontinued")["per_mac"]}
    shown = readings.buy_rows(b)
    assert len(shown) == len(ask_rows)
    for row, x in zip(shown, sorted(b.per_mac, key=lambda r: not r.within_budget), strict=True):
        assert row["first token [s]"] == ask_rows[x.mac]["ttft_s"]
        assert row["tok/s per user"] == ask_rows[x.mac]["decode_tok_s_per_user"]


@pytest.mark.parametrize("rt, engine", [(RUNTIMES[0], "llama.cpp-rpc"), (RUNTIMES[1], "mlx")])
@pytest.mark.parametrize("wl", WORKLOADS)
def test_a_cluster_of_one_mac_is_that_mac(rt, engine, wl):
    """`plan cluster` with one Mac (no link traffic) answers as `plan` for it: TTFT (the same first-token rule, the
    same cached prefix not prefilled again), prefill and decode tok/s, stating the same prompt-cache share."""
    P, G, ctx = point(wl)
    sp = plan_option("llama-3.1-8b", MACS[0], rt, wl)["speed"]
    c = ask("cluster", "--model", "llama-3.1-8b", "--macs", "1x Mac Studio M4 Max 64GB", "--engine", engine,
            "--quant", rt[1], "--prompt", str(P), "--gen", str(G), "--context", str(ctx),
            "--cached-prefix", f"{wl[2]:g}")["plan"]
    assert c["nodes"][0]["chip"] == profiles.resolve_chip(MACS[0][0], MACS[0][1]).id
    cs = c["speed"]
    assert cs["cached_prefix_share"] == sp["cached_prefix_share"] == wl[2]
    assert close(cs["ttft_s"], sp["ttft_s"]) and close(cs["prefill_tok_s"], sp["prefill_tok_s"])
    assert close(cs["decode_tok_s_per_user"], sp["decode_tok_s_per_seq"]["1"])


@pytest.mark.parametrize("rt, engine", [(RUNTIMES[0], "llama.cpp-rpc"), (RUNTIMES[1], "mlx")])
def test_a_context_shorter_than_the_request_is_one_rule_in_plan_and_cluster(rt, engine):
    """--context 8192 with a 20,000-token prompt: a server refuses the request, so both plan and a one-Mac cluster
    reserve prompt + gen = 20,750 (capacity.hold_request) and say so, as `plan models`, recommend and buy do; cluster
    and models clipped the prompt to 8,191 without a word while plan fitted its tables at 8K: three answers to one
    question (recommend and buy held the request without saying so)."""
    lengths = ("--context", "8192", "--prompt", "20000", "--gen", "750")
    r = ask("--model", "llama-3.1-8b", *mac_args(MACS[0]), "--runtime", rt[0], "--quant", rt[1], *lengths)
    (o,) = r["options"]
    c = ask("cluster", "--model", "llama-3.1-8b", "--macs", "1x Mac Studio M4 Max 64GB", "--engine", engine,
            "--quant", rt[1], *lengths)["plan"]
    assert r["request"]["context"] == o["memory"]["context"] == c["context"] == 20_750
    assert c["prompt_tokens"] == 20_000
    assert close(c["speed"]["ttft_s"], o["speed"]["ttft_s"])
    assert c["nodes"][0]["kv_bytes"] == o["memory"]["kv_cache"]
    said = "--context 8,192 is shorter than --prompt 20,000 + --gen 750 tokens"
    assert sum(said in n for n in r["notes"]) == 1 and sum(said in n for n in c["notes"]) == 1
    # plan models: it timed the prompt cut to 8,191 tokens and sized 8K, echoing prompt 20,000
    m = ask("models", *mac_args(MACS[0]), "--runtime", rt[0], "--family", "llama", *lengths)
    (row,) = [x for x in m["rows"] if x["model"] == "llama-3.1-8b"]
    assert m["context"] == row["context"] == 20_750 and sum(said in n for n in m["notes"]) == 1
    (same,) = ask("--model", "llama-3.1-8b", *mac_args(MACS[0]), "--runtime", rt[0], "--quant", row["quant"],
                  "--kv-type", row["kv_type"], *lengths)["options"]   # plan for the row's configuration
    assert row["memory_bytes"] == same["memory"]["total"] and close(row["ttft_s"], same["speed"]["ttft_s"])
    # recommend and buy held the request already (WorkloadProfile.context) but did not say why -c was not used
    rec = ask("recommend", "--model", "llama-3.1-8b", *mac_args(MACS[0]), "--runtime", rt[0], "--quant", rt[1],
              *lengths)
    buy = ask("buy", "--model", "llama-3.1-8b", "--runtime", rt[0], *lengths)
    assert sum(said in n for n in rec["notes"]) == 1 and sum(said in n for n in buy["notes"]) == 1


@pytest.mark.parametrize("rt, engine", [(RUNTIMES[0], "llama.cpp-rpc"), (RUNTIMES[1], "mlx")])
def test_with_no_lengths_a_cluster_of_one_mac_is_the_plans_default_answer(rt, engine):
    """No --prompt, --gen or --cached-prefix: a one-Mac cluster answers `plan`'s default workload (the chat preset's
    point and cached share, planner/points.py) with plan's TTFT and decode; --cached-prefix 0 prefills the whole
    prompt, so its TTFT is longer (and decode, which reads the same context, unchanged)."""
    from planner.points import DEFAULT_CACHED_PREFIX, DEFAULT_GEN, DEFAULT_PROMPT

    (o,) = ask("--model", "llama-3.1-8b", *mac_args(MACS[0]), "--runtime", rt[0], "--quant", rt[1])["options"]
    sp = o["speed"]
    one = ("cluster", "--model", "llama-3.1-8b", "--macs", "1x Mac Studio M4 Max 64GB", "--engine", engine,
           "--quant", rt[1])
    c = ask(*one)["plan"]
    cs = c["speed"]
    assert (c["prompt_tokens"], c["gen_tokens"], c["cached_prefix_share"], cs["cached_prefix_share"]) == (
        DEFAULT_PROMPT, DEFAULT_GEN, DEFAULT_CACHED_PREFIX, DEFAULT_CACHED_PREFIX)
    assert close(cs["ttft_s"], sp["ttft_s"]) and close(cs["decode_tok_s_per_user"], sp["decode_tok_s_per_seq"]["1"])
    cold = ask(*one, "--cached-prefix", "0")["plan"]["speed"]
    assert cold["cached_prefix_share"] == 0 and cold["ttft_s"] > cs["ttft_s"]
    assert close(cold["decode_tok_s_per_user"], cs["decode_tok_s_per_user"])


# Session 17's cases (issue 32): one smallest need when nothing fits, one total with images, one context cap
NO_FIT = [("qwen3.6-27b", "16"), ("gpt-oss-20b", "16"), ("deepseek-v3", "64")]


@pytest.mark.parametrize("model, ram", NO_FIT)
def test_nothing_fits_names_one_smallest_need(model, ram):
    """`plan`, `plan recommend` and the app's headline: the same smallest need (runtime, quant, KV type searched,
    bytes and margin) and the same excess over the most the GPU may have (planner.search.smallest_need)."""
    from app import readings
    from planner.format import over_text
    from planner.plan import PlanRequest, plan
    from planner.results import SmallestNeed, WiredLimit

    p = ask("--model", model, "--ram", ram)
    r = ask("recommend", "--model", model, "--ram", ram)["answer"]
    assert p["smallest"] is not None and r["smallest"] == p["smallest"]
    assert r["smallest_memory_bytes"] == p["smallest"]["memory_bytes"]
    words = over_text(SmallestNeed(**p["smallest"]), WiredLimit(**p["wired"]))
    assert words in r["message"]
    assert words[1:] in readings.headline(plan(PlanRequest(model=model, ram=float(ram))))[1]


@pytest.mark.parametrize("mac", MACS)
def test_with_images_the_bottom_line_is_the_plans_answer_for_its_option(mac):
    """--images: the bottom line's option (recommend's ranking) needs what `plan` gives that runtime, quant and KV
    type with the same images: the projector and the image tokens' context counted once, in both."""
    d = ask("--model", "qwen3-vl-8b", *mac_args(mac), "--images", "2")
    top = d["bottom_line"]["option"]
    same = ask("--model", "qwen3-vl-8b", *mac_args(mac), "--images", "2", "--runtime", top["runtime"],
               "--quant", top["quant"], "--kv-type", top["kv_type"])
    (o,) = same["options"]
    assert o["memory"]["vision"] > 0 and top["context"] == o["memory"]["context"] == d["request"]["context"]
    assert top["memory_bytes"] == o["memory"]["total"]


def test_a_context_past_the_models_maximum_is_capped_alike():
    """`plan`, `plan recommend` and `plan cluster` cap a context past the model's maximum at it, with one note
    (capacity.cap_context)."""
    most = profiles.load_model("llama-3.1-8b").config.max_position_embeddings
    ctx = ["--context", str(most + 1000)]
    p = ask("--model", "llama-3.1-8b", "--ram", "64", *ctx)
    r = ask("recommend", "--model", "llama-3.1-8b", "--ram", "64", *ctx, *OPEN_TARGETS)
    c = ask("cluster", "--model", "llama-3.1-8b", "--macs", "1x Mac Studio M4 Max 64GB", *ctx)["plan"]
    assert p["request"]["context"] == r["options"][0]["context"] == c["context"] == most
    (note,) = [n for n in p["notes"] if "capped at" in n]
    assert note in r["notes"] and note in c["notes"]


# --------------------------------------------------------------------------- one deployment rule everywhere
CONVERTED = "--quant Q4_K_M is a gguf format and mlx-lm loads mlx weights: answered for mlx-4bit-g64, the same 4-bit class"


def test_every_command_converts_a_quant_of_the_other_format_with_the_same_note():
    """A quant in the other runtime's format (Q4_K_M asked of mlx-lm) is one rule of the deployment stage
    (planner/deployment.py resolve_quant): every command answers mlx's 4-bit (mlx-4bit-g64) and its --json says so in
    the same words. `plan` and `plan recommend` refused ("not a format of mlx-lm") where predict and serve converted."""
    mac = mac_args(MACS[0])
    asked = ["--model", "qwen3-8b", "--quant", "Q4_K_M"]
    answers = {
        "plan": ask(*asked, *mac, "--runtime", "mlx-lm"),
        "predict": ask("predict", *asked, *mac, "--runtime", "mlx-lm"),
        "recommend": ask("recommend", *asked, *mac, "--runtime", "mlx-lm"),
        "serve": ask("serve", *asked, *mac, "--runtime", "mlx-lm", "--no-sweep", "--duration", "10min"),
        "finetune": ask("finetune", *asked, *mac),
    }
    cluster = ask("cluster", *asked, "--macs", "2x Mac Studio M4 Max 64GB", "--engine", "mlx")["plan"]
    quants = {"plan": {o["quant"] for o in answers["plan"]["options"]},
              "recommend": {o["quant"] for o in answers["recommend"]["options"]},
              **{k: {answers[k]["quant"]} for k in ("predict", "serve", "finetune")}, "cluster": {cluster["quant"]}}
    assert all(q == {"mlx-4bit-g64"} for q in quants.values()), quants
    for name, notes in [*((k, a["notes"]) for k, a in answers.items()), ("cluster", cluster["notes"])]:
        assert CONVERTED in notes, name


MLX_NAME = "mlx-community/Qwen3-8B-4bit"


def test_a_name_that_pins_mlx_is_answered_by_mlx_lm_in_every_command():
    """Without --runtime, a name holding MLX weights is answered by mlx-lm at the name's preset by every command
    (planner/deployment.py resolve_runtime; planner.plan.pinned_by_name). `plan` answered mlx-lm while `plan predict`
    and `plan serve` answered llama.cpp Q4_K_M and `plan buy` llama.cpp's own search."""
    mac = mac_args(MACS[0])
    got = {
        "plan": {(o["runtime"], o["quant"]) for o in ask("--model", MLX_NAME, *mac)["options"]},
        "recommend": {(o["runtime"], o["quant"]) for o in ask("recommend", "--model", MLX_NAME, *mac)["options"]},
        "buy": {(o["runtime"], o["quant"]) for o in ask("buy", "--model", MLX_NAME)["per_mac"]},
    }
    for cmd in ("predict", "serve"):
        extra = ["--no-sweep", "--duration", "10min"] if cmd == "serve" else []
        r = ask(cmd, "--model", MLX_NAME, *mac, *extra)
        got[cmd] = {(r["runtime"], r["quant"])}
    assert all(v == {("mlx-lm", "mlx-4bit-g64")} for v in got.values()), got


def test_an_explicit_runtime_of_the_other_format_converts_the_names_preset_everywhere():
    """--runtime llama.cpp with an MLX name: the name's 4-bit preset in llama.cpp's format (Q4_K_M), with the quant
    rule's note, from plan, predict, recommend, serve and cluster (its llama.cpp RPC engine) alike."""
    mac = mac_args(MACS[0])
    asked = ["--model", MLX_NAME, *mac, "--runtime", "llama.cpp"]
    plan_, rec = ask(*asked), ask("recommend", *asked)
    pred, serve = ask("predict", *asked), ask("serve", *asked, "--no-sweep", "--duration", "10min")
    cluster = ask("cluster", "--model", MLX_NAME, "--macs", "2x Mac Studio M4 Max 64GB", "--engine",
                  "llama.cpp-rpc")["plan"]
    assert {o["quant"] for o in plan_["options"]} == {o["quant"] for o in rec["options"]} == {"Q4_K_M"}
    assert pred["quant"] == serve["quant"] == cluster["quant"] == "Q4_K_M"
    said = (f"{MLX_NAME} holds mlx-4bit-g64, a mlx format, and llama.cpp loads gguf weights: answered for Q4_K_M, "
            "the same 4-bit class")  # the name pinned the preset: no --quant was given, none is named
    for notes in (plan_["notes"], rec["notes"], pred["notes"], serve["notes"], cluster["notes"]):
        assert said in notes, notes


def test_a_bare_ollama_library_name_is_one_model_with_one_note_in_every_command():
    """`nemotron-3-nano` (Ollama's library name; the catalog's only size of it is the 30B-A3B) resolves in the
    model-name resolver (planner/profiles.py ollama_library), so every command answers that entry and says which tag
    it read the name as. `plan` said "unknown model"."""
    mac = mac_args(MACS[0])
    name = ["--model", "nemotron-3-nano"]
    answers = {"plan": ask(*name, *mac), "predict": ask("predict", *name, *mac),
               "recommend": ask("recommend", *name, *mac), "buy": ask("buy", *name),
               "serve": ask("serve", *name, *mac, "--no-sweep", "--duration", "10min")}
    ids = {k: (a["model"]["id"] if k == "plan" else a["models"] if k == "buy" else a["model"]) for k, a in answers.items()}
    assert all(v in ("nemotron-3-nano-30b-a3b", ["nemotron-3-nano-30b-a3b"]) for v in ids.values()), ids
    for k, a in answers.items():
        assert any("read as nemotron-3-nano:30b" in n for n in a["notes"]), k


# ---- no lengths given: every command answers the one default workload (planner/points.py DEFAULT_*)
@pytest.mark.parametrize("rt", RUNTIMES)
def test_with_no_lengths_given_every_command_answers_the_default_workload(rt):
    """No --prompt, --gen or --cached-prefix: plan's table, its bottom line, predict, models and recommend answer
    the same Mac, model, quant (and KV type) with the same TTFT and decode, at the default workload's point
    (the chat preset's p90 prompt, mean output and cached share), each saying so."""
    from planner.points import DEFAULT_CACHED_PREFIX, DEFAULT_GEN, DEFAULT_PROMPT

    mac, model = mac_args(MACS[0]), "llama-3.1-8b"
    fam = profiles.load_model(model).family
    row = next(x for x in ask("models", *mac, "--runtime", rt[0], "--family", fam)["rows"] if x["model"] == model)
    quant = row["quant"]
    (o,) = ask("--model", model, *mac, "--runtime", rt[0], "--quant", quant)["options"]
    sp = o["speed"]
    assert (sp["prompt_tokens"], sp["gen_tokens"], sp["cached_prefix_share"]) == (
        DEFAULT_PROMPT, DEFAULT_GEN, DEFAULT_CACHED_PREFIX)
    pr = ask("predict", "--model", model, *mac, "--runtime", rt[0], "--quant", quant)
    assert (pr["prompt_tokens"], pr["gen_tokens"], pr["cached_prefix_share"]) == (
        DEFAULT_PROMPT, DEFAULT_GEN, DEFAULT_CACHED_PREFIX)
    assert close(pr["ttft_s"], sp["ttft_s"]) and close(pr["decode_tok_s_per_seq"], sp["decode_tok_s_per_seq"]["1"])
    assert row["kv_type"] == o["kv_type"] and close(row["ttft_s"], sp["ttft_s"])
    assert close(row["decode_tok_s_per_user"], sp["decode_tok_s_per_seq"]["1"])
    rec = ask("recommend", "--model", model, *mac, "--runtime", rt[0], "--quant", quant, "--top", "500")
    (ro,) = [x for x in rec["options"] if same_config(x, rt[0], quant, o["kv_type"])]
    assert close(ro["speed"]["ttft_s"], sp["ttft_s"]) and ro["speed"]["cached_prefix_share"] == DEFAULT_CACHED_PREFIX
    assert close(ro["speed"]["decode_tok_s_per_user"], sp["decode_tok_s_per_seq"]["1"])


def test_the_bottom_lines_ttft_is_the_tables():
    """One `plan` output gives one TTFT for one workload: the bottom line's option has, in the speed table, the
    TTFT and decode the bottom line states, at the same prompt-cache share (with and without lengths given)."""
    for extra in ([], ["--prompt", "4096", "--gen", "300", "--cached-prefix", "0.5"]):
        d = ask("--model", "llama-3.1-8b", *mac_args(MACS[0]), *extra)
        top = d["bottom_line"]["option"]
        (o,) = [x for x in d["options"] if (x["runtime"], x["quant"], x["kv_type"]) ==
                (top["runtime"], top["quant"], top["kv_type"])]
        assert close(top["speed"]["ttft_s"], o["speed"]["ttft_s"])
        assert top["speed"]["cached_prefix_share"] == o["speed"]["cached_prefix_share"]
        assert close(top["speed"]["decode_tok_s_per_user"], o["speed"]["decode_tok_s_per_seq"]["1"])


def test_every_header_states_the_default_workload():
    """With no lengths given, plan, predict and models say in their header which prompt and output lengths and
    which prompt-cache share they answered for (planner.format.lengths_text)."""
    from planner.format import lengths_text
    from planner.points import DEFAULT_CACHED_PREFIX, DEFAULT_GEN, DEFAULT_PROMPT

    said = lengths_text(DEFAULT_PROMPT, DEFAULT_GEN, DEFAULT_CACHED_PREFIX)
    mac = mac_args(MACS[0])

    def text(*argv: str) -> str:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(list(argv)) == 0
        return out.getvalue()

    plan_head = [x for x in text("--model", "llama-3.1-8b", *mac).splitlines() if x.startswith("Workload:")]
    assert said in plan_head[0]
    assert said in text("models", *mac, "--family", "llama", "--top", "1").splitlines()[0]
    first = text("predict", "--model", "llama-3.1-8b", *mac).splitlines()[0]
    assert f"prompt {DEFAULT_PROMPT:,} ({cached_label(DEFAULT_CACHED_PREFIX)})" in first
    assert f"gen {DEFAULT_GEN:,}" in first


# ---- --kv-type and --images: declared once (planner/points.py KvType, Images, ImageSize), taken by plan, predict
# and recommend alike
@pytest.mark.parametrize("rt, kv", [(RUNTIMES[0], "q8_0"), (RUNTIMES[1], "kv8")])
@pytest.mark.parametrize("images", [0, 2])
def test_predict_and_recommend_take_the_plans_kv_type_and_images(rt, kv, images):
    """The same KV type and images per request give predict and recommend the plan's answer: the image tokens in
    the prompt (and the context), the projector in memory, mlx-vlm for mlx-lm, the asked KV type only."""
    model, mac = "qwen3-vl-8b", mac_args(MACS[0])
    asked = ["--runtime", rt[0], "--quant", rt[1], "--kv-type", kv, "--images", str(images)]
    d = ask("--model", model, *mac, *asked)
    (o,) = d["options"]
    sp = o["speed"]
    assert o["kv_type"] == kv and (o["memory"]["vision"] > 0) == bool(images)
    pr = ask("predict", "--model", model, *mac, *asked)
    assert (pr["runtime"], pr["prompt_tokens"]) == (o["runtime"], sp["prompt_tokens"])
    assert pr["weights_bytes"] == o["weights"]["total_bytes"]
    assert close(pr["ttft_s"], sp["ttft_s"]) and close(pr["decode_tok_s_per_seq"], sp["decode_tok_s_per_seq"]["1"])
    rec = ask("recommend", "--model", model, *mac, *asked, "--top", "500")
    assert {x["kv_type"] for x in rec["options"]} == {kv}
    (ro,) = [x for x in rec["options"] if same_config(x, o["runtime"], rt[1], kv)]
    assert ro["context"] == d["request"]["context"] and ro["memory_bytes"] == o["memory"]["total"]
    assert close(ro["speed"]["ttft_s"], sp["ttft_s"])
    assert close(ro["speed"]["decode_tok_s_per_user"], sp["decode_tok_s_per_seq"]["1"])


@pytest.mark.parametrize("rt, engine", [(RUNTIMES[0], "llama.cpp-rpc"), (RUNTIMES[1], "mlx")])
def test_a_context_without_lengths_shrinks_the_default_request_alike_in_every_command(rt, engine):
    """--context 2048 and no --prompt or --gen: the chat preset's requests (up to 2,048 + 1,000 tokens) shrink into
    the context asked (planner/workload.py shrink_lengths), so every command answers at 2,048 tokens and at one
    point, the shrunk preset's (p90 prompt, mean answer); plan held the context at 2,798 while its bottom line and
    recommend reserved 3,048. Each says so once."""
    ctx = ("--context", "2048")
    r = ask("--model", "llama-3.1-8b", *mac_args(MACS[0]), "--runtime", rt[0], "--quant", rt[1], *ctx)
    (o,) = r["options"]
    rec = ask("recommend", "--model", "llama-3.1-8b", *mac_args(MACS[0]), "--runtime", rt[0], "--quant", rt[1], *ctx)
    wl = rec["workload"]
    want = (prompt_point(parse_length(_length(wl["prompt_tokens"]), "p")),
            gen_point(parse_length(_length(wl["gen_tokens"]), "g")))
    assert want[0] < 2048 and sum(want) <= 2048 and wl["context_cap"] == 2048
    assert (r["request"]["prompt"], r["request"]["gen"]) == (o["speed"]["prompt_tokens"], o["speed"]["gen_tokens"])
    assert (r["request"]["prompt"], r["request"]["gen"]) == want and r["request"]["context"] == 2048
    assert o["memory"]["context"] == 2048
    top = next(x for x in rec["options"] if x["runtime"] == rt[0] and x["quant"] == rt[1])
    assert close(top["speed"]["ttft_s"], o["speed"]["ttft_s"])
    assert close(top["speed"]["decode_tok_s_per_user"], o["speed"]["decode_tok_s_per_seq"]["1"])
    c = ask("cluster", "--model", "llama-3.1-8b", "--macs", "1x Mac Studio M4 Max 64GB", "--engine", engine,
            "--quant", rt[1], *ctx)["plan"]
    m = ask("models", *mac_args(MACS[0]), "--runtime", rt[0], "--family", "llama", *ctx)
    buy = ask("buy", "--model", "llama-3.1-8b", "--runtime", rt[0], *ctx)
    assert (c["prompt_tokens"], c["gen_tokens"], c["context"]) == (*want, 2048)
    assert close(c["speed"]["ttft_s"], o["speed"]["ttft_s"])
    assert (m["prompt_tokens"], m["gen_tokens"], m["context"]) == (*want, 2048)
    assert buy["workload"]["prompt_tokens"] == wl["prompt_tokens"] and buy["workload"]["gen_tokens"] == wl["gen_tokens"]
    said = "--context 2,048 is shorter than the"
    for answer in (r, rec, c, m, buy):
        assert sum(said in n for n in answer["notes"]) == 1, answer["notes"]


def _length(d: dict) -> str:
    """A Length's JSON back in the command line's form."""
    if d["value"] is not None:
        return str(d["value"])
    if d["dist"] is not None:
        return ",".join(f"{v}:{w}" for v, w in d["dist"])
    return f"p50={d['p50']},p90={d['p90']}"
