"""Interconnects (profiles/links/*.yaml) and what each distributed engine supports over them.

Engine × mode support (sources: mlx docs usage/distributed.html and launching_distributed.html; mlx-lm
examples/pipeline_generate.py and model ``shard()``/``pipeline()`` methods (ml-explore/mlx-examples PR #1191,
ml-explore/mlx-lm PR #698); llama.cpp tools/rpc/README.md and common/arg.cpp (--split-mode, --tensor-split);
exo README and exo-explore/exo issues #2070, #2295):

| engine          | launcher                     | pipeline (layers split)           | tensor (matmuls split)               |
|-----------------|------------------------------|-----------------------------------|--------------------------------------|
| mlx             | mlx.launch --backend ring    | yes (model.model.pipeline(group)) | yes (model.shard(group)); TCP: slow  |
| mlx             | mlx.launch --backend jaccl   | yes                               | yes: the intended use (RDMA, TB5)    |
| llama.cpp-rpc   | rpc-server + llama-server    | yes: -ngl 99 --tensor-split a,b   | no: --split-mode row is CUDA-only    |
|                 |   --rpc host:port,...        |   (proportions of *layers*)       |   and not offered over RPC           |
| exo             | exo on every Mac             | yes (MlxRing or MlxJaccl)         | yes (MlxJaccl / RDMA over TB5)       |

Communication backend: mlx/exo use RDMA (JACCL) when the link supports it and ``rdma`` is on, else TCP (ring);
llama.cpp RPC is always TCP.
"""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import BaseModel, Field

from .. import profiles
from .._model import Frozen
from ..errors import InputError, UnknownProfileError

Engine = Literal["mlx", "llama.cpp-rpc", "exo"]
Mode = Literal["pipeline", "tensor"]
ENGINES: tuple[str, ...] = ("mlx", "llama.cpp-rpc", "exo")
MODES: dict[str, tuple[str, ...]] = {"mlx": ("pipeline", "tensor"), "llama.cpp-rpc": ("pipeline",),
                                     "exo": ("pipeline", "tensor")}
RUNTIME_OF: dict[str, str] = {"mlx": "mlx-lm", "llama.cpp-rpc": "llama.cpp", "exo": "mlx-lm"}


class LinkProfile(BaseModel):
    """One interconnect. Bandwidths in bytes/s, latencies in seconds per message (one way)."""

    model_config = Frozen
    id: str
    name: str
    nominal_bytes_s: float = Field(gt=0, le=1e12, description="Line rate [bytes/s]")
    achieved_bytes_s: float = Field(gt=0, le=1e12, description="TCP payload throughput measured or derived [bytes/s]")
    latency_s: float = Field(gt=0, le=1.0, description="Per-message one-way cost over TCP [s]")
    supports_rdma: bool = False
    rdma_bytes_s: float | None = Field(None, gt=0, le=1e12, description="Effective RDMA bandwidth [bytes/s]")
    rdma_latency_s: float | None = Field(None, gt=0, le=1.0, description="Per-message cost over RDMA [s]")
    min_macos: str | None = None
    notes: str = ""
    sources: list[str] = Field(min_length=1)
    verified: date


class Transport(BaseModel):
    """The effective link an engine gets: bandwidth, per-message latency and what carries it."""

    model_config = Frozen
    link: str
    backend: str = Field(description="ring (TCP), jaccl (RDMA over Thunderbolt 5) or rpc (TCP)")
    bytes_s: float
    latency_s: float


def load_link(name: str) -> LinkProfile:
    idx = profiles._index("links")
    key = profiles.norm(name).replace("thunderbolt", "tb").replace("tb-", "tb").replace("10g-ethernet", "10gbe")
    key = {"10g": "10gbe", "10gbit": "10gbe", "2.5g": "2.5gbe", "tb": "tb5"}.get(key, key)
    if key not in idx:
        raise UnknownProfileError("link", name, list(idx), flag="[[link]]")
    return profiles.load_file(idx[key], LinkProfile)  # validation errors -> ProfileError, one line


def check_engine(engine: str, mode: str) -> tuple[str, str]:
    e = {"llama.cpp": "llama.cpp-rpc", "rpc": "llama.cpp-rpc", "mlx-lm": "mlx", "llamacpp": "llama.cpp-rpc"}.get(
        engine.strip().lower(), engine.strip().lower())
    if e not in ENGINES:
        raise InputError(f"[[engine]] {engine!r}: choose one of {', '.join(ENGINES)}")
    m = mode.strip().lower()
    if m not in ("pipeline", "tensor"):
        raise InputError(f"[[mode]] {mode!r}: choose pipeline or tensor")
    if m not in MODES[e]:
        raise InputError(f"[[mode]] {m} is not offered by {e}: llama.cpp RPC splits layers only (--tensor-split sets "
                         f"layer proportions; row split is CUDA-only); use [[mode]] pipeline or [[engine]] mlx")
    return e, m


def transport(link: LinkProfile, engine: str, rdma: bool = True) -> Transport:
    """RDMA (JACCL) for mlx/exo over an RDMA-capable link, else TCP at the achieved rate."""
    if rdma and engine in ("mlx", "exo") and link.supports_rdma and link.rdma_bytes_s and link.rdma_latency_s:
        return Transport(link=link.id, backend="jaccl", bytes_s=link.rdma_bytes_s, latency_s=link.rdma_latency_s)
    return Transport(link=link.id, backend="rpc" if engine == "llama.cpp-rpc" else "ring",
                     bytes_s=link.achieved_bytes_s, latency_s=link.latency_s)
