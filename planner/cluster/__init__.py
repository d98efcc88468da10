"""A cluster of Macs on a distributed engine: placement, per-node memory, traffic and speed. [bytes, s, tok/s]

Placement (engine × mode table in planner/cluster/links.py):
- pipeline: contiguous layer ranges, layer counts proportional to each node's usable memory (exo's memory-weighted
  split; llama.cpp --tensor-split proportions; mlx-lm ``model.model.pipeline(group)``). llama.cpp keeps token_embd
  on the head host and the output head on the last device; mlx-lm/exo slice ``model.layers`` only, so embedding and
  lm_head stay on every rank.
- tensor: each layer's matmuls split 1/n (mlx-lm ``shard()``: attention heads and FFN columns, experts too); norms,
  embedding and lm_head replicated; KV split by heads, except MLA's latent cache (shared by all heads) and models
  with fewer KV heads than nodes, which replicate it.

Per-node speed reuses planner.throughput (the single-Mac roofline) on the node's share of the geometry: the
Geometry fields are scaled by the share, never re-derived. Communication per decode step of B sequences
(hidden h, activation bytes a: bf16 2 for mlx, f32 4 for ggml hidden states):
- pipeline: one message per hop, n hops (n−1 stages forward + the sampled token back to rank 0), each
  α + B·h·a / bw. llama.cpp RPC drives every remote stage from the head host (ggml-rpc.cpp: set_tensor,
  graph_compute, get_tensor; ~2 round trips = 4 messages per remote stage per step).
  Step = Σ stage times + comm (stages run one after another for one batch); the pipelined ceiling with ≥ n batches
  in flight is B / max(stage + hop): the slowest stage bounds it.
- tensor: 2 all-reduces per layer (after attention and after the FFN, Megatron-LM, Shoeybi et al. 2019) of B·h·a
  bytes; ring all-reduce (Thakur et al. 2005): 2(n−1)/n · S / bw + 2(n−1) · α. Step = slowest shard + comm.
Prefill: the same with P tokens in chunks (llama.cpp n_ubatch, mlx prefill_step_size), no overlap between stages.
"""

from __future__ import annotations

import dataclasses
import itertools
import math

from .. import architecture as arch
from .. import capacity, profiles
from .. import throughput as tp
from ..deployment import pick_quant
from ..errors import InputError
from ..memory import MemoryModel, memory_model
from ..points import DEFAULT_CACHED_PREFIX, DEFAULT_GEN, DEFAULT_PROMPT  # the default workload's
from ..schema import ModelProfile, Runtime
from ..workload import cached_tokens, check_cached_prefix, shrink_point
from .links import RUNTIME_OF, LinkProfile, Transport, check_engine, load_link, transport
from .results import ClusterCandidate, ClusterPlan, ClusterSpeed, NodeShare, SingleMac
from .spec import Node

RPC_MESSAGES_PER_REMOTE_STAGE = 4   # ggml-rpc.cpp: set_tensor + graph_compute (RTT) + get_tensor (RTT)


def _transport_on(lk: LinkProfile, engine: str, rdma: bool, macos: str) -> tuple[Transport, str | None]:
    """The link's transport under ``macos`` -> (transport, note): RDMA over Thunderbolt needs the link's min_macos
    (26.2, Apple TN3205); an older macOS talks TCP, and the note says so."""
    os_major = _major(profiles.load_macos(macos).id)
    too_old = rdma and lk.min_macos is not None and os_major < _major(lk.min_macos)
    tr = transport(lk, engine, rdma and not too_old)
    if too_old and engine in ("mlx", "exo") and lk.supports_rdma:
        return tr, (f"RDMA over {lk.name} needs macOS {lk.min_macos}+: on macOS {os_major} the Macs talk TCP "
                    f"({tr.backend}); after an upgrade, [[macos]] 26 answers with RDMA")
    return tr, None


