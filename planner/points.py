"""The workload's lengths and prompt-cache share as request fields: one spelling, one parser and one help text in
every command. Split from planner/requests.py so that the plain question (planner.plan imports PromptPoint and GenPoint)
does not define the request classes of the other commands; planner.requests re-exports every name."""

from typing import Annotated

from pydantic import BeforeValidator, Field, WithJsonSchema

# The workload's lengths and prompt-cache share: one spelling, one parser (planner/workload.py parse_length) and
# one help text in every command. A single-point answer reads a distribution at its p90 prompt (TTFT, targets)
# and its mean output (throughput): planner/workload.py prompt_point / gen_point.
LENGTH_FORMS = "12000 | 1024:0.6,8192:0.4 | p50=..,p90=.."

# ---- the default workload: one definition for every command (plan, predict, models, recommend, buy, serve,
# cluster, the app and the agent questions) when no lengths or prompt-cache share are given.
# It is the chat preset (profiles/workloads/chat.yaml: its lengths, targets and cached share, with their sources),
# the better user default because a Mac runs a local model mostly as an interactive assistant, and because
# recommend, buy, the app and plan's bottom line already answer for it. The other candidates were benchmark
# conventions, not uses: 512/128 is llama-bench's pp512/tg128, 1024/256 with a cold prompt a round number.
# A chat's turn after the first finds its history in the server's prompt cache (chat.yaml: 75 % cached).
# tests/test_workload.py::test_the_default_workload_is_the_chat_presets_point checks these against chat.yaml.
DEFAULT_WORKLOAD = "chat"
DEFAULT_PROMPT_LENGTHS = "512:0.4,1024:0.4,2048:0.2"   # chat.yaml prompt_tokens
DEFAULT_GEN_LENGTHS = "500:0.5,1000:0.5"               # chat.yaml gen_tokens
DEFAULT_PROMPT = 2048   # its single point: the p90 prompt (workload.prompt_point)
DEFAULT_GEN = 750       # and the mean output (workload.gen_point)
DEFAULT_LONGEST = (2048, 1000)  # its longest prompt and answer (Length.max_tokens): no shorter context shrinks them
DEFAULT_CACHED_PREFIX = 0.75  # chat.yaml cached_prefix_share
DEFAULT_USERS = 1             # chat.yaml users
DEFAULT_READ_TOK_S = 5.3      # chat.yaml targets.min_tok_s_per_user: the reading rate (Brysbaert 2019, 238 words/min)


def default_rate_per_s() -> float:
    """The default workload's request rate [1/s] (`plan serve` without a rate): its users, each asking again once
    the mean answer is read at the reading rate, so DEFAULT_USERS × DEFAULT_READ_TOK_S / DEFAULT_GEN (1 × 5.3 / 750
    = 0.42/min). Typing the next message is left out, so it is the most such users ask."""
    return DEFAULT_USERS * DEFAULT_READ_TOK_S / DEFAULT_GEN


def default_rate_text() -> str:
    """The default rate's arithmetic, as the serve header states it."""
    pause = DEFAULT_GEN / DEFAULT_READ_TOK_S
    return (f"rate: the default workload's ({DEFAULT_WORKLOAD}) {DEFAULT_USERS} user, asking again once each "
            f"{DEFAULT_GEN:,}-token answer is read at {DEFAULT_READ_TOK_S:g} tok/s ({pause:.0f} s) = "
            f"{default_rate_per_s() * 60:.3g} requests/min")


DEFAULT_RATE_NOTE = (f"; default: the default workload's ({DEFAULT_WORKLOAD}) {DEFAULT_USERS} user reading each "
                     f"answer, {default_rate_per_s() * 60:.3g}/min")
PROMPT_HELP = f"Prompt tokens: {LENGTH_FORMS}"
GEN_HELP = "Generated tokens, same forms as [[prompt]]"
POINT_NOTE = " (a distribution is answered at its p90 prompt and its mean output)"
CACHED_PREFIX_HELP = ("Share of each prompt already in the server's prompt cache (a chat's earlier turns), 0 up to 1: "
                      "only the rest is prefilled (0: the whole prompt, a first turn)")
RATE_HELP = "Mean request rate: 20/min, 0.5/s, 300/h"
TokenDist = Annotated[str | None, Field(description=PROMPT_HELP + " (targets at the p90)")]
GenDist = Annotated[str | None, Field(description=GEN_HELP + " (throughput at the mean)")]
CachedPrefix = Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False, description=CACHED_PREFIX_HELP)]
# a workload command: unset takes the preset's share (profiles/workloads/*.yaml cached_prefix_share), stated with
# every TTFT it reports
PRESET_CACHED_NOTE = "; default: the workload preset's (chat 0.75, the other presets 0)"
DEFAULT_CACHED_NOTE = f"; default: {DEFAULT_CACHED_PREFIX:g}, the default workload's ({DEFAULT_WORKLOAD})"
PresetCachedPrefix = Annotated[float | None, Field(ge=0, lt=1, allow_inf_nan=False, description=CACHED_PREFIX_HELP + PRESET_CACHED_NOTE)]


# The KV cache type and the images per request, declared once for plan, predict and recommend (their [[kv_type]],
# [[images]] and [[image_size]]: one help text and one range; images add their tokens to the prompt and the context)
KvType = Annotated[str | None, Field(description="KV cache type: f16/q8_0/q4_0 (llama.cpp), bf16/kv8/kv4 (mlx-lm)")]
Images = Annotated[int, Field(ge=0, le=256, description="Images per request (vision models): adds the projector and "
                              "the image tokens to context and prompt")]
ImageSize = Annotated[str | None, Field(description="Image size WxH in pixels where the model's token count depends "
                                        "on it (default 1024x1024)")]


def _prompt_point(v: object) -> object:
    from .workload import point_tokens

    return point_tokens(v, "[[prompt]]") if isinstance(v, str) else v


def _gen_point(v: object) -> object:
    from .workload import point_tokens

    return point_tokens(v, "[[gen]]", gen=True) if isinstance(v, str) else v


MAX_TOKENS = 10_000_000  # the most tokens any length, context or point input accepts

# One operating point (plan, predict, models): tokens, or a distribution read at its p90 prompt / mean output
# an agent's input schema (the MCP/HTTP questions) shows both forms; the answer echoes the tokens used
_POINT_INPUT = WithJsonSchema({"anyOf": [{"type": "integer", "minimum": 0, "maximum": MAX_TOKENS},
                                         {"type": "string", "examples": ["12000", "1024:0.6,8192:0.4",
                                                                         "p50=1500,p90=6000"]}]}, mode="validation")
_TOKENS = Annotated[int, Field(ge=0, le=MAX_TOKENS)]
PromptPoint = Annotated[_TOKENS, BeforeValidator(_prompt_point), _POINT_INPUT,
                        Field(description=PROMPT_HELP + POINT_NOTE)]
GenPoint = Annotated[_TOKENS, BeforeValidator(_gen_point), _POINT_INPUT, Field(description=GEN_HELP + POINT_NOTE)]
