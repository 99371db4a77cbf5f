"""NVIDIA's and jik876's HiFi-GAN files: hand-built state dicts with exactly their key names and shapes load into our
modules and give the audio (and discriminator scores) of the reference's computation, written out below as plain
equations (F.conv1d, F.conv_transpose1d, leaky_relu, tanh) over weights with legacy weight norm (weight = g * v /
||v||) and legacy spectral norm (weight = weight_orig / (u . W v)), following ../shared/reference/hifigan.md §3."""
import json
import math

import pytest
import torch
import torch.nn.functional as F

from common.errors import UserError
from hifigan.checkpoints import (MEL_JIK876, MEL_TACOTRON, discriminator_state_from_reference,
                                 generator_for_inference, generator_state_to_reference, load_reference_discriminators,
                                 load_reference_generator, read_reference_discriminators)
from hifigan.model import DiscriminatorP, DiscriminatorS, Generator
from tests.hifigan.reference_generator import (N_MEL, flat_resblocks, normed, nvidia_generator_weights,
                                              reference_generator)

# Tiny, with two residual blocks per stage (so nothing may assume 3) of different dilation counts.
TINY = {"resblock": "1", "upsample_rates": [4, 4], "upsample_kernel_sizes": [8, 8], "upsample_initial_channel": 16,
        "resblock_kernel_sizes": [3, 5], "resblock_dilation_sizes": [[1, 3], [1, 2]]}
TINY_V3 = {"resblock": "2", "upsample_rates": [4, 2], "upsample_kernel_sizes": [8, 4],
           "upsample_initial_channel": 8, "resblock_kernel_sizes": [3, 5, 7],
           "resblock_dilation_sizes": [[1, 2], [2, 6], [3, 12]]}
TRAIN_SETUP = {"segment_size": 8192, "filter_length": 1024, "num_mels": 80, "hop_length": 256, "win_length": 1024,
               "sampling_rate": 22050, "mel_fmin": 0.0, "mel_fmax": 8000.0, "mel_fmax_loss": None,
               "max_wav_value": 32768.0, "seed": 1234, "base_lr": 3e-4, "lr_decay": 0.9998, "epochs_all": 6500}


def mel(frames=6, batch=2, seed=1):
    return torch.randn(batch, N_MEL, frames, generator=torch.Generator().manual_seed(seed))


def save_nvidia_generator(path, config, sd, gen_ema=None, train_state=None):
    torch.save({"generator": {f"module.{k}": v for k, v in sd.items()}, "gen_ema": gen_ema, "config": config,
                "train_setup": TRAIN_SETUP, "train_state": train_state or {"epoch": 10, "iters_all": 970}}, path)


# ---- the generator ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("config", [TINY, TINY_V3], ids=["resblock1", "resblock2"])
def test_generator_equals_the_reference_equations_on_nvidia_weights(tmp_path, config):
    sd = nvidia_generator_weights(config)
    path = tmp_path / "hifigan_gen_checkpoint_10.pt"
    save_nvidia_generator(path, config, sd)
    generator, info = load_reference_generator(path)
    expected = reference_generator(sd, config, mel())
    with torch.no_grad():
        torch.testing.assert_close(generator(mel()), expected, atol=1e-5, rtol=0)
        generator.remove_weight_norm()
        torch.testing.assert_close(generator(mel()), expected, atol=1e-5, rtol=0)
    assert info["format"] == "nvidia" and info["layout"] == "nested" and info["mel_convention"] == MEL_JIK876
    assert info["audio"].hop_length == 256 and info["train_state"]["epoch"] == 10
    assert expected.shape == (2, 1, 6 * math.prod(config["upsample_rates"]))


