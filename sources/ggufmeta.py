"""GGUF header facts -> HF-style config, exact weight bytes and quant id.

One bounded header parser (``parse_header`` on a buffer for hub range reads, ``read_header`` on a local file) for
both paths, with the limits of sources/bounds.py checked before anything sized by a declared count is built. Key names: gguf-py gguf/constants.py ``Keys``; arch -> HF model_type mapping follows
llama.cpp conversion (convert_hf_to_gguf.py) in reverse. Layout of the header: ggml docs/gguf.md.
"""

from __future__ import annotations

import dataclasses

import re
import struct
from dataclasses import dataclass

from planner.errors import UnsupportedArchitectureError
from planner.results import WeightsEstimate
from planner.schema import ModelConfig

from .bounds import (
    MAX_GGUF_ARRAY,
    MAX_GGUF_DIMS,
    MAX_GGUF_HEADER_BYTES,
    MAX_GGUF_KV,
    MAX_GGUF_STRING,
    MAX_GGUF_TENSORS,
    MAX_MODEL_PARAMS,
    MAX_TENSOR_ELEMENTS,
    check_layers,
    check_pattern,
)
from .errors import SourceError
from .hfconfig import from_hf_config, swa_layer_types

GGUF_MAGIC = b"GGUF"


@dataclass(frozen=True)
class TensorInfo:
    name: str
    type_name: str     # ggml type: Q4_K, F32, ...
    n_elements: int
    n_bytes: int
    shape: tuple[int, ...] = ()
    end: int = 0       # byte just past the tensor's data, from the file's start (data section + offset + n_bytes)


# GGUF general.architecture -> HF model_type (only those whose layout planner.architecture models)
ARCH_TO_MODEL_TYPE = {
    "llama": "llama", "mistral3": "mistral", "qwen2": "qwen2", "qwen3": "qwen3", "qwen2moe": "qwen2_moe",
    "qwen3moe": "qwen3_moe", "qwen3next": "qwen3_next", "gemma": "gemma", "gemma2": "gemma2", "gemma3": "gemma3_text",
    "phi3": "phi3", "deepseek2": "deepseek_v3", "gpt-oss": "gpt_oss", "granite": "granite", "olmo2": "olmo2",
    "starcoder2": "starcoder2", "command-r": "cohere", "internlm3": "internlm3", "exaone": "exaone",
}
# recurrent / state-space architectures we refuse explicitly
SSM_ARCHS = {"mamba", "mamba2", "jamba", "granitehybrid", "nemotron_h", "falcon-h1", "plamo2", "lfm2", "rwkv6",
             "rwkv7", "arwkv7", "rwkv6qwen2"}


# --------------------------------------------------------------------------- header parser (local and hub)
class NeedMore(Exception):
    """The buffer ends inside the header; fetch more bytes."""


_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_SIZE = {t: struct.calcsize(f) for t, f in _SCALAR.items()}
_U64 = struct.Struct("<Q")
MAX_ARRAY_KEEP = 4096  # keep numeric arrays up to this length (per-layer values); longer ones keep only their length


