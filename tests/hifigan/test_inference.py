"""HiFi-GAN inference: loading our checkpoints (generator or its EMA) and NVIDIA's and jik876's files, streaming that
equals whole-utterance synthesis, the receptive field, the denoiser, mel files to wavs, text to wav, and the
mel-convention check."""

import numpy as np
import pytest
import soundfile
import torch

import inference
from common.audio import AudioParams
from common.checkpoint import save_checkpoint
from common.errors import UserError
from common.vocoder import vocoder_settings_from_args
from hifigan.denoiser import Denoiser
from hifigan.model import PRESETS, Generator
from hifigan.vocoder import load_generator, load_vocoder, receptive_field_frames, stream, synthesize_in_chunks
from tests.hifigan.tiny_hifigan import log_mel, save_our_checkpoint, save_reference_files, tiny_generator

# ---------------------------------------------------------------------------------------------------------------
# Receptive field and streaming


def test_receptive_field_of_the_papers_generators_by_hand():
    # v1: conv_pre 3 frames; per stage the transposed conv's (k - 1 - p) / u and the widest fusion block (k 11,
    # dilations 1, 3, 5: 10/2 * (1 + 1 + 3 + 1 + 5 + 1) = 60 samples) at rates 8, 64, 128, 256; conv_post 3 samples.
    v1 = 3 + 11 / 8 + 60 / 8 + 11 / 64 + 60 / 64 + 1 / 64 + 60 / 128 + 1 / 128 + 60 / 256 + 3 / 256
    # v3 (ResBlock2): widest block k 7, dilations 3 and 12: 6/2 * 15 = 45 samples at rates 8, 64, 256.
    v3 = 3 + 11 / 8 + 45 / 8 + 11 / 64 + 45 / 64 + 5 / 256 + 45 / 256 + 3 / 256
    assert (v1, v3) == (13.72265625, 11.08203125)
    for name, expected in (("v1", 14), ("v3", 12)):
        generator = Generator(**PRESETS[name])
        assert receptive_field_frames(generator) == expected


def test_receptive_field_bounds_the_measured_reach_of_a_frame():
    generator = tiny_generator().double()
    generator.remove_weight_norm()
    field = receptive_field_frames(generator)
    frames, bumped_frame = 2 * field + 21, field + 10
    mel = log_mel(frames).double()
    bumped = mel.clone()
    bumped[:, :, bumped_frame] += 1.0
    with torch.no_grad():
        changed = ((generator(bumped) - generator(mel)).abs()[0, 0] > 1e-12).nonzero().flatten()
    first_frame, last_frame = int(changed.min()) // 256, int(changed.max()) // 256
    reach = max(bumped_frame - first_frame, last_frame - bumped_frame)
    assert field - 1 <= reach <= field  # an upper bound, and tight to a frame


@pytest.mark.parametrize("chunk_frames", [1, 7, 10, 37, 100])
def test_streamed_audio_equals_whole_utterance_synthesis(chunk_frames):
    generator = tiny_generator()
    generator.remove_weight_norm()
    mel = log_mel(37, batch=2)
    with torch.no_grad():
        whole = generator(mel)
        pieces = list(stream(generator, mel, chunk_frames))
    assert [piece.size(-1) for piece in pieces[:-1]] == [chunk_frames * 256] * (len(pieces) - 1)
    torch.testing.assert_close(torch.cat(pieces, dim=-1), whole, atol=1e-4, rtol=0)


