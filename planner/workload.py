"""Workloads: how a model is used (prompt and output lengths, concurrent users, latency targets).

Presets live in profiles/workloads/<id>.yaml and are validated by :class:`WorkloadProfile`. A custom workload is
built with :func:`custom_workload`. Lengths may be one value, a weighted distribution ``[[tokens, weight], ...]``,
or ``p50``/``p90``. Targets are checked at the p90 lengths (the slow requests), throughput at the mean.

One rule for every command (plan, predict, recommend, buy, models, serve, the questions and the app): a length is
given as ``12000``, ``1024:0.6,8192:0.4`` or ``p50=..,p90=..`` and read by :func:`parse_length`; where a command
answers at one operating point (plan, predict, models, the single-request TTFT of recommend and buy) the prompt is
its p90 (:func:`prompt_point`: TTFT and targets at the slow requests) and the output its mean, rounded up
(:func:`gen_point`: the throughput). The share of each prompt already in the server's prompt cache
(the cached_prefix input, default planner/points.py DEFAULT_CACHED_PREFIX, the default workload's) is turned into tokens by :func:`cached_tokens` only.
"""


import math
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Annotated, Any, Literal, Self

from pydantic import BaseModel, Field, ValidationError, model_validator

from . import profiles
from ._model import Frozen
from .errors import InputError, UnknownProfileError, render_validation_error
from .format import cached_label
from .points import (
    DEFAULT_GEN,
    DEFAULT_GEN_LENGTHS,
    DEFAULT_LONGEST,
    DEFAULT_PROMPT,
    DEFAULT_PROMPT_LENGTHS,
    DEFAULT_WORKLOAD,
    MAX_TOKENS,
)
from .schema import Runtime

if TYPE_CHECKING:
    from .schema_extra import Workload



def cached_tokens(prompt: int, share: float, runtime: Runtime) -> int:
    """Leading tokens of a ``prompt``-token request that a prefix-caching runtime does not prefill again: the one
    rule behind every TTFT (llama.cpp tools/server/server-context.cpp: n_past = get_common_prefix(...) when
    cache_prompt; mlx_lm/server.py: prompt_cache.fetch_nearest_cache). A runtime without a prefix cache
    (llama-bench style runs) prefills the whole prompt."""
    return int(prompt * share) if getattr(runtime, "prefix_cache", False) else 0


# Length's token counts: one shared constraint, no Field call per field (~0.1 M instructions each at start-up)
OptTokens = Annotated[int | None, Field(ge=0, le=MAX_TOKENS)]
OptPositive = Annotated[float | None, Field(gt=0)]  # Targets' limits, likewise


class Length(BaseModel):
    """A token count: one value, a weighted distribution, or p50/p90."""

    model_config = Frozen
    value: OptTokens = None
    dist: list[tuple[int, float]] | None = Field(None, min_length=1, description="[[tokens, weight], ...]")
    p50: OptTokens = None
    p90: OptTokens = None

    @model_validator(mode="after")
    def _one_form(self) -> Self:
        forms = [self.value is not None, self.dist is not None, self.p50 is not None or self.p90 is not None]
        if sum(forms) != 1:
            raise ValueError("give exactly one of value, dist, or p50/p90")
        if self.dist is not None and any(v < 0 or w <= 0 for v, w in self.dist):
            raise ValueError("dist needs tokens >= 0 and weights > 0")
        if (self.p50 is None) != (self.p90 is None) and forms[2]:
            raise ValueError("give both p50 and p90")
        if self.p50 is not None and self.p90 is not None and self.p90 < self.p50:
            raise ValueError("p90 must be >= p50")
        return self

    def _points(self) -> list[tuple[int, float]]:
        if self.value is not None:
            return [(self.value, 1.0)]
        if self.dist is not None:
            tot = sum(w for _, w in self.dist)
            return sorted((int(v), w / tot) for v, w in self.dist)
        # p50/p90 only: a two-point stand-in, half at p50, half at p90 (mean slightly high; targets use p90)
        assert self.p50 is not None and self.p90 is not None  # _one_form admits no fourth shape
        return [(self.p50, 0.5), (self.p90, 0.5)]

    @property
    def mean(self) -> float:
        return sum(v * w for v, w in self._points())

    @property
    def p90_tokens(self) -> int:
        if self.p90 is not None:
            return self.p90
        acc = 0.0
        for v, w in self._points():
            acc += w
            if acc >= 0.9 - 1e-9:
                return v
        return self._points()[-1][0]

    @property
    def max_tokens(self) -> int:
        return max(v for v, _ in self._points())

    @property
    def spread(self) -> float:
        """max / min over the distribution (1 for a single value)."""
        pts = [v for v, _ in self._points()]
        return max(pts) / max(min(pts), 1)

    def label(self) -> str:
        if self.value is not None:
            return f"{self.value:,}"
        if self.dist is not None:
            return "{" + ", ".join(f"{v:,}:{w:g}" for v, w in self.dist) + "}"
        return f"p50 {self.p50:,} / p90 {self.p90:,}"


