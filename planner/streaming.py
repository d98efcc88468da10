"""Models larger than memory, streamed from the SSD: what stays resident, what each decoded token reads from the
SSD, and the decode speed at the Mac's SSD read speed (pure: the SSD table comes in as an argument).

llama.cpp maps the GGUF read-only (src/llama-mmap.cpp: ``mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0)``, the
default ``--load-mode auto`` = mmap, common/arg.cpp) and the Metal backend wraps the mapping without copying it
(ggml/src/ggml-metal/ggml-metal-device.m ``newBufferWithBytesNoCopy``). The weights are then clean file pages:
macOS keeps what fits in RAM and drops (never writes) the rest, and reads a dropped page back from the SSD when a
kernel touches it. Such a read is a page fault in the middle of the token's kernels, so SSD time and compute time
add up (no overlap): t = t_compute + bytes_from_ssd / ssd_read. An engine that reads the next experts while the GPU
computes would reach max(t_compute, t_ssd) at best; that bound is reported alongside.

What each token reads (one sequence):
- MoE: every token uses k of the n routed experts of each MoE layer (top-k routing), i.e. k/n of the routed
  expert bytes. The dense part (attention, norms, routers, shared experts, dense FFN layers, output) is touched by
  every token, so it stays resident; the RAM left after it and the KV/buffers caches routed experts. With routing
  independent from token to token and equally likely over experts (the planning assumption; real routing is
  skewed, which only raises the hit rate), a cache holding C of the E routed-expert bytes hits with probability
  C/E whatever the replacement policy: bytes_from_ssd = E·k/n·(1 − C/E).
- Dense (or a MoE whose dense part alone exceeds the RAM): every token reads every layer in the same order, a
  cyclic scan larger than the cache: an LRU-like page cache then misses on every page (each page is evicted just
  before it is needed again), so the token reads the whole non-resident scan: all of it at worst (the estimate),
  the part that does not fit (W − B) at best (a cache that kept a fixed share resident); the range spans both.
The token embedding is a lookup (one row per token), so it is neither kept resident nor counted as read.
"""


import re
from datetime import date

from pydantic import BaseModel, Field, field_validator

from ._model import Frozen
from .results import SSDSpeed as SSDSpeed
from .results import StreamingEstimate as StreamingEstimate


