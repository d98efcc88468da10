"""GGUF header facts -> HF-style config, exact weight bytes and quant id.

Shared by the local reader (gguf.GGUFReader) and the hub reader (a ranged GET of the header parsed by
``parse_header`` below). Key names: gguf-py gguf/constants.py ``Keys``; arch -> HF model_type mapping follows
llama.cpp conversion (convert_hf_to_gguf.py) in reverse. Layout of the header: ggml docs/gguf.md.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

from planner.errors import UnsupportedArchitectureError
from planner.results import WeightsEstimate
from planner.schema import ModelConfig

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


# --------------------------------------------------------------------------- header parser (hub range reads)
class NeedMore(Exception):
    """The buffer ends inside the header; fetch more bytes."""


_SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_U64 = struct.Struct("<Q")
MAX_ARRAY_KEEP = 4096  # keep numeric arrays up to this length (per-layer values); longer ones keep only their length


def parse_header(buf: bytes, source: str) -> tuple[dict, list[TensorInfo]]:
    """Parse GGUF v2/v3 little-endian metadata + tensor infos from the first bytes of a file (ggml docs/gguf.md)."""
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    pos = 0

    def take(n: int) -> bytes:
        nonlocal pos
        if pos + n > len(buf):
            raise NeedMore()
        b = buf[pos:pos + n]
        pos += n
        return b

    def u32() -> int:
        return struct.unpack("<I", take(4))[0]

    def u64() -> int:
        return struct.unpack("<Q", take(8))[0]

    def string() -> str:
        n = u64()
        if n > 1 << 24:
            raise SourceError(f"{source} is not a valid GGUF (string of {n} bytes): re-download it")
        return take(n).decode("utf-8", errors="replace")

    def skip_strings(n: int) -> None:
        """A string array (tokenizer vocab, merges: 400k strings in a Llama 3 header) kept only as its length:
        walk the lengths without slicing or decoding."""
        nonlocal pos
        p, unpack = pos, _U64.unpack_from
        try:
            for _ in range(n):
                p += 8 + unpack(buf, p)[0]   # an absurd length runs past the buffer: NeedMore, then the size cap
        except struct.error:
            raise NeedMore() from None
        if p > len(buf):
            raise NeedMore()
        pos = p

    def value(t: int):
        if t in _SCALAR:
            f = _SCALAR[t]
            return struct.unpack(f, take(struct.calcsize(f)))[0]
        if t == 8:
            return string()
        if t == 9:
            sub, n = u32(), u64()
            if n > 1 << 28:
                raise SourceError(f"{source} is not a valid GGUF (array of {n} items): re-download it")
            if sub in _SCALAR:
                size = struct.calcsize(_SCALAR[sub])
                raw = take(size * n)
                if n <= MAX_ARRAY_KEEP:
                    return list(struct.unpack("<" + _SCALAR[sub][1] * n, raw))
                return _ArrayLen(n)
            if sub == 8:
                skip_strings(n)
                return _ArrayLen(n)
            raise SourceError(f"{source} is not a valid GGUF (array of type {sub}): re-download it")
        raise SourceError(f"{source} is not a valid GGUF (value type {t}): re-download it")

    if take(4) != GGUF_MAGIC:
        raise SourceError(f"{source} is not a valid GGUF (wrong magic): re-download it")
    version = u32()
    if version not in (2, 3):
        raise SourceError(f"{source} is not a valid GGUF (version {version}, big-endian or unknown): re-download it")
    n_tensors, n_kv = u64(), u64()
    if n_tensors > 1 << 20 or n_kv > 1 << 20:
        raise SourceError(f"{source} is not a valid GGUF ({n_tensors} tensors, {n_kv} keys): re-download it")
    kv: dict = {}
    for _ in range(n_kv):
        k = string()
        kv[k] = value(u32())
    tensors = []
    for _ in range(n_tensors):
        name = string()
        nd = u32()
        if nd > 8:
            raise SourceError(f"{source} is not a valid GGUF (tensor {name} has {nd} dims): re-download it")
        shape = tuple(u64() for _ in range(nd))
        t = u32()
        u64()  # offset
        tensors.append(_tensor(name, shape, t, source, GGML_QUANT_SIZES, GGMLQuantizationType))
    return kv, tensors


class _ArrayLen(int):
    """A long array (tokenizer vocab) kept only as its length."""


def _tensor(name: str, shape: tuple[int, ...], t: int, source: str, sizes, qtype) -> TensorInfo:
    try:
        typ = qtype(t)
        block, nbytes = sizes[typ]
    except (ValueError, KeyError):
        raise SourceError(f"{source} is not a valid GGUF (tensor {name} has unknown type {t}): re-download it") from None
    n = 1
    for d in shape:
        n *= int(d)
    if n % block:
        raise SourceError(f"{source} is not a valid GGUF (tensor {name}: {n} values not a multiple of {block}): "
                          "re-download it")
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
def _scalar(v):
    """Per-layer arrays (head_count_kv, feed_forward_length) -> the largest non-zero value."""
    if isinstance(v, list):
        nz = [x for x in v if x]
        return max(nz) if nz else None
    return v


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
        return _scalar(kv.get(f"{arch}.{key}"))

    names = {t.name: t for t in tensors}
    emb = names.get("token_embd.weight")
    vocab = g("vocab_size") or (emb.shape[1] if emb is not None and len(emb.shape) > 1 else None)
    if not vocab and "tokenizer.ggml.tokens" in kv:
        vocab = int(kv["tokenizer.ggml.tokens"])
    n_layers = g("block_count")
    hidden = g("embedding_length")
    heads = g("attention.head_count")
    missing = [k for k, v in (("block_count", n_layers), ("embedding_length", hidden),
                              ("attention.head_count", heads), ("vocab_size/token_embd", vocab)) if not v]
    if missing:
        raise SourceError(f"{source}: GGUF metadata lacks {', '.join(f'{arch}.{m}' for m in missing)}; "
                          "re-download it or use a catalog id")
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
            d["layer_types"] = swa_layer_types(n_layers, int(pat or 6))  # llama.cpp src/models/gemma3.cpp
        elif mt in ("gemma2", "gpt_oss"):
            d["layer_types"] = swa_layer_types(n_layers, 2)  # llama.cpp gemma2 / openai-moe: set_swa_pattern(2)
        elif isinstance(pat, int) and pat > 1:
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
