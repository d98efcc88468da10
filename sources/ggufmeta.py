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

from planner import hybrid
from planner.errors import UnsupportedArchitectureError
from planner.results import WeightsEstimate
from planner.schema import ModelConfig

from . import gguf_attention
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
    **hybrid.GGUF_ARCHS,  # recurrent hybrids (planner/hybrid.py), read by _recurrent_keys below
}
ARCH_TO_MODEL_TYPE.update(gguf_attention.ARCHS)  # --- Gemma 4, DSA indexer, MLA variants, encoders
# 2026 families on the Llama attention path (planner/architecture.py): llama.cpp src/models/apertus.cpp,
# hunyuan-dense.cpp (hunyuan-vl.cpp tensors), ernie4-5.cpp (LLM_ARCH_ERNIE4_5_MOE)
ARCH_TO_MODEL_TYPE.update({"apertus": "apertus", "hunyuan-dense": "hunyuan_v1_dense", "ernie4_5-moe": "ernie4_5_moe"})
# recurrent / state-space architectures we refuse explicitly
SSM_ARCHS = {"mamba", "mamba2", "jamba", "falcon-h1", "plamo2", "lfm2", "lfm2moe", "kimi-linear", "rwkv6",
             "rwkv7", "arwkv7", "rwkv6qwen2"} - set(hybrid.GGUF_ARCHS)


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
    gguf_attention.refuse(arch, source)  # DeepSeek V4, Gemma 3n, BERT family: one line saying what is missing
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
            if mt == "ernie4_5_moe":  # ernie4-5.cpp: layers below leading_dense_block_count keep a dense FFN
                d["first_k_dense_replace"] = g("leading_dense_block_count") or 0
    d["intermediate_size"] = ffn or d.get("moe_intermediate_size")
    kl, vl = g("attention.key_length"), g("attention.value_length")
    if kl and mt not in ("deepseek_v3", "kimi_linear"):  # MLA: key_length is the latent + rope
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
    if arch in hybrid.GGUF_ARCHS:
        _recurrent_keys(arch, kv, g, d, source, notes, names)
    if mt == "qwen3_next":
        interval = g("full_attention_interval") or 4
        d["full_attention_interval"] = interval
        _gated_delta_keys(g, d, f"{source}: qwen3next GGUF without ssm.* keys is not supported yet: "
                                "linear-attention sizes missing")
    gguf_attention.normalise(arch, kv, names, d, source)
    return from_hf_config({k: v for k, v in d.items() if v is not None}, source), notes


def _gated_delta_keys(g, d: dict, missing: str) -> None:
    """Gated-delta-net sizes from llama.cpp's ssm.* keys (Qwen3-Next and Qwen3.5 alike: convert_hf_to_gguf writes
    linear_key_head_dim as ssm.state_size, linear_num_key_heads as ssm.group_count, linear_num_value_heads as
    ssm.time_step_rank, value heads x head dim as ssm.inner_size); ``missing``: the error when they are absent."""
    d["linear_conv_kernel_dim"] = g("ssm.conv_kernel")
    d["linear_key_head_dim"] = g("ssm.state_size")
    d["linear_num_key_heads"] = g("ssm.group_count")
    d["linear_num_value_heads"] = g("ssm.time_step_rank")
    inner = g("ssm.inner_size")
    if not all((d["linear_key_head_dim"], d["linear_num_key_heads"], d["linear_num_value_heads"], inner)):
        raise UnsupportedArchitectureError(missing)
    d["linear_value_head_dim"] = inner // d["linear_num_value_heads"]


