"""Peak memory, limits and speed of a LoRA / DoRA / full fine-tune with mlx-lm (``mlx_lm.lora``).

What the trainer holds during one optimizer step (mlx-lm 0.32.2, mlx_lm/lora.py ``train_model`` and
mlx_lm/tuner/trainer.py ``train``)::

    weights      the base model in its format (QLoRA = LoRA on a quantized base; mlx_lm.load keeps it quantized)
    adapters     trainable parameters: LoRA A (in x r) and B (r x out) on every linear of the trained
                 blocks (the last ones: mlx_lm.lora --num-layers; tuner/utils.py linear_to_lora_layers; float32: tuner/lora.py LoRALinear.__init__ makes
                 them with mx.random.uniform / mx.zeros); DoRA adds a magnitude vector per output (tuner/dora.py);
                 full fine-tuning unfreezes the blocks' own weights (model dtype)
    gradients    one per trainable parameter (nn.value_and_grad)
    optimizer    Adam / AdamW: two moments per trainable parameter (mlx/optimizers Adam.init_single: m, v)
    activations  what the backward pass needs from the forward of each trained block, per token: about
                 a_hq x (hidden + q + 2 kv) + a_f x ffn values in the activation dtype; blocks below the first
                 trained one leave about a_frozen hidden states. With gradient checkpointing (trainer.py
                 grad_checkpoint: mx.checkpoint on each block call) a block keeps only its input and is rebuilt,
                 with its gradients, during its backward.
    transient    the peak of the backward on top of that: the logits with their log-softmax and gradient
                 (B x S x vocab), and one block's attention scores and probabilities with their gradients
                 (B x heads x S x S: the SDPA vjp materialises them); with checkpointing the larger of the logits
                 phase and the rebuilt-block phase.

The coefficients are fitted to mx.get_peak_memory() of real mlx_lm.lora runs (calibration/finetune_fit.py) and
checked on model shapes the fit never saw (tests/calibration/test_finetune_runs.py, docs/model-facts.md §10).

Speed: a training step costs forward + backward ≈ 2 + 4 = 6 FLOP per parameter per token on the trained path
(backward = gradients w.r.t. activations and weights, each as costly as the forward; LoRA's weight gradients are
r/hidden of that and are ignored) and 2 per parameter per token below it (Kaplan et al. 2020, "Scaling Laws",
§2.1: C ≈ 6N per token), plus the weight reads. The achieved fraction of peak FLOPS is the runtime's prefill
efficiency (the same matmul kernels) times the profile's train_efficiency (a prior).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, Field, model_validator

from . import architecture as arch
from . import capacity, profiles
from ._model import Frozen, one_spelling
from .deployment import name_quant, resolve_mac, resolve_quant
from .errors import InputError, ProfileError
from .memory import mlx_weights
from .results import Fit, WiredLimit
from .schema import Chip, MlxRuntime, ModelConfig, ModelProfile, QuantFormat, Runtime
from .units import MiB

# The activation coefficients (copies of a width per token) live in profiles/finetune/mlx-lm.yaml, fitted by
# calibration/finetune_fit.py to real mlx_lm.lora runs, or a user calibration (`plan calibrate`); read
# with profiles.load_finetune(). Their meaning: docs/model-facts.md §10.
ADAM_MOMENTS = 2     # mlx/optimizers/optimizers.py Adam.init_single: state["m"], state["v"]
LORA_BYTES = 4       # float32 adapters (tuner/lora.py: mx.random.uniform / mx.zeros default dtype)
LINEAR_GROUPS = ("attention", "ffn", "experts", "shared_experts", "router")


class FinetuneRequest(BaseModel):
    """A fine-tuning question; field descriptions double as --help text."""

    model_config = Frozen
    model: str = Field(description="Catalog id, alias or HF repo id (e.g. llama-3.1-8b)")
    ram: float | None = Field(None, gt=0, allow_inf_nan=False, validation_alias=AliasChoices("ram", "ram_gb"),
                              description="Unified memory of the Mac [GB]; default: the chip's largest")
    chip: str | None = Field(None, description="Apple chip, e.g. 'M4 Pro' (needed for speed answers)")
    gpu_cores: int | None = Field(None, gt=0, description="GPU cores, to pick a binned chip")
    quant: str | None = Field(None, description="Base weights: 4bit / 8bit (QLoRA) or bf16, or an MLX format id; "
                              "default: the quant the model name pins (mlx-community/Qwen3-8B-8bit), else 4bit")
    fine_tune_type: Literal["lora", "dora", "full"] = Field("lora", description="mlx_lm.lora --fine-tune-type")
    seq_len: int = Field(2048, ge=2, le=1_000_000, description="mlx_lm.lora --max-seq-length [tokens] (the loss needs 2+)")
    batch: int = Field(4, gt=0, le=4096, description="mlx_lm.lora --batch-size [sequences]")
    rank: int = Field(8, gt=0, le=4096, description="LoRA rank (lora_parameters.rank)")
    scale: float = Field(20.0, gt=0, le=1e6, allow_inf_nan=False, description="LoRA scale (lora_parameters.scale)")
    layers: int = Field(16, ge=-1, description="Blocks trained from the top, mlx_lm.lora --num-layers (-1: all)")
    grad_checkpoint: bool = Field(False, description="mlx_lm.lora --grad-checkpoint")
    lengths: str | None = Field(None, max_length=200, description="Your examples' lengths [tokens]: p50=..,p90=.. or "
                                "300:0.5,1200:0.5 (default: every example as long as the sequence length)")
    dataset_tokens: int | None = Field(None, gt=0, description="Training tokens in the dataset [tokens]")
    epochs: float = Field(1.0, gt=0, le=1000, allow_inf_nan=False, description="Passes over the dataset")
    macos: str = Field(profiles.DEFAULT_MACOS, description="macOS major version (15 or 26)")
    wired_limit_mb: int | None = Field(None, gt=0, description="GPU wired limit set with sysctl [MB]")
    activation_bytes: int | None = Field(None, gt=0, le=8, description="Activation dtype bytes (default: runtime's)")

    @model_validator(mode="before")
    @classmethod
    def _one_spelling(cls, data: Any) -> Any:
        one_spelling(cls.model_fields, data)  # ram and ram_gb at once: an error, not a silent pick
        return data


class FinetuneMemory(BaseModel):
    model_config = Frozen
    weights: int = Field(description="Base model as loaded [bytes]")
    adapters: int = Field(description="Trainable parameters [bytes]")
    gradients: int = Field(description="One gradient per trainable parameter [bytes]")
    optimizer: int = Field(description="Adam moments [bytes]")
    activations: int = Field(description="Kept for the backward pass, all trained blocks [bytes]")
    transient: int = Field(description="Peak of the backward: one block's attention scores, the logits [bytes]")
    runtime: int = Field(description="Metal/runtime fixed overhead [bytes]")
    total: int = Field(description="Peak [bytes]")
    trainable_params: int
    mlx_peak: int = Field(0, description="What mlx_lm.lora prints as Peak mem: the total less the runtime overhead, "
                          "which mx.get_peak_memory() (MLX buffers only) never counts [bytes]")


class FinetuneOption(BaseModel):
    """One way to train: its peak memory and verdict."""

    model_config = Frozen
    fine_tune_type: str
    grad_checkpoint: bool
    memory: FinetuneMemory
    fit: Fit


class FinetuneSpeed(BaseModel):
    model_config = Frozen
    tokens_per_s: float = Field(description="Training tokens per second [tok/s]")
    step_s: float = Field(description="One optimizer step [s]")
    total_s: float | None = Field(None, description="Dataset x epochs [s]")
    steps: int | None = None
    basis: str


class FinetunePlan(BaseModel):
    model_config = Frozen
    request: FinetuneRequest
    model_name: str
    quant: str
    chip: str | None = Field(None, description="Chip profile id (m4-pro-20gpu); None: memory only")
    chip_label: str | None = Field(None, description="The chip's name for people (M4 Pro 20-core GPU)")
    ram_gb: float | None = Field(None, description="Unified memory of the Mac [GB]")
    layers_trained: int
    n_layers: int
    wired: WiredLimit
    chosen: FinetuneOption
    alternatives: list[FinetuneOption] = Field(description="Checkpointing toggled, and full fine-tuning")
    max_batch: int = Field(description="Largest batch size that fits comfortably at the sequence length")
    max_seq_len: int = Field(description="Longest sequence length that fits comfortably at the batch size")
    speed: FinetuneSpeed | None = None
    command: str
    lora_config: str | None = Field(None, description="YAML for -c (rank, scale)")
    notes: list[str] = Field(default_factory=list)
    padded_len: int = Field(0, description="Tokens of the longest batch after padding: the memory peak's length")
    assumption: str = Field("", description="What the peak assumes about the examples' lengths")
    lead: str = Field("", description="The setting that fits when the one asked for does not")
    peak_low: int = Field(0, description="Likely range of the chosen peak, low end: total x (1 - band_pct) [bytes]")
    peak_high: int = Field(0, description="Likely range of the chosen peak, high end: total x (1 + band_pct) [bytes]")


# --------------------------------------------------------------------------- memory
def _block_linears(cfg: ModelConfig, layer: int) -> list[arch.Tensor]:
    return [t for t in arch.tensors(cfg) if t.layer == layer and t.group in LINEAR_GROUPS and t.ne1 > 1]


def trainable_params(model: ModelProfile, fine_tune_type: str, layers: int, rank: int) -> int:
    """LoRA: r x (in + out) per linear (per expert for SwitchLinear); DoRA adds out; full: the blocks' weights."""
    cfg = model.config
    n = 0
    for i in range(cfg.num_hidden_layers - layers, cfg.num_hidden_layers):
        for t in _block_linears(cfg, i):
            if fine_tune_type == "full":
                n += t.n_elements
            else:
                n += rank * (t.ne0 + t.ne1) * t.n + (t.ne1 * t.n if fine_tune_type == "dora" else 0)
        if fine_tune_type == "full":
            n += sum(t.n_elements for t in arch.tensors(cfg) if t.layer == i and t.group == "norm")
    return n