def _major(version: str) -> int:
    """The major version of a macOS id or version: 'macos-15' -> 15, '26.2' -> 26."""
    return int(version.removeprefix("macos-").split(".")[0])


# --------------------------------------------------------------------------- per-layer layout (chip-free)
@dataclasses.dataclass(frozen=True)
class Layout:
    layer_bytes: list[float]      # weight bytes per layer, all groups [bytes]
    layer_dense: list[float]      # non-expert matmul bytes per layer [bytes]
    layer_experts: list[float]    # routed-expert bytes per layer [bytes]
    layer_active: list[float]     # active matmul params per layer [1]
    layer_kv: list[float]         # KV/state elements per layer (share of the cache) [1]
    layer_kind: list[str]         # full | sliding | mla | linear
    embed_bytes: float
    head_bytes: float             # lm_head (or the tied embedding read as the head) + output_norm [bytes]
    tied_bytes: float = 0.0       # the tied embedding's bytes in head_bytes: read twice, stored once [bytes]


def layout(mm: MemoryModel) -> Layout:
    """Per-layer bytes: each group's bytes (memory model) spread over its tensors by element count."""
    cfg = mm.model.config
    ts = arch.tensors(cfg)
    elems: dict[str, int] = {}
    for t in ts:
        elems[t.group] = elems.get(t.group, 0) + t.n_elements
    bpe = {g: mm.weights.by_group.get(g, 0) / n for g, n in elems.items() if n}
    L = cfg.num_hidden_layers
    lb, ld, le, la = [0.0] * L, [0.0] * L, [0.0] * L, [0.0] * L
    k = cfg.num_experts_per_tok or 1
    other = 0.0
    for t in ts:
        b = t.n_elements * bpe.get(t.group, 0)
        if t.layer is None:  # final norm, Gemma 4's rope_freqs / per_layer_model_proj: with the head
            other += b if t.group not in ("embedding", "output", "lookup") else 0.0
            continue
        lb[t.layer] += b
        if t.group == "experts":
            le[t.layer] += b
            la[t.layer] += t.ne0 * t.ne1 * min(k, t.n)
        elif t.group != "norm":
            ld[t.layer] += b
            la[t.layer] += t.n_elements
    # the per-layer embedding table (Gemma 4 PLE) is gathered on the input host with the token embedding
    embed = float(mm.weights.by_group.get("embedding", 0) + mm.weights.by_group.get("lookup", 0))
    head = float(mm.weights.by_group.get("output", 0)) + other
    tied = float(mm.weights.by_group.get("embedding", 0)) if cfg.tie_word_embeddings else 0.0
    head += tied
    cl = arch.cache_layers(cfg)
    kv = [float(c.k_elems + c.v_elems + c.index_elems + c.state_f32_elems + c.mlx_state_bytes) for c in cl]
    return Layout(lb, ld, le, la, kv, [c.kind for c in cl], embed, head, tied)


def split_layers(n_layers: int, weights: list[float]) -> list[tuple[int, int]]:
    """Contiguous [start, end) ranges with counts proportional to ``weights`` (cumulative rounding), ≥ 1 each."""
    n = len(weights)
    if n > n_layers:
        raise InputError(f"[[macs]]: {n} Macs but the model has only {n_layers} layers to split")
    tot = sum(weights)
    cuts, acc = [0], 0.0
    for i, w in enumerate(weights[:-1]):
        acc += w
        c = round(n_layers * acc / tot)
        cuts.append(min(max(c, cuts[-1] + 1), n_layers - (n - 1 - i)))
    cuts.append(n_layers)
    return list(itertools.pairwise(cuts))


def _frac(xs: list[float], a: int, b: int, kinds: list[str] | None = None, want: tuple[str, ...] = ()) -> float:
    idx = [i for i in range(len(xs)) if not kinds or kinds[i] in want]
    tot = sum(xs[i] for i in idx)
    return sum(xs[i] for i in idx if a <= i < b) / tot if tot else 0.0


