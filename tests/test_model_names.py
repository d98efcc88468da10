"""The names people type for a model resolve offline to the right catalog profile, and a name that names a published
repo of one format pins that format and its preset (issue 31, issue 35).

Rules pinned here:
1. Ollama's ``hf.co/<org>/<repo>:<quant>`` and ``hf.co/<org>/<repo>`` -> the profile whose alias / hf_repo is the repo;
   the tag picks the GGUF preset; unsloth's ``UD-`` dynamic quants map to the preset they are built on, with a note.
2. ``unsloth/<Model>-GGUF`` and ``<org>/<Model>-GGUF:<quant>`` (bartowski's ``<maker>_<Model>`` too).
3. ``mlx-community/<Model>-4bit|6bit|8bit|bf16|mxfp4`` -> that profile, mlx-lm only, at that MLX preset.
4. A dated variant (-2507) resolves to its own profile when its config differs, never silently to the base.
5. A bare Ollama library name (``nemotron-3-nano``, what ``ollama run nemotron-3-nano`` pulls) -> the entry that
   declares ``<library>:latest``, else the only catalog entry with a tag of that library, with a note naming the tag
   it was read as; a library with several entries and no declared default stays unknown, with suggestions.
"""

from __future__ import annotations

import re

import pytest

from planner import profiles as P
from planner.errors import UnknownProfileError
from planner.plan import PlanRequest, plan


# ------------------------------------------------------------------ rule 1: Ollama's hf.co form
@pytest.mark.parametrize(("name", "mid", "quant"), [
    ("hf.co/unsloth/Qwen3-30B-A3B-Instruct-2507-GGUF:Q4_K_M", "qwen3-30b-a3b-instruct-2507", "Q4_K_M"),
    ("hf.co/unsloth/Qwen3-30B-A3B-Instruct-2507-GGUF:q8_0", "qwen3-30b-a3b-instruct-2507", "Q8_0"),
    ("hf.co/unsloth/Qwen3-30B-A3B-Instruct-2507-GGUF", "qwen3-30b-a3b-instruct-2507", None),
    ("https://huggingface.co/Qwen/Qwen3-8B-GGUF", "qwen3-8b", None),
    ("hf.co/bartowski/Qwen_QwQ-32B-GGUF:Q5_K_M", "qwq-32b", "Q5_K_M"),
])
def test_ollama_hf_co_form(name, mid, quant):
    assert P.load_model(name).id == mid
    spec = P.parse_name(name)
    assert spec.weight_format == "gguf"  # Ollama pulls GGUF files only
    assert spec.quant == quant


@pytest.mark.parametrize(("tag", "preset"), [
    ("UD-Q4_K_XL", "Q4_K_M"), ("UD-Q2_K_XL", "Q2_K"), ("UD-Q6_K_XL", "Q6_K"), ("UD-Q8_K_XL", "Q8_0"),
    ("UD-IQ2_XXS", "IQ2_XXS"),
])
def test_unsloth_dynamic_quants_map_to_their_base_preset_with_a_note(tag, preset):
    spec = P.parse_name(f"hf.co/unsloth/Qwen3-Coder-30B-A3B-Instruct-GGUF:{tag}")
    assert P.load_model(spec.name).id == "qwen3-coder-30b-a3b"
    assert spec.quant == preset
    assert any("UD" in n and "larger" in n for n in spec.notes)  # the file is not exactly the preset's size


def test_ollama_latest_tag_names_no_preset():
    spec = P.parse_name("hf.co/unsloth/Qwen3-Coder-30B-A3B-Instruct-GGUF:latest")
    assert (spec.weight_format, spec.quant, spec.notes) == ("gguf", None, [])


def test_an_ollama_latest_tag_is_the_name_without_it():
    # `ollama list` shows every model with its tag (glm-4.7-flash:latest): pasted, it names the same model
    assert P.load_model("glm-4.7-flash:latest").id == P.load_model("glm-4.7-flash").id == "glm-4.7-flash"
    assert P.load_model("gpt-oss:latest").id == P.load_model("gpt-oss").id
    with pytest.raises(UnknownProfileError):  # a bare Ollama family name stays unknown with or without :latest
        P.load_model("gemma4:latest")


