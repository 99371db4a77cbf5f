"""wav2vec 2.0's launch scripts (scripts/wav2vec2/: pretrain_wav2vec2.sh, finetune_wav2vec2.sh), their presets
(configs/wav2vec2_*.json: NVIDIA's recipes), the platform files, and smoke tests of the two benchmarks.

The expected values are NVIDIA's scripts' (scripts/pretrain_{base,large}.sh, finetune_base_{1h,10h,100h,960h}.sh,
../shared/reference/wav2vec2.md sections 2, 3 and 6), written out here rather than read from the presets."""
import contextlib
import json
import math
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import train
from common.arguments import parse_args
from common.checkpoint import load_checkpoint
from common.logger import read_dllogger_file
from common.registry import get_recipe
from wav2vec2.arg_parser import translate_argv

ROOT = Path(__file__).resolve().parents[2]
PRETRAIN_SCRIPT = "scripts/wav2vec2/pretrain_wav2vec2.sh"
FINETUNE_SCRIPT = "scripts/wav2vec2/finetune_wav2vec2.sh"
TINY = ["--conv-feature-layers", "[(32,10,5)]+[(32,3,2)]*2+[(32,2,2)]", "--encoder-layers", "2",
        "--encoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64", "--encoder-attention-heads", "2",
        "--final-dim", "16", "--latent-vars", "8", "--num-negatives", "5", "--conv-pos", "8", "--conv-pos-groups", "4"]
PRECISION_FLAGS = {"amp": "--amp", "bf16": "--bf16", "tf32": "--tf32", "fp32": "--no-tf32"}


def run_script(script, *arguments, **environment):
    return subprocess.run(["bash", str(ROOT / script), *arguments], capture_output=True, text=True, cwd=ROOT,
                          timeout=60, env={**os.environ, "DRY_RUN": "1", "PYTHON": "python", **environment})


def dry_run(script, *arguments, **environment):
    """The command a script prints with DRY_RUN=1, its train.py flags, and what train.py resolves from them (its own
    translate_argv, so the mode's defaults apply as in a real run)."""
    completed = run_script(script, *arguments, **environment)
    assert completed.returncode == 0, completed.stderr[-2000:]
    command = completed.stdout.strip()
    argv = shlex.split(command)
    argv = argv[argv.index("train.py") + 1:]
    parser = train.build_parser("wav2vec2")
    with contextlib.chdir(ROOT):  # the scripts name their presets relative to the repository root
        args = parse_args(parser, translate_argv(argv, parser))
    return command, argv, args


def gpus_in(command):
    match = re.search(r"--nproc-per-node (\d+)", command)
    return int(match.group(1)) if match else 1


# ---- pre-training ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("gpus, concat, accumulation", [(1, 8, 8), (4, 8, 2), (8, 8, 1)])
def test_pretraining_script_runs_nvidias_base_recipe_with_its_global_batch(gpus, concat, accumulation):
    command, _, args = dry_run(PRETRAIN_SCRIPT, NUM_GPUS=str(gpus))
    assert gpus_in(command) == gpus and ("torchrun" in command) == (gpus > 1)
    assert "--config-file configs/wav2vec2_pretrain_base.json" in command and args.mode == "pretrain"
    assert (args.num_concat_batches, args.grad_accumulation) == (concat, accumulation)
    assert gpus * args.num_concat_batches * args.grad_accumulation == 64  # NVIDIA's invariant for Base
    assert (args.data, args.output, args.resume_from_last) == ("data/librispeech_manifests",
                                                               "./output/wav2vec2_pretrain_base", True)
    assert (args.train_subset, args.valid_subset) == ("train-full-960", "dev-other")
    assert (args.learning_rate, args.max_updates, args.warmup_updates) == (5e-4, 400000, 32000)
    assert (args.lr_schedule, args.lr_power, args.final_lr_scale) == ("warmup-polynomial", 1.0, 0.0)
    assert (args.weight_decay, args.adam_eps, args.adam_betas, args.grad_clip_thresh) == (0.01, 1e-6, [0.9, 0.98], 25)
    assert (args.max_tokens, args.min_sample_size, args.max_sample_size) == (1400000, 32000, 250000)
    assert (args.mask_prob, args.encoder_layerdrop, args.feature_grad_mult) == (0.65, 0.05, 0.1)
    assert args.dropout == args.attention_dropout == args.dropout_input == args.dropout_features == 0.1
    assert (args.final_dim, args.hourglass_transformer, args.latent_temp) == (256, "[2,(8,4),2]", [2.0, 0.5, 0.999995])
    assert (args.encoder_layers, args.encoder_embed_dim, args.encoder_ffn_embed_dim) == (12, 768, 3072)
    assert (args.extractor_mode, args.layer_norm_first, args.conv_bias, args.normalize) == ("default", False, False,
                                                                                              False)
    assert args.loss_weights == [0.1, 10.0] and args.quantize_targets is True
    assert not args.tf32 and not args.amp and not args.bf16  # PRECISION=fp32 by default