class Targets(BaseModel):
    model_config = Frozen
    min_tok_s_per_user: OptPositive = None
    """Decode tokens/s each user must see"""
    max_ttft_s: OptPositive = None
    """Longest acceptable time to first token [s]"""
    max_request_s: OptPositive = None
    """Longest acceptable time per request/turn [s]"""

    def describe(self) -> str:
        """'10 tok/s per user, TTFT ≤ 3 s, ≤ 60 s per request' (the targets that are set)."""
        return ", ".join(x for x in [f"{self.min_tok_s_per_user:g} tok/s per user" if self.min_tok_s_per_user else "",
                                     f"TTFT ≤ {self.max_ttft_s:g} s" if self.max_ttft_s else "",
                                     f"≤ {self.max_request_s:g} s per request" if self.max_request_s else ""] if x)


class WorkloadProfile(BaseModel):
    model_config = Frozen
    id: str
    name: str
    description: str = ""
    prompt_tokens: Length
    gen_tokens: Length
    users: int = Field(1, gt=0, le=4096)
    context_cap: int | None = Field(None, gt=0, le=MAX_TOKENS,
                                    description="KV context reserved per sequence (history); default p90 prompt+gen")
    targets: Targets = Field(default_factory=Targets)
    objective: Literal["latency", "throughput"] = "latency"
    mixed: bool = False
    """Mix of long-prompt and long-output requests (router candidate)"""
    cached_prefix_share: float = Field(0.0, ge=0, lt=1, allow_inf_nan=False, description="Share of each prompt already in the server's "
                                       "prompt cache (a chat's history); only the rest is prefilled")
    sources: list[str] = []
    shrunk_from: tuple[int, int] | None = None
    """(longest prompt, longest output) before the lengths not given shrank into context_cap (shrink_lengths)"""

    # ---- derived
    @property
    def request_tokens(self) -> int:
        """Longest request (max prompt + max output) [tokens]."""
        return self.prompt_tokens.max_tokens + self.gen_tokens.max_tokens

    @property
    def context(self) -> int:
        """Context per sequence the runtime must hold [tokens]."""
        return max(self.context_cap or 0, self.request_tokens)

    @property
    def is_mixed(self) -> bool:
        return self.mixed or self.prompt_tokens.spread >= 8

    def at(self, prompt: int | None = None, gen: int | None = None, users: int | None = None) -> "Workload":
        """The core's single-point Workload (schema.Workload) at given lengths (default: p90 prompt, mean output)."""
        from .schema_extra import Workload

        return Workload(context=self.context, users=users or self.users,
                        prompt_tokens=prompt_point(self.prompt_tokens) if prompt is None else prompt,
                        gen_tokens=gen_point(self.gen_tokens) if gen is None else gen)

    def cached_tokens(self, prompt: int, runtime: Runtime) -> int:
        """Leading tokens of a ``prompt``-token request that a prefix-caching runtime does not prefill again."""
        return cached_tokens(prompt, self.cached_prefix_share, runtime)

    def summary(self) -> str:
        t = self.targets
        tg = [f"≥{t.min_tok_s_per_user:g} tok/s/user" if t.min_tok_s_per_user else "",
              f"TTFT ≤{t.max_ttft_s:g} s" if t.max_ttft_s else "",
              f"≤{t.max_request_s:g} s/request" if t.max_request_s else ""]
        tgt = ", ".join(x for x in tg if x) or "no latency targets"
        cached = f" ({cached_label(self.cached_prefix_share)})"
        return (f"{self.id}: {self.users} user{'s' if self.users > 1 else ''} × prompt {self.prompt_tokens.label()} "
                f"+ output {self.gen_tokens.label()} tokens{cached}, context {self.context:,}; targets: {tgt}")


# --------------------------------------------------------------------------- loading
def workload_ids() -> list[str]:
    return sorted(profiles._index("workloads"))


