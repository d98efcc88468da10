"""`plan serve`: the text answer, --json round-trips, the TTFT target search, one-line errors."""

from __future__ import annotations

import json

import pytest

from cli.contract import SCHEMA_VERSION, load
from cli.main import main
from cli.serve import parse_duration, parse_rate
from planner.results import ServeResult

BASE = ["serve", "--model", "qwen3-30b-a3b", "--chip", "M4 Max", "--gpu-cores", "40", "--ram", "128",
        "--runtime", "llama.cpp", "--slots", "4", "--prompt", "p50=1500,p90=6000", "--gen", "p50=300,p90=900"]


def run(capsys, args):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_json_round_trips(capsys):
    code, out, err = run(capsys, [*BASE, "--rate", "5/min", "--duration", "20min", "--no-sweep", "--json"])
    assert code == 0, err
    r = load(ServeResult, out)
    assert {"schema_version": SCHEMA_VERSION, **json.loads(r.model_dump_json())} == json.loads(out)
    assert r.rate_per_s == pytest.approx(5 / 60) and r.duration_s == 1200
    assert r.ttft_s.p50 <= r.ttft_s.p95 <= r.ttft_s.p99 and r.stable


def test_kv_streams_per_slot_by_default_unified_on_request(capsys):
    """-np N gives a KV stream per slot, whose batches split by slot (planner.serve.split_equal): per-user decode
    is never faster than with one unified stream on the same trace, and the answer says which it simulated."""
    args = [*BASE, "--rate", "6/min", "--duration", "30min", "--no-sweep", "--json"]
    per_slot = load(ServeResult, run(capsys, args)[1])
    unified = load(ServeResult, run(capsys, [*args, "--kv-unified"])[1])
    assert per_slot.kv_unified is False and unified.kv_unified is True
    assert per_slot.decode_tok_s_p50 < unified.decode_tok_s_p50
    assert per_slot.n_requests == unified.n_requests
    text = run(capsys, args[:-1])[1]
    assert "a KV stream per slot" in text
    mlx = [a if a != "llama.cpp" else "mlx-lm" for a in args]
    assert load(ServeResult, run(capsys, mlx)[1]).kv_unified is None


def test_text_names_the_figures_and_the_binding_target(capsys):
    code, out, err = run(capsys, [*BASE, "--rate", "20/min", "--duration", "10min", "--max-ttft-p95", "5",
                                  "--cached-prefix", "0"])
    assert code == 0, err
    for word in ("TTFT", "p95", "per user", "queue", "grows without bound", "slots", "memory"):
        assert word in out, word
    # the p95 prompt (~8 900 tokens, none cached) alone takes longer than 5 s to prefill on this Mac: the target binds
    assert "binds" in out


def test_target_met_gives_a_rate_and_best_slots(capsys):
    code, out, err = run(capsys, [*BASE[:-4], "--prompt", "p50=300,p90=800", "--gen", "p50=100,p90=300",
                                  "--rate", "10/min", "--duration", "10min", "--max-ttft-p95", "5", "--json"])
    assert code == 0, err
    r = load(ServeResult, out)
    assert r.max_rate_per_s is not None and 0 < r.max_rate_per_s < r.saturation_rate_per_s
    assert r.best_slots in [o.slots for o in r.sweep] and r.binding is None
    best = max(o.max_rate_per_s or 0 for o in r.sweep)
    assert next(o for o in r.sweep if o.slots == r.best_slots).max_rate_per_s == best


def test_parsers():
    assert parse_rate("20/min") == pytest.approx(1 / 3)
    assert parse_rate("0.5") == 0.5 and parse_rate("360/h") == pytest.approx(0.1)
    assert parse_duration("1h") == 3600 and parse_duration("90s") == 90 and parse_duration("30min") == 1800