def test_pretraining_script_runs_nvidias_large_recipe():
    command, _, args = dry_run(PRETRAIN_SCRIPT, NUM_GPUS="8", MODEL="large", PRECISION="bf16")
    assert "--config-file configs/wav2vec2_pretrain_large.json" in command and args.bf16
    assert (args.num_concat_batches, args.grad_accumulation) == (1, 16)  # 8 x 1 x 16 = 128, NVIDIA's Large
    assert (args.learning_rate, args.max_updates, args.warmup_updates) == (5e-3, 800000, 32000)
    assert (args.max_tokens, args.min_sample_size, args.max_sample_size) == (1200000, 32000, 320000)
    assert (args.encoder_layers, args.encoder_embed_dim, args.encoder_ffn_embed_dim,
            args.encoder_attention_heads) == (24, 1024, 4096, 16)
    assert (args.extractor_mode, args.layer_norm_first, args.conv_bias, args.normalize) == ("layer_norm", True, True,
                                                                                              True)
    assert (args.final_dim, args.latent_temp, args.loss_weights) == (768, [2.0, 0.1, 0.999995], [0.1, 0.0])
    assert args.dropout == args.attention_dropout == args.dropout_input == args.dropout_features == 0.0
    assert (args.encoder_layerdrop, args.feature_grad_mult, args.mask_prob) == (0.0, 1.0, 0.65)
    assert args.hourglass_transformer is None and args.output == "./output/wav2vec2_pretrain_large"


# ---- fine-tuning -------------------------------------------------------------------------------------------------

# SUBSET: (training subset, lr, updates, mask prob, channel mask prob, frozen updates), NVIDIA's finetune_base_*.sh
NVIDIA_FINE_TUNING = {
    "960h": ("train-full-960", 1e-4, 320000, 0.5, 0.1, 0),
    "100h": ("train-clean-100", 3e-5, 80000, 0.65, 0.5, 0),
    "10h": ("train-10h", 5e-5, 20000, 0.65, 0.5, 10000),
    "1h": ("train-1h", 5e-5, 13000, 0.65, 0.25, 10000),
}