class _Cursor:
    """Bytes of a GGUF header: a buffer (hub range reads: NeedMore at its end) or a file read on demand, never
    more than MAX_GGUF_HEADER_BYTES in all."""

    def __init__(self, buf: bytes, f=None, source: str = "", size: int | None = None):
        self.buf, self.f, self.pos, self.source, self.size = buf, f, 0, source, size
        if f is not None:
            self.buf = bytearray(buf)

    def need(self, n: int) -> None:
        end = self.pos + n
        if end <= len(self.buf):
            return
        if end > MAX_GGUF_HEADER_BYTES:
            raise _bad(self.source, f"header longer than {MAX_GGUF_HEADER_BYTES // 2**20} MiB")
        if self.f is None:
            raise NeedMore()
        grow = max(end - len(self.buf), len(self.buf), 1 << 20)
        self.buf += self.f.read(min(grow, MAX_GGUF_HEADER_BYTES - len(self.buf)))
        if end > len(self.buf):
            raise _bad(self.source, f"header ends after {len(self.buf)} bytes")

    def unpack(self, t: int):
        n = _SIZE[t]
        self.need(n)
        v = struct.unpack_from(_SCALAR[t], self.buf, self.pos)[0]
        self.pos += n
        return v

    def u32(self) -> int:
        return self.unpack(4)

    def u64(self) -> int:
        return self.unpack(10)

    def string(self, keep: bool = True) -> str | None:
        n = self.u64()
        if n > MAX_GGUF_STRING:
            raise _bad(self.source, f"string of {n} bytes")
        self.need(n)
        s = bytes(self.buf[self.pos:self.pos + n]).decode("utf-8", errors="replace") if keep else None
        self.pos += n
        return s

    def skip_strings(self, count: int) -> None:
        """Skip ``count`` strings (a tokenizer vocab, 400k strings in a Llama 3 header) by walking their lengths
        without slicing or decoding; an absurd length runs past the buffer and ends at the header size cap."""
        unpack, pos, i = _U64.unpack_from, self.pos, 0
        while True:
            buf, start = self.buf, i
            try:
                for i in range(start, count):  # noqa: B007 - i is where a refill resumes
                    pos += 8 + unpack(buf, pos)[0]
                i = count
            except struct.error:  # the length field at pos is past the buffer: read more, resume at string i
                self.pos = pos
                self.need(8)
                continue
            if pos > len(buf):  # the last string runs past the buffer
                self.pos = pos
                self.need(0)
            self.pos = pos
            return

    def value(self, t: int):
        if t in _SCALAR:
            return self.unpack(t)
        if t == 8:
            return self.string()
        if t == 9:
            sub, n = self.u32(), self.u64()
            if n > MAX_GGUF_ARRAY:
                raise _bad(self.source, f"array of {n} items")
            if sub in _SCALAR:
                size = _SIZE[sub] * n
                self.need(size)
                start, self.pos = self.pos, self.pos + size
                if n <= MAX_ARRAY_KEEP:
                    return list(struct.unpack_from("<" + _SCALAR[sub][1] * n, self.buf, start))
                return _ArrayLen(n)
            if sub == 8:
                self.skip_strings(n)
                return _ArrayLen(n)
            raise _bad(self.source, f"array of type {sub}")
        raise _bad(self.source, f"value type {t}")


def _bad(source: str, why: str) -> SourceError:
    return SourceError(f"{source} is not a valid GGUF ({why}): re-download it")


def parse_header(buf: bytes, source: str) -> tuple[dict, list[TensorInfo]]:
    """Parse GGUF v2/v3 little-endian metadata + tensor infos from the first bytes of a file (ggml docs/gguf.md).
    Raises NeedMore when ``buf`` ends inside the header (the hub reader then fetches more)."""
    return _parse(_Cursor(buf, source=source))


def read_header(f, source: str) -> tuple[dict, list[TensorInfo]]:
    """The same parse reading an open binary file on demand: bounded by the MAX_GGUF_* limits (sources/bounds.py)
    whatever the header declares, so a 162-byte file declaring 2^62 items fails at once."""
    return _parse(_Cursor(b"", f=f, source=source))


def _parse(c: _Cursor) -> tuple[dict, list[TensorInfo]]:
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    source = c.source
    c.need(4)
    if bytes(c.buf[:4]) != GGUF_MAGIC:
        raise _bad(source, "wrong magic")
    c.pos = 4
    version = c.u32()
    if version not in (2, 3):
        raise _bad(source, f"version {version}, big-endian or unknown")
    n_tensors, n_kv = c.u64(), c.u64()
    if n_tensors > MAX_GGUF_TENSORS or n_kv > MAX_GGUF_KV:
        raise _bad(source, f"{n_tensors} tensors, {n_kv} keys")
    kv: dict = {}
    for _ in range(n_kv):
        k = c.string()
        kv[k] = c.value(c.u32())
    tensors = []
    total = 0
    for _ in range(n_tensors):
        name = c.string()
        nd = c.u32()
        if nd > MAX_GGUF_DIMS:
            raise _bad(source, f"tensor {name[:60]} has {nd} dims")
        shape = tuple(c.u64() for _ in range(nd))
        t = c.u32()
        offset = c.u64()  # within the data section
        info = _tensor(name, shape, t, source, GGML_QUANT_SIZES, GGMLQuantizationType)
        total += info.n_elements
        if total > MAX_MODEL_PARAMS:
            raise _bad(source, f"tensors sum to over {MAX_MODEL_PARAMS:.3g} values")
        tensors.append((info, offset))
    # the data section starts at the header's end rounded up to general.alignment (ggml docs/gguf.md, default 32)
    align = kv.get("general.alignment")
    align = align if isinstance(align, int) and 0 < align <= 1 << 20 else 32
    start = c.pos + (-c.pos) % align
    return kv, [dataclasses.replace(t, end=start + off + t.n_bytes) for t, off in tensors]