def load_workload(name: str) -> WorkloadProfile:
    """A preset by id (case-insensitive). Unknown names list close matches."""
    key = profiles.norm(name or "")
    idx = profiles._index("workloads")
    if key not in idx:
        raise UnknownProfileError("workload", name, list(idx), flag="[[workload]]",
                                  hint=f"presets: {', '.join(sorted(idx))}, or give [[prompt]]/[[gen]]")
    return profiles.load_file(idx[key], WorkloadProfile)


def prompt_point(length: Length) -> int:
    """The prompt length a single-point answer uses: the p90 (TTFT and targets at the slow requests)."""
    return length.p90_tokens


def gen_point(length: Length) -> int:
    """The output length a single-point answer uses: the mean, rounded up (throughput)."""
    return math.ceil(length.mean)


def point_in_context(prompt: int, gen: int, context: int) -> tuple[int, int]:
    """(prompt, output) tokens of one request inside a ``context``-token sequence: the prompt leaves room for at
    least one output token, the output is cut at the context (recommend, buy and models answer at this point)."""
    p = max(0, min(prompt, context - 1))
    return p, max(1, min(gen, context - p))


def point_tokens(value: int | str, flag: str, gen: bool = False) -> int:
    """A prompt or answer length (tokens or a distribution) -> the tokens a single-point answer uses."""
    if isinstance(value, bool):
        raise InputError(f"{flag} {value!r}: give tokens (12000), a distribution (1024:0.6,8192:0.4) or p50=...,p90=...")
    if isinstance(value, int):
        return value
    n = parse_length(str(value), flag)
    return gen_point(n) if gen else prompt_point(n)


def check_cached_prefix(share: float, flag: str = "[[cached_prefix]]") -> float:
    """A prompt-cache share from 0 up to (not including) 1."""
    if not 0 <= share < 1:  # nan fails both
        raise InputError(f"{flag} {share:g}: give a share from 0 up to (not including) 1, e.g. 0.75")
    return share


def parse_length(text: str | int, flag: str) -> Length:
    """'12000' | '1024:0.5,4096:0.5' | 'p50=8192,p90=16384' -> Length (the one parser of every command)."""
    text = str(text)
    s = text.replace(" ", "")
    try:
        if s.startswith(("p50=", "p90=")):
            parts = [part.split("=") for part in s.split(",")]
            keys = [k for k, *_ in parts]
            other = sorted(set(keys) - {"p50", "p90"})
            if other or len(keys) != len(set(keys)):
                # a p99= (or a repeated key) was dropped silently: name it
                raise InputError(f"{flag} {text[:60]!r}: give exactly p50=... and p90=... once each"
                                 + (f" ({', '.join(k[:10] for k in other[:3])} is not read)" if other else ""))
            kv = dict(parts)
            return Length(p50=int(kv["p50"]), p90=int(kv["p90"]))
        if ":" in s:
            pts = [(int(a), float(b)) for a, b in (p.split(":") for p in s.split(","))]
            if not all(math.isfinite(w) for _, w in pts):
                raise ValueError("weights must be finite")
            return Length(dist=pts)
        return Length(value=int(float(s)))
    except (ValueError, KeyError, OverflowError) as e:  # int(float('inf')) is an OverflowError
        # a Length rule (p90 below p50, a weight of 0...) says what is wrong; a parse error names its kind
        why = (str(e.errors()[0]["msg"]).removeprefix("Value error, ") if isinstance(e, ValidationError)
               else "not a finite number" if isinstance(e, OverflowError) or "nan" in text.lower()
               else "give both p50= and p90=" if isinstance(e, KeyError) else "not a number")
        shown = text if len(text) <= 80 else text[:60] + "..."  # never echo a 5000-char argument back
        raise InputError(f"{flag} {shown!r}: give tokens (12000), a distribution (1024:0.6,8192:0.4) or "
                         f"p50=...,p90=... ({why})") from None


def _targets(base: Targets, min_tok_s: float | None, max_ttft: float | None, max_request: float | None) -> Targets:
    """The preset's targets with the ones given on the command line (the preset's own object when none is)."""
    if min_tok_s is None and max_ttft is None and max_request is None:
        return base
    t = base.model_dump()
    for k, v, flag in (("min_tok_s_per_user", min_tok_s, "[[min_tok_s]]"), ("max_ttft_s", max_ttft, "[[max_ttft]]"),
                       ("max_request_s", max_request, "[[max_request]]")):
        if v is not None:
            if v <= 0:
                raise InputError(f"{flag} {v:g}: must be positive")
            t[k] = v
    return Targets(**t)