def _widths(model: ModelProfile) -> tuple[int, int, int, int]:
    cfg = model.config
    q = cfg.num_attention_heads * cfg.head_dim
    kv = cfg.num_key_value_heads * cfg.head_dim
    return cfg.hidden_size, cfg.hidden_size + q + 2 * kv, cfg.ffn_width, cfg.num_attention_heads


def activations(model: ModelProfile, batch: int, seq: int, layers: int, act: int, checkpoint: bool) -> int:
    """Kept for the backward pass over ``batch`` x ``seq`` tokens (trained blocks, and what frozen ones leave)."""
    k = profiles.load_finetune()
    h, hq, f, _ = _widths(model)
    T = batch * seq
    frozen = k.a_frozen * T * (model.config.num_hidden_layers - layers) * h * act
    if checkpoint:  # mx.checkpoint keeps each block's input only (tuner/trainer.py grad_checkpoint)
        return int(T * layers * h * act + frozen)
    return int(T * layers * (k.a_hq * hq + k.a_f * f) * act + frozen)


def transient(model: ModelProfile, batch: int, seq: int, act: int, checkpoint: bool) -> int:
    """Peak on top of the kept activations during the backward: the logits phase, one block's attention, and
    with checkpointing the rebuilt block (the larger of the logits phase and the block phase)."""
    k = profiles.load_finetune()
    h, hq, f, nh = _widths(model)
    T = batch * seq
    logits = k.a_v * T * model.config.vocab_size * act
    if checkpoint:
        return int(max(logits, T * (k.c_hq * hq + k.c_f * f) * act + k.c_s * batch * nh * seq * seq * act))
    return int(logits + k.a_s * batch * nh * seq * seq * act)