def test_jik876_flat_layout_with_config_json_gives_the_same_audio_as_nvidias(tmp_path):
    sd = nvidia_generator_weights(TINY, seed=3)
    save_nvidia_generator(tmp_path / "hifigan_gen_checkpoint_10.pt", TINY, sd)
    torch.save({"generator": flat_resblocks(sd, num_kernels=2)}, tmp_path / "g_00000010")
    (tmp_path / "config.json").write_text(json.dumps({**TINY, "num_mels": 80, "hop_size": 16, "segment_size": 8192}))
    nvidia, _ = load_reference_generator(tmp_path / "hifigan_gen_checkpoint_10.pt")
    jik876, info = load_reference_generator(tmp_path / "g_00000010", config=tmp_path / "config.json")
    assert info == {"format": "jik876", "layout": "flat", "config": {**TINY, "n_mel_channels": 80},
                    "mel_convention": MEL_JIK876}
    assert "resblocks.4.convs1.1.weight_g" not in sd and "resblocks.3.convs2.1.weight_g" in flat_resblocks(sd, 2)
    with torch.no_grad():
        torch.testing.assert_close(jik876(mel()), nvidia(mel()), atol=0, rtol=0)
        torch.testing.assert_close(jik876(mel()), reference_generator(sd, TINY, mel()), atol=1e-5, rtol=0)


def test_fine_tuned_files_saw_tacotron_mels_and_ema_weights_load(tmp_path):
    sd, ema = nvidia_generator_weights(TINY, seed=4), nvidia_generator_weights(TINY, seed=5)
    path = tmp_path / "hifigan_gen_checkpoint_10000_ft.pt"
    save_nvidia_generator(path, TINY, sd, gen_ema=ema)
    generator, info = load_reference_generator(path, use_ema=True)
    assert info["mel_convention"] == MEL_TACOTRON
    with torch.no_grad():
        torch.testing.assert_close(generator(mel()), reference_generator(ema, TINY, mel()), atol=1e-5, rtol=0)
    # A fine-tune's own checkpoints say so in train_state, whatever the file is called.
    save_nvidia_generator(tmp_path / "hifigan_gen_checkpoint_7000.pt", TINY, sd,
                          train_state={"epoch": 7000, "iters_all": 1, "fine_tune_epoch_start": 6501,
                                       "fine_tune_lr_factor": 3.0})
    assert load_reference_generator(tmp_path / "hifigan_gen_checkpoint_7000.pt")[1]["mel_convention"] == MEL_TACOTRON


def test_weights_saved_after_weight_norm_removal_load(tmp_path):
    sd = nvidia_generator_weights(TINY, seed=6)
    folded = {}
    for key, value in sd.items():
        if key.endswith("weight_v"):
            folded[key[: -len("_v")]] = normed(sd, key[: -len(".weight_v")])
        elif not key.endswith("weight_g"):
            folded[key] = value
    torch.save({"generator": folded, "config": TINY}, tmp_path / "folded.pt")
    generator, _ = load_reference_generator(tmp_path / "folded.pt")
    with torch.no_grad():
        torch.testing.assert_close(generator(mel()), reference_generator(sd, TINY, mel()), atol=1e-5, rtol=0)


def test_our_weights_written_in_either_reference_layout_load_back_unchanged(tmp_path):
    torch.manual_seed(7)
    ours = Generator(**TINY)
    for layout, name in (("nested", "nvidia.pt"), ("flat", "g_00000001")):
        torch.save({"generator": generator_state_to_reference(ours.state_dict(), layout, num_kernels=2)},
                   tmp_path / name)
        loaded, info = load_reference_generator(tmp_path / name, config=TINY)
        assert info["layout"] == layout
        with torch.no_grad():
            torch.testing.assert_close(loaded(mel()), ours(mel()), atol=0, rtol=0)


# ---- mistakes -----------------------------------------------------------------------------------------------

def test_a_jik876_file_without_config_asks_for_hifigan_config(tmp_path):
    torch.save({"generator": flat_resblocks(nvidia_generator_weights(TINY), 2)}, tmp_path / "g_00000010")
    with pytest.raises(UserError, match=r"g_00000010 carries no generator config.*--hifigan-config"):
        load_reference_generator(tmp_path / "g_00000010")


def test_missing_and_misshapen_keys_name_the_file(tmp_path):
    sd = nvidia_generator_weights(TINY)
    del sd["resblocks.1.0.convs2.1.bias"]
    save_nvidia_generator(tmp_path / "broken.pt", TINY, sd)
    with pytest.raises(UserError, match=r"broken.pt \('generator'\).*missing keys: resblocks.1.0.convs2.1.bias"):
        load_reference_generator(tmp_path / "broken.pt")
    save_nvidia_generator(tmp_path / "other_sizes.pt", {**TINY, "upsample_initial_channel": 32},
                          nvidia_generator_weights(TINY))
    with pytest.raises(UserError, match=r"other_sizes.pt.*shape mismatches.*conv_pre"):
        load_reference_generator(tmp_path / "other_sizes.pt")


