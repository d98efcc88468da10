"""llama.cpp partial offload (-ngl N): the largest N whose GPU part fits under the GPU limit, and its decode.

llama.cpp keeps the token embeddings on the CPU, puts the last N repeating layers on the GPU and the output
layer too when N > n_layer (src/llama-model.cpp load_tensors: dev_input is the CPU, dev_output the GPU only
when n_gpu_layers > n_layer); with offload_kqv (default) each layer's KV sits with its layer. Decode reads the
GPU layers at the calibrated GPU rate and the CPU layers at the rate llama.cpp's CPU kernels draw from the CPU
cores' bandwidth (profiles/hardware/cpu-memory.yaml: the CPU share measured on M1 Max times the decode efficiency
measured on M2 Ultra): t = t_gpu_all × gpu_share + cpu_bytes / cpu_rate. A byte is never read faster on the CPU
than the full-GPU decode reads it (the CPU cluster reaches ~59 % of the bandwidth, the GPU more), so partial
offload is never faster than all on the GPU.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import capacity, profiles
from ._model import assemble
from .memory import MemoryModel
from .results import Fit, OffloadEstimate, WiredLimit
from .schema import Chip

if TYPE_CHECKING:
    from .speed_result import ThroughputEstimate


def layer_split(mm: MemoryModel, context: int, users: int, ngl: int) -> tuple[int, int]:
    """(GPU bytes, CPU bytes) with ``ngl`` layers offloaded: weights and KV per layer assumed uniform."""
    est = mm.estimate(context, users)
    L = mm.model.config.num_hidden_layers
    w = mm.weights
    emb = w.by_group.get("embedding", 0) + w.by_group.get("lookup", 0)  # input tensors stay on the CPU (PLE too)
    out = w.by_group.get("output", 0)
    rep = w.total_bytes - emb - out
    n = min(ngl, L)
    per_layer_state = est.kv_cache + est.recurrent_state
    gpu_w = rep * n // L + (out if ngl > L else 0)
    gpu = gpu_w + per_layer_state * n // L + est.compute_buffer + est.runtime_overhead + est.output_buffer
    return gpu, est.total - gpu


def largest_ngl(mm: MemoryModel, context: int, users: int, wired: WiredLimit) -> int:
    """Largest -ngl whose GPU part stays within the comfortable budget (0: not even one layer)."""
    budget = capacity.safe_budget(wired, mm.runtime)
    lo, hi = 0, mm.model.config.num_hidden_layers + 1
    while lo < hi:  # GPU bytes grow with ngl: bisect
        mid = (lo + hi + 1) // 2
        if layer_split(mm, context, users, mid)[0] <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo


def offload_decode(mm: MemoryModel, ngl: int, full_tok_s: float, bytes_per_step: int, cpu_bw: float) -> float:
    """Decode [tok/s] with ``ngl`` layers on the GPU: the GPU share of the bytes at the full-GPU rate, the rest
    at the CPU cores' bandwidth. Per-layer bytes uniform; the output layer is on the CPU unless ngl > n_layer."""
    L = mm.model.config.num_hidden_layers
    out = mm.weights.by_group.get("output", 0)
    rep_read = max(bytes_per_step - out, 0)
    cpu_read = rep_read * (L - min(ngl, L)) / L + (out if ngl <= L else 0)
    gpu_read = bytes_per_step - cpu_read
    cpu_rate = min(cpu_bw, bytes_per_step * full_tok_s)  # never above the full-GPU effective rate (module doc)
    t = (gpu_read / bytes_per_step) / full_tok_s + cpu_read / cpu_rate
    return 1.0 / t


def offload(mm: MemoryModel, context: int, users: int, wired: WiredLimit, chip: Chip | None = None,
            rf_estimate: ThroughputEstimate | None = None) -> OffloadEstimate | None:
    """Partial offload of a llama.cpp option that does not fit whole; None for other runtimes or when the whole
    model fits. ``rf_estimate``: the full-GPU ThroughputEstimate at batch 1 (for the decode estimate)."""
    if not mm.engine.partial_offload:
        return None
    L = mm.model.config.num_hidden_layers
    ngl = largest_ngl(mm, context, users, wired)
    if ngl > L:
        return None
    gpu, cpu = layer_split(mm, context, users, ngl)
    fit = capacity.fit(gpu, 0, wired, mm.runtime)
    in_ram = gpu + cpu <= wired.max_raise_bytes
    dec = full = bw = None
    if chip is not None and chip.memory_bandwidth_gb_s and rf_estimate is not None and ngl > 0:
        cm = profiles.cpu_memory()
        full = rf_estimate.decode_tok_s_per_seq
        bw = min(chip.memory_bandwidth_gb_s * 1e9 * cm.fraction_of_vendor_bandwidth * cm.decode_efficiency,
                 rf_estimate.bytes_per_step * full)  # the rate the CPU layers are read at (module doc)
        dec = offload_decode(mm, ngl, full, rf_estimate.bytes_per_step, bw)
    return assemble(OffloadEstimate, gpu_layers=ngl, n_layers=L, gpu_bytes=gpu, cpu_bytes=cpu,
                    fit=_fit_text(fit, ngl, L), fits_in_ram=in_ram, decode_tok_s=dec, full_gpu_decode_tok_s=full,
                    cpu_bandwidth_bytes_s=bw)


def _fit_text(fit: Fit, ngl: int, L: int) -> Fit:
    return fit.model_copy(update={"reason": f"-ngl {ngl} of {L + 1}: GPU part {fit.reason}"})