def _mlx_lm() -> MlxRuntime:
    """The mlx-lm runtime profile (mlx_lm.lora trains with it)."""
    rt = profiles.load_runtime("mlx-lm")
    if not isinstance(rt, MlxRuntime):
        raise ProfileError(f"runtime profile mlx-lm is a {rt.family} runtime; fix profiles/runtimes/mlx-lm.yaml")
    return rt


def peak_memory(model: ModelProfile, fmt: QuantFormat, req: FinetuneRequest, layers: int, *, fine_tune_type: str,
                checkpoint: bool, batch: int, seq: int) -> FinetuneMemory:
    rt = _mlx_lm()
    act = req.activation_bytes or rt.activation_bytes
    w = mlx_weights(model, fmt, rt.model_copy(update={"activation_bytes": act})).total_bytes
    p = trainable_params(model, fine_tune_type, layers, req.rank)
    pbytes = LORA_BYTES if fine_tune_type != "full" else act
    s = seq - 1  # trainer.py default_loss: inputs = batch[:, :-1]
    a = activations(model, batch, s, layers, act, checkpoint)
    t = transient(model, batch, s, act, checkpoint)
    # full: mlx_lm/lora.py train_model unfreezes the model's own blocks (l.unfreeze()): the trained weights are the
    # loaded ones, already in `weights`, not a second copy; LoRA/DoRA adds new float32 arrays (tuner/lora.py)
    own = p * pbytes if fine_tune_type != "full" else 0
    parts = dict(weights=w, adapters=own, gradients=p * pbytes, optimizer=ADAM_MOMENTS * p * pbytes,
                 activations=a, transient=t, runtime=int(rt.runtime_overhead_mib * MiB))
    total = sum(parts.values())
    # mlx_lm/tuner/trainer.py prints mx.get_peak_memory(): the allocator's buffers, not the process's fixed overhead
    return FinetuneMemory(**parts, total=total, trainable_params=p, mlx_peak=total - parts["runtime"])