def test_an_overlap_below_the_receptive_field_changes_the_audio():
    generator = tiny_generator()
    generator.remove_weight_norm()
    mel = log_mel(37)
    field = receptive_field_frames(generator)
    with torch.no_grad():
        whole = generator(mel)
        exact = synthesize_in_chunks(generator, mel, 10, overlap=field)
        short = synthesize_in_chunks(generator, mel, 10, overlap=field // 2)
    assert (exact - whole).abs().max() < 1e-4
    assert (short - whole).abs().max() > 1e-3  # near the chunk boundaries at frames 10, 20, 30


# ---------------------------------------------------------------------------------------------------------------
# Loading


def test_our_checkpoint_loads_the_generator_with_weight_norm_folded(tmp_path):
    generator, _ = save_our_checkpoint(tmp_path / "h.pt")
    loaded, audio_params, convention = load_generator(tmp_path / "h.pt", torch.device("cpu"))
    assert audio_params == AudioParams() and convention == "tacotron"
    assert not any("parametrizations" in key for key in loaded.state_dict())
    mel = log_mel(20)
    with torch.no_grad():
        torch.testing.assert_close(loaded(mel), generator(mel), atol=1e-5, rtol=0)


@pytest.mark.parametrize("chunk_frames", ["0", "7"])
def test_the_vocoder_runs_the_generator_on_image_rows_on_the_cpu_with_the_same_audio(tmp_path, chunk_frames):
    generator, _ = save_our_checkpoint(tmp_path / "h.pt")
    args = inference.build_parser().parse_args(["-i", "x.txt", "-o", str(tmp_path), "--tacotron2", "t.pt",
                                                "--hifigan", str(tmp_path / "h.pt"), "--cpu",
                                                "--chunk-frames", chunk_frames])
    vocoder = load_vocoder(vocoder_settings_from_args(args), torch.device("cpu"), torch.float32)
    assert vocoder.generator.image_rows and not generator.image_rows
    mel = log_mel(20)
    with torch.no_grad():
        torch.testing.assert_close(vocoder(mel), generator(mel).squeeze(1).clamp(-1, 1), atol=1e-5, rtol=0)


def test_ema_loads_the_average_and_is_refused_without_one(tmp_path):
    generator, average = save_our_checkpoint(tmp_path / "ema.pt", ema=True)
    mel = log_mel(12)
    with torch.no_grad():
        loaded, _, _ = load_generator(tmp_path / "ema.pt", torch.device("cpu"), ema=True)
        torch.testing.assert_close(loaded(mel), average(mel), atol=1e-5, rtol=0)
        loaded, _, _ = load_generator(tmp_path / "ema.pt", torch.device("cpu"), ema=False)
        torch.testing.assert_close(loaded(mel), generator(mel), atol=1e-5, rtol=0)
    save_our_checkpoint(tmp_path / "plain.pt")
    with pytest.raises(UserError, match=r"--ema: --hifigan .*plain.pt holds no moving average.*drop --ema"):
        load_generator(tmp_path / "plain.pt", torch.device("cpu"), ema=True)


def test_other_checkpoints_and_a_config_for_ours_are_refused(tmp_path):
    save_our_checkpoint(tmp_path / "h.pt")
    with pytest.raises(UserError, match="--hifigan-config is for jik876's files"):
        load_generator(tmp_path / "h.pt", torch.device("cpu"), hifigan_config="config_v1.json")
    save_checkpoint({"model_name": "WaveGlow", "state_dict": {}}, tmp_path / "w.pt")
    with pytest.raises(UserError, match="is a WaveGlow checkpoint, expected HiFiGAN"):
        load_generator(tmp_path / "w.pt", torch.device("cpu"))


def test_reference_files_vocode_mel_files_with_their_mel_convention(tmp_path, capsys):
    generator = tiny_generator()
    mel = log_mel(11)[0]
    torch.save(mel, tmp_path / "m.pt")
    with torch.no_grad():
        expected = generator(mel.unsqueeze(0))[0, 0]
    config = save_reference_files(tmp_path, generator)

    def vocode(checkpoint, *flags, output="out"):
        inference.main(["-m", "HiFiGAN", "-i", str(tmp_path / "m.pt"), "-o", str(tmp_path / output), "--hifigan",
                        str(tmp_path / checkpoint), "--cpu", "--quiet", *flags])
        return read_wav(tmp_path / output / "m.wav")

    # NVIDIA's base files and jik876's were trained on jik876 mels: this project's mels are refused, or vocoded
    # with a warning when allowed
    with pytest.raises(UserError, match="hifigan_gen_checkpoint_20.pt was trained on jik876 mels but the mels "
                                        "given to it are tacotron mels"):
        vocode("hifigan_gen_checkpoint_20.pt")
    written = vocode("hifigan_gen_checkpoint_20.pt", "--allow-mel-convention-mismatch", output="base")
    assert "warning:" in capsys.readouterr().err and (written - expected).abs().max() < 2 / 32768
    # a fine-tuned file (train_state says so, and so does the _ft name) takes them as they are
    assert (vocode("hifigan_gen_checkpoint_20_ft.pt", output="ft") - expected).abs().max() < 2 / 32768
    # jik876's flat layout, with his JSON
    with pytest.raises(UserError, match="give --hifigan-config"):
        vocode("g_00002000", "--hifigan-mel-convention", "tacotron")
    written = vocode("g_00002000", "--hifigan-config", str(config), "--hifigan-mel-convention", "tacotron",
                     output="jik876")
    assert (written - expected).abs().max() < 2 / 32768
    with pytest.raises(UserError, match="holds no EMA generator"):
        vocode("hifigan_gen_checkpoint_20_ft.pt", "--ema")


# ---------------------------------------------------------------------------------------------------------------
# Denoiser


def test_denoiser_subtracts_the_first_frame_of_the_zero_mel_audio():
    generator = tiny_generator()
    generator.remove_weight_norm()
    audio = generator(log_mel(30))[:, 0].detach()
    window = torch.hann_window(1024)

    def stft(signal):
        return torch.stft(signal, 1024, 256, 1024, window=window, center=True, pad_mode="reflect",
                          return_complex=True)

    with torch.no_grad():
        bias_spectrum = stft(generator(torch.zeros(1, 80, 88))[:, 0]).abs()[0, :, :1]
    spectrum = stft(audio)
    magnitude = torch.clamp(spectrum.abs() - 0.3 * bias_spectrum, min=0.0)
    expected = torch.istft(magnitude * torch.exp(1j * spectrum.angle()), 1024, 256, 1024, window=window,
                           center=True, length=audio.size(-1))
    denoiser = Denoiser(generator)
    torch.testing.assert_close(denoiser(audio, strength=0.3), expected, atol=1e-5, rtol=0)
    torch.testing.assert_close(denoiser(audio, strength=0.0), audio, atol=1e-5, rtol=0)


# ---------------------------------------------------------------------------------------------------------------
# inference.py


def read_wav(path):
    audio, sampling_rate = soundfile.read(str(path), dtype="float32")
    assert sampling_rate == 22050
    return torch.from_numpy(audio)


def test_mel_files_to_wavs_pt_and_npy_whole_and_streamed(tmp_path):
    generator, _ = save_our_checkpoint(tmp_path / "h.pt")
    mels = tmp_path / "mels"
    mels.mkdir()
    first, second = log_mel(23, seed=1)[0], log_mel(9, seed=2)[0]
    torch.save(first, mels / "first.pt")
    np.save(mels / "second.npy", second.numpy())
    for name, extra in (("whole", []), ("streamed", ["--chunk-frames", "4"])):
        inference.main(["-m", "HiFiGAN", "-i", str(mels), "-o", str(tmp_path / name), "--hifigan",
                        str(tmp_path / "h.pt"), "--cpu", "--quiet", *extra])
        for stem, mel in (("first", first), ("second", second)):
            with torch.no_grad():
                expected = generator(mel.unsqueeze(0))[0, 0]
            written = read_wav(tmp_path / name / f"{stem}.wav")
            assert written.numel() == mel.size(1) * 256
            assert (written - expected).abs().max() < 2 / 32768  # 16-bit rounding (and float rounding)


def test_mel_files_of_the_wrong_shape_or_kind_are_user_errors(tmp_path):
    save_our_checkpoint(tmp_path / "h.pt")
    np.save(tmp_path / "bad.npy", np.zeros((40, 10), dtype=np.float32))
    with pytest.raises(UserError, match=r"bad.npy holds a float32 array of shape \(40, 10\), expected .*\(80, frames\)"):
        inference.main(["-m", "HiFiGAN", "-i", str(tmp_path / "bad.npy"), "-o", str(tmp_path / "out"),
                        "--hifigan", str(tmp_path / "h.pt"), "--cpu", "--quiet"])
    (tmp_path / "mel.txt").write_text("1 2 3")
    with pytest.raises(UserError, match="expected a .pt or .npy mel file"):
        inference.main(["-m", "HiFiGAN", "-i", str(tmp_path / "mel.txt"), "-o", str(tmp_path / "out"),
                        "--hifigan", str(tmp_path / "h.pt"), "--cpu", "--quiet"])


def test_mels_of_the_other_convention_are_refused_unless_allowed(tmp_path, capsys):
    save_our_checkpoint(tmp_path / "h.pt")
    torch.save(log_mel(8)[0], tmp_path / "m.pt")
    command = ["-m", "HiFiGAN", "-i", str(tmp_path / "m.pt"), "-o", str(tmp_path / "out"), "--hifigan",
               str(tmp_path / "h.pt"), "--cpu", "--quiet"]
    with pytest.raises(UserError, match="trained on tacotron mels but the mels given to it are jik876 mels"):
        inference.main([*command, "--input-mel-convention", "jik876"])
    with pytest.raises(UserError, match="trained on jik876 mels .* --allow-mel-convention-mismatch"):
        inference.main([*command, "--hifigan-mel-convention", "jik876"])
    inference.main([*command, "--hifigan-mel-convention", "jik876", "--allow-mel-convention-mismatch"])
    assert "warning: --hifigan" in capsys.readouterr().err
    assert (tmp_path / "out" / "m.wav").is_file()


@pytest.fixture()
def phrases(tmp_path):
    path = tmp_path / "phrases.txt"
    path.write_text("Hello world.\nA second, longer sentence.\n")
    return path


@pytest.mark.slow
def test_text_to_wav_through_hifigan(tacotron2_checkpoint, phrases, tmp_path):
    save_our_checkpoint(tmp_path / "h.pt")
    for name, vocoder_flags in (("own_flag", ["--hifigan", str(tmp_path / "h.pt"), "-d", "0.005", "--batch-size", "1"]),
                                ("general", ["--vocoder", "hifigan", "--vocoder-checkpoint", str(tmp_path / "h.pt"),
                                             "--chunk-frames", "8", "--batch-size", "2"])):
        out = tmp_path / name
        inference.main(["-i", str(phrases), "-o", str(out), "--tacotron2", str(tacotron2_checkpoint), "--cpu",
                        "--quiet", "--save-mels", "--no-split-sentences", *vocoder_flags])
        for line in (1, 2):
            audio = read_wav(out / f"audio_{line}.wav")
            frames = torch.load(out / f"mel_{line}.pt", weights_only=True).size(1)
            assert audio.numel() == frames * 256 and audio.abs().max() > 0
    # the mels of text to wav at batch size 1, each line said whole, vocoded as files give the same wavs
    inference.main(["-m", "HiFiGAN", "-i", str(tmp_path / "own_flag" / "mel_1.pt"), str(tmp_path / "own_flag" /
                    "mel_2.pt"), "-o", str(tmp_path / "vocoded"), "--hifigan", str(tmp_path / "h.pt"), "-d", "0.005",
                    "--cpu", "--quiet"])
    for line in (1, 2):
        difference = read_wav(tmp_path / "vocoded" / f"mel_{line}.wav") - read_wav(tmp_path / "own_flag" /
                                                                                    f"audio_{line}.wav")
        assert difference.abs().max() <= 1 / 32768  # at most a 16-bit rounding step


def test_text_to_wav_refuses_a_hifigan_of_other_audio_parameters(tacotron2_checkpoint, phrases,
                                                                tmp_path):
    save_our_checkpoint(tmp_path / "h.pt", audio_params=AudioParams(mel_fmax=7600.0))
    with pytest.raises(UserError, match=r"mel_fmax: 7600.0 \(the vocoder \(hifigan\)\) vs 8000.0"):
        inference.main(["-i", str(phrases), "-o", str(tmp_path / "out"), "--tacotron2", str(tacotron2_checkpoint),
                        "--hifigan", str(tmp_path / "h.pt"), "--cpu", "--quiet"])