@pytest.mark.parametrize("args,flag", [
    (["--rate", "20/fortnight"], "--rate"), (["--rate", "0"], "--rate"), (["--duration", "-1h"], "--duration"),
    (["--prompt", "p50=x"], "--prompt"), (["--slots", "0"], "--slots"), (["--cached-prefix", "1"], "--cached-prefix"),
    (["--trace", "/nonexistent/trace.csv"], "--trace"), (["--ram", "7"], "--ram"),
    (["--max-ttft-p95", "-2"], "--max-ttft-p95"),
])
def test_bad_input_is_one_line(capsys, args, flag):
    code, out, err = run(capsys, [*BASE, *args, "--no-sweep", "--duration", "1min"] if "--duration" not in args
                         else [*BASE, *args, "--no-sweep"])
    assert code == 2 and err.count("\n") == 1 and flag in err, err


def test_trace_file(capsys, tmp_path):
    """Three requests from a CSV: the answer counts them and takes the duration from the last arrival."""
    p = tmp_path / "t.csv"
    p.write_text("arrival_s,prompt,gen\n0,500,50\n30,800,20\n60,300,10\n")
    code, out, err = run(capsys, [*BASE, "--trace", str(p), "--no-sweep", "--json"])
    assert code == 0, err
    r = load(ServeResult, out)
    assert r.n_requests == 3 and r.duration_s == 60 and r.rate_per_s == pytest.approx(3 / 60)


def test_serves_a_local_gguf_file(capsys, tmp_path):
    from tests.sources.gguf_gen import write_llama8b

    path = tmp_path / "Llama-3.1-8B-Instruct-Q4_K_M.gguf"
    weights = write_llama8b(path)   # sum of the tensor bytes written into the file header
    code, out, err = run(capsys, ["serve", "--model", str(path), "--chip", "M4 Max", "--gpu-cores", "40", "--ram",
                                  "128", "--slots", "2", "--slot-context", "4096", "--rate", "6/min", "--prompt",
                                  "1000", "--gen", "100", "--duration", "10min", "--no-sweep", "--json"])
    assert code == 0, err
    r = load(ServeResult, out)
    assert r.model == path.stem.lower() and r.quant == "Q4_K_M" and r.runtime == "llama.cpp"
    assert r.memory_bytes > weights


def test_a_local_gguf_brings_its_exact_weight_bytes(tmp_path):
    from planner.serve_plan import setup
    from sources import resolve_model
    from tests.sources.gguf_gen import LLAMA8B_KV, llama_tensors, write_gguf

    # tied embeddings: no output.weight, so the file is smaller than the catalog's untied Llama 3.1 8B
    path = tmp_path / "tied-Q4_K_M.gguf"
    weights = write_gguf(path, "llama", LLAMA8B_KV, llama_tensors(tied=True), file_type=15)
    s = setup("M4 Max", 40, 128, resolve_model(str(path)), None, "llama.cpp")
    assert s.mm.weights.total_bytes == weights and s.mm.quant_id == "Q4_K_M"
    assert setup("M4 Max", 40, 128, "llama-3.1-8b", None, "llama.cpp").mm.weights.total_bytes > weights


def test_bad_local_model_is_one_line(capsys):
    code, out, err = run(capsys, ["serve", "--model", "nosuch.gguf", "--chip", "M4 Max", "--gpu-cores", "40", "--ram",
                                  "128", "--runtime", "llama.cpp", "--no-sweep"])
    assert code == 2 and "no such GGUF file" in err and len(err.strip().splitlines()) == 1


def test_a_gguf_file_asked_of_mlx_lm_is_the_same_model_in_mlx_format_with_a_note(capsys, tmp_path):
    """Best effort, as `plan` (the deployment stage's quant rule): a Q4_K_M GGUF served by mlx-lm is answered for the
    same model at MLX's 4-bit (estimated bytes, not the file's), and the note says why and how to serve the file.
    Was refused ("GGUF weights are served by llama-server")."""
    from tests.sources.gguf_gen import write_llama8b

    path = tmp_path / "x-Q4_K_M.gguf"
    write_llama8b(path)
    base = ["serve", "--model", str(path), "--chip", "M4 Max", "--gpu-cores", "40", "--ram", "128", "--no-sweep",
            "--duration", "10min", "--json"]
    code, out, err = run(capsys, [*base, "--runtime", "mlx-lm"])
    assert code == 0, err
    r = load(ServeResult, out)
    assert (r.runtime, r.quant) == ("mlx-lm", "mlx-4bit-g64")
    assert any("GGUF weights, which mlx-lm does not load" in n and "--runtime" in n for n in r.notes)
    code, out, err = run(capsys, base)  # without --runtime: the file's own runtime
    assert code == 0, err
    assert (load(ServeResult, out).runtime, load(ServeResult, out).quant) == ("llama.cpp", "Q4_K_M")


