"""The web form: the same core as the CLI, rendered with Plotly charts. Start with `plan app` or `make app`.

No arithmetic here: the form builds a PlanRequest, planner.plan.plan() answers, app.charts draws and
app.readings words the result (numbers via planner.format).
"""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st
from pydantic import ValidationError

try:
    from app import finetune_page, installed_page, models_page, readings, uploads
except ImportError:  # `streamlit run app/streamlit_app.py` from a checkout puts app/, not the repo, on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from app import finetune_page, installed_page, models_page, readings, uploads


from cli.profile_cache import install as _install_profile_cache
from planner import profiles
from planner.capacity import MAX_USERS
from planner.errors import PlannerError, render_validation_error
from planner.format import cached_label, fmt_bytes, fmt_ctx, fmt_params, fmt_seconds
from planner.inputs import template
from planner.plan import Plan, PlanRequest
from planner.points import CACHED_PREFIX_HELP, DEFAULT_RATE_NOTE, DEFAULT_WORKLOAD, default_rate_per_s

_install_profile_cache()  # validated profiles kept between reruns and restarts (the core keeps none)


class _LazyCharts:
    """app.charts (and Plotly) imported on first use, so a cold start shows the answer before Plotly loads."""

    def __getattr__(self, name: str):
        from app import charts as module

        return getattr(module, name)


charts = _LazyCharts()


F = PlanRequest.model_fields
DEFAULT_MODEL = "llama-3.1-8b"
DEFAULT_CHIP = ("M4 Max", 40, 64)
COMPARE_DEFAULT = [("M4 Pro", 20, 48), ("M4 Max", 40, 64), ("M4 Max", 40, 128), ("M3 Ultra", 80, 256)]
CONTEXT_STEPS = [512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288, 1048576]
MODE_CHIP, MODE_RAM, MODE_COMPARE = "Chip and RAM", "RAM only", "Compare several Macs"
MODE_BUY = "Which Mac should I buy?"
MODE_SERVE = "Serve a team"
PAGE_PLAN_TITLE = "Will this LLM run on this Mac?"
PAGE_TITLES = {MODE_BUY: "Which Mac should I buy?", MODE_SERVE: "Serve a team: latency under load"}
# the inputs sit in the sidebar; on a phone it is folded behind the » at the top left
INTRO = ("Memory and speed of a model on Apple Silicon for llama.cpp and mlx-lm, against the GPU memory limit macOS "
         "actually enforces. Change the inputs in the sidebar (on a phone, open it with » at the top left); the page "
         "updates.")
PAGE_PLAN = "Will this model fit?"


def tip(field: str) -> str:
    return F[field].description or ""


# ----------------------------------------------------------------------------- cached profile look-ups
@st.cache_data(show_spinner=False)
def catalog() -> dict[str, str]:
    """model id -> label for the searchable select box."""
    from planner import architecture as arch

    return {m.id: f"{m.name} · {fmt_params(arch.n_params(m.config))}" for m in profiles.all_models()}


@st.cache_data(show_spinner=False)
def chip_table() -> list[tuple[str, int, list[int], str]]:
    """(chip name, GPU cores, RAM options, status) for every chip bin, newest generation first."""
    tiers = {"base": 0, "pro": 1, "max": 2, "ultra": 3}
    chips = sorted(profiles.all_chips(), key=lambda c: (c.generation, tiers[c.tier], c.gpu_cores), reverse=True)
    return [(c.name, c.gpu_cores, list(c.ram_options_gb), c.status) for c in chips]


@st.cache_data(show_spinner=False)
def runtime_ids() -> list[str]:
    return [r.id for r in profiles.all_runtimes()]


@st.cache_data(show_spinner=False)
def quant_ids() -> list[str]:
    qs = profiles.all_quants()
    return [q.id for q in qs if q.kind == "gguf"] + [q.id for q in qs if q.kind == "mlx"]


@st.cache_data(show_spinner=False)
def kv_type_ids() -> list[str]:
    return list(dict.fromkeys(k for r in profiles.all_runtimes() for k in r.kv_types))


@st.cache_data(show_spinner=False)
def macos_names() -> dict[str, str]:
    return {"26": profiles.load_macos("26").name, "15": profiles.load_macos("15").name}  # the current first


@st.cache_data(show_spinner=False)
def workload_presets() -> dict[str, tuple[str, str, int, int, float | None, float | None, int, int, float]]:
    """preset id -> (name, description, users, context, min tok/s per user, max TTFT [s], prompt, answer, cached
    share), the prompt at its 90th percentile (the slow requests the targets are checked at), the mean answer
    [tokens] and the share of each prompt already in the prompt cache (profiles/workloads/*.yaml)."""
    from planner.workload import load_workload, workload_ids

    out = {}
    for i in workload_ids():
        w = load_workload(i)
        pt = w.at()
        out[i] = (w.name, w.description, w.users, w.context, w.targets.min_tok_s_per_user, w.targets.max_ttft_s,
                  pt.prompt_tokens, pt.gen_tokens, w.cached_prefix_share)
    return out


