"""`plan running`: the model servers running on this machine (sources/running.py), what each holds, and the
headroom left under the GPU limit for another model or more users."""

from __future__ import annotations

import typer
from pydantic import BaseModel, ConfigDict, Field

from planner._model import DEFAULT_MACOS
from planner.format import fmt_bytes, table

from .words import say


class RunningRow(BaseModel):
    model_config = ConfigDict(frozen=True)
    loaded: dict
    memory_bytes: int | None = Field(None, description="Memory it holds: the server's figure, or the planner's "
                                     "estimate for its file, context and slots [bytes]")
    memory_basis: str = ""
    kv_type: str | None = None
    kv_per_user_bytes: int | None = Field(None, description="KV + state of one more slot at its context [bytes]")


class RunningResult(BaseModel):
    model_config = ConfigDict(frozen=True)
    mac: str | None = Field(None, description="The Mac, for people: chip label and RAM")
    chip: str | None = Field(None, description="Chip profile id (m4-max-40gpu), as every command's JSON")
    chip_label: str | None = None
    ram_gb: float | None = None
    wired_limit_bytes: int | None = Field(None, description="GPU wired limit [bytes], as every command's JSON")
    in_use_bytes: int = Field(description="Sum of the memory of every loaded model [bytes]")
    headroom_bytes: int | None = Field(None, description="GPU limit minus in use: room for another model [bytes]")
    rows: list[RunningRow]
    answered: list[str]
    silent: list[str]
    notes: list[str] = []