def stage_geometry(geo: tp.Geometry, lay: Layout, a: int, b: int, last: bool) -> tp.Geometry:
    """The full model's Geometry restricted to layers [a, b) (+ the lm_head on the last stage)."""
    kinds = lay.layer_kind
    f_full = _frac([1.0] * len(kinds), a, b, kinds, ("full", "mla"))
    f_swa = _frac([1.0] * len(kinds), a, b, kinds, ("sliding",))
    head_dense = lay.head_bytes if geo.dense_bytes >= lay.head_bytes else 0.0
    return dataclasses.replace(
        geo, n_layers=b - a,
        dense_bytes=(geo.dense_bytes - head_dense) * _frac(lay.layer_dense, a, b) + (head_dense if last else 0.0),
        expert_bytes=geo.expert_bytes * _frac(lay.layer_experts, a, b),
        matmul_params=geo.matmul_params * _frac(lay.layer_active, a, b),
        head_params=geo.head_params if last else 0.0,
        kv_full=geo.kv_full * _frac(lay.layer_kv, a, b, kinds, ("full", "mla")),
        kv_swa=geo.kv_swa * _frac(lay.layer_kv, a, b, kinds, ("sliding",)),
        state_bytes=geo.state_bytes * _frac(lay.layer_kv, a, b, kinds, ("linear",)),
        attn_full=geo.attn_full * f_full, attn_swa=geo.attn_swa * f_swa)


def kv_replicated(mm: MemoryModel, n: int) -> bool:
    cfg = mm.model.config
    return cfg.is_mla or cfg.num_key_value_heads < n


def shard_geometry(geo: tp.Geometry, lay: Layout, n: int, kv_rep: bool) -> tp.Geometry:
    """One of n tensor-parallel shards: matmuls, heads and experts / n; lm_head replicated."""
    head_dense = lay.head_bytes if geo.dense_bytes >= lay.head_bytes else 0.0
    kvd = 1 if kv_rep else n
    return dataclasses.replace(
        geo, dense_bytes=(geo.dense_bytes - head_dense) / n + head_dense, expert_bytes=geo.expert_bytes / n,
        matmul_params=geo.matmul_params / n, kv_full=geo.kv_full / kvd, kv_swa=geo.kv_swa / kvd,
        state_bytes=geo.state_bytes / n, attn_full=geo.attn_full / n, attn_swa=geo.attn_swa / n)


# --------------------------------------------------------------------------- the model
def _roofline(geo: tp.Geometry, node: Node, mm: MemoryModel) -> tp.Roofline:
    return tp.roofline_for(mm, node.chip, profiles.load_speed_constants(node.chip, mm.runtime.id), geo,
                           profiles.all_chips())


def act_bytes(mm: MemoryModel) -> int:
    # the hidden state one node hands the next (Engine.hidden_state_bytes)
    return mm.engine.hidden_state_bytes(mm.runtime)


def allreduce_s(size: float, n: int, tr: Transport) -> tuple[float, float]:
    """Ring all-reduce of ``size`` bytes over n nodes: (total, latency part). Thakur et al. 2005."""
    if n < 2:
        return 0.0, 0.0
    lat = 2 * (n - 1) * tr.latency_s
    return 2 * (n - 1) / n * size / tr.bytes_s + lat, lat


def comm_per_step(mode: str, engine: str, n: int, tokens: float, h: int, a: int, layers: int,
                  tr: Transport) -> tuple[float, float]:
    """(seconds, latency part) of one forward pass over ``tokens`` tokens. See the module docstring."""
    if n < 2:
        return 0.0, 0.0
    msg = tokens * h * a
    if mode == "tensor":
        t, lat = allreduce_s(msg, n, tr)
        return 2 * layers * t, 2 * layers * lat
    msgs = RPC_MESSAGES_PER_REMOTE_STAGE * (n - 1) if engine == "llama.cpp-rpc" else n
    data_msgs = 2 * (n - 1) if engine == "llama.cpp-rpc" else n - 1   # activations in/out (rpc) or forward hops
    return msgs * tr.latency_s + data_msgs * msg / tr.bytes_s, msgs * tr.latency_s