# --------------------------------------------------------------------------- limits
def _largest(fits: Callable[[int], bool], hi: int) -> int:
    """Largest n in [1, hi] with fits(n) (fits is monotone); 0 when even 1 does not fit."""
    if not fits(1):
        return 0
    lo = 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return lo


# --------------------------------------------------------------------------- speed
def speed(model: ModelProfile, fmt: QuantFormat, chip: Chip, layers: int, batch: int, seq: int,
          tokens_total: float | None) -> FinetuneSpeed:
    """Step time = max(FLOPs / (peak x efficiency), weight bytes x 3 reads / bandwidth)."""
    from . import throughput as tp

    cfg = model.config
    below = cfg.num_hidden_layers - layers
    n_block: list[float] = [sum(t.n_elements for t in _block_linears(cfg, i)) for i in range(cfg.num_hidden_layers)]
    if cfg.is_moe and cfg.n_experts:
        share = (cfg.num_experts_per_tok or 0) / cfg.n_experts  # only the routed experts' rows run
        n_block = [sum(t.n_elements * (share if t.group == "experts" else 1) for t in _block_linears(cfg, i))
                   for i in range(cfg.num_hidden_layers)]
    head = cfg.hidden_size * cfg.vocab_size
    tokens = batch * (seq - 1)
    flops = tokens * (2 * sum(n_block[:below]) + 6 * (sum(n_block[below:]) + head))
    k = profiles.load_speed_constants(chip, "mlx-lm").constants
    train = profiles.load_finetune().train_efficiency
    peak, _ = tp.peak_flops(chip, profiles.all_chips())
    eff = min(1.0, (k.eta_c or 0.5) * train)
    w = mlx_weights(model, fmt, _mlx_lm()).total_bytes
    t_step = max(flops / (peak * eff), 3 * w / tp.bandwidth(chip))
    tps = tokens / t_step
    total = steps = None
    if tokens_total:
        steps = math.ceil(tokens_total / tokens)
        total = steps * t_step
    return FinetuneSpeed(tokens_per_s=tps, step_s=t_step, total_s=total, steps=steps,
                         basis=f"an unmeasured prior: 6 FLOP/param/token on the trained path at {eff:.0%} of "
                               f"{peak / 1e12:.1f} TFLOPS (prefill efficiency x {train}, a training factor no training "
                               "run has measured: profiles/finetune/mlx-lm.yaml)")


