"""`plan models --installed`: every model on disk (sources/installed.py), with its exact bytes, its fit and decode
speed on this Mac (or the Mac of --chip/--ram) and the command that runs it."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from planner.format import fmt_bytes, fmt_tok_s, table

# source x format -> the runtime profile its run command uses (Ollama runs its GGUFs with its own defaults)
RUNTIME = {("ollama", "gguf"): "ollama", ("lmstudio", "gguf"): "llama.cpp", ("lmstudio", "mlx"): "mlx-lm"}


class InstalledRow(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    source: str
    path: str
    format: str
    quant: str | None
    bytes: int = Field(description="Exact bytes on disk [bytes]")
    runtime: str | None = None
    verdict: str | None = Field(None, description="fits / tight / raise-limit / no-fit at the context and users")
    memory_bytes: int | None = Field(None, description="Weights + KV + compute at the context and users [bytes]")
    headroom_bytes: int | None = Field(None, description="GPU limit minus memory [bytes]")
    decode_tok_s: float | None = Field(None, description="Decode per user at the users asked (needs a chip) [tok/s]")
    run: str
    error: str | None = None


class InstalledResult(BaseModel):
    model_config = ConfigDict(frozen=True)
    mac: str | None = Field(None, description="The Mac the fit and speed are for; None: not given, not detected")
    context: int
    users: int
    gpu_limit_bytes: int | None = None
    roots: list[tuple[str, str]]
    models: list[InstalledRow]
    notes: list[str] = []


def runtime_of(source: str, fmt: str) -> str:
    return RUNTIME.get((source, fmt), "llama.cpp" if fmt == "gguf" else "mlx-lm")


def evaluate(item, *, ram: float | None, chip: str | None, gpu_cores: int | None, context: int, users: int,
             macos: str, wired_limit_mb: int | None) -> InstalledRow:
    """One installed model through the planner (planner.plan.plan with the exact bytes of its files)."""
    from pathlib import Path

    from planner.errors import PlannerError
    from planner.plan import PlanRequest, plan
    from sources import resolve_folder, resolve_gguf

    rt = runtime_of(item.source, item.format)
    row = dict(name=item.name, source=item.source, path=item.path, format=item.format, quant=item.quant,
               bytes=item.bytes, runtime=rt, run=item.run, error=item.error)
    if item.error or (ram is None and chip is None):
        return InstalledRow(**row)
    try:
        res = resolve_gguf(Path(item.files[0])) if item.format == "gguf" else resolve_folder(Path(item.path))
        req = PlanRequest(model=item.name, ram_gb=ram, chip=chip, gpu_cores=gpu_cores, runtimes=[rt],
                          context=context, users=users, macos=macos, wired_limit_mb=wired_limit_mb)
        p = plan(req, res)
    except (PlannerError, ValueError) as e:
        return InstalledRow(**{**row, "error": " ".join(str(e).split())[:300]})
    if not p.options:
        return InstalledRow(**{**row, "error": "the planner found no option for it"})
    o = p.options[0]
    dec = o.speed.decode_tok_s_per_seq.get(users) if o.speed else None
    return InstalledRow(**{**row, "runtime": o.runtime, "quant": item.quant or o.quant, "verdict": o.fit.verdict,
                           "memory_bytes": o.memory.total, "headroom_bytes": o.fit.headroom_bytes,
                           "decode_tok_s": dec})


def installed(dirs: list[str] | None, *, ram: float | None, chip: str | None, gpu_cores: int | None, context: int,
              users: int, macos: str, wired_limit_mb: int | None = None, defaults: bool = True) -> InstalledResult:
    from sources.installed import scan

    s = scan(dirs, include_default=defaults)
    mac, limit = None, None
    notes = list(s.notes)
    if ram is not None or chip is not None:
        from planner import capacity, profiles
        from planner.plan import PlanRequest, resolve_mac

        r, c, _ = resolve_mac(PlanRequest(model="x", ram_gb=ram, chip=chip, gpu_cores=gpu_cores, macos=macos))
        mac = f"{c.name} {c.gpu_cores}-core GPU, {r:g} GB" if c else f"{r:g} GB"
        limit = capacity.wired_limit(r, profiles.load_macos(macos), wired_limit_mb).effective_bytes
        ram = r
    else:
        notes.append("no Mac given: give --ram and --chip (or run it on the Mac) for fit and speed")
    rows = [evaluate(m, ram=ram, chip=chip, gpu_cores=gpu_cores, context=context, users=users, macos=macos,
                     wired_limit_mb=wired_limit_mb) for m in s.models]
    return InstalledResult(mac=mac, context=context, users=users, gpu_limit_bytes=limit, roots=s.roots,
                           models=rows, notes=notes)


VERDICT = {"fits": "fits", "tight": "tight", "raise-limit": "raise limit", "no-fit": "no fit"}


def render(r: InstalledResult) -> str:
    head = f"Installed models ({len(r.models)})"
    if r.mac:
        head += (f" on {r.mac}: GPU limit {fmt_bytes(r.gpu_limit_bytes)}; {r.users} user(s) × "
                 f"{r.context:,} tokens of context")
    out = [head]
    if not r.roots:
        out.append("No model folder found (Ollama, LM Studio, the HF cache, llama.cpp's cache); name one with --dir.")
    else:
        out.append("Read: " + "; ".join(f"{s} {p}" for s, p in r.roots))
    if r.models:
        body = []
        for m in r.models:
            fit = VERDICT.get(m.verdict or "", "–" if not m.error else "unreadable")
            body.append([m.name, m.source, m.quant or m.format, f"{m.bytes:,}", fmt_bytes(m.bytes), fit,
                         fmt_tok_s(m.decode_tok_s) if m.decode_tok_s else "–", m.run])
        out += ["", table(body, ["model", "from", "quant", "bytes", "size", "fit", "decode tok/s", "run"],
                          "lllrrlrl")]
        for m in r.models:
            if m.error:
                out.append(f"note: {m.name}: {m.error}")
    out += [f"note: {n}" for n in r.notes]
    return "\n".join(out)


def installed_cmd(dirs, *, ram, chip, gpu_cores, context, users, macos, json_out) -> None:
    import typer

    r = installed(dirs, ram=ram, chip=chip, gpu_cores=gpu_cores, context=context, users=users, macos=macos)
    typer.echo(r.model_dump_json(indent=2) if json_out else render(r))