def place(mm: MemoryModel, nodes: list[Node], mode: str, engine: str, context: int, users: int,
          macos: str) -> list[NodeShare]:
    """Per-node weights, KV and buffers against each node's own wired limit."""
    rt, mac_os = mm.runtime, profiles.load_macos(macos)
    est = mm.estimate(context, users)
    lay = layout(mm)
    n = len(nodes)
    wired = [capacity.wired_limit(nd.ram_gb, mac_os) for nd in nodes]
    kv_total = est.kv_cache + est.recurrent_state
    buffers = est.compute_buffer + est.runtime_overhead
    out = []
    # llama.cpp puts RPC devices before the local GPU (src/llama.cpp: "add RPC servers at the front of the list"),
    # so the head host (nodes[0], running llama-server) holds the last layers, the output head and token_embd
    order = list(range(1, n)) + [0] if engine == "llama.cpp-rpc" else list(range(n))
    if mode == "pipeline":
        # exo and llama.cpp weight the split by memory; mlx-lm's pipeline() gives every rank an equal share
        ws = [1.0 if engine == "mlx" else capacity.safe_budget(wired[j], rt) for j in order]
        rs = split_layers(len(lay.layer_bytes), ws)
        ranges = {j: r for j, r in zip(order, rs)}
    for i, (nd, w) in enumerate(zip(nodes, wired)):
        if mode == "pipeline":
            a, b = ranges[i]
            wts = sum(lay.layer_bytes[a:b])
            # a node with the token embedding and the head stores a tied embedding once (one tensor, both uses)
            ends = lay.embed_bytes + lay.head_bytes - lay.tied_bytes
            if engine == "llama.cpp-rpc":
                wts += ends if i == 0 else 0
            else:
                wts += ends
            kv = kv_total * _frac(lay.layer_kv, a, b)
            rng = (a, b)
        else:
            wts = (sum(lay.layer_bytes)) / n + lay.embed_bytes + lay.head_bytes - lay.tied_bytes
            kv = kv_total / (1 if kv_replicated(mm, n) else n)
            rng = None
        buf = buffers + (est.output_buffer + est.vision if i == 0 else 0)
        total = int(wts + kv + buf)
        f = capacity.fit(total, int(wts), w, rt)
        out.append(NodeShare(label=nd.label, chip=nd.chip.id, ram_gb=nd.ram_gb, layers=rng, weights_bytes=int(wts),
                             kv_bytes=int(kv), buffers_bytes=int(buf), total_bytes=total, wired_limit_bytes=w.effective_bytes,
                             verdict=f.verdict, reason=f.reason, sysctl=f.sysctl))
    return out