def build_workload(preset: str, users: int, context: int, min_tok_s: float, max_ttft: float, prompt: int, gen: int,
                   cached: float | None = None):
    """The preset with the form's users, context, prompt and answer lengths, prompt-cache share (None: the
    preset's; as `--cached-prefix`) and targets (0 = no target): a planner.workload.WorkloadProfile."""
    from planner.workload import Targets, custom_workload

    # the preset's own length distributions
    wl = custom_workload(preset, users=users, context=context, cached_prefix=cached)
    if workload_presets()[preset][6:8] != (prompt, gen) or wl.context > context:  # lengths the form set
        wl = custom_workload(preset, users=users, context=context, prompt=str(prompt), gen=str(gen),
                             cached_prefix=cached)
    t = wl.targets.model_copy(update={"min_tok_s_per_user": min_tok_s or None, "max_ttft_s": max_ttft or None})
    return wl.model_copy(update={"targets": Targets.model_validate(t.model_dump())})


@st.cache_data(show_spinner=False, max_entries=64)
def cached_recommend(model: str, ram_gb: float, chip: str | None, gpu_cores: int | None, wl_json: str,
                     macos: str, runtimes: tuple[str, ...], quants: tuple[str, ...] | None, wired: int | None):
    from planner.advice import recommend
    from planner.plan import resolve_mac
    from planner.workload import WorkloadProfile

    _, chip_p, _ = resolve_mac(PlanRequest(model=model, ram=ram_gb, chip=chip, gpu_cores=gpu_cores))
    return recommend(model, ram_gb, WorkloadProfile.model_validate_json(wl_json), chip=chip_p, macos=macos,
                     runtimes=list(runtimes), quants=list(quants) if quants else None, wired_limit_mb=wired,
                     best_effort=True)


@st.cache_data(show_spinner=False, max_entries=32)
def cached_buy(model: str, wl_json: str, budget: float | None, runtimes: tuple[str, ...], macos: str,
               include_rumoured: bool, include_discontinued: bool = False, quotes: tuple[str, ...] = ()):
    from planner.buy import buy, match_price
    from planner.workload import WorkloadProfile

    prices = {}
    for q in quotes:  # 'Mac Studio M4 Max 128GB=3299'; a bad line is one error naming it (planner.errors)
        ids, usd = match_price(q)
        prices.update(dict.fromkeys(ids, usd))
    return buy([model], WorkloadProfile.model_validate_json(wl_json), budget_usd=budget, runtimes=list(runtimes),
               macos=macos, include_rumoured=include_rumoured, include_discontinued=include_discontinued,
               prices=prices)


@st.cache_data(show_spinner=False)
def mac_chip_ids() -> dict[str, str]:
    """Mac product id -> chip id (to plan the Mac that `plan buy` picked)."""
    return {m.id: m.chip for m in profiles.all_macs()}


@st.cache_data(show_spinner=False, max_entries=64, ttl=3600)
def cached_resolve(spec: str, quant: str | None):
    """sources.resolve_model: catalog id, HF repo id (reads the Hub), local .gguf or model folder."""
    from sources import resolve_model

    # a path typed into the page is read on the server: off when it listens beyond localhost (issue 34)
    uploads.check_model_spec(spec, uploads.local_paths_allowed(st.get_option("server.address")))
    return resolve_model(spec, quant=quant)


@st.cache_data(show_spinner=False, max_entries=256)
def cached_plan(request_json: str) -> Plan:
    """The same call as `plan --json`: resolve the model, then plan(). Keyed on the request's JSON; a PlannerError
    propagates (Streamlit does not cache exceptions)."""
    from planner.plan import plan

    req = PlanRequest.model_validate_json(request_json)
    quants = req.quants or []
    return plan(req, cached_resolve(req.model, quants[0] if len(quants) == 1 else None))


# ----------------------------------------------------------------------------- the form
def chip_label(name: str, cores: int, status: str) -> str:
    return f"{name} {cores}-core GPU" + (" (rumoured)" if status == "rumoured" else "")


