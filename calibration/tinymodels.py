"""Deterministic random-weight Llama models for calibration runs and tests (no torch, no hub).

Three builders share one source of truth, an HF-format folder:

- :func:`build_hf_llama` writes ``config.json`` (LlamaForCausalLM), ``model.safetensors`` (numpy +
  safetensors) and an offline byte-level BPE tokenizer trained with ``tokenizers`` on an embedded
  synthetic corpus, padded with ``<extra_i>`` tokens so tokenizer vocab == model vocab.
- :func:`build_mlx_model` converts that folder with ``mlx_lm.convert`` (float32: fp16 paths on the
  MLX Linux CPU backend were measured 3-20x slower than fp32, worst for quantized matmul with fp16 scales).
- :func:`build_gguf` writes a llama-arch GGUF with ``gguf.GGUFWriter`` (F32/F16, or Q8_0/Q4_0 via
  gguf-py's numpy quantizer); :func:`quantize_gguf` makes K-quants with llama.cpp's own quantizer.

Sizes: ``size="tiny"`` (3.67 M params, 14.7 MB in f32) for tests; ``size="bench"`` (~152 M params:
~304 MB F16, ~160 MB Q8_0, ~90 MB Q4_K_M) for calibration benchmarks where decode is dominated by
memory traffic. Every dim is a multiple of 256 so K-quants, Q4_0/Q8_0 and MLX group-64 all work.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from calibration.errors import CalibrationError

SEED = 0
BOS, EOS, PAD = "<s>", "</s>", "<pad>"
SPECIAL_TOKENS = [BOS, EOS, PAD]
CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


@dataclass(frozen=True)
class LlamaSpec:
    """Architecture of a synthetic Llama (HF config names in comments)."""

    hidden: int = 256  # hidden_size
    layers: int = 4  # num_hidden_layers
    heads: int = 4  # num_attention_heads
    kv_heads: int = 2  # num_key_value_heads
    ffn: int = 768  # intermediate_size
    vocab: int = 1024  # vocab_size
    ctx: int = 2048  # max_position_embeddings
    rope_theta: float = 10000.0
    rms_eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def n_params(self) -> int:
        """Exact parameter count (untied embeddings, as written by build_hf_llama)."""
        h, kv = self.hidden, self.kv_heads * self.head_dim
        per_layer = h * h * 2 + h * kv * 2 + 3 * h * self.ffn + 2 * h
        return self.layers * per_layer + 2 * self.vocab * h + h


SIZES: dict[str, LlamaSpec] = {
    "tiny": LlamaSpec(),
    # ~152 M params. ffn 2816 = 11 * 256 (K-quant super-blocks), head_dim 64, GQA 4:1.
    "bench": LlamaSpec(hidden=1024, layers=12, heads=16, kv_heads=4, ffn=2816, vocab=8192, ctx=4096),
}

_GGUF_FTYPES = ("F32", "F16", "Q8_0", "Q4_0")


def _spec(size: str, overrides: dict[str, Any]) -> LlamaSpec:
    if size not in SIZES:
        raise CalibrationError(f"unknown tiny-model size {size!r}; use one of {sorted(SIZES)}")
    spec = replace(SIZES[size], **{k: v for k, v in overrides.items() if v is not None})
    if spec.hidden % spec.heads or spec.heads % spec.kv_heads:
        raise CalibrationError(f"hidden={spec.hidden} must divide by heads={spec.heads}, heads by kv_heads")
    for name in ("hidden", "ffn"):
        if getattr(spec, name) % 64:
            raise CalibrationError(f"{name}={getattr(spec, name)} must be a multiple of 64 (256 for K-quants)")
    return spec


# ----------------------------------------------------------------------------------------------
# Tokenizer
# ----------------------------------------------------------------------------------------------

_WORDS = ["the", "a", "an", "of", "to", "in", "and", "is", "on", "for", "with", "as", "by", "at", "from", "that", "this", "it", "be", "are", "was", "were", "model", "memory", "token", "apple", "silicon", "chip", "bandwidth", "prefill", "decode", "cache", "layer", "head", "weight", "quant", "batch", "context", "speed", "fast", "slow", "large", "small", "llama", "metal", "gpu", "cpu", "unified", "ram", "byte", "bit", "float", "half", "matrix", "vector", "attention", "query", "key", "value", "rope", "norm", "gate", "up", "down", "embed", "output", "logits", "sample", "greedy", "prompt", "answer", "question", "hello", "world", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "zero"]


def synthetic_corpus(n_lines: int = 2000, seed: int = SEED) -> list[str]:
    """Deterministic pseudo-English lines (plus digits and punctuation) for tokenizer training."""
    rng = np.random.default_rng(seed)
    punct = [".", ",", "?", "!", ":", ";", " -", "'s", "()"]
    lines = ["The quick brown fox jumps over the lazy dog.", "Hello, world! 0123456789"]
    for _ in range(n_lines):
        n = int(rng.integers(4, 16))
        words = [_WORDS[i] for i in rng.integers(0, len(_WORDS), n)]
        if rng.random() < 0.3:
            words[0] = words[0].capitalize()
        if rng.random() < 0.3:
            words.insert(int(rng.integers(0, n)), str(int(rng.integers(0, 10000))))
        lines.append(" ".join(words) + punct[int(rng.integers(0, len(punct)))])
    return lines


def build_tokenizer(out_dir: str | os.PathLike[str], vocab: int, seed: int = SEED) -> None:
    """Train a byte-level BPE padded to exactly ``vocab`` tokens and write HF tokenizer files."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    out = Path(out_dir)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    n_alphabet = len(pre_tokenizers.ByteLevel.alphabet())
    if vocab < n_alphabet + len(SPECIAL_TOKENS) + 8:
        raise CalibrationError(f"vocab={vocab} too small for a byte-level BPE (need >= {n_alphabet + 11})")
    trainer = trainers.BpeTrainer(
        vocab_size=vocab,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(synthetic_corpus(seed=seed), trainer=trainer)
    missing = vocab - tok.get_vocab_size()
    if missing > 0:
        tok.add_tokens([AddedToken(f"<extra_{i}>", special=False, normalized=False) for i in range(missing)])
    if tok.get_vocab_size() != vocab:
        raise CalibrationError(f"tokenizer has {tok.get_vocab_size()} tokens, expected {vocab}")
    bos_id = tok.token_to_id(BOS)
    tok.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B", special_tokens=[(BOS, bos_id)]
    )
    tok.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "bos_token": BOS,
                "eos_token": EOS,
                "pad_token": PAD,
                "add_bos_token": True,
                "model_max_length": 1 << 20,
                "chat_template": CHAT_TEMPLATE,
            },
            indent=2,
        )
    )
    (out / "special_tokens_map.json").write_text(
        json.dumps({"bos_token": BOS, "eos_token": EOS, "pad_token": PAD}, indent=2)
    )


