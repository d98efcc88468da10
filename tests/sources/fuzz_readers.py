"""Property fuzzers of every reader with generated hostile inputs: declared counts up to 2^64, nesting, wrong types.

Not collected by pytest on its own (no test_ prefix): tests/sources/test_fuzz_bounded.py runs ``run_all`` in a child
capped at its own idle address space + 200 MB and a time cap, so a bomb fails the test instead of the machine.
Each property: the reader answers, or raises a PlannerError of one line; nothing else escapes.
"""

from __future__ import annotations

import contextlib
import io
import json
import struct
import sys
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.errors import PlannerError

SETTINGS = settings(max_examples=200, deadline=None, database=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))
COUNTS = st.one_of(st.integers(0, 16), st.sampled_from([2**20, 2**21 + 1, 2**24, 2**31, 2**32 - 1, 2**62, 2**64 - 1]))
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
                    st.text("ab.-\u00e9\x00", max_size=8))
JSON_VALUES = st.recursive(SCALARS, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text("ab", max_size=4), c, max_size=3),
                           max_leaves=12)


def _ok(fn, *a):
    try:
        fn(*a)
    except PlannerError as e:
        assert "\n" not in str(e), str(e)


def _u64(n: int) -> bytes:
    return struct.pack("<Q", n)


@st.composite
def gguf_blobs(draw) -> bytes:
    """A GGUF header whose declared counts (tensors, keys, array items, string bytes, dims) are drawn hostile."""
    n_t, n_kv = draw(COUNTS), draw(COUNTS)
    out = b"GGUF" + struct.pack("<I", draw(st.sampled_from([3, 2, 1, 2**31]))) + _u64(n_t) + _u64(n_kv)
    keys = [b"general.architecture", b"llama.block_count", b"llama.embedding_length", b"llama.attention.head_count",
            b"llama.vocab_size", b"llama.attention.sliding_window", b"tokenizer.ggml.tokens", b"x"]
    for _ in range(min(n_kv, 8)):
        k = draw(st.sampled_from(keys))
        out += _u64(draw(st.sampled_from([len(k), len(k), 2**40]))) + k
        t = draw(st.sampled_from([4, 8, 9, 10, 12, 13, 7]))
        out += struct.pack("<I", t)
        if t == 8:
            s = draw(st.sampled_from([b"llama", b"gemma3", b"mamba", b""]))
            out += _u64(draw(st.sampled_from([len(s), 2**63]))) + s
        elif t == 9:
            out += struct.pack("<I", draw(st.sampled_from([4, 8, 9, 0]))) + _u64(draw(COUNTS))
            out += draw(st.binary(max_size=64))
        elif t in (4, 7):
            out += struct.pack("<I", draw(st.sampled_from([0, 1, 2, 64, 10**9, 2**32 - 1])))
        else:
            out += draw(st.binary(min_size=8, max_size=8))
    for _ in range(min(n_t, 4)):
        name = b"token_embd.weight"
        nd = draw(st.sampled_from([1, 2, 8, 9, 2**31]))
        out += _u64(len(name)) + name + struct.pack("<I", nd)
        out += b"".join(_u64(draw(COUNTS)) for _ in range(min(nd, 4)))
        out += struct.pack("<I", draw(st.sampled_from([0, 1, 12, 99]))) + _u64(0)
    return out + draw(st.binary(max_size=32))


@SETTINGS
@given(blob=gguf_blobs())
def fuzz_gguf_header(blob: bytes) -> None:
    from sources import resolve_model
    from sources.ggufmeta import NeedMore, parse_header, read_header

    with contextlib.suppress(PlannerError, NeedMore):
        parse_header(blob, "x.gguf")
    _ok(read_header, io.BytesIO(blob), "x.gguf")
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "x.gguf"
        p.write_bytes(blob)
        _ok(resolve_model, str(p))


CONFIG_KEYS = ["model_type", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
               "intermediate_size", "vocab_size", "sliding_window", "sliding_window_pattern", "layer_types",
               "head_dim", "num_local_experts", "num_experts_per_tok", "text_config", "quantization",
               "max_position_embeddings", "full_attention_interval", "use_sliding_window"]
BASE = {"model_type": "gemma3_text", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 256, "sliding_window": 16}


@SETTINGS
@given(over=st.dictionaries(st.sampled_from(CONFIG_KEYS),
                            st.one_of(JSON_VALUES, st.sampled_from([10**9, 2**63, -1, 0, "six", "mixtral"])),
                            max_size=5),
       depth=st.sampled_from([0, 0, 63, 65, 5000]))
def fuzz_config(over: dict, depth: int) -> None:
    from sources import resolve_model

    raw = json.dumps({**BASE, **over}, allow_nan=True)
    if depth:
        raw = raw[:-1] + ', "deep": ' + "[" * depth + "]" * depth + "}"
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "config.json").write_text(raw)
        _ok(resolve_model, d)


@SETTINGS
@given(entries=st.dictionaries(st.text("abw.", max_size=6), st.one_of(
    JSON_VALUES,
    st.fixed_dictionaries({"dtype": st.sampled_from(["F16", "U32", 3]),
                           "shape": st.lists(st.one_of(st.integers(-2**65, 2**65), st.floats(), st.text("a1", max_size=2)),
                                             max_size=4),
                           "data_offsets": st.lists(st.integers(-5, 2**64), min_size=0, max_size=3)})), max_size=4),
       declared=st.one_of(st.none(), COUNTS))
def fuzz_safetensors(entries: dict, declared: int | None) -> None:
    from sources import resolve_model

    hdr = json.dumps(entries).encode()
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "config.json").write_text(json.dumps({**BASE, "model_type": "llama"}))
        n = len(hdr) if declared is None else declared
        (Path(d) / "model.safetensors").write_bytes(_u64(n) + hdr)
        _ok(resolve_model, d)


PROPERTIES = [fuzz_gguf_header, fuzz_config, fuzz_safetensors]


def warm_up() -> None:
    """Imports and one valid read of each kind: the child's idle address space that the cap is measured from."""
    import gguf.constants  # noqa: F401

    from sources import resolve_model

    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "config.json").write_text(json.dumps(BASE))
        resolve_model(d)
    _ok(resolve_model, __file__.replace(".py", ".gguf"))


def run_all() -> None:
    for prop in PROPERTIES:
        prop()
        print(f"ok {prop.__name__}", file=sys.stderr)


if __name__ == "__main__":
    run_all()