def estimate_llama_server(ld, ram: float, macos: str):
    """The planner's memory for a llama-server's own file at its slot context and slots (KV f16: its default,
    common/common.h cache_type_k/v = GGML_TYPE_F16), or None when the file cannot be read here."""
    from pathlib import Path

    from planner.errors import PlannerError
    from planner.plan import PlanRequest, plan
    from sources import resolve_gguf

    if not ld.path or not ld.context or not ld.slots:
        return None
    try:
        res = resolve_gguf(Path(ld.path))
        # the slot context is the server's, a fact: a request inside it (the default workload's lengths would make
        # the plan hold a longer context, capacity.hold_request); only the memory is read
        p = plan(PlanRequest(model=ld.model, ram=ram, runtimes=["llama.cpp"], context=ld.context,
                             prompt=max(ld.context // 2, 1), gen=max(ld.context // 4, 1),
                             users=ld.slots, kv_type="f16", macos=macos), res)
    except (PlannerError, ValueError, OSError):
        return None
    return p.options[0].memory if p.options else None


def running(ports: dict[str, list[int]], *, ram: float | None, chip: str | None, gpu_cores: int | None,
            macos: str, wired_limit_mb: int | None) -> RunningResult:
    from sources.running import probe

    pr = probe(ports)
    mac = limit = c = None
    notes = []
    if ram is not None or chip is not None:
        from planner import capacity, profiles
        from planner.plan import PlanRequest, resolve_mac

        r, c, _ = resolve_mac(PlanRequest(model="x", ram=ram, chip=chip, gpu_cores=gpu_cores, macos=macos))
        ram = r
        mac = f"{c.label}, {r:g} GB" if c else f"{r:g} GB"
        limit = capacity.wired_limit(r, profiles.load_macos(macos), wired_limit_mb).effective_bytes
    else:
        notes.append("no Mac given: give --ram (or run it on the Mac) for the headroom under the GPU limit")
    rows = []
    for ld in pr.loaded:
        mem, basis, kv, per_user = ld.memory_bytes, ld.memory_basis, ld.kv_type, None
        if ld.server == "llama-server":
            kv = kv or "f16"
            est = estimate_llama_server(ld, ram or 64.0, macos)
            if est is not None:
                mem = est.total
                per_user = est.kv_cache // max(est.users, 1) + est.recurrent_state // max(est.users, 1)
                basis = (f"planner estimate for {ld.slots} slot(s) × {ld.context:,} tokens, KV f16 (llama-server's "
                         "default; the type is not reported), weights read from its file")
        rows.append(RunningRow(loaded=ld.model_dump(), memory_bytes=mem, memory_basis=basis, kv_type=kv,
                               kv_per_user_bytes=per_user))
    in_use = sum(r.memory_bytes or 0 for r in rows)
    return RunningResult(mac=mac, chip=c.id if c else None, chip_label=c.label if c else None,
                         ram_gb=ram if mac else None, wired_limit_bytes=limit, in_use_bytes=in_use,
                         headroom_bytes=limit - in_use if limit is not None else None, rows=rows,
                         answered=pr.answered, silent=pr.silent, notes=notes)


def render(r: RunningResult) -> str:
    out = []
    if not r.answered:
        out.append("No model server answered on 127.0.0.1 (" + "; ".join(r.silent) + ").")
    else:
        out.append("Servers: " + "; ".join(r.answered))
    if r.rows:
        body = []
        for x in r.rows:
            ld = x.loaded
            slots = f"{ld['busy_slots'] or 0}/{ld['slots']} busy" if ld.get("slots") else "–"
            body.append([ld["model"], ld["server"], ld.get("quant") or ld.get("format") or "–",
                         f"{ld['context']:,}" if ld.get("context") else "–", slots, x.kv_type or "not reported",
                         fmt_bytes(x.memory_bytes) if x.memory_bytes else "not reported", ld["url"]])
        out += ["", table(body, ["model", "server", "quant", "context", "slots", "kv", "memory", "url"], "lllrllrl")]
        for x in r.rows:
            if x.memory_basis:
                out.append(f"  {x.loaded['model']}: memory = {x.memory_basis}")
    elif r.answered:
        out.append("No model loaded.")
    if r.wired_limit_bytes is not None:
        out += ["", f"On {r.mac}: GPU limit {fmt_bytes(r.wired_limit_bytes)}, in use {fmt_bytes(r.in_use_bytes)}, "
                f"headroom {fmt_bytes(r.headroom_bytes)} for another model."]
        for x in r.rows:
            if x.kv_per_user_bytes and r.headroom_bytes and r.headroom_bytes > 0:
                n = r.headroom_bytes // x.kv_per_user_bytes
                out.append(f"{x.loaded['model']}: each more user at {x.loaded['context']:,} tokens needs "
                           f"{fmt_bytes(x.kv_per_user_bytes)} of KV: room for {n:,} more (restart llama-server with "
                           f"-np {x.loaded['slots'] + n} -c {(x.loaded['slots'] + n) * x.loaded['context']})")
    out += [f"note: {n}" for n in r.notes]
    return "\n".join(out)


def running_cmd(
    ram: float | None = typer.Option(None, "--ram", help="Unified memory [GB] (detected on a Mac)"),
    chip: str | None = typer.Option(None, "--chip", help="Apple chip, e.g. 'M4 Max'"),
    gpu_cores: int | None = typer.Option(None, "--gpu-cores", help="GPU cores of a binned chip"),
    macos: str = typer.Option(DEFAULT_MACOS, "--macos", help="macOS major version (15 or 26)"),
    wired_limit: int | None = typer.Option(None, "--wired-limit", help="iogpu.wired_limit_mb you set [MB]"),
    llama_port: list[int] | None = typer.Option(None, "--llama-port", help="llama-server port(s) (default 8080)"),
    ollama_port: list[int] | None = typer.Option(None, "--ollama-port", help="Ollama port(s) (default 11434)"),
    lmstudio_port: list[int] | None = typer.Option(None, "--lmstudio-port", help="LM Studio port(s) (default 1234)"),
    json_out: bool = typer.Option(False, "--json", help="Print as JSON"),
):
    """The model servers running on 127.0.0.1 (llama-server, Ollama, LM Studio) and the headroom left."""
    from planner.errors import InputError
    from sources.running import DEFAULT_PORTS

    given = {"llama-server": llama_port, "ollama": ollama_port, "lmstudio": lmstudio_port}
    for k, ps in given.items():
        for p in ps or []:
            if not 0 < p < 65536:
                raise InputError(f"--{k.split('-')[0]}-port {p}: not a TCP port; give 1 to 65535")
    ports = ({k: list(v) for k, v in given.items() if v} if any(given.values())
             else {k: [v] for k, v in DEFAULT_PORTS.items()})
    r = running(ports, ram=ram, chip=chip, gpu_cores=gpu_cores, macos=macos, wired_limit_mb=wired_limit)
    if json_out:  # the contract of every --json answer: schema_version first (cli/contract.py)
        from .contract import dumps

        typer.echo(dumps(r))
        return
    typer.echo(say(render(r)))
