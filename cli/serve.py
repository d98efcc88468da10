"""`plan serve`: latency under load, how many people one Mac can serve (a seeded simulation of the server).

plan serve --model qwen3-30b-a3b --chip "M4 Max" --gpu-cores 40 --ram 128 --runtime llama.cpp \
           --slots 4 --rate 20/min --prompt p50=1500,p90=6000 --gen p50=300,p90=900 --duration 1h --max-ttft-p95 5
"""

from __future__ import annotations

import csv
import io
import re

import typer

from planner._model import DEFAULT_MACOS
from planner.errors import InputError
from planner.format import energy_text

from .options import WORKLOAD_FLAGS, wopt
from .questions import ServeQuestion as S
from .words import say

_PER = {"s": 1.0, "sec": 1.0, "min": 60.0, "m": 60.0, "h": 3600.0, "hour": 3600.0}
# one set of bounds for the simulated work: at most MAX_RATE requests a second (no single Mac serves more than a few
# hundred), from one request a year; a duration from 1 s to MAX_DURATION_S; a trace's arrivals within the same span
MAX_RATE = 10_000.0              # [1/s]
MIN_RATE = 1 / (365 * 86400.0)   # [1/s]
MIN_DURATION_S, MAX_DURATION_S = 1.0, 1e7
MAX_TRACE_S = MAX_DURATION_S
MAX_SEED = 2**63 - 1
MAX_TOKENS = 10_000_000          # cli.bounds.MAX_TOKENS