def test_wrong_kind_of_file_and_missing_ema_are_explained(tmp_path):
    torch.save({"mpd": {}, "msd": {}, "steps": 1, "epoch": 0}, tmp_path / "do_00000001")
    with pytest.raises(UserError, match=r"do_00000001 has no 'generator' entry"):
        load_reference_generator(tmp_path / "do_00000001", config=TINY)
    save_nvidia_generator(tmp_path / "gen.pt", TINY, nvidia_generator_weights(TINY))
    with pytest.raises(UserError, match=r"gen.pt holds no EMA generator.*drop --ema"):
        load_reference_generator(tmp_path / "gen.pt", use_ema=True)
    with pytest.raises(UserError, match=r"gen.pt has no 'mpd' or 'msd' entry"):
        load_reference_discriminators(tmp_path / "gen.pt")


# ---- the discriminators -------------------------------------------------------------------------------------

def random_weights(rng, shape, scale):
    return scale * torch.randn(*shape, generator=rng)


def period_discriminator_weights(rng, prefix=""):
    """NVIDIA's DiscriminatorP keys and shapes with legacy weight norm."""
    sd = {}
    shapes = [(32, 1), (128, 32), (512, 128), (1024, 512), (1024, 1024)]
    names = [f"convs.{k}" for k in range(5)] + ["conv_post"]
    for name, (c_out, c_in), kernel in zip(names, shapes + [(1, 1024)], [5] * 5 + [3]):
        sd[f"{prefix}{name}.weight_g"] = 0.5 + torch.rand(c_out, 1, 1, 1, generator=rng)
        sd[f"{prefix}{name}.weight_v"] = random_weights(rng, (c_out, c_in, kernel, 1), 1.0)
        sd[f"{prefix}{name}.bias"] = random_weights(rng, (c_out,), 0.1)
    return sd


SCALE_LAYERS = [(1, 128, 15, 1, 1), (128, 128, 41, 2, 4), (128, 256, 41, 2, 16), (256, 512, 41, 4, 16),
                (512, 1024, 41, 4, 16), (1024, 1024, 41, 1, 16), (1024, 1024, 5, 1, 1), (1024, 1, 3, 1, 1)]