@pytest.mark.parametrize("subset, gpus", [("960h", 8), ("100h", 4), ("10h", 1), ("1h", 8)])
def test_fine_tuning_script_runs_nvidias_recipe_for_each_subset(subset, gpus):
    command, _, args = dry_run(FINETUNE_SCRIPT, NUM_GPUS=str(gpus), SUBSET=subset, PRECISION="amp",
                               PRETRAINED_MODEL="runs/pre/checkpoint_wav2vec2_last.pt")
    assert f"--config-file configs/wav2vec2_finetune_{subset}.json" in command and gpus_in(command) == gpus
    assert args.mode == "finetune" and args.w2v_path == "runs/pre/checkpoint_wav2vec2_last.pt" and args.amp
    # NVIDIA's published runs keep 8 max-tokens batches per update by concatenation: 1 GPU 8, 4 GPUs 2, 8 GPUs 1.
    assert (args.num_concat_batches, args.grad_accumulation) == (8 // gpus, 1)
    train_subset, lr, updates, mask, channel_mask, frozen = NVIDIA_FINE_TUNING[subset]
    assert (args.train_subset, args.valid_subset, args.labels) == (train_subset, "dev-other", "ltr")
    assert (args.learning_rate, args.max_updates, args.freeze_finetune_updates) == (lr, updates, frozen)
    assert (args.mask_prob, args.mask_channel_prob, args.mask_channel_length) == (mask, channel_mask, 64)
    assert (args.encoder_layerdrop, args.activation_dropout, args.feature_grad_mult) == (0.1, 0.1, 0.0)
    assert args.dropout == args.attention_dropout == args.dropout_input == 0.0
    assert (args.max_tokens, args.weight_decay, args.adam_eps, args.grad_clip_thresh) == (3200000, 0.0, 1e-8, 0.0)
    assert (args.lr_schedule, args.init_lr_scale, args.final_lr_scale) == ("tri-stage", 0.01, 0.05)
    schedule = get_recipe("wav2vec2").lr_schedule(args)  # NVIDIA: warm-up MAX/10, hold MAX/10*4, decay the rest
    assert (schedule.warmup_steps, schedule.hold_steps, schedule.decay_steps) == (
        updates // 10, updates // 10 * 4, updates - updates // 10 * 5)
    assert args.output == f"./output/wav2vec2_finetune_{subset}"


def test_fine_tuning_presets_resolve_in_fine_tuning_mode(synthetic_asr_corpus, tmp_path, capsys):
    for subset, (_, lr, updates, mask, channel_mask, frozen) in NVIDIA_FINE_TUNING.items():
        preset = ROOT / f"configs/wav2vec2_finetune_{subset}.json"
        train.main(["-m", "wav2vec2", "finetune", "--config-file", str(preset), "--data",
                    str(synthetic_asr_corpus.directory), "-o", str(tmp_path), "--dry-run"])
        printed = json.loads(capsys.readouterr().out)
        config = printed["model_config"]
        assert (config["mask_prob"], config["mask_channel_prob"], config["mask_channel_length"]) == (
            mask, channel_mask, 64)
        assert (config["encoder_layerdrop"], config["activation_dropout"], config["feature_grad_mult"]) == (
            0.1, 0.1, 0.0)
        assert (config["freeze_finetune_updates"], config["vocab_size"]) == (frozen, 32)  # 4 specials + 28 letters
        assert (printed["args"]["learning_rate"], printed["args"]["max_updates"]) == (lr, updates)


def test_precision_environment_and_extra_flags():
    for precision, flag in PRECISION_FLAGS.items():
        command, argv, _ = dry_run(PRETRAIN_SCRIPT, PRECISION=precision)
        assert flag in argv and not {*PRECISION_FLAGS.values()} - {flag} & set(argv)
    command, _, args = dry_run(FINETUNE_SCRIPT, "--max-updates", "7", "--mask-prob", "0.3",
                               OUTPUT_DIR="out/ft", DATA_DIR="data/m", SUBSET="10h")
    assert (args.max_updates, args.mask_prob, args.output, args.data) == (7, 0.3, "out/ft", "data/m")
    assert args.w2v_path == "./output/wav2vec2_pretrain_base/checkpoint_wav2vec2_last.pt"  # pre-training's output


def test_the_global_batch_split_can_be_chosen_and_is_checked():
    _, _, args = dry_run(PRETRAIN_SCRIPT, NUM_CONCAT_BATCHES="2")
    assert (args.num_concat_batches, args.grad_accumulation) == (2, 32)
    _, _, args = dry_run(PRETRAIN_SCRIPT, NUM_GPUS="16")  # no room for 8 concatenated batches
    assert (args.num_concat_batches, args.grad_accumulation) == (4, 1)
    _, _, args = dry_run(FINETUNE_SCRIPT, UPDATE_FREQ="2")
    assert (args.num_concat_batches, args.grad_accumulation) == (4, 2)
    _, _, args = dry_run(FINETUNE_SCRIPT, GLOBAL_BATCHES="1")
    assert (args.num_concat_batches, args.grad_accumulation) == (1, 1)
    for script, environment, message in [
        (PRETRAIN_SCRIPT, {"NUM_GPUS": "3"}, "NUM_GPUS=3 does not divide the global batch of 64"),
        (PRETRAIN_SCRIPT, {"UPDATE_FREQ": "3"}, "cannot make 64 max-tokens batches per update"),
        (FINETUNE_SCRIPT, {"NUM_CONCAT_BATCHES": "3"}, "cannot make 8 max-tokens batches per update"),
        (PRETRAIN_SCRIPT, {"UPDATE_FREQ": "two"}, "UPDATE_FREQ must be a positive whole number"),
        (PRETRAIN_SCRIPT, {"MODEL": "huge"}, "MODEL must be base or large"),
        (FINETUNE_SCRIPT, {"SUBSET": "5h"}, "SUBSET must be 1h, 10h, 100h or 960h"),
        (FINETUNE_SCRIPT, {"PRECISION": "fp16"}, "PRECISION must be amp, bf16, tf32 or fp32"),
    ]:
        completed = run_script(script, **environment)
        assert completed.returncode == 2 and message in completed.stderr, (environment, completed.stderr)
        assert completed.stdout == ""


# ---- platform files ----------------------------------------------------------------------------------------------

PLATFORM_FILES = sorted(ROOT.glob("platform/*_wav2vec2-*_train.sh"))


def test_platform_files_are_nvidias_dgx_a100_runs():
    assert {path.name for path in PLATFORM_FILES} == {
        f"DGXA100_wav2vec2-{mode}_{precision}_{gpus}NGPU_train.sh"
        for mode in ("pretrain", "finetune") for precision in ("AMP", "BF16", "TF32") for gpus in (1, 4, 8)}


@pytest.mark.parametrize("script", PLATFORM_FILES, ids=lambda path: path.name)
def test_platform_file_launches_the_script_with_its_gpus_and_precision(script):
    _, mode, precision, gpus_field, _ = script.name.split("_")
    gpus = int(gpus_field.removesuffix("NGPU"))
    command, argv, args = dry_run(script.relative_to(ROOT))
    assert gpus_in(command) == gpus and PRECISION_FLAGS[precision.lower()] in argv
    assert args.mode == mode.removeprefix("wav2vec2-")
    global_batch = 64 if args.mode == "pretrain" else 8
    assert gpus * args.num_concat_batches * args.grad_accumulation == global_batch


# ---- a preset actually trains ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_presets_train_a_tiny_model_through_the_scripts(synthetic_asr_corpus, tmp_path):
    """Each script's command, run by train.py for 2 updates with the tiny architecture over the preset's: the
    pre-training recipe, then the 10h fine-tuning recipe from its checkpoint (encoder frozen for 10k updates)."""
    small_run = ["--train-subset", "train", "--valid-subset", "valid", "--max-updates", "2", "--max-tokens", "80000",
                 "--min-sample-size", "0", "--num-workers", "0", "--quiet", "--cpu"]
    environment = {"GLOBAL_BATCHES": "1", "DATA_DIR": str(synthetic_asr_corpus.directory)}
    _, argv, _ = dry_run(PRETRAIN_SCRIPT, *TINY, "--hourglass-transformer", "[1,(1,2),1]", *small_run,
                         OUTPUT_DIR=str(tmp_path / "pretrain"), **environment)
    with contextlib.chdir(ROOT):
        train.main(argv)
    records = read_dllogger_file(tmp_path / "pretrain" / "nvlog.json")
    losses = [r["data"]["train_loss"] for r in records if "train_loss" in r["data"] and len(r["step"]) == 2]
    assert len(losses) == 2 and all(math.isfinite(loss) for loss in losses)
    pretrained = tmp_path / "pretrain" / "checkpoint_wav2vec2_last.pt"
    pretrained_state = load_checkpoint(pretrained)
    assert pretrained_state["iteration"] == 2
    assert pretrained_state["model_config"]["hourglass_transformer"] == "[1,(1,2),1]"
    assert pretrained_state["model_config"]["dropout"] == 0.1  # the preset's, under the tiny architecture

    _, argv, _ = dry_run(FINETUNE_SCRIPT, "--mask-channel-length", "4", *small_run, SUBSET="10h",
                         PRETRAINED_MODEL=str(pretrained), OUTPUT_DIR=str(tmp_path / "finetune"), **environment)
    with contextlib.chdir(ROOT):
        train.main(argv)
    records = read_dllogger_file(tmp_path / "finetune" / "nvlog.json")
    losses = [r["data"]["train_loss"] for r in records if "train_loss" in r["data"] and len(r["step"]) == 2]
    assert len(losses) == 2 and all(math.isfinite(loss) for loss in losses)
    assert any("val_wer" in r["data"] for r in records)
    finetuned = load_checkpoint(tmp_path / "finetune" / "checkpoint_wav2vec2_last.pt")
    assert finetuned["iteration"] == 2 and finetuned["model_config"]["freeze_finetune_updates"] == 10000
    for key in ("encoder.layers.0.fc1.weight", "feature_extractor.conv_layers.0.0.weight", "mask_emb"):
        assert torch.equal(finetuned["state_dict"]["w2v_encoder.w2v_model." + key], pretrained_state["state_dict"][key])


# ---- benchmarks (smoke tests: tiny sizes; the numbers mean nothing) -------------------------------------------------


def run_benchmark(script, tmp_path):
    completed = subprocess.run(["bash", script, "--quick"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                               env={**os.environ, "PYTHON": sys.executable, "OUTPUT_DIR": str(tmp_path),
                                    "OMP_NUM_THREADS": "1"})
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed.stdout


@pytest.mark.slow
def test_training_benchmark_quick(tmp_path):
    printed = run_benchmark("scripts/wav2vec2/benchmark_wav2vec2.sh", tmp_path)
    assert "| pretrain | 3 x 32 (smoke test) | [1,(1,2),1] |" in printed
    rows = json.loads((tmp_path / "wav2vec2_training.json").read_text())["wav2vec2_training"]
    assert [(r["mode"], r["size"], r["hourglass_factor"]) for r in rows] == [("pretrain", "tiny", 1),
                                                                               ("pretrain", "tiny", 2)]
    for row in rows:
        assert row["device"] == "cpu" and row["precision"] == "fp32" and row["iterations"] == 1
        assert 0 < row["masked_frames_per_sec"] < row["frames_per_sec"]
        assert row["speed_up"] == pytest.approx(row["frames_per_sec"] / rows[0]["frames_per_sec"])


@pytest.mark.slow
def test_inference_benchmark_quick(tmp_path):
    printed = run_benchmark("scripts/wav2vec2/benchmark_wav2vec2_inference.sh", tmp_path)
    assert "| batch | audio | repeats | latency p50 |" in printed
    rows = json.loads((tmp_path / "wav2vec2_inference.json").read_text())["wav2vec2_inference"]
    assert [(r["batch_size"], r["repeats"]) for r in rows] == [(1, 2), (2, 2)]
    assert [r["audio_seconds"] for r in rows] == pytest.approx([1.5, 3.0])  # 1-2 s, evenly spread; one: the middle
    for row in rows:
        assert row["latency_p50"] <= row["latency_p90"] <= row["latency_p99"]
        assert row["rtf"] == pytest.approx(row["latency_mean"] / row["audio_seconds"], rel=1e-3)
    checkpoint = load_checkpoint(tmp_path / "wav2vec2_inference" / "wav2vec2_tiny_hourglass2_ctc_random.pt")
    assert checkpoint["model_config"]["vocab_size"] == len(checkpoint["text"]["symbols"]) == 32


@pytest.mark.slow
def test_the_inference_benchmarks_model_is_base_sized(tmp_path):
    from scripts.wav2vec2.benchmark_wav2vec2 import save_random_ctc_checkpoint

    save_random_ctc_checkpoint(tmp_path / "base.pt", "base", None)
    state = load_checkpoint(tmp_path / "base.pt")["state_dict"]
    assert sum(tensor.numel() for tensor in state.values()) == 94_396_320  # NVIDIA's Base CTC with 32 outputs