# --------------------------------------------------------------------------- recipe
def command(req: FinetuneRequest, model: ModelProfile, fmt: QuantFormat, layers: int) -> tuple[str, str | None]:
    from .recipes import mlx_repo

    cmd = (f"mlx_lm.lora --model {mlx_repo(model, fmt)} --train --data ./data --fine-tune-type {req.fine_tune_type} "
           f"--num-layers {layers} --batch-size {req.batch} --max-seq-length {req.seq_len}")
    if req.grad_checkpoint:
        cmd += " --grad-checkpoint"
    cfg = None
    if req.fine_tune_type != "full":
        cmd += " -c lora.yaml"
        cfg = f"lora_parameters:\n  rank: {req.rank}\n  scale: {req.scale:g}\n  dropout: 0.0\n"
    return cmd, cfg


# --------------------------------------------------------------------------- example lengths
PAD_TO = 32  # mlx_lm/tuner/trainer.py iterate_batches: pad_to = 32


def _padded(n: float, cap: int) -> int:
    """mlx_lm iterate_batches pads a batch to 1 + the multiple of 32 at or above its longest example, at most
    the sequence length (mlx_lm.lora --max-seq-length; longer examples are truncated)."""
    return min(1 + PAD_TO * math.ceil(n / PAD_TO), cap)


def padded_lengths(req: FinetuneRequest) -> tuple[int, int, str]:
    """(the longest batch's padded length: the memory peak, the mean padded length: the speed, what it assumes).
    iterate_batches sorts the dataset by length and batches neighbours, so the peak comes from the batch of the
    longest examples: the p99 of a lognormal through p50 and p90 (serve's length model), or the largest value."""
    from statistics import NormalDist

    from .workload import parse_length

    if req.lengths is None:
        return req.seq_len, req.seq_len, (
            f"assumes every batch is {req.seq_len:,} tokens long (mlx_lm pads each batch to its longest example, at "
            "most [[seq_len]]): give [[lengths]] p50=..,p90=.. of your examples for their own peak")
    ln = parse_length(req.lengths, "[[lengths]]")
    if ln.p50 is not None and ln.p90 is not None:
        z = NormalDist().inv_cdf(0.99) / NormalDist().inv_cdf(0.90)
        longest, how = math.ceil(ln.p50 * (ln.p90 / max(ln.p50, 1)) ** z), "the p99 of a lognormal through p50/p90"
    else:
        longest, how = ln.max_tokens, "your longest"
    if longest < 2:  # trainer.py default_loss trains on inputs = batch[:, :-1]: one token has nothing to predict
        raise InputError(f"[[lengths]] {req.lengths!r}: the longest example holds {longest} token(s); an example "
                         "needs 2 or more (give your examples' lengths in tokens)")
    peak, mean = _padded(longest, req.seq_len), _padded(ln.mean, req.seq_len)
    cut = f", truncated to [[seq_len]] {req.seq_len:,}" if longest + 1 > req.seq_len else ""
    return peak, mean, (f"your examples: the longest batch holds ~{longest:,}-token examples ({how}), padded to "
                        f"{peak:,} tokens{cut} (mlx_lm sorts examples by length and pads each batch to its longest)")


