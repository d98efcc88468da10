"""Physical and unit constants: the only numeric literals the core may use. [SI inside]"""

from __future__ import annotations

KiB = 1024
MiB = 1024**2
GiB = 1024**3
KB = 1000
MB = 1000**2
GB = 1000**3
TB = 1000**4
TFLOPS = 1e12

# ggml block size for K-quants (ggml/src/ggml-common.h QK_K)
QK_K = 256


def gb_s_to_bytes_s(gb_s: float) -> float:
    """Vendor bandwidth GB/s (decimal) -> bytes/s."""
    return gb_s * GB


def tflops_to_flops(tflops: float) -> float:
    return tflops * TFLOPS


def pad_to(n: int, multiple: int) -> int:
    """Round n up to a multiple (ggml GGML_PAD)."""
    return ((n + multiple - 1) // multiple) * multiple
