"""`plan models --installed`: the words for sources/installed_fit.py's answer (every model on disk with its exact
bytes, its fit and decode speed on this Mac, and the command that runs it)."""

from __future__ import annotations

from planner.format import fmt_bytes, fmt_tok_s, table
from sources.installed_fit import InstalledResult, installed

from .words import say

__all__ = ["InstalledResult", "installed", "installed_cmd", "render"]


VERDICT = {"fits": "fits", "tight": "tight", "raise-limit": "raise limit", "no-fit": "no fit"}


def render(r: InstalledResult) -> str:
    head = f"Installed models ({len(r.models)})"
    if r.mac:
        head += (f" on {r.mac}: GPU limit {fmt_bytes(r.wired_limit_bytes)}; {r.users} user{'' if r.users == 1 else 's'} × "
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
                         fmt_tok_s(m.decode_tok_s_per_user) if m.decode_tok_s_per_user else "–", m.run])
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
    if json_out:  # the contract of every --json answer: schema_version first (cli/contract.py)
        from .contract import dumps

        typer.echo(dumps(r))
        return
    typer.echo(say(render(r)))