# ----------------------------------------------------------------------------------------------
# HF folder
# ----------------------------------------------------------------------------------------------


def _hf_weights(spec: LlamaSpec, dtype: np.dtype, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    h, kv, f = spec.hidden, spec.kv_heads * spec.head_dim, spec.ffn

    def mat(rows: int, cols: int) -> np.ndarray:
        # std 0.02 (HF initializer_range) keeps activations finite through many layers.
        return (rng.standard_normal((rows, cols), dtype=np.float32) * 0.02).astype(dtype)

    w: dict[str, np.ndarray] = {"model.embed_tokens.weight": mat(spec.vocab, h)}
    for i in range(spec.layers):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = np.ones(h, dtype)
        w[p + "self_attn.q_proj.weight"] = mat(h, h)
        w[p + "self_attn.k_proj.weight"] = mat(kv, h)
        w[p + "self_attn.v_proj.weight"] = mat(kv, h)
        w[p + "self_attn.o_proj.weight"] = mat(h, h)
        w[p + "post_attention_layernorm.weight"] = np.ones(h, dtype)
        w[p + "mlp.gate_proj.weight"] = mat(f, h)
        w[p + "mlp.up_proj.weight"] = mat(f, h)
        w[p + "mlp.down_proj.weight"] = mat(h, f)
    w["model.norm.weight"] = np.ones(h, dtype)
    w["lm_head.weight"] = mat(spec.vocab, h)
    return w


def build_hf_llama(
    out_dir: str | os.PathLike[str],
    *,
    size: str = "tiny",
    hidden: int | None = None,
    layers: int | None = None,
    heads: int | None = None,
    kv_heads: int | None = None,
    ffn: int | None = None,
    vocab: int | None = None,
    ctx: int | None = None,
    dtype: str = "float32",
    seed: int = SEED,
) -> Path:
    """Write an HF-format LlamaForCausalLM folder with random weights and return its path.

    ``size`` picks a preset from :data:`SIZES` ("tiny" = hidden 256, 4 layers, 4 heads, 2 kv heads,
    ffn 768, vocab 1024, ctx 2048); explicit dims override it. ``dtype`` is "float32" or "float16".
    Same arguments -> byte-identical weights (seed 0). ``out_dir`` is created; it must be empty or absent.
    """
    from safetensors.numpy import save_file

    spec = _spec(size, {"hidden": hidden, "layers": layers, "heads": heads, "kv_heads": kv_heads, "ffn": ffn,
                        "vocab": vocab, "ctx": ctx})
    if dtype not in ("float32", "float16"):
        raise CalibrationError(f"dtype={dtype!r} not supported; use 'float32' or 'float16'")
    out = Path(out_dir)
    if out.exists() and any(out.iterdir()):
        raise CalibrationError(f"{out} is not empty; pass a new folder")
    out.mkdir(parents=True, exist_ok=True)
    build_tokenizer(out, spec.vocab, seed=seed)
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": spec.hidden,
        "num_hidden_layers": spec.layers,
        "num_attention_heads": spec.heads,
        "num_key_value_heads": spec.kv_heads,
        "head_dim": spec.head_dim,
        "intermediate_size": spec.ffn,
        "vocab_size": spec.vocab,
        "max_position_embeddings": spec.ctx,
        "rms_norm_eps": spec.rms_eps,
        "rope_theta": spec.rope_theta,
        "hidden_act": "silu",
        "tie_word_embeddings": False,
        "attention_bias": False,
        "mlp_bias": False,
        "bos_token_id": 0,
        "eos_token_id": 1,
        "pad_token_id": 2,
        "torch_dtype": dtype,
        "initializer_range": 0.02,
        "_tinymodels": {"size": size, "seed": seed, **asdict(spec)},
    }
    (out / "config.json").write_text(json.dumps(config, indent=2))
    (out / "generation_config.json").write_text(json.dumps({"bos_token_id": 0, "eos_token_id": 1}))
    save_file(_hf_weights(spec, np.dtype(dtype), seed), str(out / "model.safetensors"), metadata={"format": "pt"})
    return out