def test_host_work_from_a_calibration_is_counted_and_said(capsys, tmp_path, monkeypatch):
    """Without a measured host work per token the answer says so and how to measure it; with a user calibration
    holding t_token_host_s (what `plan calibrate --server` writes) it is reported, in --json too, and it slows
    every step: TTFT and per-user speed move the way 2 ms per sampled token must move them."""
    from datetime import date

    from calibration import store
    from planner import profiles
    from planner.schema import CalibrationProfile, Provenance, SpeedConstants

    args = [*BASE, "--rate", "2/min", "--duration", "30min", "--no-sweep"]
    monkeypatch.setenv("MAC_LLM_PLANNER_USER_PROFILES", str(tmp_path / "user"))
    profiles.clear_cache()
    try:
        code, text, err = run(capsys, args)
        assert code == 0, err
        assert "`plan calibrate --runtime llama.cpp --server` times it" in text and "host work:" not in text
        before = load(ServeResult, run(capsys, [*args, "--json"])[1])
        assert before.host_s_per_token == 0
        prof = CalibrationProfile(id="m4-max-40gpu__llama.cpp", scope="m4-max-40gpu", runtime="llama.cpp",
                                  constants=SpeedConstants(t_token_host_s=2e-3),
                                  provenance=Provenance(method="test", fitted_on=date.today(), rows=1))
        store.write_profile(prof, tmp_path / "user")
        profiles.clear_cache()
        code, text, err = run(capsys, args)
        assert code == 0, err
        assert "host work: 2.00 ms per sampled token" in text and "--server` times it" not in text
        after = load(ServeResult, run(capsys, [*args, "--json"])[1])
        assert after.host_s_per_token == pytest.approx(2e-3)
        assert after.decode_tok_s_p50 < before.decode_tok_s_p50 and after.ttft_s.p50 > before.ttft_s.p50
        # at most 4 slots sample per step: a user's step grows by at most 4 x 2 ms (one graph per slot aside)
        assert after.decode_tok_s_p50 >= 1 / (1 / before.decode_tok_s_p50 + 4 * 2e-3) * 0.99
    finally:
        profiles.clear_cache()


def test_server_phase_factors_from_a_calibration_are_counted_and_said(capsys, tmp_path, monkeypatch):
    """A user calibration holding server_prefill_factor 1.2 and server_decode_factor 1.1 (plan calibrate --server)
    is said in the text and --json, and with no host work every decode step is 1.1 x longer: the per-user p50 speed
    is the uncalibrated one / 1.1 (the decode stretches are the same steps); TTFT grows."""
    from datetime import date

    from calibration import store
    from planner import profiles
    from planner.schema import CalibrationProfile, Provenance, SpeedConstants

    args = [*BASE, "--rate", "1/min", "--duration", "30min", "--no-sweep", "--json"]
    monkeypatch.setenv("MAC_LLM_PLANNER_USER_PROFILES", str(tmp_path / "user"))
    profiles.clear_cache()
    try:
        before = load(ServeResult, run(capsys, args)[1])
        assert before.server_scales == (1.0, 1.0)
        prof = CalibrationProfile(id="m4-max-40gpu__llama.cpp", scope="m4-max-40gpu", runtime="llama.cpp",
                                  constants=SpeedConstants(server_prefill_factor=1.2, server_decode_factor=1.1),
                                  provenance=Provenance(method="test", fitted_on=date.today(), rows=1))
        store.write_profile(prof, tmp_path / "user")
        profiles.clear_cache()
        code, text, err = run(capsys, args[:-1])
        assert code == 0, err
        assert "server phases: prompt ×1.20, decode ×1.10" in text
        after = load(ServeResult, run(capsys, args)[1])
        assert after.server_scales == pytest.approx((1.2, 1.1))
        assert after.decode_tok_s_p50 == pytest.approx(before.decode_tok_s_p50 / 1.1, rel=0.02)
        assert after.ttft_s.p50 > before.ttft_s.p50
    finally:
        profiles.clear_cache()