# --------------------------------------------------------------------------- the SSD table (profiles/hardware/ssd-read.yaml)
class SSDRead(BaseModel):
    """One public sequential-read measurement of a Mac's internal SSD."""

    model_config = Frozen
    product: str = Field(description="Mac model measured, e.g. 'MacBook Air 13 (2022)'")
    chip: str = Field(description="Chip name without core counts: 'M2', 'M4 Pro', 'M3 Ultra'")
    storage_gb: int = Field(gt=0, le=16384, description="SSD capacity [GB]")
    read_mb_s: float = Field(gt=100, lt=30000, description="Sequential read [MB/s]")
    tool: str = Field(description="Benchmark: Blackmagic Disk Speed Test, AmorphousDiskMark, ...")
    source: str = Field(description="URL of the page that published the number")
    note: str = ""

    @field_validator("chip")
    @classmethod
    def _chip(cls, v: str) -> str:
        if not re.fullmatch(r"M[1-9]( (Pro|Max|Ultra))?", v):
            raise ValueError("chip must read like 'M2', 'M4 Pro', 'M3 Max' or 'M2 Ultra'")
        return v

    @field_validator("source")
    @classmethod
    def _url(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError("source must be the URL the measurement was read from")
        return v

    @property
    def generation(self) -> str:
        return self.chip.split()[0]

    @property
    def tier(self) -> str:
        parts = self.chip.split()
        return parts[1].lower() if len(parts) > 1 else "base"


class SSDTable(BaseModel):
    model_config = Frozen
    id: str
    name: str
    rows: list[SSDRead] = Field(min_length=1)
    sources: list[str] = Field(min_length=1)
    verified: date


def ssd_speed(table: SSDTable, generation: str, tier: str, storage_gb: int) -> SSDSpeed:
    """Median read of the best-matching measurements. Capacity matters most (the NAND packages a drive has, read in
    parallel: the 256 GB single-package M2 drives read at half the 512 GB ones), so rows are ranked by capacity
    first (the same size, else the largest measured size below it, else the smallest above), then by the nearest
    generation, then by the same tier (an Ultra counts as its Max dies)."""
    from statistics import median  # on first use: the plain fit question (no chip) needs none

    gen_no = int(generation[1:])
    want = "max" if tier == "ultra" else tier

    def key(r: SSDRead) -> tuple[int, int, int, bool]:
        if r.storage_gb == storage_gb:
            size = (0, 0)
        elif r.storage_gb < storage_gb:
            size = (1, storage_gb - r.storage_gb)
        else:
            size = (2, r.storage_gb - storage_gb)
        rt = "max" if r.tier == "ultra" else r.tier
        return (*size, abs(int(r.generation[1:]) - gen_no), rt != want)

    best = min(key(r) for r in table.rows)
    rows = [r for r in table.rows if key(r) == best]
    same_chip = all(r.generation == generation and r.tier == tier for r in rows)
    basis = ("measured" if same_chip and best[0] == 0 else
             "same capacity, other chip" if best[0] == 0 else "nearest capacity measured")
    reads = [r.read_mb_s * 1e6 for r in rows]
    return SSDSpeed(read_bytes_s=median(reads), range_bytes_s=(min(reads), max(reads)), storage_gb=storage_gb,
                    basis=basis, rows=[f"{r.product} {r.storage_gb} GB: {r.read_mb_s:,.0f} MB/s ({r.source})"
                                       for r in rows])


# --------------------------------------------------------------------------- the estimate
def streaming(weights_bytes: int, by_group: dict[str, int], anon_bytes: int, ram_budget_bytes: int,
              n_experts: int, experts_per_tok: int, compute_s_per_token: float,
              compute_range_s: tuple[float, float] | None, ssd: SSDSpeed) -> StreamingEstimate:
    """The estimate for one option. ``ram_budget_bytes``: what macOS can spare (WiredLimit.max_raise_bytes);
    ``compute_s_per_token``: 1 / the full-GPU decode of one sequence, ``compute_range_s`` its (slow, fast) ends."""
    W = weights_bytes
    emb = by_group.get("embedding", 0) + by_group.get("lookup", 0)
    moe = n_experts > 1 and experts_per_tok > 0 and by_group.get("experts", 0) > 0
    E = by_group.get("experts", 0) if moe else 0
    D = max(W - emb - E, 0)                       # touched by every token
    B = ram_budget_bytes - anon_bytes             # RAM for clean weight pages
    swaps = B <= 0
    B = max(B, 0)
    frac = experts_per_tok / n_experts if moe else 0.0
    active = E * frac
    if moe and B >= D:
        cache = min(E, B - D)
        hit = cache / E
        lo = hi = est = active * (1 - hit)
    else:  # the dense scan does not fit: cyclic reads, LRU misses them all (est), at best only the excess
        cache, hit = 0, 0.0
        est = hi = D + active
        lo = D - B + active
    rd, (rd_lo, rd_hi) = ssd.read_bytes_s, ssd.range_bytes_s
    tc = compute_s_per_token
    tc_slow, tc_fast = compute_range_s or (tc, tc)
    ts = est / rd
    return StreamingEstimate(
        weights_bytes=W, anon_bytes=anon_bytes, ram_for_weights_bytes=B, always_read_bytes=D, routed_expert_bytes=E,
        expert_cache_bytes=int(cache), hit_rate=hit, active_expert_fraction=frac, bytes_per_token=est,
        bytes_per_token_range=(lo, hi), ssd=ssd, compute_s_per_token=tc, ssd_s_per_token=ts,
        decode_tok_s=1 / (tc + ts),
        decode_tok_s_range=(1 / (tc_slow + hi / rd_lo), 1 / (tc_fast + lo / rd_hi)),
        overlapped_tok_s=1 / max(tc, ts), swaps=swaps, bound="ssd" if ts > tc else "compute")
