"""planner.finetune: trainable parameters, optimizer state and activations by hand, limits, CLI."""

from __future__ import annotations

import json

import pytest

from cli.main import main
from planner import finetune as ft
from planner import profiles
from planner.units import GiB, MiB


def _req(**kw):
    base = dict(model="llama-3.1-8b", ram_gb=32, chip="M2 Pro", gpu_cores=19, quant="4bit", seq_len=2048, batch=4,
                rank=8, layers=16)
    return ft.FinetuneRequest(**{**base, **kw})


def test_lora_params_llama_8b_by_hand():
    # Llama-3.1-8B: h 4096, 32 q heads x 128, 8 kv heads x 128 (1024), ffn 14336. r x (in + out) per linear:
    # q 4096+4096, k 4096+1024, v 4096+1024, o 4096+4096, gate/up 4096+14336 (x2), down 14336+4096
    # = 8192 + 5120 + 5120 + 8192 + 3 x 18432 = 81,920 per rank per block; x 8 ranks x 16 blocks = 10,485,760
    m = profiles.load_model("llama-3.1-8b")
    assert ft.trainable_params(m, "lora", 16, 8) == 10_485_760
    # DoRA adds one magnitude per output row: 4096 + 1024 + 1024 + 4096 + 14336 x 2 + 4096 = 43,008 per block
    assert ft.trainable_params(m, "dora", 16, 8) == 10_485_760 + 16 * 43_008


def test_adapters_gradients_and_adam_are_float32_copies():
    p = ft.plan_finetune(_req())
    mem = p.chosen.memory
    assert mem.adapters == 10_485_760 * 4 == 40 * MiB
    assert mem.gradients == mem.adapters
    assert mem.optimizer == 2 * mem.adapters  # Adam m and v
    assert mem.total == (mem.weights + mem.adapters + mem.gradients + mem.optimizer + mem.activations
                         + mem.transient + mem.runtime)


def test_activations_by_hand():
    # no checkpointing: T x L x (A_HQ x (h + q + 2 kv) + A_F x ffn) x 2 bytes + frozen blocks' share
    # T = 4 x 2047 = 8188, L = 16, h + q + 2 kv = 4096 + 4096 + 2048 = 10240, ffn 14336
    m, k = profiles.load_model("llama-3.1-8b"), profiles.load_finetune()
    T = 4 * 2047
    per_block = k.a_hq * 10240 + k.a_f * 14336
    want = T * 16 * per_block * 2 + k.a_frozen * T * 16 * 4096 * 2
    assert ft.activations(m, 4, 2047, 16, 2, checkpoint=False) == int(want)
    # checkpointing keeps each trained block's input only: T x 16 x 4096 x 2 bytes + the same frozen share
    assert ft.activations(m, 4, 2047, 16, 2, checkpoint=True) == int(T * 16 * 4096 * 2 + k.a_frozen * T * 16 * 4096 * 2)


def test_checkpointing_trades_memory_and_never_increases_it():
    on = ft.plan_finetune(_req(grad_checkpoint=True)).chosen.memory.total
    off = ft.plan_finetune(_req(grad_checkpoint=False)).chosen.memory.total
    assert on < off


def test_limits_are_the_boundary_of_fit():
    r = _req()
    p = ft.plan_finetune(r)
    budget = p.wired.effective_bytes - int(profiles.load_runtime("mlx-lm").headroom_mib * MiB)
    model, fmt = profiles.load_model(r.model), profiles.load_quant("mlx-4bit-g64", "mlx")

    def total(batch, seq):
        return ft.peak_memory(model, fmt, r, 16, fine_tune_type="lora", checkpoint=False, batch=batch, seq=seq).total

    assert p.max_batch >= 1 and total(p.max_batch, r.seq_len) <= budget < total(p.max_batch + 1, r.seq_len)
    assert total(r.batch, p.max_seq_len) <= budget < total(r.batch, p.max_seq_len + 1)