def test_text_gives_the_likely_range_and_warns_near_saturation(capsys):
    """At 85 % of the saturation rate the slow end of the speed range saturates: the answer says so."""
    code, out, err = run(capsys, [*BASE, "--rate", "5/min", "--duration", "10min", "--no-sweep", "--json"])
    r = load(ServeResult, out)
    near = r.saturation_rate_per_s * 0.85 * 60
    code, out, err = run(capsys, [*BASE, "--rate", f"{near:.3f}/min", "--duration", "30min", "--no-sweep"])
    assert code == 0, err
    assert "likely        TTFT p50" in out and "80 % speed range" in out
    assert "inside the likely range of the saturation rate" in out
    code, out, err = run(capsys, [*BASE, "--rate", "1/min", "--duration", "30min", "--no-sweep"])
    assert "likely        TTFT p50" in out and "inside the likely range" not in out


# --------------------------------------------------------------------------- bounds on the simulated work (issue 34)
@pytest.mark.parametrize("args,flag", [
    (["--rate", "1e999"], "--rate"), (["--rate", "1e30/s"], "--rate"), (["--rate", "1e-300/s"], "--rate"),
    (["--rate", "1000000/s"], "--rate"), (["--duration", "0.0000001s"], "--duration"),
    (["--duration", "1" + "0" * 5000], "--duration"), (["--rate", "9" * 5000], "--rate"),
    (["--seed", "-1"], "--seed"), (["--seed", "9" * 30], "--seed"), (["--ram", "nan"], "--ram"),
    (["--ram", "inf"], "--ram"), (["--max-ttft-p95", "nan"], "--max-ttft-p95"),
    (["--max-ttft-p95", "inf"], "--max-ttft-p95"), (["--slot-context", "9" * 20], "--slot-context"),
    (["--cached-prefix", "nan"], "--cached-prefix"), (["--trace", "/dev/zero"], "--trace"),
])
def test_out_of_bounds_work_is_one_line(capsys, args, flag):
    """Values whose simulation would be unbounded or undefined (tracebacks and 32 GiB arrays before): exit 2, one
    line naming the flag."""
    code, out, err = run(capsys, [*BASE, *args, "--no-sweep"])
    assert code == 2 and err.count("\n") == 1 and flag in err and "Traceback" not in err, err


@pytest.mark.parametrize("args", [["--rate", "100/s"], ["--rate", "100/s", "--duration", "1000000"],
                                  ["--rate", "10000/s", "--slots", "512"]])
def test_long_runs_simulate_at_most_max_sim_requests(capsys, args):
    """A simulation's work is bounded by its requests, whatever rate × duration asks for (360,000 requests at
    100/s for the default hour ran past 2 minutes; a million seconds reached 5.4 GB): the answer simulates about
    MAX_SIM_REQUESTS arrivals (a Poisson count: within 5 sigma) and says which share of the duration it covers."""
    from planner.serve_plan import MAX_SIM_REQUESTS

    i = BASE.index("--slots")
    base = BASE[:i] + BASE[i + 2:] if "--slots" in args else BASE  # a single-valued option is given once
    code, out, err = run(capsys, [*base, *args, "--json"])
    assert code == 0, err
    r = load(ServeResult, out)
    assert r.n_requests <= MAX_SIM_REQUESTS + 5 * MAX_SIM_REQUESTS ** 0.5
    assert r.duration_s == pytest.approx(MAX_SIM_REQUESTS / r.rate_per_s)
    assert any("simulated the first" in n for n in r.notes), r.notes


