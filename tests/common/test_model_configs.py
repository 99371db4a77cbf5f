"""The model_config every family saves in its checkpoints is the same dict as before the configs became dataclasses
key for key, value for value and type for type (a resumed run compares the saved dict with the new one,
so a list that became a tuple would refuse old checkpoints). The expectation, model_configs_before_dataclasses.json,
was written by the code of 501fc19 from the same command lines."""
import json
from pathlib import Path

import pytest

import train
from common.registry import get_recipe

EXPECTED = json.loads((Path(__file__).parent / "model_configs_before_dataclasses.json").read_text())

COMMAND_LINES = {
    "Tacotron2-default": ["-m", "Tacotron2"],
    "Tacotron2-changed": ["-m", "Tacotron2", "--mask-padding", "--n-mel-channels", "40", "--symbols-embedding-dim",
                          "64", "--encoder-kernel-size", "3", "--encoder-n-convolutions", "2",
                          "--encoder-embedding-dim", "64", "--n-frames-per-step", "2", "--decoder-rnn-dim", "128",
                          "--prenet-dim", "32", "--max-decoder-steps", "300", "--gate-threshold", "0.25",
                          "--p-attention-dropout", "0.2", "--p-decoder-dropout", "0.3", "--decoder-no-early-stopping",
                          "--attention-rnn-dim", "96", "--attention-dim", "16", "--attention-location-n-filters", "8",
                          "--attention-location-kernel-size", "15", "--postnet-embedding-dim", "48",
                          "--postnet-kernel-size", "3", "--postnet-n-convolutions", "2",
                          "--text-cleaners", "basic_cleaners"],
    "WaveGlow-default": ["-m", "WaveGlow"],
    "WaveGlow-changed": ["-m", "WaveGlow", "--flows", "6", "--groups", "4", "--early-every", "2", "--early-size", "1",
                         "--wn-kernel-size", "5", "--wn-channels", "128", "--wn-layers", "3", "--n-mel-channels", "40",
                         "--hop-length", "200", "--win-length", "800", "--sigma", "0.7", "--segment-length", "8000"],
    "WaveNet-default": ["-m", "WaveNet"],
    "WaveNet-changed": ["-m", "WaveNet", "--residual-channels", "32", "--skip-channels", "128", "--mu-quantization",
                        "128", "--n-layers", "8", "--max-dilation", "64", "--upsampling", "repeat",
                        "--upsample-window", "800", "--no-embedding-tanh", "--hop-length", "200",
                        "--n-mel-channels", "40"],
    "HiFiGAN-default": ["-m", "HiFiGAN"],
    "HiFiGAN-changed": ["-m", "HiFiGAN", "--hifigan-preset", "v2", "--upsample-initial-channel", "64",
                        "--mpd_periods", "[2,3]", "--discriminator-width-divisor", "2", "--ema_decay", "0.99"],
    "HiFiGAN-v3-sizes": ["-m", "HiFiGAN", "--upsample_rates", "[8,8,4]", "--upsample_kernel_sizes", "[16,16,8]",
                         "--resblock", "2", "--resblock-kernel-sizes", "3", "5", "7", "--resblock-dilation-sizes",
                         "1,2", "2,6", "3,12", "--upsample-initial-channel", "256", "--n-mel-channels", "64"],
    "wav2vec2-default": ["-m", "wav2vec2"],
    "wav2vec2-changed": ["-m", "wav2vec2", "pretrain", "--extractor_mode", "layer_norm", "--conv-feature-layers",
                         "[(32, 10, 5)] + [(32, 3, 2)] * 2", "--conv_bias", "--encoder-layers", "2",
                         "--encoder-embed-dim", "64", "--encoder-ffn-embed-dim", "128", "--encoder-attention-heads",
                         "4", "--activation-fn", "relu", "--layer-norm-first", "--dropout", "0.2",
                         "--attention-dropout", "0.0", "--activation-dropout", "0.1", "--dropout-input", "0.0",
                         "--dropout-features", "0.05", "--encoder-layerdrop", "0.0", "--feature-grad-mult", "1.0",
                         "--final-dim", "32", "--logit-temp", "0.2", "--conv-pos", "16", "--conv-pos-groups", "4",
                         "--no-quantize-targets", "--latent-vars", "8", "--latent-groups", "4", "--latent-dim", "16",
                         "--latent_temp", "1", "0.25", "0.99", "--num-negatives", "10", "--mask-prob", "0.5",
                         "--mask-length", "4", "--mask-channel-prob", "0.1", "--mask-channel-length", "8",
                         "--hourglass-transformer", "[1,(2,2),1]", "--hourglass-resample", "linear", "--normalize"],
    "wav2vec2-finetune": ["-m", "wav2vec2", "finetune", "--data", "{data}", "--encoder-layers", "2",
                          "--encoder-embed-dim", "64", "--encoder-attention-heads", "4", "--conv-pos-groups", "4",
                          "--final-dropout", "0.1", "--freeze-finetune-updates", "5", "--mask-prob", "0.3"],
    "wav2vec2-finetune-no-mask": ["-m", "wav2vec2", "--mode", "finetune", "--data", "{data}", "--no-apply-mask"],
}


def model_config_of(argv: list[str], data: Path) -> dict:
    """What train.py saves as model_config for this command line (a fine-tuning dictionary of 8 symbols in data)."""
    (data / "dict.ltr.txt").write_text("| 10\nE 5\nT 4\nA 3\n")
    args = train.parse_run_args([token.replace("{data}", str(data)) for token in argv] + ["-o", str(data), "-lr", "1"])
    return get_recipe(args.model_name).model_config(args)


def typed(value):
    """value with the type of every leaf and container spelt out, so 1 != 1.0, [1] != (1,) and True != 1."""
    if isinstance(value, dict):
        return {key: typed(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [type(value).__name__, [typed(item) for item in value]]
    return [type(value).__name__, value]


@pytest.mark.parametrize("case", COMMAND_LINES)
def test_model_config_is_the_dict_checkpoints_held_before(case, tmp_path):
    assert typed(model_config_of(COMMAND_LINES[case], tmp_path)) == typed(EXPECTED[case])


def test_the_expectation_covers_every_family():
    assert {get_recipe(argv[1]).name for argv in COMMAND_LINES.values()} == {
        "Tacotron2", "WaveGlow", "WaveNet", "HiFiGAN", "wav2vec2"}
    assert set(EXPECTED) == set(COMMAND_LINES)