def check_tensors(shards: list[tuple[dict, list[TensorInfo], int | None]], source: str) -> list[str]:
    """Refuse a GGUF that cannot be the model it claims: no tensors, split parts of different models (a tensor
    twice, a split.count that is not the number of parts), tensor data past the end of a file. ``shards``: (kv,
    tensors, file size or None) per part, in order. -> notes (a general.file_type contradicting the tensors)."""
    tensors = [t for _, ts, _ in shards for t in ts]
    if not tensors:
        raise SourceError(f"{source} has no tensors (a header without weights): nothing to plan; re-download it")
    seen: set[str] = set()
    for t in tensors:
        if t.name in seen:
            raise SourceError(f"{source}: the split parts hold tensor {t.name[:60]} twice: parts of different models "
                              "or of different quants; download all parts of one model")
        seen.add(t.name)
    n = len(shards)
    for i, (kv, ts, size) in enumerate(shards):
        count = kv.get("split.count")
        if n > 1 and isinstance(count, int) and count != n:
            raise SourceError(f"{source}: part {i + 1} says it is one of {count} parts, not of {n}: parts of "
                              "different models; download all parts of one model")
        end = max((t.end for t in ts), default=0)
        if size is not None and end > size:
            raise SourceError(f"{source}{f' part {i + 1}' if n > 1 else ''}: the header places tensor data up to "
                              f"byte {end:,} but the file has {size:,} bytes (truncated or forged); re-download it")
    return _file_type_notes(shards[0][0], tensors, source)


def _file_type_notes(kv: dict, tensors: list[TensorInfo], source: str) -> list[str]:
    """general.file_type names the quant of the big matrices (llama.cpp src/llama-quant.cpp: the ftype's default
    type); when most 2-D weight bytes are of another type family, say so (the tensors' bytes are what is used)."""
    from gguf.constants import LlamaFileType

    ft = kv.get("general.file_type")
    try:
        name = LlamaFileType(ft).name.removeprefix("MOSTLY_") if isinstance(ft, int) else None
    except ValueError:
        return []
    if name is None or name in ("ALL_F32", "GUESSED"):
        return []
    by_type: dict[str, int] = {}
    for t in tensors:
        if len(t.shape) >= 2:
            by_type[t.type_name] = by_type.get(t.type_name, 0) + t.n_bytes
    if not by_type:
        return []
    total = sum(by_type.values())
    main = max(by_type, key=by_type.get)
    base = re.sub(r"_(XXS|XS|S|M|L|NL|MOE)$", "", name)  # Q4_K_M -> Q4_K, IQ4_XS -> IQ4, MXFP4_MOE -> MXFP4
    # a mix (Q4_K_M keeps some tensors in Q6_K) agrees when the named type holds a fifth of the bytes or more
    if base.startswith(main) or any(k.startswith(base) and b >= 0.2 * total for k, b in by_type.items()):
        return []
    share = by_type[main] / total
    return [f"general.file_type says {name} but {share:.0%} of the weight bytes are {main}: the file's own tensor "
            f"bytes are used, the quant is taken as unknown"]


class _ArrayLen(int):
    """A long array (tokenizer vocab) kept only as its length."""