def test_a_rate_too_low_for_any_arrival_is_one_line(capsys):
    """One request a day for a minute: no arrival in the simulated time, one line (was NaN percentiles and a
    traceback)."""
    code, out, err = run(capsys, [*BASE, "--rate", "1/h", "--duration", "1s", "--no-sweep"])
    assert code == 2 and err.count("\n") == 1 and "--rate" in err and "no request arrives" in err, err


@pytest.mark.parametrize("kind", ["fifo", "huge", "binary", "too-many-rows"])
def test_trace_is_read_bounded(capsys, tmp_path, kind):
    """--trace through the one bounded reader: a FIFO is refused without blocking, a file over MAX_TABLE_BYTES
    without reading it whole, binary data and more rows than one simulation runs are one line too."""
    import os

    from planner.bounded_read import MAX_TABLE_BYTES
    from planner.serve_plan import MAX_SIM_REQUESTS

    p = tmp_path / "t.csv"
    if kind == "fifo":
        os.mkfifo(p)
    elif kind == "huge":
        with open(p, "wb") as f:
            f.write(b"arrival_s,prompt,gen\n")
            f.truncate(MAX_TABLE_BYTES + 10)
    elif kind == "binary":
        p.write_bytes(b"\xff\xfe" * 100)
    else:
        p.write_text("arrival_s,prompt,gen\n" + "".join(f"{i},10,10\n" for i in range(MAX_SIM_REQUESTS + 1)))
    code, out, err = run(capsys, [*BASE, "--trace", str(p), "--no-sweep"])
    assert code == 2 and err.count("\n") == 1 and "--trace" in err, err


def test_people_and_their_pace_give_the_rate_and_say_it():
    # issue 35: people ask "how many people", not "what rate": 30 people × 20/h = 600/h = 10/min; 30 people who
    # think 2 minutes between requests: 30 / 120 s = 0.25/s = 15/min
    from cli.serve import people_rate

    assert people_rate(None, 30, None, "20/h") == (pytest.approx(30 * 20 / 3600), pytest.approx(
        "rate: 30 people × 20/h each = 10 requests/min"))
    per_s, line = people_rate(None, 30, "2min", None)
    assert per_s == pytest.approx(0.25) and line.endswith("= 15 requests/min")
    assert people_rate("20/min", None, None, None) == (pytest.approx(20 / 60), "")


@pytest.mark.parametrize("args", [["--users", "30"], ["--users", "30", "--rate", "2/min", "--think-time", "1min"],
                                  ["--think-time", "1min"], ["--users", "3", "--think-time", "soon"]])
def test_people_rate_bad_input_is_one_line(capsys, args):
    code = main(["serve", "--model", "qwen3-8b", "--chip", "M4 Max", "--ram", "64", *args])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--" in err


def test_people_rate_is_shown_above_the_simulation(capsys):
    code = main(["serve", "--model", "qwen3-8b", "--chip", "M4 Max", "--ram", "64", "--users", "10", "--per-user",
                 "6/h", "--no-sweep", "--duration", "10min"])
    out = capsys.readouterr().out
    assert code == 0 and out.startswith("rate: 10 people × 6/h each = 1 requests/min") and "1.0/min" in out


def test_without_a_quant_serve_answers_the_quant_predict_answers(capsys):
    """gpt-oss ships its experts in MXFP4 (profile native_quant): `plan predict` answers that format without
    --quant; `plan serve` simulated Q4_K_M / mlx-4bit-g64 instead, another model size for the same question."""
    from planner import profiles

    m = profiles.load_model("gpt-oss-20b")
    for runtime, own in (("llama.cpp", m.native_quant.gguf_preset), ("mlx-lm", m.native_quant.mlx_quant)):
        args = ["--model", "gpt-oss-20b", "--chip", "M4 Max", "--ram", "64", "--runtime", runtime, "--json"]
        code, out, err = run(capsys, ["serve", *args, "--rate", "1/min", "--duration", "10min", "--no-sweep"])
        assert code == 0, err
        s = json.loads(out)
        code, out, err = run(capsys, ["predict", *args])
        assert code == 0, err
        assert s["quant"] == json.loads(out)["quant"] == own
        assert any("ships in" in n for n in s["notes"])