def read_hf_spec(hf_dir: str | os.PathLike[str]) -> LlamaSpec:
    """The LlamaSpec of an HF folder written by :func:`build_hf_llama` (or any plain Llama config)."""
    c = json.loads((Path(hf_dir) / "config.json").read_text())
    return LlamaSpec(
        hidden=c["hidden_size"], layers=c["num_hidden_layers"], heads=c["num_attention_heads"],
        kv_heads=c.get("num_key_value_heads", c["num_attention_heads"]), ffn=c["intermediate_size"],
        vocab=c["vocab_size"], ctx=c.get("max_position_embeddings", 2048),
        rope_theta=c.get("rope_theta", 10000.0), rms_eps=c.get("rms_norm_eps", 1e-5),
    )


# ----------------------------------------------------------------------------------------------
# MLX
# ----------------------------------------------------------------------------------------------


def build_mlx_model(
    hf_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    q_bits: int | None = None,
    q_group_size: int = 64,
) -> Path:
    """Convert an HF folder to an MLX folder (float32; ``q_bits`` 4/8 quantizes, affine, group ``q_group_size``)."""
    import contextlib
    import io

    from mlx_lm import convert

    out = Path(out_dir)
    if out.exists():
        raise CalibrationError(f"{out} already exists; mlx_lm.convert needs a new folder")
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):  # convert() prints [INFO] lines
            convert(
                str(hf_dir), mlx_path=str(out), quantize=q_bits is not None,
                q_bits=q_bits, q_group_size=q_group_size if q_bits else None, dtype="float32",
            )
    except Exception as e:
        raise CalibrationError(f"mlx_lm.convert({hf_dir} -> {out}) failed: {e}") from e
    return out


def mlx_quant_id(q_bits: int | None, q_group_size: int = 64, dtype: str = "f32") -> str:
    """Our quant id for an MLX folder: ``mlx-4bit-g64``, ``mlx-8bit-g32``, ``mlx-f32``..."""
    return f"mlx-{q_bits}bit-g{q_group_size}" if q_bits else f"mlx-{dtype}"


# ----------------------------------------------------------------------------------------------
# GGUF
# ----------------------------------------------------------------------------------------------


def _permute_qk(w: np.ndarray, n_head: int) -> np.ndarray:
    # HF Llama stores q/k for rotate-half RoPE; GGUF llama expects interleaved pairs.
    # Same transform as llama.cpp convert_hf_to_gguf.py LlamaModel.permute.
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def _gguf_vocab(hf_dir: Path) -> tuple[list[str], list[int], list[str]]:
    import gguf

    tj = json.loads((hf_dir / "tokenizer.json").read_text())
    vocab: dict[str, int] = dict(tj["model"]["vocab"])
    special: set[str] = set()
    user: set[str] = set()
    for t in tj.get("added_tokens", []):
        vocab[t["content"]] = t["id"]
        (special if t.get("special") else user).add(t["content"])
    tokens = [""] * len(vocab)
    for s, i in vocab.items():
        tokens[i] = s
    types = [
        gguf.TokenType.CONTROL if s in special
        else gguf.TokenType.USER_DEFINED if s in user
        else gguf.TokenType.NORMAL
        for s in tokens
    ]
    merges = [m if isinstance(m, str) else " ".join(m) for m in tj["model"]["merges"]]
    return tokens, [int(t) for t in types], merges