def mac_form() -> tuple[str, list[dict]]:
    """The Mac part of the form -> (mode, list of PlanRequest kwargs, one per Mac)."""
    st.sidebar.subheader("Mac")
    mode = st.sidebar.radio("Which Mac?", [MODE_CHIP, MODE_RAM, MODE_COMPARE, MODE_BUY, MODE_SERVE],
                            key="mac_mode",
                            help="Memory answers only need the RAM size; the chip adds speed answers. "
                                 "“Which Mac should I buy?” searches every Mac configuration with its price.")
    table = chip_table()
    if mode == MODE_BUY:
        budget = st.sidebar.number_input("Budget [USD] (0 = no limit)", 0, 100_000, 0, step=500, key="budget")
        rumoured = st.sidebar.checkbox("Include rumoured chips", False, key="rumoured")
        old = st.sidebar.checkbox("Include discontinued Macs (at launch price)", False, key="discontinued",
                                  help="Macs no longer sold new: M1/M2 Ultra and older Max chips, often bought "
                                       "refurbished or used for large models")
        quotes = st.sidebar.text_area("Your prices (optional)", "", key="quotes", height=80,
                                      placeholder="Mac Studio M2 Ultra 76-core 192GB=3500",
                                      help="One per line, PRODUCT CHIP RAM=USD: a refurbished or used offer. It "
                                           "replaces the launch price and brings a discontinued Mac into the search.")
        return mode, [{"budget": float(budget) or None, "include_rumoured": rumoured, "include_discontinued": old,
                       "quotes": tuple(x.strip() for x in quotes.splitlines() if x.strip())}]
    if mode == MODE_RAM:
        sizes = sorted({r for _, _, opts, _ in table for r in opts})
        ram = st.sidebar.selectbox("Unified memory (RAM)", sizes, index=sizes.index(64) if 64 in sizes else 0,
                                   format_func=lambda r: f"{r} GB", key="ram_only", help=tip("ram"))
        return mode, [{"ram": float(ram)}]
    if mode == MODE_COMPARE:
        labels = {f"{n} {c}c · {r} GB" + (" (rumoured)" if s == "rumoured" else ""): (n, c, r)
                  for n, c, opts, s in table for r in opts}
        default = [k for k, v in labels.items() if v in COMPARE_DEFAULT]
        picked = st.sidebar.multiselect("Macs to compare", list(labels), default=default, key="compare_macs",
                                        help="Chip, GPU cores (c) and RAM of each Mac; the same model and workload "
                                             "is planned on each.")
        if not picked:
            return mode, []
        return mode, [{"chip": labels[k][0], "gpu_cores": labels[k][1], "ram": float(labels[k][2])} for k in picked]
    names = list(dict.fromkeys(n for n, _, _, _ in table))
    name = st.sidebar.selectbox("Chip", names, index=names.index(DEFAULT_CHIP[0]) if DEFAULT_CHIP[0] in names else 0,
                                key="chip", help=tip("chip"))
    bins = [(c, opts, s) for n, c, opts, s in table if n == name]
    cores_list = [c for c, _, _ in bins]
    cores = st.sidebar.selectbox("GPU cores", cores_list, key=f"cores_{name}", help=tip("gpu_cores"),
                                 index=cores_list.index(DEFAULT_CHIP[1]) if DEFAULT_CHIP[1] in cores_list else 0,
                                 format_func=lambda c: f"{c}-core GPU")
    opts, status = next((o, s) for c, o, s in bins if c == cores)
    key = f"ram_{name}_{cores}"
    want = st.session_state.get("ram_wanted", DEFAULT_CHIP[2])
    if key not in st.session_state:  # a new chip: keep the RAM size the user had, or the nearest one it comes with
        st.session_state[key] = want if want in opts else min(opts, key=lambda r: (abs(r - want), r))
    ram = st.sidebar.selectbox("Unified memory (RAM)", opts, key=key, help=tip("ram"),
                               format_func=lambda r: f"{r} GB",
                               on_change=lambda: st.session_state.update(ram_wanted=st.session_state[key]))
    if ram != want:
        st.sidebar.caption(f"The {name} {cores}-core GPU comes with {', '.join(map(str, opts))} GB: "
                           f"showing {ram} GB, the nearest to your {want} GB.")
    if status == "rumoured":
        st.sidebar.caption("This chip is rumoured, not announced: its figures are guesses.")
    return mode, [{"chip": name, "gpu_cores": cores, "ram": float(ram)}]


def model_form() -> str:
    st.sidebar.subheader("Model")
    how = st.sidebar.radio("Model source", ["Catalog", "Hugging Face id or local path", "Upload config.json"],
                           key="model_source", label_visibility="collapsed")
    cat = catalog()
    if how == "Catalog":
        ids = list(cat)
        return st.sidebar.selectbox("Model (type to search)", ids, index=ids.index(DEFAULT_MODEL)
                                    if DEFAULT_MODEL in ids else 0, format_func=cat.get, key="model",
                                    help=tip("model"))
    if how == "Upload config.json":
        up = st.sidebar.file_uploader("The model's config.json (from its Hugging Face page)", type=["json"],
                                      key="model_upload")
        return uploads.config_folder(up.getvalue()) if up is not None else ""
    return st.sidebar.text_input("Hugging Face repo id, .gguf file or model folder", key="model_text",
                                 help="A Hugging Face repo (org/name; read from the Hub), a local .gguf file, or a "
                                      "local folder with config.json (MLX or safetensors). " + tip("model"),
                                 placeholder="meta-llama/Llama-3.3-70B-Instruct").strip()


def _apply_preset(only_missing: bool = False) -> None:
    """When the preset changes, load its users, context and targets into the form (still editable).
    ``only_missing``: fill only the fields whose state is gone (see workload_form)."""
    _, _, users, context, tok, ttft, prompt, gen, cached = workload_presets()[st.session_state["preset"]]
    values = dict(users=users, context=context, tgt_tok=float(tok or 0), tgt_ttft=float(ttft or 0), prompt=prompt,
                  gen=gen, cached=float(cached))
    st.session_state.update({k: v for k, v in values.items() if not only_missing or k not in st.session_state})