def custom_workload(base: str | None = None, *, prompt: str | None = None, gen: str | None = None,
                    users: int | None = None, context: int | None = None, min_tok_s: float | None = None,
                    max_ttft: float | None = None, max_request: float | None = None,
                    cached_prefix: float | None = None) -> WorkloadProfile:
    """A preset (default: DEFAULT_WORKLOAD, chat) with any field overridden from the command line."""
    wl = load_workload(base or DEFAULT_WORKLOAD)
    upd: dict[str, Any] = {}  # WorkloadProfile fields of several types
    if prompt is not None:
        upd["prompt_tokens"] = parse_length(prompt, "[[prompt]]")
    if gen is not None:
        upd["gen_tokens"] = parse_length(gen, "[[gen]]")
    if users is not None:
        if users <= 0 or users > 4096:
            raise InputError(f"[[users]] {users}: give 1 to 4096 concurrent users")
        upd["users"] = users
    if context is not None:
        if context <= 0:
            raise InputError(f"[[context]] {context}: must be a positive number of tokens")
        upd["context_cap"] = context
    if cached_prefix is not None:
        upd["cached_prefix_share"] = check_cached_prefix(cached_prefix)
    upd["targets"] = _targets(wl.targets, min_tok_s, max_ttft, max_request)
    if context is not None:
        upd |= _shrunk(upd.get("prompt_tokens", wl.prompt_tokens), upd.get("gen_tokens", wl.gen_tokens), context,
                       {k for k, v in (("prompt", prompt), ("gen", gen)) if v is not None})
    if prompt is not None or gen is not None:
        upd["id"] = f"{wl.id}+custom" if base else "custom"
    if _valid_as_is(upd, wl.targets):
        return wl.model_copy(update=upd)
    data = {**wl.model_dump(), **{k: (v.model_dump() if isinstance(v, BaseModel) else v) for k, v in upd.items()}}
    try:
        return WorkloadProfile.model_validate(data)
    except ValidationError as e:
        raise InputError(render_validation_error("workload", e)) from None


def _shrunk(prompt: Length, gen: Length, context: int, given: set[str]) -> dict[str, Any]:
    """custom_workload's updates when the lengths not given shrink into ``context`` (shrink_lengths), else none."""
    shrunk = shrink_lengths(prompt, gen, context, given)
    if shrunk is None:
        return {}
    return {"prompt_tokens": shrunk[0], "gen_tokens": shrunk[1], "shrunk_from": (prompt.max_tokens, gen.max_tokens)}


def shrunk_note(wl: WorkloadProfile) -> str | None:
    """The note of a workload whose lengths shrank into its context (custom_workload), else None."""
    if wl.shrunk_from is None or wl.context_cap is None:
        return None
    return shrink_note(wl.shrunk_from, (wl.prompt_tokens.max_tokens, wl.gen_tokens.max_tokens), wl.context_cap, True)


def _valid_as_is(upd: dict[str, Any], targets: Targets) -> bool:
    """Whether the overrides are values WorkloadProfile's validation would keep as they are: users, context and
    prompt-cache share of their fields' types within the bounds checked above (and the context's upper bound),
    the preset's targets. Then the preset's copy is the validated workload, without building the class's
    validator and serializer for it (~5 M instructions of the plain question's bottom line)."""
    if upd.keys() - {"users", "context_cap", "cached_prefix_share", "targets"} or upd["targets"] is not targets:
        return False
    users, context, share = upd.get("users", 1), upd.get("context_cap", 1), upd.get("cached_prefix_share", 0.0)
    return (type(users) is int and type(context) is int and context <= MAX_TOKENS and type(share) is float
            and math.isfinite(share))


def _mapped(length: Length, fn: Callable[[int], int]) -> Length:
    """``length`` with ``fn`` applied to every request's tokens (each value, each point of a distribution, p50 and
    p90); ``fn`` must keep the order of values (p50 <= p90)."""
    if length.value is not None:
        return Length(value=fn(length.value))
    if length.dist is not None:
        return Length(dist=[(fn(v), w) for v, w in length.dist])
    assert length.p50 is not None and length.p90 is not None  # Length._one_form
    return Length(p50=fn(length.p50), p90=fn(length.p90))


def _shifted(length: Length, tokens: int) -> Length:
    """``length`` with ``tokens`` more in every request."""
    return _mapped(length, lambda v: v + tokens)