def add_gguf_vocab(w, hf_dir: str | os.PathLike[str]) -> None:
    """The tiny tokenizer as GGUF metadata: gpt2 BPE (``pre=default``), its tokens, types and merges, bos 0, eos 1."""
    tokens, types, merges = _gguf_vocab(Path(hf_dir))
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(0)
    w.add_eos_token_id(1)


def build_gguf(hf_dir: str | os.PathLike[str], out_path: str | os.PathLike[str], ftype: str = "F32",  # noqa: C901 - one branch per architecture's GGUF keys
               arch: str = "llama", ffn_type: str | None = None) -> Path:
    """Write the HF folder's weights as a llama-arch GGUF (gpt2 BPE vocab, ``pre=default``).

    ``ftype``: "F32", "F16", "Q8_0" or "Q4_0" (2-D weights; norms stay F32). Use :func:`quantize_gguf`
    on the F32 file for K-quants. ``arch="phi3"`` writes the same weights in Phi-3's layout: q/k/v fused into
    blk.N.attn_qkv and gate/up into blk.N.ffn_up (llama.cpp src/models/phi3.cpp; conversion/phi.py keeps HF
    Phi-3's qkv_proj and gate_up_proj fused). ``ffn_type="MXFP4"`` writes the FFN weights already quantized,
    as a checkpoint published in MXFP4 is converted (conversion/gpt_oss.py repack_mxfp4, raw_dtype MXFP4).
    """
    import gguf
    from safetensors.numpy import load_file

    if ftype not in _GGUF_FTYPES:
        raise CalibrationError(f"ftype={ftype!r} not supported by build_gguf; use {_GGUF_FTYPES} or quantize_gguf")
    hf = Path(hf_dir)
    spec = read_hf_spec(hf)
    weights = load_file(str(hf / "model.safetensors"))
    qtype = {"F32": gguf.GGMLQuantizationType.F32, "F16": gguf.GGMLQuantizationType.F16,
             "Q8_0": gguf.GGMLQuantizationType.Q8_0, "Q4_0": gguf.GGMLQuantizationType.Q4_0}[ftype]
    file_type = {"F32": gguf.LlamaFileType.ALL_F32, "F16": gguf.LlamaFileType.MOSTLY_F16,
                 "Q8_0": gguf.LlamaFileType.MOSTLY_Q8_0, "Q4_0": gguf.LlamaFileType.MOSTLY_Q4_0}[ftype]

    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    if arch not in ("llama", "phi3"):
        raise CalibrationError(f"arch={arch!r} not supported by build_gguf; use llama or phi3")
    w = gguf.GGUFWriter(str(out), arch)
    w.add_name(f"tinymodels-{arch}-{spec.n_params}")
    w.add_context_length(spec.ctx)
    w.add_embedding_length(spec.hidden)
    w.add_block_count(spec.layers)
    w.add_feed_forward_length(spec.ffn)
    w.add_head_count(spec.heads)
    w.add_head_count_kv(spec.kv_heads)
    w.add_rope_dimension_count(spec.head_dim)
    w.add_rope_freq_base(spec.rope_theta)
    w.add_layer_norm_rms_eps(spec.rms_eps)
    w.add_vocab_size(spec.vocab)
    w.add_file_type(int(file_type))
    add_gguf_vocab(w, hf)
    w.add_pad_token_id(2)
    w.add_add_bos_token(True)

    names = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    sub = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
           "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
           "post_attention_layernorm": "ffn_norm", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
           "mlp.down_proj": "ffn_down"}
    if arch == "phi3":
        weights = dict(weights)
        for i in range(spec.layers):
            p = f"model.layers.{i}."
            weights[p + "self_attn.qkv_proj.weight"] = np.concatenate(
                [weights.pop(p + f"self_attn.{k}_proj.weight") for k in "qkv"])
            weights[p + "mlp.gate_up_proj.weight"] = np.concatenate(
                [weights.pop(p + "mlp.gate_proj.weight"), weights.pop(p + "mlp.up_proj.weight")])
        sub = {**sub, "self_attn.qkv_proj": "attn_qkv", "mlp.gate_up_proj": "ffn_up"}
    for hf_name, arr in weights.items():
        if hf_name in names:
            name = names[hf_name]
        else:
            _, _, i, rest = hf_name.split(".", 3)
            name = f"blk.{i}.{sub[rest.removesuffix('.weight')]}.weight"
        arr = arr.astype(np.float32)
        if name.endswith("attn_q.weight"):
            arr = _permute_qk(arr, spec.heads)
        elif name.endswith("attn_k.weight"):
            arr = _permute_qk(arr, spec.kv_heads)
        if ffn_type is not None and ".ffn_" in name and arr.ndim == 2:
            native = gguf.GGMLQuantizationType[ffn_type]
            w.add_tensor(name, gguf.quants.quantize(arr, native), raw_dtype=native)
        elif arr.ndim == 1 or qtype == gguf.GGMLQuantizationType.F32:
            w.add_tensor(name, np.ascontiguousarray(arr))
        elif qtype == gguf.GGMLQuantizationType.F16:
            w.add_tensor(name, arr.astype(np.float16))
        else:
            try:
                w.add_tensor(name, gguf.quants.quantize(arr, qtype), raw_dtype=qtype)
            except gguf.quants.QuantError as e:
                raise CalibrationError(f"cannot quantize {name} {arr.shape} to {ftype}: {e}; "
                                       "use dims that are multiples of 256") from e
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return out