def workload_form() -> tuple[dict, tuple]:
    """-> (PlanRequest kwargs, arguments of build_workload)."""
    st.sidebar.subheader("Workload")
    presets = workload_presets()
    if "preset" not in st.session_state:  # first run: the default workload preset's values; later the user's
        st.session_state["preset"] = DEFAULT_WORKLOAD  # planner/points.py: the default workload of every command
        _apply_preset()
    else:
        # a click during the first run stops it before these widgets are drawn, and Streamlit then drops their
        # state (a run stopped by a rerun counts as finished): the context slider fell back to its first step,
        # 512 tokens, with the preset still chosen. Refill what is gone from the preset.
        _apply_preset(only_missing=True)
    preset = st.sidebar.selectbox("Workload preset", list(presets), key="preset", on_change=_apply_preset,
                                  format_func=lambda i: presets[i][0],
                                  help="How the model is used: prompt and answer lengths, users, latency targets. "
                                       "Picking one fills in the fields below.")
    st.sidebar.caption(f"{presets[preset][1]}. Speeds are computed at the prompt and answer lengths below.")
    steps = sorted(set(CONTEXT_STEPS) | {v[3] for v in presets.values()})
    context = st.sidebar.select_slider("Context per user [tokens]", steps, key="context", format_func=fmt_ctx,
                                       help=tip("context"))
    users = st.sidebar.number_input("Concurrent users", 1, MAX_USERS, key="users", help=tip("users"))
    prompt = st.sidebar.number_input("Prompt length [tokens]", 1, 10_000_000, step=256, key="prompt",
                                     help="Tokens each request sends (message, history, documents): time to first "
                                          "token is computed at this length. The preset fills in its 90th "
                                          "percentile, the slow requests its targets are checked at.")
    gen = st.sidebar.number_input("Answer length [tokens]", 1, 10_000_000, step=100, key="gen",
                                  help="Tokens generated per request (the preset's average).")
    # the prompt-cache share every TTFT on the page assumes, as `plan --cached-prefix` (planner/workload.py
    # cached_tokens): the preset fills in its own share, shown below as the default
    own = presets[preset][8]
    cached = st.sidebar.number_input(readings.LABELS["cached_prefix"], 0.0, 0.99, step=0.05, format="%.2f", key="cached",
                                     help=CACHED_PREFIX_HELP + ". Every time to first token on the page assumes it.")
    st.sidebar.caption(f"Default: {own:g}, the {presets[preset][0]} preset's "
                       f"({cached_label(own)}){'' if float(cached) == own else '; changed'}.")
    with st.sidebar.expander("Speed targets"):
        tok = st.number_input("Minimum tok/s per user (0 = none)", 0.0, 10_000.0, step=1.0, key="tgt_tok")
        ttft = st.number_input("Longest wait for the first token [s] (0 = none)", 0.0, 3600.0, step=1.0,
                               key="tgt_ttft")
    st.sidebar.subheader("Runtimes and quantization")
    runtimes = st.sidebar.multiselect("Runtimes", runtime_ids(), default=["llama.cpp", "mlx-lm"], key="runtimes",
                                      help=tip("runtimes"))
    qmode = st.sidebar.radio("Quantizations", ["Sensible default set", "Pick"], key="quant_mode", horizontal=True,
                             help=tip("quants"))
    quants = None
    if qmode == "Pick":
        quants = st.sidebar.multiselect("Quantizations to compare", quant_ids(), default=["Q4_K_M", "mlx-4bit-g64"],
                                        key="quants", help=tip("quants")) or None
    with st.sidebar.expander("Advanced: GPU limit, macOS, KV cache"):
        mac_os = macos_names()
        macos = st.selectbox("macOS", list(mac_os), format_func=mac_os.get, key="macos", help=tip("macos"))
        wl_mode = st.radio("GPU wired limit", ["macOS default", "Custom"], key="wired_mode", horizontal=True,
                           help=tip("wired_limit_mb"))
        wired = None
        if wl_mode == "Custom":
            wired = int(st.number_input("iogpu.wired_limit_mb [MB]", 1, 2_000_000, 57344, step=1024, key="wired_mb",
                                        help=tip("wired_limit_mb")))
        kv = st.selectbox("KV cache type", ["runtime default", *kv_type_ids()], key="kv_type", help=tip("kv_type"))
    req = {"context": int(context), "users": int(users), "runtimes": runtimes, "quants": quants, "macos": macos,
               "wired_limit_mb": wired, "kv_type": None if kv == "runtime default" else kv}
    return req, (preset, int(users), int(context), tok, ttft, int(prompt), int(gen), float(cached))


# ----------------------------------------------------------------------------- the results
def section(title: str, fig, reading: str, key: str) -> None:
    st.subheader(title)
    left, right = st.columns([3, 1.25], gap="medium")
    left.plotly_chart(fig, width="stretch", key=key, config={"displaylogo": False, "displayModeBar": False})
    right.markdown(reading)


def cached_answer(model: str, ram_gb: float, chip: str | None, wl_json: str, macos: str, runtimes: tuple[str, ...],
                  quants: tuple[str, ...] | None, wired: int | None):
    """(Recommendation or None, message or None). Best effort: when no target can be met the recommendation lists
    the closest options (targets_met False); a model that fits nowhere gives the message."""
    try:
        return cached_recommend(model, ram_gb, chip, None, wl_json, macos, runtimes, quants, wired), None
    except PlannerError as e:
        return None, template(e)  # the page renders it (readings.for_web)


class Answer:
    """The one option the page speaks of: the recommendation's first (the closest to the targets when none meets
    them); None for a model outside the catalog, then the page shows the plan's highest-precision option."""

    def __init__(self, rec, msg: str | None):
        self.rec, self.msg = rec, msg
        self.ranked = rec.options if rec is not None else []
        self.top = self.ranked[0] if self.ranked else None
        self.met = rec is None or rec.targets_met
        self.why = rec.why_not_higher_quality if rec is not None else None


def answer_for(model_id: str, req: PlanRequest, chip_id: str | None, ram_gb: float, wl) -> Answer:
    if model_id not in catalog():
        return Answer(None, None)
    return Answer(*cached_answer(model_id, ram_gb, chip_id, wl.model_dump_json(), req.macos, tuple(req.runtimes),
                                 tuple(req.quants) if req.quants else None, req.wired_limit_mb))