def test_a_dated_ollama_tag_with_a_quant_lands_on_the_dated_profile():
    assert P.load_model("qwen3:30b-a3b-instruct-2507-q4_K_M").id == "qwen3-30b-a3b-instruct-2507"
    assert P.parse_name("qwen3:30b-a3b-instruct-2507-q4_K_M").quant == "Q4_K_M"


def test_an_unknown_tag_keeps_the_format_but_no_preset():
    spec = P.parse_name("hf.co/unsloth/Qwen3-Coder-30B-A3B-Instruct-GGUF:Q9_Z")
    assert (spec.weight_format, spec.quant) == ("gguf", None)
    assert any("Q9_Z" in n for n in spec.notes)


# ------------------------------------------------------------------ rule 2: GGUF repos without hf.co
@pytest.mark.parametrize(("name", "mid", "quant"), [
    ("unsloth/Qwen3-30B-A3B-Instruct-2507-GGUF", "qwen3-30b-a3b-instruct-2507", None),
    ("unsloth/Qwen3-30B-A3B-Instruct-2507-GGUF:Q6_K", "qwen3-30b-a3b-instruct-2507", "Q6_K"),
    ("bartowski/Qwen_QwQ-32B-GGUF:IQ4_XS", "qwq-32b", "IQ4_XS"),
    ("Qwen/Qwen3-8B-GGUF:Q8_0", "qwen3-8b", "Q8_0"),
])
def test_gguf_repo_with_or_without_a_tag(name, mid, quant):
    assert P.load_model(name).id == mid
    spec = P.parse_name(name)
    assert (spec.weight_format, spec.quant) == ("gguf", quant)


def test_a_single_preset_gguf_repo_names_its_preset():
    spec = P.parse_name("ggml-org/Qwen3-30B-A3B-Instruct-2507-Q8_0-GGUF")
    assert (spec.weight_format, spec.quant) == ("gguf", "Q8_0")
    assert P.load_model(spec.name).id == "qwen3-30b-a3b-instruct-2507"


def test_an_ollama_library_tag_is_not_split_at_its_colon():
    spec = P.parse_name("qwen3:30b")
    assert spec.weight_format is None and spec.quant is None
    assert P.load_model("qwen3:30b").id == "qwen3-30b-a3b"


def test_an_ollama_tag_with_a_quant_suffix_pins_that_preset():
    spec = P.parse_name("gemma3:27b-it-q4_K_M")
    assert (spec.weight_format, spec.quant) == ("gguf", "Q4_K_M")
    assert P.load_model("gemma3:27b-it-q4_K_M").id == "gemma-3-27b"


# ------------------------------------------------------------------ rule 3: MLX repos
@pytest.mark.parametrize(("suffix", "preset"), [
    ("4bit", "mlx-4bit-g64"),  # mlx_lm.convert's affine default: group size 64 (mlx_lm/utils.py quantize_model)
    ("6bit", "mlx-6bit-g64"),
    ("8bit", "mlx-8bit-g64"),
    ("bf16", "mlx-bf16"),
    ("mxfp4", "mlx-mxfp4"),
])
def test_mlx_community_suffix_is_the_mlx_preset(suffix, preset):
    spec = P.parse_name(f"mlx-community/Qwen3-30B-A3B-{suffix}")
    assert (spec.weight_format, spec.quant) == ("mlx", preset)
    assert P.load_model(spec.name).id == "qwen3-30b-a3b"


def test_an_mlx_group_size_suffix_picks_that_group():
    spec = P.parse_name("mlx-community/GLM-4.7-8bit-gs32")
    assert (spec.weight_format, spec.quant) == ("mlx", "mlx-8bit-g32")
    assert P.load_model(spec.name).id == "glm-4.7"


def test_lmstudio_mlx_repo():
    spec = P.parse_name("lmstudio-community/Qwen3-Coder-30B-A3B-Instruct-MLX-4bit")
    assert (spec.weight_format, spec.quant) == ("mlx", "mlx-4bit-g64")