def _recurrent_keys(arch: str, kv: dict, g, d: dict, source: str, notes: list[str], names: dict) -> None:
    """llama.cpp metadata of the recurrent hybrids -> HF keys (the converters' mapping in reverse: llama.cpp
    conversion/qwen.py Qwen3NextModel.set_gguf_parameters and _QwenMtpMixin)."""
    # block_count = the trunk + the MTP layers (nextn_predict_layers: Qwen3.5, Nemotron 3), which llama.cpp skips
    # unless --spec-type draft-mtp (src/models/qwen35.cpp, nemotron-h.cpp load_arch_tensors: mtp_flags)
    nextn = g("nextn_predict_layers") or 0
    n_all = d["num_hidden_layers"] - nextn
    if n_all <= 0:
        raise SourceError(f"{source}: {arch}.nextn_predict_layers {nextn} >= block_count {d['num_hidden_layers']}: "
                          "an MTP-only GGUF holds no model to plan; pass the main GGUF")
    d["num_hidden_layers"], d["mtp_num_hidden_layers"] = n_all, nextn
    if nextn:
        notes.append(f"{nextn} MTP layer(s) in the file are not counted: llama.cpp loads them only for "
                     "--spec-type draft-mtp")
    if arch in ("qwen35", "qwen35moe"):
        n = n_all
        _gated_delta_keys(g, d, f"{source}: {arch} GGUF without ssm.* keys is not supported: "
                                "gated-delta-net sizes missing")
        rec = kv.get(f"{arch}.attention.recurrent_layers")
        if isinstance(rec, list) and len(rec) >= n:
            d["layer_types"] = ["linear_attention" if r else "full_attention" for r in rec[:n]]
        else:  # qwen35.cpp: recurrent iff (i + 1) % full_attention_interval != 0 (default 4)
            d["full_attention_interval"] = check_pattern(g("full_attention_interval") or 4, source,
                                                         f"{arch}.full_attention_interval")
        return
    kvh = kv.get(f"{arch}.attention.head_count_kv")
    if arch in ("lfm2", "lfm2moe"):
        # lfm2.cpp / lfm2moe.cpp: a layer is a short conv iff head_count_kv(i) == 0; leading dense layers
        if not isinstance(kvh, list) or len(kvh) < n_all:
            raise SourceError(f"{source}: {arch} without a per-layer attention.head_count_kv; re-download it")
        d["layer_types"] = ["full_attention" if kvh[i] else "conv" for i in range(n_all)]
        d["conv_L_cache"] = g("shortconv.l_cache")
        if arch == "lfm2moe":
            d["num_dense_layers"] = g("leading_dense_block_count") or 0
            d["use_expert_bias"] = True  # lfm2moe.cpp: ffn_exp_probs_b is required
        return
    if arch == "kimi-linear":
        # conversion/kimi_linear.py: head_count_kv 0 on KDA layers, 1 on MLA layers (MQA over the latent);
        # kimi-linear.cpp load_arch_hparams reads kda.head_dim, ssm.conv_kernel and the MLA lengths
        if not isinstance(kvh, list) or len(kvh) < n_all:
            raise SourceError(f"{source}: kimi-linear without a per-layer attention.head_count_kv; re-download it")
        rope, kmla, vmla = g("rope.dimension_count") or 0, g("attention.key_length_mla"), g("attention.value_length_mla")
        if not (kmla and vmla and g("attention.kv_lora_rank") and g("kda.head_dim")):
            raise UnsupportedArchitectureError(f"{source}: kimi-linear GGUF without MLA lengths / kda.head_dim is "
                                               "not supported")
        d.update(layer_types=["full_attention" if kvh[i] else "linear_attention" for i in range(n_all)],
                 linear_num_heads=d["num_attention_heads"], linear_head_dim=g("kda.head_dim"),
                 linear_conv_kernel_dim=g("ssm.conv_kernel") or 4, kv_lora_rank=g("attention.kv_lora_rank"),
                 q_lora_rank=g("attention.q_lora_rank") or None, qk_rope_head_dim=rope,
                 qk_nope_head_dim=kmla - rope, v_head_dim=vmla, num_key_value_heads=d["num_attention_heads"],
                 first_k_dense_replace=g("leading_dense_block_count") or 0,
                 num_shared_experts=g("expert_shared_count") or 0)
        return
    if arch == "jamba":
        # jamba.cpp: recurrent iff head_count_kv(i) == 0; a layer with ffn_gate_inp is MoE
        if not isinstance(kvh, list) or len(kvh) < n_all:
            raise SourceError(f"{source}: jamba without a per-layer attention.head_count_kv; re-download it")
        d["layers_block_type"] = ["attention" if kvh[i] else "mamba" for i in range(n_all)]
        d.update(mamba_d_inner=g("ssm.inner_size"), ssm_state_size=g("ssm.state_size"),
                 mamba_dt_rank=g("ssm.time_step_rank"), conv_kernel=g("ssm.conv_kernel") or 4)
        moe = [i for i in range(n_all) if f"blk.{i}.ffn_gate_inp.weight" in names]
        if moe:
            step = moe[0] + 1
            if moe != [i for i in range(n_all) if (i + 1) % step == 0]:
                raise UnsupportedArchitectureError(f"{source}: jamba experts on layers {moe[:4]}... are not every "
                                                   f"{step}-th layer; not supported")
            d["decoder_sparse_step"] = step
        return
    # Mamba-2 hybrids: per-layer head_count_kv and feed_forward_length arrays say what each block is
    # (nemotron-h.cpp: recurrent iff head_count_kv(i) == 0 and n_ff(i) == 0, attention iff n_ff(i) == 0;
    # granite-hybrid.cpp: recurrent iff head_count_kv(i) == 0)
    d_inner, heads = g("ssm.inner_size"), g("ssm.time_step_rank")
    if not (d_inner and heads and g("ssm.state_size") and g("ssm.group_count")):
        raise UnsupportedArchitectureError(f"{source}: {arch} GGUF without ssm.* keys is not supported: Mamba-2 "
                                           "sizes missing")
    d.update(mamba_num_heads=heads, mamba_head_dim=d_inner // heads, ssm_state_size=g("ssm.state_size"),
             n_groups=g("ssm.group_count"), conv_kernel=g("ssm.conv_kernel") or 4,
             use_conv_bias="blk.0.ssm_conv1d.bias" in names, mamba_rms_norm="blk.0.ssm_norm.weight" in names)
    if arch == "falcon-h1":  # every layer attention + Mamba-2 (falcon-h1.cpp); d_inner = ssm.inner_size
        d["mamba_d_inner"] = d_inner
        return
    ff = kv.get(f"{arch}.feed_forward_length")
    kvh = kvh if isinstance(kvh, list) else [kvh or 0] * n_all
    ff = ff if isinstance(ff, list) else [ff or 0] * n_all
    if len(kvh) < n_all or len(ff) < n_all:
        raise SourceError(f"{source}: {arch} per-layer head_count_kv / feed_forward_length shorter than "
                          "block_count; re-download it")
    if arch == "granitehybrid":
        d["layers_block_type"] = ["attention" if kvh[i] else "mamba" for i in range(n_all)]
        return
    ffn_kind = "moe" if arch == "nemotron_h_moe" else "mlp"
    d["layers_block_type"] = ["attention" if kvh[i] else ffn_kind if ff[i] else "mamba" for i in range(n_all)]
    sh = g("expert_shared_feed_forward_length")
    if arch == "nemotron_h_moe":
        d["n_routed_experts"], d["num_experts"] = d.pop("num_experts", None), None
        d["moe_shared_expert_intermediate_size"] = sh
        d["n_shared_experts"] = g("expert_shared_count") or (1 if sh else None)
        d.pop("shared_expert_intermediate_size", None)
        if g("moe_latent_size"):  # Nemotron 3 Super (conversion/nemotron.py add_moe_latent_size)
            d["moe_latent_size"] = g("moe_latent_size")