def plan_for(req: PlanRequest, upload_dir: str | None) -> tuple[Plan, Answer]:
    """The plan and its answer, the plan's KV cache set to the answer's when the form leaves it to the runtime
    (so the charts show the recommended option exactly)."""
    p = cached_plan(req.model_dump_json())
    ans = answer_for(p.model.id, req, p.mac.chip.id if p.mac.chip else None, p.mac.ram_gb, st.session_state["_wl"])
    top = ans.top
    if top is not None and req.kv_type is None:
        default = next((o.kv_type for o in p.options if o.runtime == top.runtime), top.kv_type)
        if top.kv_type != default:
            p = cached_plan(req.model_copy(update={"kv_type": top.kv_type}).model_dump_json())
    return p, ans


def show_compare(items: list[tuple[Plan, Answer]]) -> None:
    plans = [p for p, _ in items]
    section("Which Macs can run it", charts.compare_macs(plans), readings.compare_reading(plans), "chart_compare")
    st.markdown("**Side by side: the best option on each Mac for your workload**")
    st.table([readings.compare_row(p, a.top, a.met) for p, a in items])


def _option_of(p: Plan, o) -> int | None:
    return next((i for i, x in enumerate(p.options) if (x.runtime, x.quant) == (o.runtime, o.quant)), None)


def show_plan(p: Plan, ans: Answer, wl, upload_dir: str | None) -> None:
    from planner.advice import runtime_verdicts
    from planner.format import versus_text

    verdicts = runtime_verdicts(ans.rec) if ans.rec is not None else []
    level, text = readings.answer(p, wl, ans.top, ans.met, ans.why and readings.for_web(ans.why),
                                  versus_text(verdicts) if verdicts else None)
    with st.container(key="answer"):
        getattr(st, level)(readings.for_web(text, upload_dir))
    labels = [readings.option_name(o) for o in p.options]
    idx = _option_of(p, ans.top) if ans.top is not None else None
    if idx is None:
        idx = p.options.index(readings.plan_pick(p)) if readings.best_verdict(p) != "no-fit" else 0
    # keyed on the plan's identity and the answer, so a new model, Mac or workload starts at its own answer
    chosen_label = st.selectbox("Option shown on this page (the answer above; pick another to compare)", labels,
                                index=idx, key=f"chosen_{p.model.id}_{p.mac.ram_gb:g}_"
                                f"{p.mac.chip.id if p.mac.chip else ''}_{'-'.join(p.request.runtimes)}_{labels[idx]}")
    chosen = p.options[labels.index(chosen_label)]
    show_recipe(p, chosen, ans, upload_dir)
    if chosen.streaming is not None:  # over what macOS can give the GPU: mapped or streamed from the SSD (planner/streaming.py)
        from planner.format import streaming_lines

        st.info("\n\n".join(streaming_lines(chosen.runtime, chosen.quant, chosen.streaming)))
    w = p.wired
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Mac", readings.mac_short(p), help=readings.mac_label(p))
    c2.metric("GPU memory limit", fmt_bytes(w.effective_bytes), help=w.rule)
    c3.metric("Kept for macOS", fmt_bytes(w.left_for_macos_bytes))
    c4.metric("Users × context", readings.workload_short(p))
    st.caption(readings.model_line(p))

    # lazy tabs: only the open tab's charts are built and sent to the browser
    tabs = st.tabs(["Memory", "Users × context", "Speed", "Ranking", "Notes and download"], key="tab",
                   on_change="rerun")
    with tabs[0]:
        if tabs[0].open:
            section("Memory: does it fit?", charts.memory_stack(p, chosen),
                    readings.limit_reading(p) + "\n\n" + readings.memory_reading(p), "chart_memory")
            st.table(readings.fit_rows(p))
    with tabs[1]:
        if tabs[1].open:
            section("Concurrency: how many users, how much context", charts.concurrency_heatmap(p, chosen),
                    readings.heatmap_reading(p, chosen), "chart_concurrency")
            st.markdown("**KV cache for one session at each context**")
            st.table(readings.kv_rows(p))
    with tabs[2]:
        if tabs[2].open:
            show_speed(p, chosen, ans)
    with tabs[3]:
        if tabs[3].open:
            show_recommend(ans, wl, upload_dir)
    with tabs[4]:
        if tabs[4].open:
            show_notes(p, upload_dir)


def show_notes(p: Plan, upload_dir: str | None) -> None:
    notes = [*p.notes, *(f"{readings.option_label(o)}: {n}" for o in p.options for n in o.notes)]
    if p.mac.note:
        notes.insert(0, p.mac.note)
    for n in dict.fromkeys(notes):
        st.caption(readings.for_web(n, upload_dir))
    st.download_button("Download the full plan (JSON, the same document as the command line's)",
                       p.model_dump_json(indent=2), file_name=f"plan-{p.model.id}-{p.mac.ram_gb:g}gb.json",
                       mime="application/json", key="download_json")


PROMPT_STEPS = [256, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072]


