"""HiFi-GAN's modules: shapes, the paper's parameter counts, weight-norm removal, the discriminators' outputs, the
EMA, and the architecture flags. Reference numerics are checked in test_checkpoints.py (equations over NVIDIA's
weights)."""
import argparse
import json

import pytest
import torch

from common.arguments import add_audio_args, read_reference_spellings
from common.errors import UserError
from hifigan import arg_parser
from hifigan.model import (PRESETS, DiscriminatorP, Generator, HiFiGAN, MultiPeriodDiscriminator,
                           MultiScaleDiscriminator)

TINY = dict(PRESETS["v1"], upsample_initial_channel=16)


def count(module):
    return sum(parameter.numel() for parameter in module.parameters())


@pytest.mark.parametrize("preset,expected", [("v1", 13_926_017), ("v2", 925_985), ("v3", 1_462_273)])
def test_parameter_counts_without_weight_norm_match_the_paper(preset, expected):
    generator = Generator(**PRESETS[preset])
    generator.remove_weight_norm()
    assert count(generator) == expected
    assert generator.hop_length == 256


@pytest.mark.parametrize("preset", ["v1", "v2", "v3"])
def test_presets_map_mel_frames_to_hop_length_samples_in_tanh_range(preset):
    torch.manual_seed(0)
    generator = Generator(**PRESETS[preset]).eval()
    with torch.no_grad():
        audio = generator(torch.randn(2, 80, 3))
    assert audio.shape == (2, 1, 3 * 256)
    assert audio.abs().max() <= 1.0 and torch.isfinite(audio).all()


def test_v3_uses_resblock2_with_two_dilated_convs_per_block():
    generator = Generator(**PRESETS["v3"])
    keys = [key for key in generator.state_dict() if key.startswith("resblocks.2.1.")]
    assert {key.split(".")[3] for key in keys} == {"convs"}
    assert {key.split(".")[4] for key in keys} == {"0", "1"}
    assert generator.resblocks[2][1].convs[1].dilation == (6,)  # [[1,2],[2,6],[3,12]]: block 1 -> 2, 6


def test_every_size_flag_shapes_the_generator():
    generator = Generator(n_mel_channels=20, resblock="1", upsample_rates=[4, 5], upsample_kernel_sizes=[8, 11],
                          upsample_initial_channel=12, resblock_kernel_sizes=[3, 5],
                          resblock_dilation_sizes=[[1, 2], [3, 1]])
    assert generator.hop_length == 20
    assert generator(torch.randn(1, 20, 7)).shape == (1, 1, 140)
    assert generator.conv_pre.weight.shape == (12, 20, 7)
    assert generator.ups[1].weight.shape == (6, 3, 11)  # ConvTranspose1d: (in, out, kernel)
    assert len(generator.resblocks[0]) == 2 and len(generator.resblocks[0][1].convs1) == 2
    assert generator.resblocks[0][1].convs1[0].dilation == (3,)


@pytest.mark.parametrize("kwargs,message", [
    (dict(resblock="3"), "resblock must be"),
    (dict(upsample_rates=[8, 8, 4]), "same length"),
    (dict(resblock_kernel_sizes=[3, 7]), "same length"),
    (dict(upsample_kernel_sizes=[15, 16, 4, 4]), "even number"),
    (dict(upsample_initial_channel=24), r"divisible by 2\^4"),
])
def test_impossible_generator_sizes_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Generator(**{**TINY, **kwargs})


def test_weight_norm_removal_keeps_the_output_and_is_idempotent():
    torch.manual_seed(1)
    generator = Generator(**dict(PRESETS["v3"], upsample_initial_channel=32)).eval()
    mel = torch.randn(2, 80, 6)
    with torch.no_grad():
        before = generator(mel)
        generator.remove_weight_norm()
        generator.remove_weight_norm()
        after = generator(mel)
    assert not any("parametrizations" in key for key in generator.state_dict())
    torch.testing.assert_close(after, before, atol=1e-6, rtol=0)


@pytest.mark.parametrize("preset", ["v1", "v3"])
def test_the_generator_on_image_rows_gives_the_same_audio_and_gradients(preset):
    """image_rows (inference on the CPU sets it) changes only the memory layout: the audio and, for training, the
    gradients are the plain layout's to float rounding."""
    torch.manual_seed(2)
    generator = Generator(**dict(PRESETS[preset], upsample_initial_channel=32))
    mel = torch.randn(2, 80, 7)
    outputs, gradients = {}, {}
    for image_rows in (False, True):
        generator.image_rows = image_rows
        generator.zero_grad()
        outputs[image_rows] = generator(mel)
        outputs[image_rows].square().mean().backward()
        gradients[image_rows] = [parameter.grad.clone() for parameter in generator.parameters()]
    assert outputs[True].shape == outputs[False].shape == (2, 1, 7 * generator.hop_length)
    torch.testing.assert_close(outputs[True], outputs[False], atol=1e-6, rtol=0)
    for rows, plain in zip(gradients[True], gradients[False]):
        torch.testing.assert_close(rows, plain, atol=1e-5, rtol=1e-4)