def test_best_effort_when_it_does_not_fit():
    p = ft.plan_finetune(_req(ram_gb=16, chip=None, gpu_cores=None))
    assert p.chosen.fit.verdict == "no-fit"
    assert any("it would with" in n or "try fewer" in n for n in p.notes)


@pytest.mark.parametrize("quant, kind, four_bit", [("4bit", "lora", False), ("8bit", "lora", True),
                                                   ("bf16", "lora", True), ("bf16", "full", False)])
def test_a_no_fit_suggests_only_what_the_run_is_not_already(quant, kind, four_bit):
    # a 35B on an 8 GB Mac fits in no batch or length: the tips said "a 4-bit base" to a run on a 4-bit base and
    # "a smaller rank" to a full fine-tune (no rank)
    p = ft.plan_finetune(_req(model="qwen3.6-35b-a3b", ram_gb=8, chip=None, gpu_cores=None, quant=quant,
                              fine_tune_type=kind))
    (tip,) = [n for n in p.notes if "try fewer" in n]
    assert ("4-bit base" in tip) == four_bit
    assert ("smaller rank" in tip) == (kind != "full") and ("lora" in tip) == (kind == "full")


def test_a_sequence_over_the_models_context_is_said():
    # llama-3.1-8b holds 131,072 tokens: --max-seq-length 200000 was sized without a word
    n = profiles.load_model("llama-3.1-8b").config.max_position_embeddings
    over = ft.plan_finetune(_req(seq_len=n + 1, batch=1))
    assert any(f"{n + 1:,} tokens are over" in x and f"{n:,}-token context" in x for x in over.notes)
    assert not any("-token context" in x for x in ft.plan_finetune(_req(seq_len=n, batch=1)).notes)


def test_full_finetune_needs_unquantized_weights():
    with pytest.raises(Exception, match="full fine-tuning needs unquantized weights"):
        ft.plan_finetune(_req(fine_tune_type="full"))
    p = ft.plan_finetune(_req(fine_tune_type="full", quant="bf16"))
    # full: the 16 blocks' weights are trainable (bf16), gradients and both moments in bf16 too
    assert p.chosen.memory.optimizer == 2 * p.chosen.memory.gradients