def speed(mm: MemoryModel, geo: tp.Geometry, nodes: list[Node], mode: str, engine: str, tr: Transport,
          prompt: int, gen: int, users: int, ranges: list[tuple[int, int]] | None = None, cached: int = 0
          ) -> tuple[ClusterSpeed, list[tuple[float, str]]]:
    """Cluster decode/prefill from per-node rooflines + the traffic model. ``cached`` leading prompt tokens are in
    the prompt cache (planner/workload.py cached_tokens): only the rest is prefilled, on top of them, as on one Mac."""
    lay = layout(mm)
    n, cfg = len(nodes), mm.model.config
    h, a, L = cfg.hidden_size, act_bytes(mm), cfg.num_hidden_layers
    if mode == "pipeline":
        ranges = ranges or [(0, L)]
        geos = [stage_geometry(geo, lay, s, e, e == L) for s, e in ranges]
    else:
        geos = [shard_geometry(geo, lay, n, kv_replicated(mm, n))] * n
    rfs = [_roofline(g, nd, mm) for g, nd in zip(geos, nodes)]
    g_eff = max(gen, 1)
    steps = [rf.decode_time(users, prompt, g_eff) / g_eff for rf in rfs]      # mean step over the generation
    bounds = []
    for rf in rfs:
        _, t_mem, t_cmp = rf.step_parts(users, prompt)
        bounds.append("compute" if t_cmp > t_mem else "bandwidth")
    comm, comm_lat = comm_per_step(mode, engine, n, users, h, a, L, tr)
    compute = sum(steps) if mode == "pipeline" else max(steps)
    step = compute + comm
    # prefill of one prompt: chunks of rf.chunk tokens, stages one after another
    chunk = rfs[0].chunk

    def prefill(tokens: int) -> float:   # the new tokens, on the cached ones (throughput.estimate's depth)
        pf = [rf.prefill_time(tokens, cached, 1)[0] for rf in rfs]
        pf_comm = max(1, math.ceil(tokens / chunk)) * comm_per_step(mode, engine, n, min(tokens, chunk), h, a, L, tr)[0]
        return (sum(pf) if mode == "pipeline" else max(pf)) + pf_comm

    def first_step(depth: int) -> float:
        return sum(rf.step_time(1, depth) for rf in rfs) if mode == "pipeline" else max(rf.step_time(1, depth) for rf in rfs)

    new = prompt - cached
    t_pf = prefill(new)
    # time to first token, the rule of planner/throughput.py first_token_time: llama.cpp samples it from the
    # prefill's logits; mlx runs the last prompt token as the first decode step; no new token: one decode step
    if new and rfs[0].engine.last_prompt_token_decodes:
        ttft = prefill(new - 1) + first_step(prompt - 1) + comm
    else:
        ttft = t_pf if new else first_step(prompt) + comm
    # the prompt speed the runtime reports (Roofline.reported_prefill_time): mlx-lm's is the prompt over its TTFT
    t_rep = ttft if new and rfs[0].engine.last_prompt_token_decodes else t_pf
    ceiling = None
    if mode == "pipeline" and n > 1:
        hop = comm / n
        ceiling = users / max(s + hop for s in steps)
    sp = ClusterSpeed(decode_tok_s_per_user=1 / step, decode_tok_s_total=users / step,
                      prefill_tok_s=new / t_rep if new and t_rep > 0 else 0.0, ttft_s=ttft,
                      compute_s_per_step=compute, comm_s_per_step=comm, comm_latency_s_per_step=comm_lat,
                      pipelined_ceiling_tok_s=ceiling)
    return sp, list(zip(steps, bounds))


def _single(mm: MemoryModel, geo: tp.Geometry, node: Node, context: int, users: int, prompt: int, gen: int,
            macos: str, cached: int = 0) -> SingleMac:
    w = capacity.wired_limit(node.ram_gb, profiles.load_macos(macos))
    f = capacity.fit(mm.total(context, users), mm.weights.total_bytes, w, mm.runtime)
    if f.verdict == "no-fit":
        return SingleMac(label=node.label, verdict=f.verdict)
    rf = _roofline(geo, node, mm)
    e = tp.estimate(rf, prompt - cached, max(gen, 1), cached, users)  # the rule of plan's speed (plan.with_speed)
    return SingleMac(label=node.label, verdict=f.verdict, decode_tok_s=e.decode_tok_s_per_seq,
                     prefill_tok_s=e.prefill_tok_s)


def _decode_on(mm: MemoryModel, geo: tp.Geometry, sub: list[Node], mode: str, engine: str, tr: Transport,
               context: int, users: int, prompt: int, gen: int, macos: str) -> float | None:
    """Decode tok/s per user on the first Macs of the list, None if the model does not fit on them."""
    sh = place(mm, sub, mode, engine, context, users, macos)
    if any(s.verdict == "no-fit" for s in sh):
        return None
    return speed(mm, geo, sub, mode, engine, tr, prompt, gen, users, _stages(sh, mode))[0].decode_tok_s_per_user