def _short(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."


def parse_rate(text: str, flag: str = "--rate") -> float:
    """'20/min' | '0.5/s' | '300/h' | '0.5' (per second) -> requests per second."""
    m = re.fullmatch(r"\s*([0-9]{0,20}\.?[0-9]{1,20}(?:e-?[0-9]{1,4})?)\s*(?:/\s*([a-z]+))?\s*", text.lower())
    if not m or (m.group(2) and m.group(2) not in _PER):
        raise InputError(f"{flag} {_short(text)!r}: give requests per time, e.g. 20/min, 0.5/s or 300/h")
    rate = float(m.group(1)) / _PER[m.group(2) or "s"]
    if not MIN_RATE <= rate <= MAX_RATE:   # also inf (1e999) and 0 (1e-300/s)
        raise InputError(f"{flag} {_short(text)!r}: give from one request a year to {MAX_RATE:,.0f}/s, e.g. 20/min")
    return rate


def rate_users(rate: str | None, users: int | None) -> int | None:
    """The people behind the rate: --users, else the default workload's when no rate was given (planner/points.py
    DEFAULT_USERS, whose reading pace is the default rate), else None (a bare --rate has no person's rate)."""
    from planner.points import DEFAULT_USERS

    return users if users is not None else DEFAULT_USERS if rate is None else None


def people_rate(rate: str | None, users: int | None, think_time: str | None, per_user: str | None,
                flag: str = "--rate") -> tuple[float, str]:
    """The request rate [1/s] from --rate, or from people: --users × --per-user, or --users / --think-time (each
    person asks, reads the answer, thinks, asks again: one request per think time plus the request's own time,
    which the rate leaves out, so it slightly overstates the load); none of them: the default workload's rate
    (planner/points.py default_rate_per_s). -> (rate, the line that shows the arithmetic)"""
    if users is None:
        if think_time is not None or per_user is not None:
            raise InputError("--think-time / --per-user need --users (how many people use the server)")
        if rate is None:
            from planner.points import default_rate_per_s, default_rate_text

            return default_rate_per_s(), default_rate_text()
        return parse_rate(rate, flag), ""
    if rate is not None:
        raise InputError("give either --rate or --users with --think-time / --per-user, not both")
    if users < 1 or users > 100_000:
        raise InputError(f"--users {users}: give 1 to 100,000 people")
    if (think_time is None) == (per_user is None):
        raise InputError("--users: add one of --think-time (e.g. 2min) or --per-user (e.g. 20/h)")
    if per_user is not None:
        each = parse_rate(per_user, "--per-user")
        how = f"{users} people × {each * 3600:g}/h each"
    else:
        pause = parse_duration(think_time, "--think-time")
        each = 1.0 / pause
        how = f"{users} people, one request per {pause:g} s of thinking each (the answer's own time left out)"
    return users * each, f"rate: {how} = {users * each * 60:.3g} requests/min"


def parse_duration(text: str, flag: str = "--duration") -> float:
    """'1h' | '30min' | '90s' | '600' (seconds) -> seconds."""
    m = re.fullmatch(r"\s*([0-9]{0,20}\.?[0-9]{1,20})\s*([a-z]*)\s*", text.lower())
    if not m or (m.group(2) and m.group(2) not in _PER):
        raise InputError(f"{flag} {_short(text)!r}: give a positive time, e.g. 1h, 30min or 600s")
    seconds = float(m.group(1)) * _PER[m.group(2) or "s"]
    if not MIN_DURATION_S <= seconds <= MAX_DURATION_S:
        raise InputError(f"{flag} {_short(text)!r}: give {MIN_DURATION_S:g} s to {MAX_DURATION_S:,.0f} s "
                         "(e.g. 1h, 30min or 600s)")
    return seconds


def read_trace(path: str) -> tuple[list[float], list[int], list[int]]:
    """CSV with columns arrival_s, prompt, gen (a header row; arrival times in seconds, sorted here)."""
    from planner.bounded_read import MAX_TABLE_BYTES, read_text_capped
    from planner.serve_plan import MAX_SIM_REQUESTS

    # bounded: --trace /dev/zero, a FIFO or a huge CSV is one line, not a read until memory runs out
    text = read_text_capped(path, MAX_TABLE_BYTES, f"--trace {path}", "trace", InputError, "give a CSV file")
    try:
        rows = list(csv.DictReader(io.StringIO(text, newline="")))
        if len(rows) > MAX_SIM_REQUESTS:
            raise InputError(f"--trace {path}: {len(rows):,} requests, over the {MAX_SIM_REQUESTS:,} one simulation "
                             "runs; give a shorter trace")
        data = sorted((float(r["arrival_s"]), int(r["prompt"]), int(r["gen"])) for r in rows)
    except (KeyError, ValueError, TypeError, csv.Error):
        raise InputError(f"--trace {path}: needs a CSV header arrival_s,prompt,gen and numbers in every row") from None
    if not data or any(not (0 <= a <= MAX_TRACE_S) or not (1 <= p <= MAX_TOKENS) or not (1 <= g <= MAX_TOKENS)
                       for a, p, g in data):
        raise InputError(f"--trace {path}: needs at least one row, arrival_s from 0 to {MAX_TRACE_S:g}, prompt and "
                         f"gen from 1 to {MAX_TOKENS:,}")
    a, p, g = zip(*data)
    return list(a), list(p), list(g)


def _people(r) -> list[str]:
    """How many people like the offered ones one server sustains (ServeResult.users_sustained), with its arithmetic:
    under the TTFT target when one is given, else at most up to the saturation rate."""
    if r.users_sustained is None:
        return []
    each = r.rate_per_s / r.users * 60
    who = f"{r.users_sustained:,} like {'this one' if r.users == 1 else 'these'}"
    if r.target_ttft_p95_s:
        return [f"  people        {who} under TTFT p95 ≤ {r.target_ttft_p95_s:g} s "
                f"({(r.max_rate_per_s or 0.0) * 60:.3g}/min ÷ {each:.3g}/min per person)"]
    return [f"  people        at most {who} ({r.saturation_rate_per_s * 60:.3g}/min saturation ÷ {each:.3g}/min per "
            "person; the wait grows steeply near it: --max-ttft-p95 counts them under a target)"]


def render(r) -> str:
    from planner.format import cached_label, fmt_bytes, fmt_seconds, fmt_tok_s, verdict_text

    def per_min(x):
        return f"{x * 60:.1f}/min" if x is not None else "none"

    likely = []
    if r.ttft_s_slow is not None:
        (ps, ds), (pf, df) = r.speed_range
        likely.append(f"  likely        TTFT p50 {fmt_seconds(r.ttft_s_fast.p50)}–{fmt_seconds(r.ttft_s_slow.p50)}   "
                      f"p95 {fmt_seconds(r.ttft_s_fast.p95)}–{fmt_seconds(r.ttft_s_slow.p95)}; saturation "
                      f"{r.saturation_slow_per_s * 60:.1f}–{per_min(r.saturation_fast_per_s)} (prefill ×{ps:.2f}–"
                      f"{pf:.2f}, decode ×{ds:.2f}–{df:.2f}: the calibration's 80 % speed range)")
    lines = [
        f"{r.model} {r.quant} on {r.chip_label} ({r.ram_gb:g} GB) with {r.runtime}: {r.slots} slots of {r.slot_context:,} "
        f"tokens, {per_min(r.rate_per_s)} for {fmt_seconds(r.duration_s)} ({r.n_requests} requests, seed {r.seed})",
        f"  prompt {r.prompt}, answer {r.gen}"
        + f" ({cached_label(r.cached_prefix_share)})"
        + {True: "; one unified KV stream", False: "; a KV stream per slot (batches split by slot)", None: ""}[
            r.kv_unified],
        f"  TTFT          p50 {fmt_seconds(r.ttft_s.p50)}   p95 {fmt_seconds(r.ttft_s.p95)}   "
        f"p99 {fmt_seconds(r.ttft_s.p99)}   (queue wait p50 {fmt_seconds(r.queue_wait_s.p50)})",
        *likely,
        f"  per user      {fmt_tok_s(r.decode_tok_s_p50)} tok/s median, {fmt_tok_s(r.decode_tok_s_p5)} tok/s for "
        f"the slowest 5 %",
        f"  request       p50 {fmt_seconds(r.e2e_s.p50)}   p95 {fmt_seconds(r.e2e_s.p95)}   "
        f"p99 {fmt_seconds(r.e2e_s.p99)}",
        f"  server        {fmt_tok_s(r.throughput_tok_s)} tok/s generated, {r.slot_occupancy:.0%} of the "
        "sequences it can hold in flight",
        "  queue         " + " ".join(str(q) for _, q in r.queue_timeline)
        + f" waiting (every {fmt_seconds(r.queue_timeline[0][0])}; max {r.queue_max})",
        f"  capacity      the queue grows without bound above {per_min(r.saturation_rate_per_s)}: "
        + (f"stable at {r.utilisation:.0%} load" if r.stable else f"OVERLOADED ({r.utilisation:.0%} load)"),
        *_people(r),
        f"  memory        {fmt_bytes(r.memory_bytes)} of {fmt_bytes(r.wired_limit_bytes)} GPU limit: "
        f"{verdict_text(r.verdict)}",
    ]
    notes = list(r.notes)
    if r.saturation_slow_per_s is not None and r.saturation_slow_per_s <= r.rate_per_s < r.saturation_fast_per_s:
        notes.append("the offered rate is inside the likely range of the saturation rate: on a slower Mac of this "
                     "kind the queue would grow without bound")
    if r.target_ttft_p95_s:
        lines.append(f"  under TTFT p95 ≤ {r.target_ttft_p95_s:g} s: at most {per_min(r.max_rate_per_s)} with "
                     f"{r.slots} slots")
    if r.sweep and len(r.sweep) > 1:
        by_target = bool(r.target_ttft_p95_s) and not r.binding
        cells = ", ".join(f"{o.slots}: {per_min(o.max_rate_per_s if by_target else o.saturation_rate_per_s)}"
                          for o in r.sweep)
        what = "rate under the target" if by_target else "saturation rate"
        lines.append(f"  slots         {what} by slot count: {cells}; best {r.best_slots}")
    if r.binding:
        lines.append(f"  binds         {r.binding}")
    lines.append(f"  calibration: {r.calibration}")
    if r.host_s_per_token:
        lines.append(f"  host work: {r.host_s_per_token * 1e3:.2f} ms per sampled token (llama-server's sampling and "
                     "streaming, from plan calibrate --server)")
    if r.server_scales != (1.0, 1.0):
        lines.append(f"  server phases: prompt ×{r.server_scales[0]:.2f}, decode ×{r.server_scales[1]:.2f} over the "
                     "benchmark-fitted steps (llama-server measured by plan calibrate --server)")
    lines += [f"  note: {n}" for n in notes]
    return "\n".join(lines)


def _model(spec: str, quant: str | None):
    """A catalog id as is; a local GGUF/folder or a HF repo read by sources.resolve_model (as `plan --model`)."""
    from .plan import catalog_id

    if catalog_id(spec):
        return spec
    from sources import resolve_model

    return resolve_model(spec, quant=quant)


def serve_cmd(
    model: str = typer.Option(..., "--model", "-m",
                              help="Catalog id or alias (qwen3-30b-a3b), a .gguf file, a model folder or a HF repo"),
    chip: str = typer.Option(..., "--chip", help="Apple chip, e.g. 'M4 Max'"),
    gpu_cores: int | None = typer.Option(None, "--gpu-cores", help="GPU cores (needed for binned chips)"),
    ram: float | None = typer.Option(None, "--ram", help="Unified memory [GB]; default: the chip's largest"),
    runtime: str | None = typer.Option(None, "--runtime", "-r", help="llama.cpp (llama-server) or mlx-lm "
                                       "(mlx_lm.server); default: the runtime of the format the model's files, name "
                                       "or --quant pin (an MLX folder, mlx-community/...: mlx-lm), else llama.cpp"),
    quant: str | None = typer.Option(None, "--quant", "-q", help="GGUF preset or MLX format; default: the checkpoint's own format (gpt-oss: MXFP4), else Q4_K_M / 4bit"),
    slots: int = typer.Option(4, "--slots", help="llama-server -np / mlx_lm.server --decode-concurrency"),
    rate: str | None = wopt(S, "rate"),
    users: int | None = typer.Option(None, *WORKLOAD_FLAGS["users"], help="People using the server (with "
                                     "--think-time or --per-user instead of --rate)"),
    think_time: str | None = typer.Option(None, "--think-time", help="Each person's pause between requests "
                                          "(reading, typing): 90s, 2min"),
    per_user: str | None = typer.Option(None, "--per-user", help="Requests per person: 20/h, 1/min"),
    prompt: str = wopt(S, "prompt"),
    gen: str = wopt(S, "gen"),
    duration: str = typer.Option("1h", "--duration", help="Simulated time: 1h, 30min, 600s"),
    max_ttft_p95: float | None = typer.Option(None, "--max-ttft-p95", help="Target 95th-percentile TTFT [s]"),
    cached_prefix: float = wopt(S, "cached_prefix"),
    slot_context: int | None = typer.Option(None, "--slot-context", help="KV tokens per slot; default p99 prompt+gen"),
    seed: int = typer.Option(0, "--seed", help="Seed of the arrival process and lengths"),
    trace: str | None = typer.Option(None, "--trace", help="CSV of requests (arrival_s,prompt,gen) instead of Poisson"),
    sweep: bool = typer.Option(True, "--sweep/--no-sweep", help="Also try 1-32 slots for the best count"),
    kv_unified: bool = typer.Option(False, "--kv-unified", help="llama-server --kv-unified (the default of -np auto): "
                                    "one KV stream, so a batch is not split by slot"),
    macos: str = typer.Option(DEFAULT_MACOS, "--macos", help="macOS major version (default GPU limit)"),
    kwh_price: float = typer.Option(0.16, "--kwh-price", help="Electricity price [USD/kWh] for the daily cost "
                                    "(default: the 2023 US residential average, 16 ¢/kWh, EIA)"),
    json_out: bool = typer.Option(False, "--json", help="Print the result as JSON"),
):
    """Latency under load: TTFT percentiles, per-user speed and the sustainable request rate of one server."""
    from planner.serve_plan import ServeRequest, serve, setup
    from planner.workload import check_cached_prefix, parse_length

    check_cached_prefix(cached_prefix)
    if slots < 1 or slots > 512:
        raise InputError(f"--slots {slots}: give 1 to 512 parallel sequences")
    from .bounds import check_options

    check_options(ram=ram, max_ttft_p95=max_ttft_p95, gpu_cores=gpu_cores, seed=seed, slot_context=slot_context)
    per_s, implied = people_rate(rate, users, think_time, per_user)
    req = ServeRequest(slots=slots, rate=per_s, prompt=parse_length(prompt, "--prompt"),
                       gen=parse_length(gen, "--gen"), duration=parse_duration(duration), seed=seed,
                       cached_prefix_share=cached_prefix, slot_context=slot_context, max_ttft_p95=max_ttft_p95,
                       sweep=sweep, trace=read_trace(trace) if trace else None, kv_unified=kv_unified,
                       users=rate_users(rate, users))
    if not 0 < kwh_price < 100:
        raise InputError(f"--kwh-price {kwh_price:g}: give the price of a kWh in USD, e.g. 0.16")
    r = serve(setup(chip, gpu_cores, ram, _model(model, quant), quant, runtime, macos), req)
    from planner.beyond import serve_energy

    from .contract import dumps

    r = r.model_copy(update={"energy": serve_energy(r.chip, min(r.utilisation, 1.0), r.throughput_tok_s, kwh_price)})
    typer.echo(dumps(r) if json_out else say((implied + "\n" if implied else "") + render(r) + "\n"
                                              + energy_text(r.energy)))