# --------------------------------------------------------------------------- the plan
def _lead_with_checkpointing(alts: list[FinetuneOption], req: FinetuneRequest) -> tuple[str, FinetuneRequest]:
    """When the chosen setting does not fit but the same one with gradient checkpointing does, lead with it and
    run it: (lead sentence, request of the command); else ("", req)."""
    ckpt = next((a for a in alts if a.fine_tune_type == req.fine_tune_type and a.grad_checkpoint), None)
    if ckpt is None or ckpt.fit.verdict not in ("fits", "tight"):
        return "", req
    lead = (f"fits with gradient checkpointing ([[grad_checkpoint]]): {ckpt.memory.total / 2**30:.1f} GiB peak, "
            f"{ckpt.fit.verdict}; the command below uses it")
    return lead, req.model_copy(update={"grad_checkpoint": True})


def _over_context(model: ModelProfile, pad: int) -> list[str]:
    """A note when batches are longer than the model's context: the other commands cap a context there; a training
    run is sized as asked, and said."""
    most = model.config.max_position_embeddings
    if pad <= most:
        return []
    return [f"batches of {pad:,} tokens are over {model.name}'s {most:,}-token context: the model is trained past "
            f"the positions it was pretrained on; [[seq_len]] {most} keeps within them"]


DEFAULT_QUANT = "4bit"  # QLoRA on a 4-bit base: mlx-community's default conversion


def base_quant(req: FinetuneRequest, rt: Runtime) -> tuple[QuantFormat, list[str]]:
    """-> (base weights, notes): the asked [[quant]] (aliases 4bit, 8bit, bf16, qlora; a GGUF preset at its bit
    class: deployment.resolve_quant); else the preset the model name pins, with the note every command gives
    (deployment.name_quant: mlx-community/Qwen3-8B-8bit is QLoRA on its 8-bit base); else 4bit."""
    if req.quant is not None:
        fmt, conv = resolve_quant(req.quant, rt)
        return fmt, [conv.text()] if conv else []
    pinned = name_quant(req.model, rt)
    return (pinned[0], [pinned[1]]) if pinned else (resolve_quant(DEFAULT_QUANT, rt)[0], [])


def _checked_base(req: FinetuneRequest, rt: Runtime) -> tuple[QuantFormat, list[str]]:
    """base_quant, refused for a full fine-tune of quantized weights (naming where the quant came from)."""
    fmt, quant_notes = base_quant(req, rt)
    if req.fine_tune_type == "full" and fmt.bits and fmt.bits < 16:
        what = (f"[[quant]] {req.quant}" if req.quant else f"{req.model} holds {fmt.id}" if quant_notes
                else f"[[quant]] {DEFAULT_QUANT} (the default)")
        raise InputError(f"{what}: full fine-tuning needs unquantized weights; use [[quant]] bf16 "
                         "or [[fine_tune_type]] lora (QLoRA)")
    return fmt, quant_notes


