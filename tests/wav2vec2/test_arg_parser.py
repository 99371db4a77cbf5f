"""wav2vec 2.0's command line: NVIDIA's spellings run, the mode picks the reference recipes' defaults, unknown flags
are errors."""
import pytest
import torch

import train
from common.registry import get_recipe
from wav2vec2.arg_parser import Wav2Vec2TrainingSettings, translate_argv
from wav2vec2.recipe import build_optimizers

NVIDIA_PRETRAINING = [  # a shortened scripts/pretrain_base.sh command line of NVIDIA's, as it spells it
    "pretrain", "--data", "/data/librispeech", "--output_dir", "/results", "--train_subset", "train-full-960",
    "--valid_subset", "dev-other", "--lr", "0.0005", "--max_update", "400000", "--update_freq", "1",
    "--max_tokens", "1400000", "--num_concat_batches", "8", "--max_sample_size", "250000",
    "--min_sample_size", "32000", "--mask_prob", "0.65", "--latent_temp", "2.0", "0.5", "0.999995",
    "--hourglass_transformer", "[2,(8,4),2]", "--clip_norm", "25", "--warmup_updates", "32000",
    "--lr_policy", "poly", "--fp16", "--fp32_cosine_sim", "--mha", "pyt", "--infonce", "--quantize_targets",
    "--encoder_layerdrop", "0.05", "--conv_pos", "128", "--weight_decay", "0.01",
]


def parse(argv):
    parser = train.build_parser("wav2vec2")
    return parser.parse_args(translate_argv(["-m", "wav2vec2", *argv], parser))


def test_nvidias_pretraining_command_line_means_the_same_here():
    args = parse(NVIDIA_PRETRAINING)
    assert args.mode == "pretrain" and args.output == "/results" and args.data == "/data/librispeech"
    assert (args.train_subset, args.valid_subset) == ("train-full-960", "dev-other")
    assert args.learning_rate == 0.0005 and args.max_updates == 400000 and args.grad_accumulation == 1
    assert args.max_tokens == 1400000 and args.num_concat_batches == 8
    assert (args.max_sample_size, args.min_sample_size) == (250000, 32000)
    assert args.mask_prob == 0.65 and args.latent_temp == [2.0, 0.5, 0.999995]
    assert args.hourglass_transformer == "[2,(8,4),2]" and args.grad_clip_thresh == 25.0
    assert args.warmup_updates == 32000 and args.lr_schedule == "warmup-polynomial" and args.amp
    assert args.quantize_targets is True and args.encoder_layerdrop == 0.05 and args.weight_decay == 0.01


def test_the_mode_picks_the_reference_recipes_defaults():
    pretrain = parse(["--data", "d", "-o", "o", "-lr", "1"])
    finetune = parse(["finetune", "--data", "d", "-o", "o", "-lr", "1"])
    assert (pretrain.adam_eps, pretrain.weight_decay, pretrain.lr_schedule) == (1e-6, 0.01, "warmup-polynomial")
    assert (finetune.adam_eps, finetune.weight_decay, finetune.lr_schedule) == (1e-8, 0.0, "tri-stage")
    assert finetune.final_lr_scale == 0.05 and pretrain.sampling_rate == finetune.sampling_rate == 16000
    assert parse(["--mode", "finetune", "--data", "d", "-o", "o", "-lr", "1", "--weight-decay", "0.1"]).weight_decay == 0.1


def test_a_flags_value_that_looks_like_a_mode_stays_a_value():
    args = parse(["--data", "d", "-o", "finetune", "-lr", "1"])
    assert args.mode == "pretrain" and args.output == "finetune"


def test_a_tri_stage_schedule_without_stage_lengths_splits_max_updates_as_the_reference():
    args = parse(["finetune", "--data", "d", "-o", "o", "-lr", "1", "--max-updates", "1000"])
    schedule = get_recipe("wav2vec2").lr_schedule(args)
    assert (schedule.warmup_steps, schedule.hold_steps, schedule.decay_steps) == (100, 400, 500)
    assert schedule.multiplier(0, 0) == pytest.approx(0.01) and schedule.multiplier(0, 1000) == pytest.approx(0.05)


def test_unknown_flags_and_lr_policies_are_errors(capsys):
    with pytest.raises(SystemExit):
        parse(["--data", "d", "-o", "o", "-lr", "1", "--mask_probb", "0.5"])
    assert "--mask_probb" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parse(["--data", "d", "-o", "o", "-lr", "1", "--lr_policy", "cosine"])
    assert "argument --lr-policy: invalid choice: 'cosine' (choose from 'poly', 'exp')" in \
        capsys.readouterr().err


def test_adamw_takes_the_modes_epsilon_and_is_fused_unless_asked_otherwise():
    model = torch.nn.Linear(3, 2)
    fused = build_optimizers(model, Wav2Vec2TrainingSettings(output="o", learning_rate=1e-3))["model"]
    looped = build_optimizers(model, Wav2Vec2TrainingSettings(output="o", learning_rate=1e-3,
                                                              fused_optimizer=False))["model"]
    assert isinstance(fused, torch.optim.AdamW) and fused.defaults["eps"] == 1e-6
    assert fused.defaults["fused"] is True and not looped.defaults["fused"]
    assert parse(["--data", "d", "-o", "o", "-lr", "1", "--no-fused-optimizer"]).fused_optimizer is False