def _stages(shares: list[NodeShare], mode: str) -> list[tuple[int, int]] | None:
    """The pipeline stages' [start, end) layers (place() gives every node one in pipeline mode)."""
    return [s.layers for s in shares if s.layers is not None] if mode == "pipeline" else None


def plan_cluster(model: str, nodes: list[Node], link: str | LinkProfile = "tb5", engine: str = "mlx",
                 mode: str = "pipeline", quant: str | None = None, context: int = 8192, users: int = 1,
                 prompt: int = DEFAULT_PROMPT, gen: int = DEFAULT_GEN, macos: str = profiles.DEFAULT_MACOS, rdma: bool = True,
                 scaling: bool = True, cached_prefix: float = DEFAULT_CACHED_PREFIX) -> ClusterPlan:
    """``cached_prefix``: the share of each prompt in the prompt cache (default: the default workload's), turned
    into tokens by planner/workload.py cached_tokens, the rule of plan and predict."""
    engine, mode = check_engine(engine, mode)
    if not nodes:
        raise InputError("[[macs]]: give at least one Mac")
    if context <= 0 or users <= 0 or prompt < 0 or gen < 0:
        raise InputError("[[context]] and [[users]] must be positive, [[prompt]]/[[gen]] ≥ 0")
    lk = link if isinstance(link, LinkProfile) else load_link(link)
    tr, os_note = _transport_on(lk, engine, rdma, macos)
    rt = profiles.load_runtime(RUNTIME_OF[engine])
    prof = profiles.load_model(model)
    context, capped = capacity.cap_context(context, prof)  # as every command
    shrunk = shrink_point(prompt, gen, context)  # the lengths not given, into the context (as plan)
    short: str | None
    if shrunk is not None:
        prompt, gen, short = shrunk
    else:
        context, short = capacity.hold_request(context, prompt, gen, prof.config.max_position_embeddings)  # as plan
    prompt = min(prompt, context - 1)  # a request beyond the model's maximum: its prompt up to the maximum
    q, quant_note = pick_quant(quant, model, prof, rt)  # the rule of every command answering one quant
    mm = memory_model(prof, rt, q, profiles.ggml_types())
    geo = tp.geometry(mm, q.kind, q.mode)
    cached = cached_tokens(prompt, check_cached_prefix(cached_prefix), rt)
    shares = place(mm, nodes, mode, engine, context, users, macos)
    fits = all(s.verdict != "no-fit" for s in shares)
    notes: list[str] = [n for n in (capped, short, os_note, quant_note) if n]
    sp, per_node = speed(mm, geo, nodes, mode, engine, tr, prompt, gen, users, _stages(shares, mode), cached)
    sp = sp.model_copy(update={"cached_prefix_share": cached_prefix})
    shares = [s.model_copy(update={"decode_step_s": t, "decode_bound": b}) for s, (t, b) in zip(shares, per_node)]
    singles: dict[str, SingleMac] = {}
    for nd in nodes:
        if nd.label not in singles:
            singles[nd.label] = _single(mm, geo, nd, context, users, prompt, gen, macos, cached)
    fitting = [(s.decode_tok_s, s) for s in singles.values() if s.decode_tok_s is not None]
    best_tok_s, best = max(fitting, key=lambda t: t[0]) if fitting else (0.0, None)
    slower = best is not None and sp.decode_tok_s_per_user < 0.99 * best_tok_s
    scal: dict[int, float | None] = {}
    if scaling and len(nodes) > 1:
        scal[1] = singles[nodes[0].label].decode_tok_s
        for k in range(2, len(nodes) + 1):
            scal[k] = _decode_on(mm, geo, nodes[:k], mode, engine, tr, context, users, prompt, gen, macos)
    binding = _binding(shares, sp, mode, tr)
    if slower and best is not None:
        notes.append(f"adding Macs makes decode slower: {sp.decode_tok_s_per_user:.1f} tok/s on the cluster vs "
                     f"{best_tok_s:.1f} on one {best.label}; communication costs "
                     f"{sp.comm_s_per_step * 1000:.1f} ms of the {1000 / sp.decode_tok_s_per_user:.1f} ms per token"
                     + (f" ({sp.comm_latency_s_per_step * 1000:.1f} ms of it latency)" if sp.comm_latency_s_per_step else ""))
    notes += _setup_notes(prof, nodes, mode, engine, tr)
    suggestions = [] if fits else _what_fits(prof, rt, mm, nodes, mode, engine, context, users, macos)
    return ClusterPlan(model=prof.id, engine=engine, mode=mode, runtime=rt.id, quant=q.id, transport=tr,
                       context=context, users=users, prompt_tokens=prompt, gen_tokens=gen,
                       cached_prefix_share=cached_prefix, nodes=shares, fits=fits,
                       speed=sp if fits else None, suggestions=suggestions, single_macs=list(singles.values()), best_single=best, slower_than_single=slower,
                       scaling=scal, binding=binding, calibration=profiles.load_speed_constants(
                           nodes[0].chip, rt.id).source, notes=notes)