def test_a_slot_over_the_models_context_is_said_and_capped_like_llama_server(capsys):
    """qwen3-8b holds 40,960 tokens (config max_position_embeddings). A longer --slot-context: llama-server allocates
    the slot's KV cache but caps each request at the model's context (server-context.cpp n_ctx_slot), and the answer
    says so; a slot too large to fit suggests a --slot-context no longer than the model's context."""
    from planner import profiles

    n = profiles.load_model("qwen3-8b").config.max_position_embeddings
    base = ["serve", "--model", "qwen3-8b", "--chip", "M4 Max", "--ram", "128", "--rate", "1/min", "--duration",
            "10min", "--no-sweep"]
    code, out, err = run(capsys, [*base, "--slot-context", str(2 * n), "--prompt", str(3 * n // 2), "--gen", "16",
                                  "--json"])
    assert code == 0, err
    r = json.loads(out)
    assert r["slot_context"] == 2 * n
    assert any(f"{n:,}-token context" in x and "caps each request" in x for x in r["notes"])
    cut = [x for x in r["notes"] if f"exceed the {n:,}-token slot" in x]  # the 1.5 n prompts are cut at n, not 2 n
    # qa: a slot at the model's context holds no longer request: the note said "raise --slot-context" all the same
    assert len(cut) == 1 and "--slot-context" not in cut[0] and f"over qwen3-8b's {n:,}-token context" in cut[0]
    code, out, err = run(capsys, [*base, "--slot-context", "1024", "--prompt", "4000", "--gen", "16", "--json"])
    assert any("exceed the 1,024-token slot" in x and "raise --slot-context" in x for x in json.loads(out)["notes"])
    code, out, err = run(capsys, [*base, "--slot-context", "10000000"])
    assert code == 0 and f"--slot-context of at most {n}" in out


def test_kv_unified_on_mlx_lm_is_refused_not_ignored(capsys):
    # --kv-unified is llama-server's option; with --runtime mlx-lm it was dropped silently (kv_unified null)
    mlx = [a if a != "llama.cpp" else "mlx-lm" for a in BASE]
    code, out, err = run(capsys, [*mlx, "--kv-unified", "--no-sweep"])
    assert code == 2 and out == "" and err.count("\n") == 1 and "--kv-unified" in err and "--runtime" in err


# ---- issue 32: no lengths, prompt-cache share or rate given: serve answers the default workload (planner/points.py)
def _default_stream():
    """The default workload's request stream, read from its preset (profiles/workloads/chat.yaml): length
    distributions, cached share, and its users each asking again once the mean answer is read at the reading rate
    the preset's decode target states (chat: 1 × 5.3 tok/s / 750 tokens = 0.424/min)."""
    from planner.points import DEFAULT_WORKLOAD
    from planner.workload import gen_point, load_workload

    wl = load_workload(DEFAULT_WORKLOAD)
    return wl, wl.users * wl.targets.min_tok_s_per_user / gen_point(wl.gen_tokens)


def test_serves_defaults_are_the_default_workloads(capsys):
    """Without --prompt, --gen, --cached-prefix and --rate, the CLI and the agents' serve question simulate the
    default preset's prompt and output distributions, its cached share, and its users' reading-paced rate."""
    from cli.questions import answer
    from planner.workload import parse_length

    wl, rate = _default_stream()
    args = ["serve", "--model", "llama-3.1-8b", "--chip", "M4 Max", "--gpu-cores", "40", "--ram", "64", "--no-sweep"]
    r = load(ServeResult, run(capsys, [*args, "--json"])[1])
    agent = answer("serve", {"model": "llama-3.1-8b", "chip": "M4 Max", "gpu_cores": 40, "ram": 64, "sweep": False})
    for x in (r.model_dump(mode="json"), agent):
        assert (x["prompt"], x["gen"]) == (wl.prompt_tokens.label(), wl.gen_tokens.label())
        assert x["cached_prefix_share"] == wl.cached_prefix_share > 0
        assert x["rate_per_s"] == pytest.approx(rate, rel=1e-12)
    # the same lengths given explicitly (the preset's distributions) and cold: the explicit arguments rule
    cold = load(ServeResult, run(capsys, [*args, "--prompt", "512:0.4,1024:0.4,2048:0.2", "--cached-prefix", "0",
                                          "--rate", "20/min", "--json"])[1])
    assert parse_length("512:0.4,1024:0.4,2048:0.2", "--prompt") == wl.prompt_tokens
    assert cold.cached_prefix_share == 0 and cold.rate_per_s == pytest.approx(20 / 60)
    assert cold.ttft_s.p50 > r.ttft_s.p50  # the whole prompt prefilled, under load


def test_serves_header_states_the_default_workload(capsys):
    """The text answer says which stream it simulated: the default rate with its arithmetic, the preset's lengths
    and its prompt-cache share in the words every TTFT uses (planner.format.cached_label)."""
    from planner.format import cached_label

    wl, rate = _default_stream()
    out = run(capsys, ["serve", "--model", "llama-3.1-8b", "--chip", "M4 Max", "--gpu-cores", "40", "--ram", "64",
                       "--no-sweep"])[1]
    first, _, second = out.splitlines()[:3]
    assert first.startswith(f"rate: the default workload's ({wl.id}) {wl.users} user")
    assert first.endswith(f"= {rate * 60:.3g} requests/min")
    assert f"prompt {wl.prompt_tokens.label()}, answer {wl.gen_tokens.label()} ({cached_label(0.75)})" in second


def test_serve_says_how_many_people_like_the_offered_ones_one_server_sustains(capsys):
    """The mission's question, how many people one Mac serves at what latency: the default answer (one chat user)
    counts the users like that one the server sustains, floor(saturation rate ÷ one user's rate), and under a TTFT
    p95 target floor(the highest rate under it ÷ one user's rate); people given with --users divide the rate among
    them; a bare --rate has no person to count (None, no line). Poisson streams add up: N users at λ are N λ."""
    import math

    from cli.questions import answer

    args = ["serve", "--model", "llama-3.1-8b", "--chip", "M4 Max", "--gpu-cores", "40", "--ram", "64", "--no-sweep"]
    r = json.loads(run(capsys, [*args, "--json"])[1])
    assert r["users"] == 1
    assert r["users_sustained"] == math.floor(r["saturation_rate_per_s"] / r["rate_per_s"]) > 1
    assert answer("serve", {"model": "llama-3.1-8b", "chip": "M4 Max", "gpu_cores": 40, "ram": 64,
                            "sweep": False})["users_sustained"] == r["users_sustained"]
    text = run(capsys, args)[1]
    assert (f"people        at most {r['users_sustained']} like this one ({r['saturation_rate_per_s'] * 60:.3g}/min "
            f"saturation ÷ {r['rate_per_s'] * 60:.3g}/min per person") in text
    t = json.loads(run(capsys, [*args, "--max-ttft-p95", "10", "--json"])[1])
    assert t["users_sustained"] == math.floor(t["max_rate_per_s"] / t["rate_per_s"]) < r["users_sustained"]
    assert f"people        {t['users_sustained']} like this one under TTFT p95 ≤ 10 s" in \
        run(capsys, [*args, "--max-ttft-p95", "10"])[1]
    five = json.loads(run(capsys, [*args, "--users", "5", "--per-user", "1/min", "--json"])[1])
    assert five["users"] == 5 and five["users_sustained"] == math.floor(five["saturation_rate_per_s"] / (1 / 60))
    bare = json.loads(run(capsys, [*args, "--rate", "6/min", "--json"])[1])
    assert bare["users"] is None and bare["users_sustained"] is None
    assert "people " not in run(capsys, [*args, "--rate", "6/min"])[1]