def _tensor(name: str, shape: tuple[int, ...], t: int, source: str, sizes, qtype) -> TensorInfo:
    try:
        typ = qtype(t)
        block, nbytes = sizes[typ]
    except (ValueError, KeyError):
        raise _bad(source, f"tensor {name[:60]} has unknown type {t}") from None
    n = 1
    for d in shape:
        n *= int(d)
        if n > MAX_TENSOR_ELEMENTS:
            raise _bad(source, f"tensor {name[:60]} has over {MAX_TENSOR_ELEMENTS:.3g} values")
    if n % block:
        raise _bad(source, f"tensor {name[:60]}: {n} values not a multiple of {block}")
    # ggml_nbytes: n / block * bytes_per_block (ggml/src/ggml.c)
    return TensorInfo(name, typ.name, n, n // block * nbytes, tuple(int(d) for d in shape))


def tensors_from_reader(reader, source: str) -> list[TensorInfo]:
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    out = []
    for t in reader.tensors:
        info = _tensor(t.name, tuple(int(x) for x in t.shape), int(t.tensor_type), source, GGML_QUANT_SIZES,
                       GGMLQuantizationType)
        out.append(info)
    return out


def kv_from_reader(reader) -> dict:
    from gguf.constants import GGUFValueType

    kv = {}
    for name, f in reader.fields.items():
        if not f.types:
            continue
        if f.types[0] == GGUFValueType.ARRAY:
            n = len(f.data)
            if f.types[-1] == GGUFValueType.STRING or n > MAX_ARRAY_KEEP:
                kv[name] = _ArrayLen(n)
            else:
                kv[name] = [x.item() if hasattr(x, "item") else x for x in f.contents()]
        else:
            v = f.contents()
            kv[name] = v.item() if hasattr(v, "item") else v
    return kv


# --------------------------------------------------------------------------- metadata -> config
def _scalar(v, key: str = "", source: str = ""):
    """Per-layer arrays (head_count_kv, feed_forward_length) -> the largest non-zero value; anything but integers
    (a string, a float, a string array kept as its length) is one SourceError naming the key."""
    vals = v if isinstance(v, list) else [v]
    if v is None:
        return None
    if isinstance(v, _ArrayLen) or not all(isinstance(x, int) and not isinstance(x, bool) for x in vals):
        raise SourceError(f"{source}: GGUF key {key} is {type(v).__name__}, expected an integer; re-download it")
    nz = [x for x in vals if x]
    return max(nz) if nz else None


def config_from_gguf(kv: dict, tensors: list[TensorInfo], source: str) -> tuple[ModelConfig, list[str]]:
    arch = kv.get("general.architecture")
    notes: list[str] = []
    if not isinstance(arch, str) or not arch:
        raise SourceError(f"{source} is not a valid GGUF (no general.architecture): re-download it")
    if arch in SSM_ARCHS:
        raise UnsupportedArchitectureError(
            f"{source}: GGUF architecture {arch!r} is not supported yet: recurrent/state-space (Mamba, RWKV) layers "
            "are not modelled")
    if arch not in ARCH_TO_MODEL_TYPE:
        raise UnsupportedArchitectureError(
            f"{source}: GGUF architecture {arch!r} is not supported yet: its tensor and cache layout is not modelled "
            f"(supported: {', '.join(sorted(ARCH_TO_MODEL_TYPE))})")

    def g(key: str):
        return _scalar(kv.get(f"{arch}.{key}"), f"{arch}.{key}", source)

    names = {t.name: t for t in tensors}
    emb = names.get("token_embd.weight")
    vocab = g("vocab_size") or (emb.shape[1] if emb is not None and len(emb.shape) > 1 else None)
    toks = kv.get("tokenizer.ggml.tokens")
    if not vocab and isinstance(toks, list | _ArrayLen):
        vocab = int(toks) if isinstance(toks, _ArrayLen) else len(toks)
    n_layers = g("block_count")
    hidden = g("embedding_length")
    heads = g("attention.head_count")
    missing = [k for k, v in (("block_count", n_layers), ("embedding_length", hidden),
                              ("attention.head_count", heads), ("vocab_size/token_embd", vocab)) if not v]
    if missing:
        raise SourceError(f"{source}: GGUF metadata lacks {', '.join(f'{arch}.{m}' for m in missing)}; "
                          "re-download it or use a catalog id")
    n_layers = check_layers(n_layers, source, f"{arch}.block_count")  # before any per-layer list is built
    mt = ARCH_TO_MODEL_TYPE[arch]
    d: dict = {
        "model_type": mt, "num_hidden_layers": n_layers, "hidden_size": hidden, "num_attention_heads": heads,
        "num_key_value_heads": g("attention.head_count_kv") or heads, "vocab_size": vocab,
        "max_position_embeddings": g("context_length") or 4096,
        "tie_word_embeddings": "output.weight" not in names,
        "attention_bias": "blk.0.attn_q.bias" in names or "blk.0.attn_qkv.bias" in names,
    }
    ffn = g("feed_forward_length")
    n_exp = g("expert_count") or 0
    if n_exp:
        d["num_experts_per_tok"] = g("expert_used_count")
        d["moe_intermediate_size"] = g("expert_feed_forward_length")
        if not d["moe_intermediate_size"]:
            gate = names.get(f"blk.{n_layers - 1}.ffn_gate_exps.weight")
            d["moe_intermediate_size"] = gate.shape[1] if gate is not None and len(gate.shape) > 1 else ffn
        if mt == "llama":
            mt = d["model_type"] = "mixtral"
        if mt in ("mixtral", "gpt_oss"):
            d["num_local_experts"] = n_exp
        elif mt == "deepseek_v3":
            d["n_routed_experts"] = n_exp
            d["n_shared_experts"] = g("expert_shared_count") or 0
            d["first_k_dense_replace"] = g("leading_dense_block_count") or 0
            d["moe_layer_freq"] = 1
        else:
            d["num_experts"] = n_exp
            d["decoder_sparse_step"] = 1
            sh = g("expert_shared_feed_forward_length")
            if sh:
                d["shared_expert_intermediate_size"] = sh
    d["intermediate_size"] = ffn or d.get("moe_intermediate_size")
    kl, vl = g("attention.key_length"), g("attention.value_length")
    if kl and mt != "deepseek_v3":
        d["head_dim"] = kl
        if vl and vl != kl:
            raise UnsupportedArchitectureError(
                f"{source}: key_length {kl} != value_length {vl} is not supported yet for {arch}")
    if mt == "deepseek_v3":
        d["kv_lora_rank"] = g("attention.kv_lora_rank")
        d["q_lora_rank"] = g("attention.q_lora_rank") or None
        rope = g("rope.dimension_count") or 64
        d["qk_rope_head_dim"] = rope
        kmla, vmla = g("attention.key_length_mla"), g("attention.value_length_mla")
        if not d["kv_lora_rank"]:
            raise UnsupportedArchitectureError(f"{source}: deepseek2 GGUF without attention.kv_lora_rank is not "
                                               "supported yet: MLA rank missing")
        if kmla:
            d["qk_nope_head_dim"], d["v_head_dim"] = kmla - rope, vmla or kmla - rope
        else:
            # older converters: key_length = nope + rope per head; llama.cpp then caches full per-head K/V
            d["qk_nope_head_dim"], d["v_head_dim"] = (kl or 192) - rope, vl or 128
            notes.append("this GGUF predates MLA metadata (no key_length_mla): current llama.cpp caches full "
                         "per-head K/V for it, far more than the MLA latent planned here; re-convert or re-download")
        d["head_dim"] = d["qk_nope_head_dim"] + rope
        d["num_key_value_heads"] = heads  # MLA: the cache is the latent, head counts only size the projections
    sw = g("attention.sliding_window")
    if sw:
        d["sliding_window"] = sw
        pat = kv.get(f"{arch}.attention.sliding_window_pattern")
        if isinstance(pat, list) and len(pat) == n_layers:
            d["layer_types"] = ["sliding_attention" if p else "full_attention" for p in pat]
        elif mt == "gemma3_text":
            pat = check_pattern(pat, source, f"{arch}.attention.sliding_window_pattern") if pat else 6
            d["layer_types"] = swa_layer_types(n_layers, pat)  # llama.cpp src/models/gemma3.cpp
        elif mt in ("gemma2", "gpt_oss"):
            d["layer_types"] = swa_layer_types(n_layers, 2)  # llama.cpp gemma2 / openai-moe: set_swa_pattern(2)
        elif isinstance(pat, int) and not isinstance(pat, bool) and 1 < pat <= n_layers:
            d["layer_types"] = swa_layer_types(n_layers, pat)
        else:
            d["layer_types"] = ["sliding_attention"] * n_layers
    if mt == "qwen3_next":
        interval = g("full_attention_interval") or 4
        d["full_attention_interval"] = interval
        d["linear_conv_kernel_dim"] = g("ssm.conv_kernel")
        d["linear_key_head_dim"] = g("ssm.state_size")
        d["linear_num_key_heads"] = g("ssm.group_count")
        d["linear_num_value_heads"] = g("ssm.time_step_rank")
        inner = g("ssm.inner_size")
        if not all((d["linear_key_head_dim"], d["linear_num_key_heads"], d["linear_num_value_heads"], inner)):
            raise UnsupportedArchitectureError(f"{source}: qwen3next GGUF without ssm.* keys is not supported yet: "
                                               "linear-attention sizes missing")
        d["linear_value_head_dim"] = inner // d["linear_num_value_heads"]
    return from_hf_config({k: v for k, v in d.items() if v is not None}, source), notes


# --------------------------------------------------------------------------- tensors -> exact weights
def gguf_group(name: str) -> str:
    """llama.cpp tensor name -> our tensor group (planner.architecture.Tensor.group)."""
    parts = name.split(".")
    short = parts[2] if parts[0] == "blk" and len(parts) > 2 else parts[0]
    if short == "token_embd":
        return "embedding"
    if short == "output":
        return "output"
    if short.startswith("ffn_gate_inp") or short == "exp_probs_b":
        return "router"
    if short.endswith("_exps"):
        return "experts"
    if short.endswith("_shexp"):
        return "shared_experts"
    if "norm" in short or short in ("rope_freqs",) or parts[-1] == "bias" or short == "attn_sinks":
        return "norm"
    if short == "ssm_conv1d":
        return "ssm"
    if short.startswith(("attn_", "ssm_")):
        return "attention"
    if short.startswith("ffn_"):
        return "ffn"
    return "other"


def exact_weights(tensors: list[TensorInfo], vision_bytes: int = 0) -> WeightsEstimate:
    by_group: dict[str, int] = {}
    by_type: dict[str, int] = {}
    for t in tensors:
        grp = gguf_group(t.name)
        by_group[grp] = by_group.get(grp, 0) + t.n_bytes
        by_type[t.type_name] = by_type.get(t.type_name, 0) + t.n_bytes
    total = sum(by_group.values())
    n = sum(t.n_elements for t in tensors)
    return WeightsEstimate(total_bytes=total, n_params=n, bits_per_weight=8 * total / n if n else 0.0,
                           by_group=by_group, by_type=by_type, vision_bytes=vision_bytes, exact=True)


_QUANT_RE = re.compile(r"(?<![A-Za-z0-9])(I?Q\d_[A-Z0-9_]+?|Q\d_\d|MXFP4_MOE|BF16|F16|F32)(?=[-.]|$)", re.IGNORECASE)


def quant_from_gguf(kv: dict, filename: str) -> str | None:
    """general.file_type (gguf LlamaFileType, llama.cpp include/llama.h llama_ftype) or the file name -> preset id."""
    from gguf.constants import LlamaFileType

    ft = kv.get("general.file_type")
    if isinstance(ft, int):
        try:
            name = LlamaFileType(ft).name
            return {"ALL_F32": "F32"}.get(name, name.removeprefix("MOSTLY_"))
        except ValueError:
            pass
    return quant_from_name(filename)


def quant_from_name(filename: str) -> str | None:
    m = _QUANT_RE.search(filename.rsplit("/", 1)[-1])
    return m.group(1).upper() if m else None