def _setup_notes(prof: ModelProfile, nodes: list[Node], mode: str, engine: str, tr: Transport) -> list[str]:
    """What the split, the transport and the engine imply for the user's setup."""
    notes = []
    if mode == "tensor" and tr.backend != "jaccl":
        notes.append(f"tensor parallel over TCP ({tr.backend}): {2 * prof.config.num_hidden_layers} all-reduces per "
                     f"token at ~{tr.latency_s * 1e6:.0f} µs per message; mlx recommends JACCL (RDMA, TB5) for it")
    if tr.backend == "jaccl":
        notes.append("RDMA over Thunderbolt 5: macOS 26.2+, `rdma_ctl enable` in Recovery on every Mac (Apple TN3205)")
    if mode == "tensor" and len({nd.ram_gb for nd in nodes}) > 1:
        notes.append("tensor parallel splits equally: the smallest Mac bounds how large a model fits")
    if engine == "exo":
        notes.append("exo runs mlx underneath; its scheduling overhead is not modelled (exo #2070: exo tensor-RDMA "
                     "48 tok/s vs pure mlx 98 tok/s on the same two MacBooks)")
    return notes


def _what_fits(prof: ModelProfile, rt: Runtime, mm: MemoryModel, nodes: list[Node], mode: str, engine: str, context: int, users: int,
               macos: str, most_extra: int = 8) -> list[str]:
    """When a node cannot hold its share: the largest smaller quant that fits on these Macs, and how many Macs of the
    largest kind given hold the model at this quant (issue 35: a speed for a cluster that does not fit, and no way
    out)."""
    from ..plan import default_quants

    def fits(m: MemoryModel, nds: list[Node]) -> bool:
        return all(x.verdict != "no-fit" for x in place(m, nds, mode, engine, context, users, macos))

    out = []
    have = mm.weights.total_bytes
    smaller = []
    for q in default_quants(prof, rt.weight_format):
        m = memory_model(prof, rt, q, profiles.ggml_types())
        if m.weights.total_bytes < have:
            smaller.append((m.weights.total_bytes, q.id, m))
    for _, qid, m in sorted(smaller, key=lambda t: t[0], reverse=True):
        if fits(m, nodes):
            out.append(f"a smaller quant: {qid} fits on these {len(nodes)} Macs")
            break
    big = max(nodes, key=lambda nd: nd.ram_gb)
    for k in range(len(nodes) + 1, len(nodes) + most_extra + 1):
        if fits(mm, [*nodes, *[big] * (k - len(nodes))]):
            out.append(f"more Macs: {k - len(nodes)} more {big.label} ({k} in all) hold it at {mm.quant_id}")
            break
    return out