def spectral_scale_discriminator_weights(rng, prefix=""):
    """NVIDIA's first DiscriminatorS: legacy spectral norm (weight_orig; u, v: unit vectors of the power iteration)."""
    sd = {}
    for index, (c_in, c_out, kernel, _, groups) in enumerate(SCALE_LAYERS):
        name = f"convs.{index}" if index < 7 else "conv_post"
        weight = random_weights(rng, (c_out, c_in // groups, kernel), 0.1)
        u, v = torch.randn(c_out, generator=rng), torch.randn(weight[0].numel(), generator=rng)
        sd[f"{prefix}{name}.weight_orig"] = weight
        sd[f"{prefix}{name}.weight_u"] = u / u.norm()
        sd[f"{prefix}{name}.weight_v"] = v / v.norm()
        sd[f"{prefix}{name}.bias"] = random_weights(rng, (c_out,), 0.1)
    return sd


def reference_period_discriminator(sd, period, audio):
    batch, channels, length = audio.shape
    if length % period:
        audio = F.pad(audio, (0, period - length % period), "reflect")
    x = audio.view(batch, channels, -1, period)
    feature_maps = []
    for k in range(5):
        x = F.leaky_relu(F.conv2d(x, normed(sd, f"convs.{k}"), sd[f"convs.{k}.bias"], stride=(3 if k < 4 else 1, 1),
                                  padding=(2, 0)), 0.1)
        feature_maps.append(x)
    x = F.conv2d(x, normed(sd, "conv_post"), sd["conv_post.bias"], padding=(1, 0))
    return torch.flatten(x, 1), feature_maps + [x]


def reference_spectral_scale_discriminator(sd, audio):
    """Legacy spectral norm at evaluation: sigma = u . (W v) with the stored u, v; weight = weight_orig / sigma."""
    x = audio
    feature_maps = []
    for index, (_, _, kernel, stride, groups) in enumerate(SCALE_LAYERS):
        name = f"convs.{index}" if index < 7 else "conv_post"
        weight = sd[f"{name}.weight_orig"]
        sigma = torch.dot(sd[f"{name}.weight_u"], weight.flatten(1) @ sd[f"{name}.weight_v"])
        x = F.conv1d(x, weight / sigma, sd[f"{name}.bias"], stride=stride, groups=groups, padding=(kernel - 1) // 2)
        if index < 7:
            x = F.leaky_relu(x, 0.1)
        feature_maps.append(x)
    return torch.flatten(x, 1), feature_maps


def test_period_discriminator_equals_the_reference_equations():
    sd = period_discriminator_weights(torch.Generator().manual_seed(8))
    discriminator = DiscriminatorP(5)
    discriminator.load_state_dict(discriminator_state_from_reference(sd))
    audio = torch.randn(2, 1, 301, generator=torch.Generator().manual_seed(9))
    with torch.no_grad():
        score, maps = discriminator(audio)
    expected_score, expected_maps = reference_period_discriminator(sd, 5, audio)
    torch.testing.assert_close(score, expected_score, atol=1e-4, rtol=1e-5)
    for got, expected in zip(maps, expected_maps, strict=True):
        torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-5)


def test_spectral_norm_scale_discriminator_equals_the_reference_equations():
    sd = spectral_scale_discriminator_weights(torch.Generator().manual_seed(10))
    discriminator = DiscriminatorS(spectral_norm=True).eval()  # eval: no power iteration, the stored u and v
    discriminator.load_state_dict(discriminator_state_from_reference({f"module.{k}": v for k, v in sd.items()}))
    audio = torch.randn(1, 1, 512, generator=torch.Generator().manual_seed(11))
    with torch.no_grad():
        score, maps = discriminator(audio)
    expected_score, expected_maps = reference_spectral_scale_discriminator(sd, audio)
    torch.testing.assert_close(score, expected_score, atol=1e-4, rtol=1e-4)
    assert len(maps) == len(expected_maps) == 8


@pytest.mark.slow
def test_discriminator_files_of_nvidia_and_jik876_load_with_their_training_state(tmp_path):
    rng = torch.Generator().manual_seed(12)
    mpd = {**period_discriminator_weights(rng, "discriminators.0."),
           **period_discriminator_weights(rng, "discriminators.1.")}
    msd = spectral_scale_discriminator_weights(rng, "discriminators.0.")
    for scale in (1, 2):
        for key, value in spectral_scale_discriminator_weights(rng, f"discriminators.{scale}.").items():
            if key.endswith("weight_orig"):
                msd[key.replace("weight_orig", "weight_v")] = value
                msd[key.replace("weight_orig", "weight_g")] = 0.5 + torch.rand(value.shape[0], 1, 1, generator=rng)
            elif key.endswith("bias"):
                msd[key] = value
    optim_d = {"state": {}, "param_groups": [{"lr": 3e-4, "params": list(range(len(msd) + len(mpd)))}]}
    torch.save({"mpd": mpd, "msd": msd, "optim_g": {"state": {}, "param_groups": []}, "optim_d": optim_d,
                "steps": 5000, "epoch": 49}, tmp_path / "do_00005000")
    torch.save({"mpd": {f"module.{k}": v for k, v in mpd.items()}, "msd": msd, "mpd_ema": None, "msd_ema": None,
                "optim_g": {}, "optim_d": optim_d, "scaler_g": {}, "scaler_d": {}, "steps": 5000, "epoch": 49,
                "train_state": {"epoch": 49, "iters_all": 5000}}, tmp_path / "hifigan_discrim_checkpoint_49.pt")
    for name, fmt in (("do_00005000", "jik876"), ("hifigan_discrim_checkpoint_49.pt", "nvidia")):
        loaded_mpd, loaded_msd, info = read_reference_discriminators(tmp_path / name, mpd_periods=[2, 3])
        assert info["format"] == fmt and info["steps"] == 5000 and info["optim_d"] == optim_d
        first = loaded_msd.discriminators[0].convs[2].parametrizations.weight
        torch.testing.assert_close(first.original, msd["discriminators.0.convs.2.weight_orig"])
        torch.testing.assert_close(first[0]._v, msd["discriminators.0.convs.2.weight_v"])  # spectral norm's v
        second = loaded_msd.discriminators[1].convs[2].parametrizations.weight
        torch.testing.assert_close(second.original1, msd["discriminators.1.convs.2.weight_v"])  # weight norm's v
        with torch.no_grad():
            score = loaded_mpd.discriminators[1](torch.ones(1, 1, 30) * 0.1)[0]
        torch.testing.assert_close(score, reference_period_discriminator(
            {k[len("discriminators.1."):]: v for k, v in mpd.items() if k.startswith("discriminators.1.")},
            3, torch.ones(1, 1, 30) * 0.1)[0], atol=1e-4, rtol=1e-5)


def test_generator_for_inference_brings_audio_parameters_and_mel_convention(tmp_path):
    from common.checkpoint import load_checkpoint

    sd = nvidia_generator_weights(TINY, seed=13)
    save_nvidia_generator(tmp_path / "hifigan_gen_checkpoint_10000_ft.pt", TINY, sd)
    source = f"--hifigan {tmp_path / 'hifigan_gen_checkpoint_10000_ft.pt'}"
    generator, audio, convention = generator_for_inference(
        load_checkpoint(tmp_path / "hifigan_gen_checkpoint_10000_ft.pt"), source)
    assert audio.hop_length == 256 and audio.mel_fmax == 8000.0 and convention == MEL_TACOTRON
    # jik876: the audio keys of its JSON
    torch.save({"generator": flat_resblocks(sd, 2)}, tmp_path / "g_00000010")
    (tmp_path / "config.json").write_text(json.dumps({**TINY, "num_mels": 80, "hop_size": 16, "n_fft": 64,
                                                      "win_size": 64, "sampling_rate": 16000, "fmin": 0,
                                                      "fmax": None}))
    generator, audio, convention = generator_for_inference(load_checkpoint(tmp_path / "g_00000010"),
                                                           f"--hifigan {tmp_path / 'g_00000010'}",
                                                           hifigan_config=str(tmp_path / "config.json"))
    assert (audio.hop_length, audio.filter_length, audio.sampling_rate, audio.mel_fmax) == (16, 64, 16000, 8000.0)
    assert convention == MEL_JIK876
    with torch.no_grad():
        torch.testing.assert_close(generator(mel()), reference_generator(sd, TINY, mel()), atol=1e-5, rtol=0)


def test_jik876_mel_is_the_tacotron_mel_half_a_hop_later_with_uncentred_frames():
    from common.audio import MelSpectrogram
    from tests.hifigan.jik876_mel import jik876_mel

    audio = 0.5 * torch.randn(1, 256 * 20, generator=torch.Generator().manual_seed(14))
    ours = jik876_mel(audio)
    assert ours.shape == (1, 80, 20)  # T // hop frames
    # Interior frame k is centred at 256 k + 128: Tacotron's frame k of the audio from sample 128 on.
    tacotron = MelSpectrogram()(audio[:, 128:])
    torch.testing.assert_close(ours[..., 2:-2], tacotron[..., 2:18], atol=1e-4, rtol=1e-4)
    # The edges differ (reflection about another point). In silence the epsilon's sqrt(1e-9) per bin, weighted by
    # the Slaney filters, stays below the log clamp: log(1e-5), as Tacotron's mel of silence.
    assert torch.allclose(jik876_mel(torch.zeros(1, 1024)), torch.log(torch.tensor(1e-5)))


def test_a_generator_files_discriminator_file_is_found_by_the_references_naming(tmp_path):
    from hifigan.checkpoints import companion_discriminator_file

    assert companion_discriminator_file(tmp_path / "hifigan_gen_checkpoint_6500.pt") == \
        tmp_path / "hifigan_discrim_checkpoint_6500.pt"
    assert companion_discriminator_file(tmp_path / "hifigan_gen_checkpoint_10000_ft.pt") == \
        tmp_path / "hifigan_discrim_checkpoint_10000_ft.pt"
    assert companion_discriminator_file(tmp_path / "g_02500000") == tmp_path / "do_02500000"
    with pytest.raises(UserError, match="cannot tell its discriminator file from the name"):
        companion_discriminator_file(tmp_path / "generator.pt")
