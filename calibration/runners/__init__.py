"""Runtime runners share one contract and one model description.

A runner is opened on one model, measures :class:`~calibration.protocol.RunConfig` s one at a time and
returns :class:`~calibration.records.RunRecord` s::

    info = inspect_model("tiny-Q4_K_M.gguf")            # exact weight bytes + arch facts
    with LlamaCppRunner(info, trials=3) as runner:       # or MlxLmRunner(info, ...)
        records = runner.measure(RunConfig("prefill", prompt_tokens=128))

Failures raise :class:`~calibration.errors.CalibrationError` carrying the runtime's message.
Heavy imports (mlx, llama_cpp, gguf) happen inside functions so importing this package is cheap.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from calibration.errors import CalibrationError
from calibration.protocol import RunConfig
from calibration.records import RunRecord

__all__ = ["ModelInfo", "Runner", "inspect_gguf", "inspect_mlx", "inspect_model", "safetensors_header"]


@dataclass(frozen=True)
class ModelInfo:
    """A local model as a runner loads it: format, our quant id, exact weight bytes, arch facts."""

    path: str
    format: Literal["mlx", "gguf"]
    quant: str
    weights_bytes: int
    n_params: int
    n_layers: int
    hidden: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    vocab: int
    ffn: int
    ctx: int
    model_id: str | None = None

    def record_fields(self) -> dict[str, Any]:
        """The RunRecord fields that describe the model."""
        d = asdict(self)
        d["model_path"] = d.pop("path")
        for k in ("format", "ctx"):
            d.pop(k)
        return d


class Runner(Protocol):
    """What calibration.run expects of a runtime runner."""

    runtime: str

    def open(self) -> None: ...
    def measure(self, config: RunConfig) -> list[RunRecord]: ...
    def close(self) -> None: ...


# ----------------------------------------------------------------------------------------------
# MLX folders
# ----------------------------------------------------------------------------------------------

_ST_DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "U32": 4, "I16": 2,
                   "U16": 2, "I8": 1, "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1}


def safetensors_header(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The JSON header of a .safetensors file (tensor name -> dtype, shape, data_offsets)."""
    p = Path(path)
    try:
        with p.open("rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            if n <= 0 or n > 100 * 2**20:
                raise ValueError(f"implausible header length {n}")
            header = json.loads(f.read(n))
    except (OSError, ValueError, struct.error) as e:
        raise CalibrationError(f"{p}: not a readable safetensors file ({e})") from e
    header.pop("__metadata__", None)
    return header


def _mlx_quant_id(config: dict[str, Any], dtypes: set[str]) -> str:
    q = config.get("quantization") or config.get("quantization_config")
    if q and q.get("bits"):
        mode = q.get("mode", "affine")
        if mode != "affine":
            return f"mlx-{mode}"
        return f"mlx-{q['bits']}bit-g{q.get('group_size', 64)}"
    for dt, name in (("BF16", "bf16"), ("F16", "f16"), ("F32", "f32")):
        if dt in dtypes:
            return f"mlx-{name}"
    return "mlx-unknown"


def inspect_mlx(path: str | os.PathLike[str]) -> ModelInfo:
    """Read an MLX folder: config.json + safetensors headers (no weights are loaded)."""
    root = Path(path)
    try:
        config = json.loads((root / "config.json").read_text())
    except (OSError, ValueError) as e:
        raise CalibrationError(f"{root}: no readable config.json ({e}); pass an MLX model folder") from e
    files = sorted(root.glob("*.safetensors"))
    if not files:
        raise CalibrationError(f"{root}: no *.safetensors weights; pass an MLX model folder")
    tensors: dict[str, dict[str, Any]] = {}
    for f in files:
        tensors.update(safetensors_header(f))
    q = config.get("quantization") or {}
    bits = q.get("bits")
    weights_bytes = 0
    n_params = 0
    dtypes: set[str] = set()
    for name, t in tensors.items():
        start, end = t["data_offsets"]
        weights_bytes += end - start
        dtypes.add(t["dtype"])
        numel = 1
        for s in t["shape"]:
            numel *= s
        if name.endswith((".scales", ".biases")) and name.removesuffix(".scales").removesuffix(".biases") + ".weight" in tensors \
                and bits:
            continue  # quantization metadata, not parameters
        if bits and t["dtype"] == "U32" and name.removesuffix(".weight") + ".scales" in tensors:
            numel = numel * 32 // bits  # packed: 32 / bits values per uint32
        n_params += numel
    text = config.get("text_config", config)
    hidden = text["hidden_size"]
    heads = text["num_attention_heads"]
    return ModelInfo(
        path=str(root), format="mlx", quant=_mlx_quant_id(config, dtypes), weights_bytes=weights_bytes,
        n_params=n_params, n_layers=text["num_hidden_layers"], hidden=hidden, n_heads=heads,
        n_kv_heads=text.get("num_key_value_heads") or heads, head_dim=text.get("head_dim") or hidden // heads,
        vocab=text["vocab_size"], ffn=text.get("intermediate_size", 0) or text.get("moe_intermediate_size", 0),
        ctx=text.get("max_position_embeddings", 4096), model_id=config.get("_name_or_path") or root.name,
    )


# ----------------------------------------------------------------------------------------------
# GGUF files
# ----------------------------------------------------------------------------------------------


def _gguf_quant_id(file_type: int | None, tensor_types: set[str]) -> str:
    import gguf

    if file_type is not None:
        try:
            name = gguf.LlamaFileType(file_type).name
        except ValueError:
            name = ""
        if name:
            return name.removeprefix("MOSTLY_").removeprefix("ALL_")
    return "+".join(sorted(tensor_types)) or "unknown"


def inspect_gguf(path: str | os.PathLike[str]) -> ModelInfo:
    """Read a GGUF: exact tensor bytes (sum of tensor n_bytes), params and the arch keys."""
    p = Path(path)
    from sources.errors import SourceError
    from sources.ggufmeta import read_header

    try:  # the planner's bounded header reader first: its errors say what is wrong with the file (gguf's did not)
        with p.open("rb") as f:
            read_header(f, str(p))
    except SourceError as e:
        raise CalibrationError(str(e)) from None
    except OSError as e:
        raise CalibrationError(f"{p}: cannot read ({e.strerror}); check the path") from None
    try:
        import gguf

        reader = gguf.GGUFReader(str(p))
    except Exception as e:
        raise CalibrationError(f"{p}: not a readable GGUF file ({e})") from e

    def field(key: str, default: Any = None) -> Any:
        f = reader.fields.get(key)
        return default if f is None else f.contents()

    arch = field("general.architecture", "llama")
    tensors = list(reader.tensors)
    weights_bytes = sum(int(t.n_bytes) for t in tensors)
    n_params = sum(int(t.n_elements) for t in tensors)
    heads = field(f"{arch}.attention.head_count")
    hidden = field(f"{arch}.embedding_length")
    if heads is None or hidden is None:
        raise CalibrationError(f"{p}: GGUF lacks {arch}.attention.head_count / embedding_length")
    kv = field(f"{arch}.attention.head_count_kv", heads)
    vocab = field(f"{arch}.vocab_size")
    if vocab is None:
        toks = reader.fields.get("tokenizer.ggml.tokens")
        vocab = len(toks.data) if toks is not None else 0
    head_dim = field(f"{arch}.attention.key_length") or field(f"{arch}.rope.dimension_count") or hidden // heads
    return ModelInfo(
        path=str(p), format="gguf",
        quant=_gguf_quant_id(field("general.file_type"), {t.tensor_type.name for t in tensors}),
        weights_bytes=weights_bytes, n_params=n_params, n_layers=int(field(f"{arch}.block_count")),
        hidden=int(hidden), n_heads=int(heads), n_kv_heads=int(kv), head_dim=int(head_dim), vocab=int(vocab),
        ffn=int(field(f"{arch}.feed_forward_length", 0) or 0), ctx=int(field(f"{arch}.context_length", 4096)),
        model_id=field("general.name") or p.stem,
    )


def inspect_model(path: str | os.PathLike[str]) -> ModelInfo:
    """A ``.gguf`` file -> :func:`inspect_gguf`; a folder with config.json -> :func:`inspect_mlx`."""
    p = Path(path)
    if p.is_file() and p.suffix == ".gguf":
        return inspect_gguf(p)
    if p.is_dir() and (p / "config.json").exists():
        return inspect_mlx(p)
    raise CalibrationError(f"{p}: expected a .gguf file or an MLX model folder (with config.json)")
