"""`plan cluster`: a model on several Macs linked by Thunderbolt or Ethernet (mlx, llama.cpp RPC, exo)."""

from __future__ import annotations

import json

import typer

from planner.format import VERDICT_MARK, fmt_bytes, fmt_seconds, fmt_tok_s, lengths_text, table, ttft_text
from planner.requests import ClusterRequest

from .options import check, opt, wopt
from .words import say

R = ClusterRequest


def cluster_cmd(
    model: str = opt(R, "model", "--model", "-m"),
    macs: str = opt(R, "macs", "--macs"),
    link: str = opt(R, "link", "--link"),
    engine: str = opt(R, "engine", "--engine"),
    mode: str = opt(R, "mode", "--mode"),
    quant: str | None = opt(R, "quant", "--quant", "-q"),
    context: int = opt(R, "context", "--context", "-c"),
    users: int = wopt(R, "users"),
    prompt: str = wopt(R, "prompt"),
    gen: str = wopt(R, "gen"),
    cached_prefix: float = wopt(R, "cached_prefix"),
    macos: str = opt(R, "macos", "--macos"),
    no_rdma: bool = opt(R, "no_rdma", "--no-rdma"),
    json_out: bool = typer.Option(False, "--json", help="Print the plan and recipe as JSON"),
):
    """Per-node memory, cluster speed vs the best single Mac, the binding constraint and the launch recipe."""
    q = check(R, locals())
    prompt, gen = q.prompt, q.gen   # a distribution at its p90 prompt and mean output (planner/workload.py)
    from cli.bounds import check_macs, check_options

    check_options(context=context, users=users, prompt=prompt, gen=gen)
    check_macs(macs)
    from planner import profiles
    from planner.cluster import plan_cluster
    from planner.cluster.recipe import recipe
    from planner.cluster.spec import parse_macs

    nodes = parse_macs(macs)
    p = plan_cluster(model, nodes, link, engine, mode, quant, context, users, prompt, gen, macos, rdma=not no_rdma,
                     cached_prefix=q.cached_prefix)
    r = recipe(p, profiles.load_model(model).hf_repo)
    if json_out:
        from .contract import dumps

        typer.echo(dumps({"plan": p.model_dump(mode="json"), "recipe": r.model_dump(mode="json")}))
        return
    tr = p.transport
    out = [(f"{p.model} · {p.quant} · {p.engine} {p.mode} over {tr.link} ({tr.backend}: "
           f"{tr.bytes_s / 1e9:.2f} GB/s, {tr.latency_s * 1e6:.0f} µs per message) · {p.users} × {p.context:,} tokens"),
           f"Workload: {lengths_text(p.prompt_tokens, p.gen_tokens, q.cached_prefix)}",
           ""]
    rows = [[str(i + 1), n.label, f"{n.layers[0]}-{n.layers[1] - 1}" if n.layers else "1/" + str(len(p.nodes)),
             fmt_bytes(n.weights_bytes), fmt_bytes(n.kv_bytes), fmt_bytes(n.buffers_bytes), fmt_bytes(n.total_bytes),
             fmt_bytes(n.wired_limit_bytes), f"{VERDICT_MARK[n.verdict]} {n.verdict}",
             fmt_seconds(n.decode_step_s) + ("*" if n.decode_bound == "compute" else "")] for i, n in enumerate(p.nodes)]
    out.append(table(rows, ["#", "Mac", "layers", "weights", "KV", "buffers", "total", "GPU limit", "verdict",
                            "step"], "rllrrrrrll"))
    for n in p.nodes:
        if n.verdict != "fits":
            out.append(f"  {n.label}: {n.reason}" + (f"  → {n.sysctl}" if n.sysctl else ""))
    s = p.speed
    out.append("")
    if s is None:  # a node cannot hold its share: no speed to show, only what would fit
        out.append("Cluster: does not fit, so no speed" + (": try " + "; or ".join(p.suggestions)
                                                           if p.suggestions else ""))
    else:
        out += _speed_lines(p)
    for m in p.single_macs:
        sp = (f"decode {fmt_tok_s(m.decode_tok_s)} tok/s, prefill {fmt_tok_s(m.prefill_tok_s)} tok/s"
              if m.decode_tok_s is not None else "does not fit alone")
        raise_ = " (only with the GPU wired limit raised)" if m.verdict == "raise-limit" else ""
        out.append(f"One {m.label}: {sp}{raise_}")
    if len(p.scaling) > 1:
        out.append("Decode by number of Macs: " + ", ".join(
            f"{k}: {fmt_tok_s(v) if v is not None else 'no fit'}" for k, v in p.scaling.items()))
    out.append(f"Binding constraint: {p.binding}")
    out.append("")
    out.append("Launch:")
    out += [f"  {c}" for c in r.commands]
    if r.hostfile:
        out.append("  hosts.json: " + json.dumps(r.hostfile))
    for n in [*r.notes, *p.notes]:
        out.append(f"note: {n}")
    out.append(f"calibration: {p.calibration}")
    typer.echo(say("\n".join(out)))


def _speed_lines(p) -> list[str]:
    s, out = p.speed, []
    out.append(f"Cluster: decode {fmt_tok_s(s.decode_tok_s_per_user)} tok/s per user ({fmt_tok_s(s.decode_tok_s_total)} "
               f"all users), prefill {fmt_tok_s(s.prefill_tok_s)} tok/s, {ttft_text(s.ttft_s, s.cached_prefix_share)}")
    out.append(f"  per token: compute {s.compute_s_per_step * 1000:.1f} ms + communication "
               f"{s.comm_s_per_step * 1000:.2f} ms ({s.comm_latency_s_per_step * 1000:.2f} ms latency)")
    if s.pipelined_ceiling_tok_s:
        out.append(f"  pipelined ceiling with ≥ {len(p.nodes)} batches in flight: {fmt_tok_s(s.pipelined_ceiling_tok_s)} "
                   "tok/s (the slowest stage bounds it; the engines above run one batch through the stages at a time)")
    return out