def test_weight_norm_keys_are_parametrizations():
    keys = Generator(**TINY).state_dict().keys()
    assert "conv_pre.parametrizations.weight.original0" in keys
    assert "ups.3.parametrizations.weight.original1" in keys
    assert "resblocks.3.2.convs2.2.parametrizations.weight.original0" in keys
    assert "conv_post.bias" in keys


def test_multi_period_discriminator_folds_the_audio_by_each_period():
    torch.manual_seed(2)
    mpd = MultiPeriodDiscriminator()
    scores, feature_maps = mpd(torch.randn(2, 1, 1000))
    assert len(scores) == 5 and [len(maps) for maps in feature_maps] == [6] * 5
    for period, score, maps in zip((2, 3, 5, 7, 11), scores, feature_maps):
        rows = -(-1000 // period)  # reflect-padded up to a multiple of the period
        for _ in range(4):  # four convs of stride 3 with padding 2, kernel 5
            rows = (rows + 4 - 5) // 3 + 1
        assert maps[0].shape[1] == 32 and maps[3].shape[1] == 1024
        assert maps[-1].shape == (2, 1, rows, period)
        assert score.shape == (2, rows * period)


def test_period_padding_is_reflection():
    discriminator = DiscriminatorP(3)
    seen = []
    discriminator.convs[0].register_forward_pre_hook(lambda module, inputs: seen.append(inputs[0]))
    audio = torch.arange(7.0).view(1, 1, 7)
    discriminator(audio)
    # 7 samples -> 9: reflect pad by 2 repeats samples 5 and 4, folded into rows of 3.
    assert seen[0].tolist() == [[[[0, 1, 2], [3, 4, 5], [6, 5, 4]]]]


def test_multi_scale_discriminator_pools_twice_and_spectral_norms_the_first_scale():
    torch.manual_seed(3)
    msd = MultiScaleDiscriminator()
    scores, feature_maps = msd(torch.randn(2, 1, 1024))
    assert len(scores) == 3 and [len(maps) for maps in feature_maps] == [8] * 3
    # strides 1,2,2,4,4,1,1 -> /64; the pooled scales are 1024/2 and 1024/4 long (AvgPool1d(4, 2, padding=1))
    assert [score.shape for score in scores] == [(2, 16), (2, 8), (2, 4)]
    assert [maps[4].shape[1] for maps in feature_maps] == [1024] * 3
    first, second = (dict(d.convs[3].named_parameters()) for d in msd.discriminators[:2])
    assert "parametrizations.weight.original" in first and "parametrizations.weight.original0" in second
    assert msd.discriminators[0].convs[3].groups == 16


@pytest.mark.slow
def test_container_holds_everything_that_trains_and_an_ema_copy():
    model = HiFiGAN(TINY, mpd_periods=[2, 3], ema=True)
    assert len(model.mpd.discriminators) == 2 and len(model.msd.discriminators) == 3
    assert not any(p.requires_grad for p in model.generator_ema.parameters())
    mel = torch.randn(1, 80, 4)
    torch.testing.assert_close(model(mel), model.generator(mel))
    assert HiFiGAN(TINY).generator_ema is None


def test_ema_starts_from_the_generator_and_moves_towards_it():
    torch.manual_seed(4)
    model = HiFiGAN(TINY, ema=True)
    with torch.no_grad():
        for parameter in model.generator.parameters():
            parameter.add_(1.0)
    model.reset_ema()
    live = model.generator.conv_pre.parametrizations.weight.original1
    average = model.generator_ema.conv_pre.parametrizations.weight.original1
    torch.testing.assert_close(average, live)
    before = average.clone()
    with torch.no_grad():
        live.add_(2.0)
    model.update_ema(0.9)
    torch.testing.assert_close(average, 0.9 * before + 0.1 * (before + 2.0))


# ---- flags -----------------------------------------------------------------------------------------------------

def parser():
    result = argparse.ArgumentParser()
    arg_parser.add_args(result)
    add_audio_args(result)
    return result


def parse(argv):
    """The flags of argv, NVIDIA's spellings read as train.py reads them."""
    result = parser()
    return result.parse_args(read_reference_spellings(argv, result))


def test_default_flags_give_v1_and_the_reference_periods():
    config = arg_parser.model_config(parse([]))
    assert config == {"generator": {**PRESETS["v1"], "n_mel_channels": 80}, "mpd_periods": [2, 3, 5, 7, 11],
                      "ema": False}


@pytest.mark.parametrize("argv", [
    ["--upsample_rates", "[8,8,4]", "--upsample_kernel_sizes", "[16,16,8]", "--resblock", "2",
     "--resblock_kernel_sizes", "[3,5,7]", "--resblock_dilation_sizes", "[[1,2],[2,6],[3,12]]",
     "--upsample_initial_channel", "256"],
    ["--upsample-rates", "8", "8", "4", "--upsample-kernel-sizes", "16", "16", "8", "--resblock", "2",
     "--resblock-kernel-sizes", "3", "5", "7", "--resblock-dilation-sizes", "1,2", "2,6", "3,12",
     "--upsample-initial-channel", "256"],
    ["--hifigan-preset", "v3"],
])
def test_reference_and_plain_spellings_of_the_flags_agree(argv):
    config = arg_parser.model_config(parse(argv))
    assert config["generator"] == {**PRESETS["v3"], "n_mel_channels": 80}


def test_size_flags_override_the_preset_and_mpd_periods_parse():
    args = parse(["--hifigan-preset", "v2", "--upsample-initial-channel", "64",
                                "--mpd_periods", "[2,3]"])
    config = arg_parser.model_config(args)
    assert config["generator"]["upsample_initial_channel"] == 64 and config["generator"]["resblock"] == "1"
    assert config["mpd_periods"] == [2, 3]
    args.ema_decay = 0.999  # the recipe's flag
    assert arg_parser.model_config(args)["ema"] is True


@pytest.mark.parametrize("value", ["[8,8,x]", "[[8]]", "0"])
def test_malformed_list_is_argparse_error_naming_the_flag(value, capsys):
    with pytest.raises(SystemExit) as exit_info:
        parse(["--upsample-rates", value])
    assert exit_info.value.code == 2
    assert "argument --upsample-rates: " in capsys.readouterr().err


def test_hop_length_must_be_the_product_of_the_rates():
    with pytest.raises(UserError, match="product of the upsampling rates must be the hop length"):
        arg_parser.model_config(parse(["--hop-length", "200"]))


def jik876_config(**changes):
    config = {"resblock": "1", "num_gpus": 0, "batch_size": 16, "learning_rate": 0.0002, "adam_b1": 0.8,
              "adam_b2": 0.99, "lr_decay": 0.999, "seed": 1234, **PRESETS["v2"], "segment_size": 8192,
              "num_mels": 80, "num_freq": 1025, "n_fft": 1024, "hop_size": 256, "win_size": 1024,
              "sampling_rate": 22050, "fmin": 0, "fmax": 8000, "fmax_for_loss": None, "num_workers": 4,
              "dist_config": {"dist_backend": "nccl", "dist_url": "tcp://localhost:54321", "world_size": 1}}
    config.update(changes)
    return config


def test_hifigan_config_file_decides_the_generator(tmp_path):
    path = tmp_path / "config_v2.json"
    path.write_text(json.dumps(jik876_config()))
    config = arg_parser.model_config(parse(["--hifigan-config", str(path)]))
    assert config["generator"] == {**PRESETS["v2"], "n_mel_channels": 80}
    # a flag that agrees with the file is fine; one that contradicts it is an error
    arg_parser.model_config(parse(["--hifigan_config", str(path), "--upsample-initial-channel", "128"]))
    with pytest.raises(UserError, match="--upsample-initial-channel 512"):
        arg_parser.model_config(parse(["--hifigan-config", str(path),
                                                     "--upsample-initial-channel", "512"]))


@pytest.mark.parametrize("content,message", [
    (jik876_config(upsample_ratez=[8]), r"unknown keys \['upsample_ratez'\]"),
    ({key: value for key, value in jik876_config().items() if key != "resblock_kernel_sizes"},
     r"missing generator keys \['resblock_kernel_sizes'\]"),
    (jik876_config(hop_size=200), "hop_size 200 vs --hop-length 256"),
    ([1, 2], "expected an object"),
])
def test_bad_hifigan_config_names_the_file(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(content))
    with pytest.raises(UserError, match=message) as error:
        arg_parser.model_config(parse(["--hifigan-config", str(path)]))
    assert str(path) in str(error.value)


def test_missing_hifigan_config_file_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        arg_parser.model_config(parse(["--hifigan-config", str(tmp_path / "nope.json")]))


@pytest.mark.slow
def test_narrow_discriminators_keep_every_layer_and_output_shape():
    audio = torch.randn(2, 1, 2048)
    full = HiFiGAN({"upsample_initial_channel": 16})
    narrow = HiFiGAN({"upsample_initial_channel": 16}, discriminator_width_divisor=8)
    for name in ("mpd", "msd"):
        full_scores, full_maps = getattr(full, name)(audio)
        narrow_scores, narrow_maps = getattr(narrow, name)(audio)
        assert [s.shape for s in narrow_scores] == [s.shape for s in full_scores]
        assert [len(maps) for maps in narrow_maps] == [len(maps) for maps in full_maps]
        assert all(n.shape[1] * 8 == f.shape[1] for fs, ns in zip(full_maps, narrow_maps)
                   for f, n in zip(fs[:-1], ns[:-1]))  # hidden channels divided; the score map keeps 1
    count = lambda module: sum(p.numel() for p in module.parameters())  # noqa: E731
    assert count(narrow.mpd) + count(narrow.msd) < (count(full.mpd) + count(full.msd)) / 40
    with pytest.raises(ValueError, match="1, 2, 4 or 8"):
        HiFiGAN({"upsample_initial_channel": 16}, discriminator_width_divisor=16)