def plan_finetune(req: FinetuneRequest) -> FinetunePlan:
    model = profiles.load_model(req.model)
    n_layers = model.config.num_hidden_layers
    layers = n_layers if req.layers == -1 else req.layers
    if not 0 < layers <= n_layers:
        raise InputError(f"[[layers]] {req.layers}: {model.name} has {n_layers} layers; give 1 to {n_layers}, "
                         "or -1 for all")
    rt = profiles.load_runtime("mlx-lm")
    fmt, notes = _checked_base(req, rt)
    mac = resolve_mac(req.chip or None, req.gpu_cores, req.ram)
    chip, ram = mac.chip, mac.ram_gb
    wired = capacity.wired_limit(ram, profiles.load_macos(req.macos), req.wired_limit_mb)
    budget = capacity.safe_budget(wired, rt)

    pad, mean_pad, assumption = padded_lengths(req)
    notes += _over_context(model, pad)

    def option(ftt: str, ckpt: bool, f: QuantFormat = fmt) -> FinetuneOption:
        mem = peak_memory(model, f, req, layers, fine_tune_type=ftt, checkpoint=ckpt, batch=req.batch,
                          seq=pad)
        return FinetuneOption(fine_tune_type=ftt, grad_checkpoint=ckpt, memory=mem,
                              fit=capacity.fit(mem.total, mem.weights, wired, rt))

    chosen = option(req.fine_tune_type, req.grad_checkpoint)
    alts = [option(req.fine_tune_type, not req.grad_checkpoint)]
    if req.fine_tune_type != "full":
        alts.append(option("full", req.grad_checkpoint, profiles.load_quant("mlx-bf16", "mlx")))

    def fits(batch: int, seq: int) -> bool:
        m = peak_memory(model, fmt, req, layers, fine_tune_type=req.fine_tune_type, checkpoint=req.grad_checkpoint,
                        batch=batch, seq=seq)
        return m.total <= budget

    max_batch = _largest(lambda b: fits(b, pad), 4096)
    max_seq = _largest(lambda s: fits(req.batch, s), model.config.max_position_embeddings)
    lead, run = "", req
    if chosen.fit.verdict not in ("fits", "tight"):
        notes.append(_way_out(chosen, alts, max_batch, max_seq, req, fmt.bits))
        lead, run = _lead_with_checkpointing(alts, req)
    sp = None
    if chip is not None and chip.memory_bandwidth_gb_s:
        tot = req.dataset_tokens * req.epochs if req.dataset_tokens else None
        sp = speed(model, fmt, chip, layers, req.batch, mean_pad, tot)
    else:
        notes.append("name the chip for training speed")
    cmd, cfg = command(run, model, fmt, layers)
    low, high = likely_range(chosen.memory.total)
    if chosen.fit.verdict in ("fits", "tight") and high > wired.effective_bytes:
        notes.append(f"the high end of the likely peak ({high / 2**30:.1f} GiB) is above the GPU limit "
                     f"({wired.effective_bytes / 2**30:.1f} GiB): give [[lengths]] of your examples, or leave headroom")
    return FinetunePlan(request=req, model_name=model.name, quant=fmt.id, chip=chip.id if chip else None,
                        chip_label=chip.label if chip else None, ram_gb=ram, layers_trained=layers, n_layers=n_layers,
                        wired=wired, chosen=chosen, alternatives=alts, max_batch=max_batch, max_seq_len=max_seq,
                        speed=sp, command=cmd, lora_config=cfg, notes=notes, padded_len=pad, assumption=assumption,
                        lead=lead, peak_low=low, peak_high=high)


def likely_range(total: int) -> tuple[int, int]:
    """total x (1 ∓ band_pct/100): the band is the largest validation residual (profiles/finetune/mlx-lm.yaml
    band_pct; calibration/finetune_fit.py in-sample and calibration/finetune_report.py on public Metal logs)."""
    b = profiles.load_finetune().band_pct / 100
    return int(total * (1 - b)), int(total * (1 + b))


def _way_out(chosen: FinetuneOption, alts: list[FinetuneOption], max_batch: int, max_seq: int,
             req: FinetuneRequest, bits: int | None) -> str:
    """Best effort: what would make it fit (``bits``: the base weights')."""
    ways = []
    if max_batch:
        ways.append(f"[[batch_size]] {max_batch}")
    if max_seq:
        ways.append(f"[[seq_len]] {max_seq}")
    ckpt = next((a for a in alts if a.fine_tune_type == req.fine_tune_type and a.grad_checkpoint), None)
    if ckpt and ckpt.fit.verdict in ("fits", "tight"):
        ways.append("[[grad_checkpoint]]")
    msg = f"does not fit comfortably ({chosen.fit.reason})"
    if ways:
        msg += "; it would with " + " or ".join(ways)
    else:  # only what is not already so: a 4-bit base was suggested to a run on a 4-bit base
        tips = ["fewer [[num_layers]]", "a smaller rank" if req.fine_tune_type != "full" else "LoRA "
                "([[fine_tune_type]] lora)"]
        if req.fine_tune_type != "full" and (bits is None or bits > 4):
            tips.append("a 4-bit base ([[quant]] 4bit)")
        msg += f"; try {', '.join(tips)}, or a Mac with more memory"
    return msg