def test_speed_roofline_by_hand():
    # 6 FLOP per parameter per token on the trained path, 2 below; never faster than the peak allows
    p = ft.plan_finetune(_req(dataset_tokens=2_000_000))
    s = p.speed
    assert s is not None and s.steps == -(-2_000_000 // (4 * 2047))
    assert s.total_s == pytest.approx(s.steps * s.step_s)
    chip = profiles.resolve_chip("M4 Pro", 20)
    from planner import throughput as tp
    peak, _ = tp.peak_flops(chip, profiles.all_chips())
    m = profiles.load_model("llama-3.1-8b")
    trained = sum(t.n_elements for i in range(16, 32) for t in ft._block_linears(m.config, i))
    assert s.tokens_per_s < peak / (6 * trained)


def test_command_line_and_lora_config():
    p = ft.plan_finetune(_req(grad_checkpoint=True))
    assert "mlx_lm.lora --model mlx-community/Llama-3.1-8B-Instruct-4bit --train" in p.command
    assert "--num-layers 16 --batch-size 4 --max-seq-length 2048 --grad-checkpoint" in p.command
    assert "rank: 8" in p.lora_config and "scale: 20" in p.lora_config


def test_cli_text_and_json_round_trip(capsys):
    argv = ["finetune", "--model", "llama-3.1-8b", "--ram", "32", "--chip", "M2 Pro", "--gpu-cores", "19",
            "--quant", "4bit", "--seq-len", "2048", "--batch", "4", "--rank", "8", "--layers", "16",
            "--dataset-tokens", "2000000"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "Adam moments" in out and "mlx_lm.lora" in out and "largest batch" in out
    assert main([*argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc.pop("schema_version")
    assert ft.FinetunePlan.model_validate(doc).chosen.memory.total == doc["chosen"]["memory"]["total"]


@pytest.mark.parametrize("argv,flag", [
    (["--layers", "99"], "--layers 99"),
    (["--batch", "0"], "--batch"),
    (["--fine-tune-type", "qlora2"], "--fine-tune-type"),
])
def test_cli_bad_input_one_line(capsys, argv, flag):
    rc = main(["finetune", "--model", "llama-3.1-8b", "--ram", "32", *argv])
    err = capsys.readouterr().err
    assert rc != 0 and flag in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_gib_reference_point():
    # Llama-3.1-8B 4-bit g64: weights 4.2 GiB (the plan's own weights figure), the anchor of every QLoRA total
    p = ft.plan_finetune(_req())
    assert 4.0 * GiB < p.chosen.memory.weights < 4.6 * GiB


@pytest.mark.parametrize("kind", ["lora", "dora"])
def test_adapter_gradient_and_adam_bytes_are_trainable_params_times_four(kind):
    """Rule (issue 34): LoRA and DoRA adapters, their gradients and each Adam moment are float32 copies of the
    trainable parameters (finetune.LORA_BYTES): 4 bytes each, whatever the base's dtype (DoRA was counted in
    bf16)."""
    p = ft.plan_finetune(_req(fine_tune_type=kind))
    m = profiles.load_model("llama-3.1-8b")
    n = ft.trainable_params(m, kind, 16, 8)
    mem = next(o.memory for o in (p.chosen, *p.alternatives) if o.fine_tune_type == kind)
    assert mem.trainable_params == n
    assert mem.adapters == mem.gradients == 4 * n and mem.optimizer == 2 * 4 * n


def test_peak_uses_the_longest_padded_batch_of_the_given_lengths():
    """Issue 35: mlx_lm sorts examples by length and pads each batch to 1 + a multiple of 32 of its longest
    (tuner/trainer.py iterate_batches). p50=300, p90=600: the p99 of the lognormal is 300 × 2^(2.3263/1.2816)
    = 1,055.7 -> 1,056 tokens, padded to 1 + 32 × 33 = 1,057: the same peak as every batch 1,057 long."""
    from planner.finetune import FinetuneRequest, padded_lengths, plan_finetune

    base = dict(model="llama-3.1-8b", ram_gb=32, chip="M2 Pro", gpu_cores=19)
    given = FinetuneRequest(**base, lengths="p50=300,p90=600")
    peak, mean, text = padded_lengths(given)
    assert peak == 1057 and "1,056" in text
    assert mean == 1 + 32 * 15   # the mean of the p50/p90 stand-in, 450 -> 481
    same = plan_finetune(FinetuneRequest(**base, seq_len=1057)).chosen.memory.total
    assert plan_finetune(given).chosen.memory.total == same
    assert padded_lengths(FinetuneRequest(**base, lengths="4000"))[0] == 2048   # truncated at --max-seq-length


def test_the_full_length_assumption_is_said_and_the_fitting_setting_leads():
    from planner.finetune import FinetuneRequest, plan_finetune

    p = plan_finetune(FinetuneRequest(model="llama-3.1-8b", ram=32, chip="M2 Pro", gpu_cores=19))
    assert "every batch is 2,048 tokens" in p.assumption
    assert p.chosen.fit.verdict == "no-fit" and "([[grad_checkpoint]])" in p.lead and "--grad-checkpoint" in p.command
    assert "unmeasured prior" in p.speed.basis


@pytest.mark.parametrize("lengths, says", [
    ("0", "holds 0 token(s); an example needs 2 or more"),          # padded to 1 token, 0 bytes of activations
    ("1:0.5,0:0.5", "holds 1 token(s); an example needs 2 or more"),
    ("p50=5,p90=1", "(p90 must be >= p50)"),                        # was "(ValidationError)": no reason given
])
def test_odd_example_lengths_are_one_line_naming_the_input(lengths, says, capsys):
    # trainer.py default_loss trains on inputs = batch[:, :-1]: an example of one token has nothing to predict
    assert main(["finetune", "--model", "qwen3-0.6b", "--ram", "16", "--lengths", lengths]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"plan: error: --lengths {lengths!r}: ") and says in err and "\n" not in err
    assert main(["finetune", "--model", "qwen3-0.6b", "--ram", "16", "--lengths", "2"]) == 0


@pytest.mark.parametrize("name, quant, bits", [("mlx-community/Qwen3-8B-8bit", "mlx-8bit-g64", 8),
                                               ("mlx-community/Qwen3-8B-4bit", "mlx-4bit-g64", 4),
                                               ("hf.co/unsloth/Qwen3-8B-GGUF:Q8_0", "mlx-8bit-g64", 8)])
def test_a_name_that_pins_a_quant_fine_tunes_that_base(name, quant, bits):
    """Issue 32, one answer everywhere: without [[quant]], the preset a model name pins is the base, said with the
    note `plan predict` gives (planner.deployment.name_quant; a GGUF preset at its bit class); the asked one wins;
    a name that pins none is the 4-bit base. The base weights are params x bits/8 plus group scales, so the 8-bit
    base is about twice the 4-bit one."""
    p = ft.plan_finetune(_req(model=name, quant=None))
    assert p.quant == quant
    said = f"quant {quant} from the name {name} (give [[quant]] for another)" if "mlx-community" in name \
        else f"{name} holds Q8_0, a gguf format, and mlx-lm loads mlx weights: answered for {quant}, the same 8-bit class"
    assert p.notes[0] == said
    asked = ft.plan_finetune(_req(model=name, quant="4bit"))
    assert asked.quant == "mlx-4bit-g64" and not any("from the name" in n for n in asked.notes)
    plain = ft.plan_finetune(_req(model="qwen3-8b", quant=None))
    assert plain.quant == "mlx-4bit-g64" and not any("from the name" in n for n in plain.notes)
    assert p.chosen.memory.weights / plain.chosen.memory.weights == pytest.approx(bits / 4, rel=0.15)


def test_cli_finetune_says_the_quant_the_name_pins(capsys):
    assert main(["finetune", "--model", "mlx-community/Qwen3-8B-8bit", "--ram", "64", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["quant"] == "mlx-8bit-g64"
    assert "quant mlx-8bit-g64 from the name mlx-community/Qwen3-8B-8bit (give --quant for another)" in out["notes"]


def test_the_quant_a_model_name_holds_is_the_base_as_every_command_answers_it():
    # qa: `plan finetune -m mlx-community/Qwen3-8B-8bit` was sized on mlx-4bit-g64 without a word, while plan,
    # predict, serve and cluster answer the name's 8-bit preset (deployment.resolve_quant, pinned_by).
    def _named(**kw):   # no quant asked
        return ft.FinetuneRequest(**{"ram_gb": 64, "chip": "M4 Pro", **kw})

    named = ft.plan_finetune(_named(model="mlx-community/Qwen3-8B-8bit"))
    assert named.quant == "mlx-8bit-g64"
    assert any("from the name mlx-community/Qwen3-8B-8bit" in n for n in named.notes)
    gguf = ft.plan_finetune(_named(model="unsloth/Qwen3-8B-GGUF:Q8_0"))   # a GGUF preset: its bit class in MLX
    assert gguf.quant == "mlx-8bit-g64" and any("the same 8-bit class" in n for n in gguf.notes)
    asked = ft.plan_finetune(_named(model="mlx-community/Qwen3-8B-8bit", quant="4bit"))   # an asked quant wins
    assert asked.quant == "mlx-4bit-g64" and not any("from the name" in n for n in asked.notes)
    assert ft.plan_finetune(_named(model="qwen3-8b")).quant == "mlx-4bit-g64"   # no name preset: 4-bit
    with pytest.raises(ft.InputError, match="^mlx-community/Qwen3-8B-8bit holds mlx-8bit-g64: full fine-tuning"):
        ft.plan_finetune(_named(model="mlx-community/Qwen3-8B-8bit", fine_tune_type="full"))