@pytest.mark.parametrize("name", ["nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "unsloth/Qwen3-30B-A3B-bnb-4bit"])
def test_safetensors_and_bitsandbytes_repos_are_not_mlx(name):
    assert P.parse_name(name).weight_format is None


def _options(model: str, **kw):
    return plan(PlanRequest(model=model, ram=64, **kw)).options


def test_an_mlx_repo_plans_its_own_quant_on_mlx_only():
    """issue 35: --model mlx-community/Qwen3-30B-A3B-4bit answered for 13 quants x 2 runtimes."""
    opts = _options("mlx-community/Qwen3-30B-A3B-4bit")
    assert {(o.runtime, o.quant) for o in opts} == {("mlx-lm", "mlx-4bit-g64")}
    p = plan(PlanRequest(model="mlx-community/Qwen3-30B-A3B-4bit", ram=64))
    assert any("mlx-4bit-g64" in n for n in p.notes)


def test_a_gguf_name_plans_its_preset_on_gguf_runtimes_only():
    opts = _options("hf.co/unsloth/Qwen3-30B-A3B-Instruct-2507-GGUF:Q4_K_M", runtimes=["llama.cpp", "mlx-lm", "ollama"])
    assert {o.runtime for o in opts} == {"llama.cpp", "ollama"}
    assert {o.quant for o in opts} == {"Q4_K_M"}


def test_quant_flag_wins_over_the_name():
    opts = _options("mlx-community/Qwen3-30B-A3B-4bit", quants=["mlx-8bit-g64"])
    assert {(o.runtime, o.quant) for o in opts} == {("mlx-lm", "mlx-8bit-g64")}


def test_a_plain_catalog_id_still_compares_every_runtime_and_quant():
    opts = _options("qwen3-30b-a3b")
    assert {o.runtime for o in opts} == {"llama.cpp", "mlx-lm"}
    assert len({o.quant for o in opts}) > 2


# ------------------------------------------------------------------ rule 4: dated variants
def test_instruct_2507_has_its_own_profile_with_its_own_context():
    m = P.load_model("Qwen/Qwen3-30B-A3B-Instruct-2507")
    base = P.load_model("Qwen/Qwen3-30B-A3B")
    assert m.id == "qwen3-30b-a3b-instruct-2507" and base.id == "qwen3-30b-a3b"
    assert m.config.max_position_embeddings == 262_144
    assert base.config.max_position_embeddings == 40_960


@pytest.mark.parametrize("name", [
    "mistralai/Magistral-Small-2509",  # no profile (config not read): unknown, not Magistral-Small-2506's profile
    "mlx-community/Ministral-3-8B-Instruct-2512-4bit",  # not the 3B 2512 profile, nor Ministral-8B-Instruct-2410
])
def test_a_dated_variant_without_a_profile_is_unknown_not_the_base(name):
    with pytest.raises(UnknownProfileError):
        P.load_model(name)


@pytest.mark.parametrize("name, stem, base", [
    ("Qwen/Qwen3-4B-Thinking-2507", "qwen3-4b-thinking-2507", "Qwen/Qwen3-4B"),
    ("mlx-community/Qwen3-235B-A22B-Thinking-2507-4bit", "qwen3-235b-a22b-thinking-2507", "Qwen/Qwen3-235B-A22B"),
])
def test_thinking_2507_resolves_to_its_own_profile_not_the_base(name, stem, base):
    m = P.load_model(name)
    assert m.id == stem
    assert m.config.max_position_embeddings == 262_144
    assert P.load_model(base).config.max_position_embeddings == 40_960


def test_decoration_stripping_never_drops_a_date():
    assert P._strip_decorations("Qwen/Qwen3-235B-A22B-Instruct-2507") == "qwen3-235b-a22b-instruct-2507"
    assert P._strip_decorations("mistralai/Foo-24B-Instruct-2512") == "foo-24b-instruct-2512"
    assert P._strip_decorations("meta-llama/Meta-Llama-3.1-8B-Instruct") == "llama-3.1-8b"


DATED = re.compile(r"-(\d{4})(?:$|-)")
# dated checkpoints the catalog already files under one profile because their config.json is the same: DeepSeek
# V3-0324 and R1-0528 under "DeepSeek V3 / R1", Devstral Small 2505 with 2507, Mistral Large 2407 with 2411
SAME_CONFIG = {"deepseek-v3": {"0324", "0528"}, "devstral-small-24b": {"2505"}, "mistral-large-123b": {"2407"}}


def test_a_dated_alias_names_its_own_checkpoint():
    """An alias with a -YYMM/-MMDD date must belong to the profile of that dated checkpoint (the date in its id, name
    or repo), unless the profile documents an identical config: anything else is a dated variant silently mapped to
    a differently-configured base (as Qwen3-30B-A3B-Instruct-2507 was, with 40,960 instead of 262,144 tokens)."""
    bad = []
    for m in P.all_models():
        own = " ".join([m.id, m.name, m.hf_repo or ""])
        for n in m.aliases:
            bad += [(n, m.id) for d in DATED.findall(n) if d not in own and d not in SAME_CONFIG.get(m.id, set())]
    assert bad == []


# ------------------------------------------------------------------ names not in the catalog go to the Hub reader
@pytest.mark.parametrize(("name", "repo", "tag"), [
    ("hf.co/someone/Some-Model-GGUF:Q4_K_M", "someone/Some-Model-GGUF", "Q4_K_M"),
    ("https://huggingface.co/someone/Some-Model", "someone/Some-Model", None),
    ("someone/Some-Model-GGUF:UD-Q4_K_XL", "someone/Some-Model-GGUF", "UD-Q4_K_XL"),
    ("someone/Some-Model", "someone/Some-Model", None),
    ("qwen3:30b", None, None),
])
def test_hub_repo_of(name, repo, tag):
    from sources import hub_repo_of

    assert hub_repo_of(name) == (repo, tag)


def test_an_unknown_hf_co_name_is_read_from_the_hub_with_its_tag(monkeypatch):
    import sources
    import sources.hub

    seen = {}

    def fake(repo, file=None, quant=None):
        seen.update(repo=repo, quant=quant)
        raise sources.HubError("offline test")

    monkeypatch.setattr(sources.hub, "resolve_hub", fake)
    with pytest.raises(sources.HubError):
        sources.resolve_model("hf.co/someone/Some-Model-GGUF:Q4_K_M")
    assert seen == {"repo": "someone/Some-Model-GGUF", "quant": "Q4_K_M"}


# names that hold the words each name expression needs in every case and place, and names that hold none
_PARTS = ["Qwen3-8B", "llama-3.3-70b", "-4bit", "-8BIT-gs32", "_6bit_g32", "-bf16", "-FP16", "-MXFP4", "-nvfp4",
          "-mxfp8", "-MLX", "-UD-MLX-4bit", "-ud-mlx", "-GGUF", ".gguf", "_gguf", "-Q4_K_M", ":Q8_0", ":latest",
          ":27b-it-q4_K_M", "-bnb-4bit", "mlx-community/", "unsloth/", "hf.co/", "HTTPS://huggingface.co/",
          "www.hf.co/", "ollama.com/library/", "4bıt", "-4bİt", "ſ", "-K", " ", "/"]


def _names() -> list[str]:
    spelled = [n for m in P.all_models() for n in (m.id, m.name, *m.aliases, m.hf_repo or "")]
    return spelled + _PARTS + [a + b for a in _PARTS for b in _PARTS] + [a + b + c for a in _PARTS[:12]
                                                                         for b in _PARTS[22:] for c in _PARTS[:22]]


def test_names_without_the_words_an_expression_needs_parse_as_when_searched(monkeypatch):
    # parse_name searches a name with its expressions only when it holds a word each needs (profiles._holds: the
    # expressions are not even compiled for a catalog id); searching every name gives the same answers
    assert not P._holds("llama-3.3-70b", P._FORMAT_WORDS) and P._holds("Qwen3-4bıt", ("bit",))
    names = _names()
    gated = [P.parse_name(n) for n in names]
    monkeypatch.setattr(P, "_holds", lambda text, words: True)
    assert [P.parse_name(n) for n in names] == gated
    assert any(g.weight_format == "mlx" for g in gated) and any(g.weight_format == "gguf" for g in gated)


# ------------------------------------------------------------------ rule 5: bare Ollama library names
def _ollama_names() -> list[tuple[str, str]]:
    """(model id, declared Ollama name) of every catalog entry: its aliases of the form <library>:<tag>."""
    return [(m, a) for m in P.model_ids() for a in P.load_model(m).aliases if ":" in a and "/" not in a]


def test_nemotron_3_nano_is_ollamas_library_name_of_the_30b_a3b():
    """`plan --model nemotron-3-nano` said "unknown model" though the catalog's only nemotron-3-nano:<tag> is the
    30B-A3B (its alias nemotron-3-nano:30b); :latest is the same name (Ollama's default tag)."""
    assert P.load_model("nemotron-3-nano").id == P.load_model("nemotron-3-nano:latest").id == "nemotron-3-nano-30b-a3b"
    note = P.library_note("nemotron-3-nano")
    assert note is not None and "nemotron-3-nano:30b" in note and "[[model]]" in note
    assert P.library_note("nemotron-3-nano-30b-a3b") is None and P.library_note("nemotron-3-nano:30b") is None


@pytest.mark.parametrize(("mid", "name"), _ollama_names())
def test_every_declared_ollama_name_resolves_to_its_entry(mid, name):
    assert P.load_model(name).id == mid


@pytest.mark.parametrize("library", sorted({a.split(":", 1)[0] for _, a in _ollama_names()}))
def test_every_bare_ollama_library_name_resolves_to_one_of_its_entries_or_is_unknown(library):
    """A bare library name lands on an entry that declares a tag of that library, never elsewhere; when exactly one
    entry declares one, it resolves (a note names the tag unless an alias names the library itself); several
    entries without a declared default stay unknown (a refusal with suggestions, never a guess)."""
    entries = {m for m, a in _ollama_names() if a.split(":", 1)[0] == library}
    try:
        got = P.load_model(library).id
    except UnknownProfileError as e:
        assert len(entries) > 1 and e.suggestions
        return
    assert got in entries
    if len(entries) == 1 and P.library_note(library) is None:
        assert P.norm(library) in P._alias_map()  # an alias of its own: a known default, no note needed


@pytest.mark.parametrize("library", sorted({a.split(":", 1)[0] for _, a in _ollama_names()}))
def test_a_bare_library_name_read_as_one_of_several_sizes_says_which_and_names_the_others(library):
    """`plan --model deepseek-r1` is the 671B model here while `ollama pull deepseek-r1` fetches a distill: whenever a
    bare library name resolves and its library holds other catalog entries, the note names the entry it was read as
    and every other tag, so no size is picked silently; a library of one entry only says which tag it was read as."""
    entries = {m for m, a in _ollama_names() if a.split(":", 1)[0] == library}
    try:
        got = P.load_model(library).id
    except UnknownProfileError:
        return
    note = P.library_note(library)
    others = {m: a for m, a in _ollama_names() if a.split(":", 1)[0] == library and m != got}
    if len(entries) > 1:
        assert note is not None and got in note
        for m in others:
            assert P._ollama_libraries()[P.norm(library)][m] in note
    else:
        assert note is None or "also holds" not in note
    assert P.library_note(f"{library}:8b") is None  # a tagged name pins its size: nothing to say


def test_deepseek_r1_bare_is_read_as_the_671b_model_and_points_at_the_distills():
    note = P.library_note("deepseek-r1")
    assert note is not None and "deepseek-v3" in note
    assert "deepseek-r1:8b" in note and "deepseek-r1:70b" in note
    assert note.index("deepseek-r1:1.5b") < note.index("deepseek-r1:14b")  # by size, not by text


def test_the_latest_tag_is_the_bare_name_unless_the_entry_declares_it():
    """`deepseek-r1:latest` resolves as the bare name does (the 671B model here) and was answered without a word;
    it says what `deepseek-r1` says, under the name asked. An entry that declares the library's latest tag
    (qwen3.5-9b: 'qwen3.5:latest') is what `ollama pull` fetches: nothing to say."""
    assert P.load_model("deepseek-r1:latest").id == P.load_model("deepseek-r1").id
    note = P.library_note("deepseek-r1:latest")
    assert note is not None and note.startswith("deepseek-r1:latest: read as") and "deepseek-r1:70b" in note
    assert note.split(": read as", 1)[1] == P.library_note("deepseek-r1").split(": read as", 1)[1]
    assert "qwen3.5:latest" in P.load_model("qwen3.5:latest").aliases and P.library_note("qwen3.5:latest") is None
    assert P.library_note("qwen3.5") is not None  # the bare name still lists the other sizes


def test_no_catalog_id_is_a_library_name_with_other_entries():
    """library_note answers a catalog id at once (None) without reading every profile for the library map: sound only
    while no id is a library name that holds other entries (deepseek-v3 is one whose library is itself), which this
    checks."""
    libs = P._ollama_libraries()
    assert not [i for i in P.model_ids() if set(libs.get(P.norm(i), {})) - {i}]