def quantize_gguf(src: str | os.PathLike[str], dst: str | os.PathLike[str], preset: str = "Q4_K_M",
                  threads: int | None = None) -> Path:
    """Quantize a GGUF with llama.cpp's own quantizer (``llama-quantize`` if on PATH, else the bindings).

    ``preset`` is a llama.cpp ftype name: Q4_K_M, Q5_K_M, Q6_K, Q8_0, Q4_0, ... (dims must be multiples
    of 256 for K-quants).
    """
    src_p, dst_p = Path(src), Path(dst)
    dst_p.parent.mkdir(parents=True, exist_ok=True)
    nthreads = threads or os.cpu_count() or 1
    exe = shutil.which("llama-quantize")
    if exe:
        proc = subprocess.run([exe, str(src_p), str(dst_p), preset, str(nthreads)],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            raise CalibrationError(f"llama-quantize {src_p.name} -> {preset} failed: {' | '.join(tail)}")
        return dst_p
    try:
        import llama_cpp
    except Exception as e:
        raise CalibrationError(f"cannot quantize to {preset}: no llama-quantize on PATH and llama_cpp "
                               f"unavailable ({e}); set PATH/LLAMA_CPP_LIB_PATH to the llama.cpp build") from e
    ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{preset.upper()}", None)
    if ftype is None:
        raise CalibrationError(f"unknown llama.cpp quant preset {preset!r}")
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = ftype
    params.nthread = nthreads
    rc = llama_cpp.llama_model_quantize(str(src_p).encode(), str(dst_p).encode(), params)
    if rc != 0:
        raise CalibrationError(f"llama_model_quantize {src_p.name} -> {preset} returned {rc}")
    return dst_p


def build_all(root: str | os.PathLike[str], size: str = "tiny", *, mlx: bool = True, gguf: bool = True,
              q4k: bool = True) -> dict[str, Path]:
    """Build the standard calibration set under ``root`` and return {name: path}.

    Names: ``hf``, ``mlx-f32``, ``mlx-4bit-g64``, ``F32``/``F16`` gguf, ``Q8_0``, ``Q4_K_M`` (if q4k and
    a llama.cpp quantizer is available). Existing outputs are reused.
    """
    r = Path(root)
    out: dict[str, Path] = {}
    hf = r / f"{size}-hf"
    if not (hf / "model.safetensors").exists():
        if hf.exists():
            shutil.rmtree(hf)
        build_hf_llama(hf, size=size)
    out["hf"] = hf
    if mlx:
        for q in (None, 4):
            p = r / f"{size}-{mlx_quant_id(q)}"
            if not (p / "config.json").exists():
                if p.exists():
                    shutil.rmtree(p)
                build_mlx_model(hf, p, q_bits=q)
            out[mlx_quant_id(q)] = p
    if gguf:
        base = "F32" if size == "tiny" else "F16"
        for ft in (base, "Q8_0"):
            p = r / f"{size}-{ft}.gguf"
            if not p.exists():
                build_gguf(hf, p, ft)
            out[ft] = p
        if q4k:
            p = r / f"{size}-Q4_K_M.gguf"
            if not p.exists():
                quantize_gguf(out[base], p, "Q4_K_M")
            out["Q4_K_M"] = p
    return out
