"""Every model on disk (sources/installed.py) planned on one Mac: exact bytes, fit and decode speed, and the command
that runs it. Shared by `plan models --installed` (cli/installed.py) and the app's installed page."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

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
    decode_tok_s_per_user: float | None = Field(None, description="Decode per user at the users asked (needs a chip) [tok/s]")
    run: str
    error: str | None = None


class InstalledResult(BaseModel):
    model_config = ConfigDict(frozen=True)
    mac: str | None = Field(None, description="The Mac the fit and speed are for; None: not given, not detected")
    chip: str | None = Field(None, description="Chip profile id (m4-max-40gpu), as every command's JSON")
    chip_label: str | None = None
    ram_gb: float | None = None
    context: int
    users: int
    wired_limit_bytes: int | None = None
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
    from planner.inputs import template
    from planner.plan import PlanRequest, plan
    from sources import resolve_folder, resolve_gguf

    rt = runtime_of(item.source, item.format)
    row = dict(name=item.name, source=item.source, path=item.path, format=item.format, quant=item.quant,
               bytes=item.bytes, runtime=rt, run=item.run, error=item.error)
    if item.error or (ram is None and chip is None):
        return InstalledRow(**row)
    try:
        res = resolve_gguf(Path(item.files[0])) if item.format == "gguf" else resolve_folder(Path(item.path))
        req = PlanRequest(model=item.name, ram=ram, chip=chip, gpu_cores=gpu_cores, runtimes=[rt],
                          context=context, users=users, macos=macos, wired_limit_mb=wired_limit_mb)
        p = plan(req, res)
    except (PlannerError, ValueError) as e:
        return InstalledRow(**{**row, "error": " ".join(template(e).split())[:300]})  # inputs by key: the edge says them
    if not p.options:
        return InstalledRow(**{**row, "error": "the planner found no option for it"})
    o = p.options[0]
    dec = o.speed.decode_tok_s_per_seq.get(users) if o.speed else None
    return InstalledRow(**{**row, "runtime": o.runtime, "quant": item.quant or o.quant, "verdict": o.fit.verdict,
                           "memory_bytes": o.memory.total, "headroom_bytes": o.fit.headroom_bytes,
                           "decode_tok_s_per_user": dec})


def installed(dirs: list[str] | None, *, ram: float | None, chip: str | None, gpu_cores: int | None, context: int,
              users: int, macos: str, wired_limit_mb: int | None = None, defaults: bool = True) -> InstalledResult:
    from sources.installed import scan

    s = scan(dirs, include_default=defaults)
    mac, limit, c = None, None, None
    notes = list(s.notes)
    if ram is not None or chip is not None:
        from planner import capacity, profiles
        from planner.plan import PlanRequest, resolve_mac

        r, c, _ = resolve_mac(PlanRequest(model="x", ram=ram, chip=chip, gpu_cores=gpu_cores, macos=macos))
        mac = f"{c.label}, {r:g} GB" if c else f"{r:g} GB"
        limit = capacity.wired_limit(r, profiles.load_macos(macos), wired_limit_mb).effective_bytes
        ram = r
    else:
        notes.append("no Mac given: give --ram and --chip (or run it on the Mac) for fit and speed")
    rows = [evaluate(m, ram=ram, chip=chip, gpu_cores=gpu_cores, context=context, users=users, macos=macos,
                     wired_limit_mb=wired_limit_mb) for m in s.models]
    return InstalledResult(mac=mac, chip=c.id if c else None, chip_label=c.label if c else None,
                           ram_gb=ram if mac else None, context=context, users=users, wired_limit_bytes=limit,
                           roots=s.roots,
                           models=rows, notes=notes)