def _binding(shares: list[NodeShare], sp: ClusterSpeed, mode: str, tr: Transport) -> str:
    bad = [s for s in shares if s.verdict == "no-fit"]
    if bad:
        return f"memory: {bad[0].label} cannot hold its share ({bad[0].reason})"
    tight = [s for s in shares if s.verdict in ("raise-limit", "tight")]
    if sp.comm_s_per_step > sp.compute_s_per_step:
        kind = "latency" if sp.comm_latency_s_per_step > sp.comm_s_per_step / 2 else "bandwidth"
        return f"interconnect {kind} ({tr.link} via {tr.backend}): communication exceeds compute per token"
    slow = max(shares, key=lambda s: s.decode_step_s or 0)
    what = f"slowest stage {slow.label}" if mode == "pipeline" else f"each shard ({slow.label})"
    extra = f"; memory tight on {tight[0].label}" if tight else ""
    bound = "GPU compute" if slow.decode_bound == "compute" else "memory bandwidth"
    return f"{what}: {bound}{extra}"


def cluster_candidates(model: str, counts: tuple[int, ...] = (2, 3, 4), link: str = "tb5", engine: str = "mlx",
                       mode: str = "pipeline", quant: str | None = None, context: int = 8192, users: int = 1,
                       prompt: int = DEFAULT_PROMPT, gen: int = DEFAULT_GEN, macos: str = profiles.DEFAULT_MACOS, budget_usd: float | None = None,
                       include_laptops: bool = False, include_discontinued: bool = False,
                       cached_prefix: float = DEFAULT_CACHED_PREFIX) -> list[ClusterCandidate]:
    """k identical catalogued Macs (k in ``counts``) that hold the model together, cheapest first: what
    planner.buy can set against a single larger Mac. Macs whose k-fold RAM cannot hold the weights are skipped, and
    discontinued ones unless asked for (as planner.buy's single-Mac search)."""
    rt = profiles.load_runtime(RUNTIME_OF[check_engine(engine, mode)[0]])
    prof = profiles.load_model(model)
    q, _ = pick_quant(quant, model, prof, rt)
    need = memory_model(prof, rt, q, profiles.ggml_types()).weights.total_bytes
    chips = {c.id: c for c in profiles.all_chips()}
    seen, out = set(), []
    for m in sorted(profiles.all_macs(), key=lambda m: m.price_usd):
        ch = chips.get(m.chip)
        if ch is None or ch.status == "rumoured" or (m.form_factor == "laptop" and not include_laptops) \
                or (m.discontinued and not include_discontinued):
            continue
        if (m.chip, m.ram_gb) in seen:
            continue
        seen.add((m.chip, m.ram_gb))
        for k in counts:
            price = k * m.price_usd
            if (budget_usd is not None and price > budget_usd) or k * m.ram_gb * 2**30 * 0.9 < need:
                continue
            node = Node(label=f"{m.product} {ch.name} {ch.gpu_cores}-core {m.ram_gb}GB", chip=ch, ram_gb=m.ram_gb,
                        mac_id=m.id, price_usd=m.price_usd)
            try:
                p = plan_cluster(model, [node] * k, link, engine, mode, q.id, context, users, prompt, gen, macos,
                                 scaling=False, cached_prefix=cached_prefix)
            except InputError:
                continue
            if p.fits and p.speed is not None:  # a plan that fits has a speed
                raise_ = any(x.verdict == "raise-limit" for x in p.nodes)
                out.append(ClusterCandidate(macs=f"{k}x {node.label}", mac_id=m.id, count=k, price_usd=price,
                                            needs_raised_limit=raise_,
                                            decode_tok_s_per_user=p.speed.decode_tok_s_per_user,
                                            prefill_tok_s=p.speed.prefill_tok_s, ttft_s=p.speed.ttft_s,
                                            binding=p.binding, engine=p.engine, mode=p.mode, link=p.transport.link))
    return sorted(out, key=lambda c: (c.price_usd, -c.decode_tok_s_per_user))