# --------------------------------------------------------------------------- tensors -> exact weights
def gguf_group(name: str) -> str:
    """llama.cpp tensor name -> our tensor group (planner.architecture.Tensor.group)."""
    parts = name.split(".")
    short = parts[2] if parts[0] == "blk" and len(parts) > 2 else parts[0]
    if short == "token_embd":
        return "embedding"
    if short == "per_layer_token_embd":
        return "lookup"  # Gemma 4 per-layer embedding table: gathered, not multiplied (planner/arch_gemma4.py)
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


def exact_weights(tensors: list[TensorInfo], vision_bytes: int = 0, n_layers: int | None = None) -> WeightsEstimate:
    """Bytes of the tensors llama.cpp loads; with ``n_layers`` (a model with MTP layers, mtp_num_hidden_layers) the
    blocks from n_layers on are left out: llama.cpp skips them unless --spec-type draft-mtp (qwen35.cpp
    ``mtp_flags = TENSOR_SKIP``)."""
    by_group: dict[str, int] = {}
    by_type: dict[str, int] = {}
    for t in tensors:
        if n_layers is not None and _layer_of(t.name) >= n_layers:
            continue
        grp = gguf_group(t.name)
        by_group[grp] = by_group.get(grp, 0) + t.n_bytes
        by_type[t.type_name] = by_type.get(t.type_name, 0) + t.n_bytes
    total = sum(by_group.values())
    n = sum(t.n_elements for t in tensors)
    return WeightsEstimate(total_bytes=total, n_params=n, bits_per_weight=8 * total / n if n else 0.0,
                           by_group=by_group, by_type=by_type, vision_bytes=vision_bytes, exact=True)


def _layer_of(name: str) -> int:
    parts = name.split(".")
    return int(parts[1]) if parts[0] == "blk" and len(parts) > 2 and parts[1].isdigit() else -1


def mtp_layers(cfg: ModelConfig) -> int | None:
    """num_hidden_layers when the file carries MTP blocks after them (exact_weights n_layers), else None."""
    return cfg.num_hidden_layers if cfg.mtp_num_hidden_layers else None


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