@st.cache_data(show_spinner=False, max_entries=128)
def cached_ceiling(request_json: str, runtime: str, quant: str, users: tuple[int, ...]) -> dict[int, float]:
    """Bandwidth roofline per user, by concurrent users, from the prediction contract (`plan predict`);
    empty when it cannot answer (e.g. a model that is not in the catalog)."""
    from planner.predict import predict_result

    r = PlanRequest.model_validate_json(request_json)
    out = {}
    for u in users:
        try:
            res = predict_result(r.chip, r.gpu_cores, r.ram, r.model, quant, runtime, r.prompt,
                                 r.gen, 0, u, r.macos, r.flash_attn, r.n_ubatch, r.kv_type,
                                 cached_prefix=r.cached_prefix or 0.0)
        except PlannerError:
            return {}
        out[u] = res["decode_ceiling_tok_s"]
    return out


def speed_picks(p: Plan, chosen, ans: Answer) -> list:
    """The chosen option and the answer's best option of the other runtime (else the plan's), with speed."""
    others = [o for o in ans.ranked if o.runtime != chosen.runtime]
    other = [p.options[i] for i in [_option_of(p, others[0])] if i is not None] if others else []
    picks = [chosen] + (other or [o for o in readings.best_options(p) if o.runtime != chosen.runtime][:1])
    return [o for o in picks if o.speed is not None]


def show_speed(p: Plan, chosen, ans: Answer) -> None:
    if p.mac.chip is None:
        st.info("Pick a chip (Mac → “Chip and RAM”) to see decode speed and time to first token.")
        return
    picks = speed_picks(p, chosen, ans)
    if not picks:
        st.info(f"No speed estimate for the {p.mac.chip.label} (see Notes and download).")
        return
    ceilings = {readings.option_label(o): cached_ceiling(p.request.model_dump_json(), o.runtime, o.quant,
                                                         tuple(p.user_counts)) for o in picks}
    section("Speed: tokens per second as users are added", charts.decode_vs_users(p, picks, ceilings),
            readings.decode_reading(p, picks), "chart_decode")
    # the core at several prompt lengths up to the longest context that fits, restricted to the drawn options
    r = p.request
    ends = {readings.longest_context(o, r.users) - r.gen for o in picks} - {0}
    quants = list(dict.fromkeys(o.quant for o in picks))
    # the usual steps, the workload's prompt, and each option's longest prompt (its line ends exactly there)
    prompts = sorted({n for n in PROMPT_STEPS if n <= max(ends, default=0)} | {r.prompt} | {n for n in ends if n > 0})
    plans = [cached_plan(r.model_copy(update={"prompt": n, "quants": quants}).model_dump_json())
             for n in prompts]
    section("Speed: waiting for the first token", charts.ttft_vs_prompt(plans, picks, r.gen, r.users),
            readings.ttft_reading(p, picks), "chart_ttft")
    if chosen.energy is not None:  # joules per token (planner/power.py)
        from planner.format import energy_line

        st.caption("Energy: " + energy_line(chosen.runtime, chosen.quant, chosen.energy).strip())


def show_recommend(ans: Answer, wl, upload_dir: str | None) -> None:
    """Ranked configurations for the workload (planner.advice.recommend), or the closest ones."""
    st.subheader("Every configuration, ranked for this workload")
    st.caption(f"Workload: {wl.summary()}")
    rec = ans.rec
    if rec is None:
        st.info(readings.for_web(ans.msg, upload_dir) if ans.msg else
                "The ranking needs a model from the catalog; the answer above is the highest-precision option "
                "that fits.")
        return
    st.markdown(readings.for_web(readings.recommend_reading(rec), upload_dir))
    st.table(readings.recommend_rows(rec))
    for n in rec.notes:
        st.caption(readings.for_web(n, upload_dir))


@st.cache_data(show_spinner=False, max_entries=128)
def cached_launch_recipe(request_json: str, runtime: str, quant: str):
    """planner.plan.launch_recipe for one option of the plan of this request (None: no command can be written)."""
    from planner.plan import launch_recipe

    req = PlanRequest.model_validate_json(request_json)
    p = cached_plan(request_json)
    o = next(o for o in p.options if (o.runtime, o.quant) == (runtime, quant))
    quants = req.quants or []
    return launch_recipe(req, o, cached_resolve(req.model, quants[0] if len(quants) == 1 else None))


def show_recipe(p: Plan, chosen, ans: Answer, upload_dir: str | None) -> None:
    """The launch recipe of the option shown (always with the server command): the recommender's when it is the
    answer (its slots and KV cache), else the plan's for that option."""
    top = ans.top
    if top is not None and (top.runtime, top.quant, top.kv_type) == (chosen.runtime, chosen.quant, chosen.kv_type):
        rc, name = top.recipe, readings.option_name(top)
    else:
        rc, name = cached_launch_recipe(p.request.model_dump_json(), chosen.runtime, chosen.quant), \
            readings.option_name(chosen)
    if chosen.fit.verdict == "no-fit" or rc is None:
        st.markdown(readings.for_web(readings.recipe_reading(p, chosen), upload_dir))
        return
    with st.expander(f"Launch recipe for {name}", expanded=True):
        st.code(readings.recipe_text(rc), language="bash")