# --------------------------------------------------------------------------- a context shorter than the defaults
# A context asked for without the lengths that fill it (a 2,048-token context, no prompt or answer length) is the
# context the answer is at: the lengths not given (the default workload's) shrink into it, every value by one factor,
# floored, at least one token (0 stays 0). Lengths given are kept, and a context shorter than they are is held at
# their length (capacity.hold_request: a server refuses a request longer than its context). One rule for plan,
# cluster, models (shrink_point), recommend, buy, the bottom line and the web app (custom_workload). A point length
# equal to the default counts as not given (a command line cannot tell `2048` typed from the default).
def shrink_lengths(prompt: Length, gen: Length, context: int, given: Collection[str]) -> tuple[Length, Length] | None:
    """(prompt, gen) with the lengths not in ``given`` ("prompt", "gen") shrunk by one factor so that the longest
    request (max prompt + max output) fits ``context``; None when it fits already, when both were given, or when the
    given ones leave no token for the others (then the context holds the request instead)."""
    both = {"prompt": prompt, "gen": gen}
    free = [k for k in both if k not in given]
    kept = sum(v.max_tokens for k, v in both.items() if k in given)
    free_max = sum(both[k].max_tokens for k in free)
    if not free_max or kept + free_max <= context or context - kept < len(free):
        return None
    f = (context - kept) / free_max  # sum of floor(max · f) over the free lengths <= f · free_max = context - kept
    out = {k: _mapped(v, lambda t: max(1, math.floor(t * f)) if t else 0) if k in free else v for k, v in both.items()}
    if kept + sum(out[k].max_tokens for k in free) > context:  # each free length's 1-token minimum did not fit
        return None
    return out["prompt"], out["gen"]


def shrink_point(prompt: int, gen: int, context: int) -> tuple[int, int, str] | None:
    """(prompt, gen, note) of a single-point answer (plan, cluster, models) whose default lengths do not fit
    ``context``: the default workload's distributions (planner/points.py, whose points are DEFAULT_PROMPT and
    DEFAULT_GEN) shrunk by :func:`shrink_lengths` and read at their points, as recommend reads the shrunk preset,
    and the note saying so; None when nothing shrinks."""
    given = {k for k, v, d in (("prompt", prompt, DEFAULT_PROMPT), ("gen", gen, DEFAULT_GEN)) if v != d}
    longest = (prompt if "prompt" in given else DEFAULT_LONGEST[0]) + (gen if "gen" in given else DEFAULT_LONGEST[1])
    if longest <= context:  # nothing to shrink: no length parsed (the plain question's start-up)
        return None
    p = Length(value=prompt) if "prompt" in given else parse_length(DEFAULT_PROMPT_LENGTHS, "[[prompt]]")
    g = Length(value=gen) if "gen" in given else parse_length(DEFAULT_GEN_LENGTHS, "[[gen]]")
    shrunk = shrink_lengths(p, g, context, given)
    if shrunk is None:
        return None
    after = (prompt_point(shrunk[0]), gen_point(shrunk[1]))
    return *after, shrink_note((prompt, gen), after, context)


def shrink_note(before: tuple[int, int], after: tuple[int, int], context: int, longest: bool = False) -> str:
    """The note of a shrink: the request's (prompt, output) before and after (``longest``: a workload's longest
    request), the context it fits."""
    what = "the longest request" if longest else "the request"
    return (f"[[context]] {context:,} is shorter than {what}, {before[0]:,} + {before[1]:,} tokens: the "
            f"lengths not given (the workload's own) shrink to fit it, to {after[0]:,} + {after[1]:,}; give "
            "[[prompt]] and [[gen]] for other lengths")


def with_images(wl: WorkloadProfile, model: str, images: int, size: str | None) -> tuple[WorkloadProfile, list[str]]:
    """``images`` per request: their tokens join every prompt and the reserved context, as planner.setups.with_images
    does to a plan's request (the one rule of plan, predict and recommend: planner/vision.py image_prompt); -> the
    workload and the note saying how many tokens. Without images the workload as it is."""
    from .vision import image_prompt

    tokens, notes = image_prompt(profiles.load_model(model), images, size)
    if not tokens:
        return wl, notes
    upd: dict[str, Any] = {"prompt_tokens": _shifted(wl.prompt_tokens, tokens)}
    if wl.context_cap is not None:
        upd["context_cap"] = wl.context_cap + tokens
    return wl.model_copy(update=upd), notes