def show_buy(model: str, wl, runtimes: list[str], macos: str, budget: float | None, include_rumoured: bool,
             include_discontinued: bool = False, quotes: tuple[str, ...] = ()) -> dict | None:
    """Price against performance over every Mac (planner.buy.buy); returns the Mac to detail below, or None.
    Never a dead end: when no Mac meets every target, the chart and table still show the closest ones."""
    st.caption(f"Workload: {wl.summary()}" + (f" · Budget: ${budget:,.0f}" if budget else " · No budget limit"))
    b = cached_buy(model, wl.model_dump_json(), budget, tuple(runtimes), macos, include_rumoured,
                   include_discontinued, quotes)
    if b.memory_shortfall:
        st.warning(f"**No Mac holds it.** {b.memory_shortfall}. What would change the answer: "
                   + "; ".join(b.what_would_change) + ".")
        return None
    short = readings.buy_shortfall(b)
    if short:
        st.warning(short)
    section("Price against speed", charts.price_performance(b), readings.buy_reading(b), "chart_buy")
    st.dataframe(readings.buy_rows(b), hide_index=True, width="stretch", key="buy_table",
                 column_config={"price [$]": st.column_config.NumberColumn(format="$%d")})
    for n in b.notes:
        st.caption(f"Note: {readings.for_web(n)}")
    pick = b.cheapest or b.best_value or (b.closest[0] if b.closest else None)
    if pick is None:
        return None
    what = ("cheapest Mac that meets the targets" if b.cheapest else
            "best-value Mac" if b.best_value else "closest Mac")
    st.markdown(f"**Details for the {what}: {pick.product}, {pick.chip_label}, {pick.ram_gb} GB** ({pick.runtime} "
                f"{pick.quant}, the configuration in the chart)")
    # the details show the chart's configuration, not a fresh recommendation (issue 35: 11.7 vs 17.2 tok/s)
    return {"chip": mac_chip_ids()[pick.mac], "ram": float(pick.ram_gb),
            "pin": {"runtimes": [pick.runtime], "quants": [pick.quant], "kv_type": pick.kv_type}}


def capped(model: str, quants, context: int, prompt: int, gen: int) -> tuple[int, int, int, str | None]:
    """Context, prompt and answer lengths within the model's maximum context, and one note when they changed."""
    qs = quants or []
    prof = cached_resolve(model, qs[0] if len(qs) == 1 else None).profile
    top = prof.config.max_position_embeddings
    ctx, note = min(context, top), None
    if context > top:
        note = (f"{prof.name} reads at most {top:,} tokens: the context is capped at {fmt_ctx(top)} "
                f"(you chose {fmt_ctx(context)}).")
    if prompt + gen > ctx:
        gen2 = min(gen, ctx // 2)
        prompt, gen = ctx - gen2, gen2
        note = (note + " " if note else "") + (f"Prompt and answer shortened to {prompt:,} + {gen:,} tokens to fit "
                                                f"the {fmt_ctx(ctx)}-token context.")
    return ctx, prompt, gen, note


@st.cache_data(show_spinner="Simulating the server…", max_entries=64)
def cached_serve(model: str, chip: str, gpu_cores: int, ram_gb: float, runtime: str, slots: int, rate: float,
                 prompt_json: str, gen_json: str, target: float | None, kv_unified: bool,
                 cached_prefix: float):
    from planner.serve_plan import ServeRequest, serve, setup
    from planner.workload import Length

    req = ServeRequest(slots=slots, rate=rate, prompt=Length.model_validate_json(prompt_json),
                       gen=Length.model_validate_json(gen_json), duration=3600.0, max_ttft_p95=target,
                       kv_unified=kv_unified, cached_prefix_share=cached_prefix)
    return serve(setup(chip, gpu_cores, ram_gb, model, None, runtime), req)


def show_serve(model: str, mac: dict, wl) -> None:
    """Latency under load (`plan serve`): TTFT percentiles, per-user speed, the latency–throughput curve and the
    slot count that serves the most requests under the TTFT target."""
    c1, c2, c3, c4 = st.columns(4)
    runtime = c1.selectbox("Server", ["llama.cpp", "mlx-lm"], key="serve_runtime",
                           help="llama-server (llama.cpp) or mlx_lm.server (mlx-lm)")
    # `plan serve`'s default rate (planner/points.py): the default workload's user reading each answer
    per_min = c3.number_input("Requests per minute", 0.1, 6000.0, default_rate_per_s() * 60, step=0.1, format="%.3f",
                              key="serve_rate", help="Mean request rate" + DEFAULT_RATE_NOTE)
    target = c4.number_input("TTFT p95 target [s] (0 = none)", 0.0, 600.0, float(wl.targets.max_ttft_s or 0),
                             key="serve_target")
    unified = runtime == "llama.cpp" and st.checkbox(
        "One KV stream (--kv-unified)", False, key="serve_kv_unified",
        help="llama-server -np N keeps a KV stream per slot and splits each batch by slot; --kv-unified (the "
             "default of -np auto) batches all slots together")
    if "serve_slots" not in st.session_state:  # first look: the slot count the simulation recommends
        probe = cached_serve(model, mac["chip"], mac["gpu_cores"], mac["ram"], runtime, min(max(wl.users, 1), 64),
                             per_min / 60, wl.prompt_tokens.model_dump_json(), wl.gen_tokens.model_dump_json(),
                             target or None, unified, wl.cached_prefix_share)
        st.session_state["serve_slots"] = min(probe.best_slots, 64)
    slots = int(c2.number_input("Slots (-np / --decode-concurrency)", 1, 64, key="serve_slots",
                                help="starts at the recommended count (the slot sweep below)"))
    streams = {True: "one unified KV stream", False: "a KV stream per slot"}[unified] \
        if runtime == "llama.cpp" else "mlx_lm.server batching"
    st.caption(f"Prompts {wl.prompt_tokens.label()}, answers {wl.gen_tokens.label()} tokens, "
               f"{cached_label(wl.cached_prefix_share)} (Workload: {readings.LABELS['cached_prefix'].lower()}); "
               f"one simulated hour of Poisson arrivals, seed 0; {streams}.")
    r = cached_serve(model, mac["chip"], mac["gpu_cores"], mac["ram"], runtime, slots, per_min / 60,
                     wl.prompt_tokens.model_dump_json(), wl.gen_tokens.model_dump_json(), target or None, unified,
                     wl.cached_prefix_share)
    m = st.columns(4)
    m[0].metric("TTFT p50 / p95", f"{fmt_seconds(r.ttft_s.p50)} / {fmt_seconds(r.ttft_s.p95)}",
                f"p50 likely {fmt_seconds(r.ttft_s_fast.p50)}–{fmt_seconds(r.ttft_s_slow.p50)}"
                if r.ttft_s_slow is not None else None, delta_color="off")
    m[1].metric("Per user (median / slowest 5 %)", f"{r.decode_tok_s_p50:.0f} / {r.decode_tok_s_p5:.0f} tok/s")
    status, ok = readings.serve_status(r)
    m[2].metric("Saturation", f"{r.saturation_rate_per_s * 60:.1f} req/min", status,
                delta_color="normal" if ok else "inverse")  # green only when stable and within the target
    m[3].metric("Recommended slots", str(r.best_slots))
    section("Latency against request rate", charts.serve_curve(r), readings.serve_reading(r), "chart_serve")
    st.dataframe(readings.serve_rows(r), hide_index=True, width="stretch", key="serve_table")
    from planner.beyond import serve_energy
    from planner.format import energy_text

    st.caption(energy_text(serve_energy(r.chip, min(r.utilisation, 1.0), r.throughput_tok_s)).strip())
    for n in r.notes:
        st.caption(f"Note: {readings.for_web(n)}")


def prepare_workload(mode: str, model: str, workload: dict, wl_args: tuple):
    """The workload of the form within the model's maximum context (one note when capped); fills the plan request's
    context, prompt and answer lengths in ``workload``."""
    preset, users, context, tok, ttft, prompt, gen, cached = wl_args
    if mode != MODE_BUY:
        context, prompt, gen, note = capped(model, workload["quants"], context, prompt, gen)
        if note:
            st.info(note)
    wl = build_workload(preset, users, context, tok, ttft, prompt, gen, cached)
    st.session_state["_wl"] = wl
    # the plan's speed (TTFT reading and charts) at the form's prompt-cache share, as the answer above it
    workload.update(context=context, prompt=prompt, gen=gen, cached_prefix=wl.cached_prefix_share)
    return wl


def main() -> None:
    st.set_page_config(page_title="Mac LLM planner", page_icon="🖥️", layout="wide")
    # the "What can I run?" page (app/models_page.py, = `plan models`) has its own inputs
    page = st.sidebar.radio("Page", [PAGE_PLAN, models_page.PAGE_TITLE, finetune_page.PAGE_TITLE,
                                     installed_page.PAGE_TITLE], key="page")
    if page == installed_page.PAGE_TITLE:  # app/installed_page.py, = `plan models --installed`
        installed_page.page()
        return
    if page == models_page.PAGE_TITLE:
        models_page.page()
        return
    if page == finetune_page.PAGE_TITLE:  # app/finetune_page.py, = `plan finetune`
        finetune_page.page()
        return
    model = model_form()
    mode, macs = mac_form()
    workload, wl_args = workload_form()
    title = PAGE_TITLES.get(mode, PAGE_PLAN_TITLE)  # the view's own question, in the heading and the tab
    st.set_page_config(page_title=f"{title} · Mac LLM planner")
    st.title(title)
    st.caption(INTRO)
    if not model:
        st.info("Type a Hugging Face repo id (e.g. meta-llama/Llama-3.3-70B-Instruct) or a local path, "
                "or upload a config.json.")
        return
    if not macs:
        st.info("Pick at least one Mac to compare.")
        return
    upload_dir = model if st.session_state.get("model_source") == "Upload config.json" else None
    try:  # every user error of the core arrives here as one PlannerError line; no tracebacks on the page
        wl = prepare_workload(mode, model, workload, wl_args)
        if mode == MODE_SERVE:
            show_serve(model, macs[0], wl)
            return
        if mode == MODE_BUY:
            picked = show_buy(model, wl, workload["runtimes"], workload["macos"], **macs[0])
            if picked is None:
                return
            workload = {**workload, **picked.pop("pin")}
            macs = [picked]
        items = [plan_for(PlanRequest(model=model, **mac, **workload), upload_dir) for mac in macs]
        if mode == MODE_COMPARE:
            show_compare(items)
            names = [readings.mac_label(p) for p, _ in items]
            pick = st.selectbox("Details for", names, key="detail_mac") if len(items) > 1 else names[0]
            items = [items[names.index(pick)]]
        show_plan(*items[0], wl, upload_dir)
    except PlannerError as e:
        st.error(readings.for_web(e, upload_dir))
    except ValidationError as e:
        st.error(readings.for_web(render_validation_error("input", e), upload_dir))


main()
