import librosa
import numpy as np
import pytest
import soundfile
import torch

from common.audio import (AudioParams, MelSpectrogram, griffin_lim, griffin_lim_phase, load_wav,
                          phase_gradient_heap_integration, save_wav, slaney_mel_filterbank)


def slaney_filters(sampling_rate: int, n_fft: int, n_mels: int, fmin: float, fmax: float) -> np.ndarray:
    """The Auditory Toolbox's mel filters written out: linear below 1 kHz, logarithmic above, triangles between
    n_mels + 2 equally spaced mel points, each scaled to unit area (2 / its width in Hz)."""
    f_sp, min_log_hz, logstep = 200.0 / 3, 1000.0, np.log(6.4) / 27.0

    def to_mel(hz):
        hz = np.asarray(hz, dtype=np.float64)
        return np.where(hz >= min_log_hz, min_log_hz / f_sp + np.log(np.maximum(hz, 1e-9) / min_log_hz) / logstep,
                        hz / f_sp)

    def to_hz(mel):
        return np.where(mel >= min_log_hz / f_sp, min_log_hz * np.exp(logstep * (mel - min_log_hz / f_sp)), f_sp * mel)

    edges = to_hz(np.linspace(to_mel(fmin), to_mel(fmax), n_mels + 2))
    bins = np.linspace(0, sampling_rate / 2, n_fft // 2 + 1)
    rising = (bins[None, :] - edges[:-2, None]) / np.diff(edges)[:-1, None]
    falling = (edges[2:, None] - bins[None, :]) / np.diff(edges)[1:, None]
    return np.maximum(0, np.minimum(rising, falling)) * (2.0 / (edges[2:] - edges[:-2]))[:, None]


@pytest.mark.parametrize("rate, n_fft, n_mels, fmin, fmax", [(22050, 1024, 80, 0.0, 8000.0),
                                                             (16000, 512, 40, 55.0, 7600.0)])
def test_the_filterbank_is_the_slaney_scale_with_unit_area_filters(rate, n_fft, n_mels, fmin, fmax):
    """librosa.filters.mel gives NVIDIA's mels only with these defaults (they changed between librosa versions)."""
    np.testing.assert_allclose(slaney_mel_filterbank(rate, n_fft, n_mels, fmin, fmax),
                               slaney_filters(rate, n_fft, n_mels, fmin, fmax), rtol=1e-5, atol=1e-8)


@pytest.mark.slow
def test_mel_spectrogram_matches_librosa_pipeline():
    generator = torch.Generator().manual_seed(0)
    audio = (torch.rand(22050, generator=generator) * 2 - 1) * 0.5
    ours = MelSpectrogram()(audio)[0].numpy()
    magnitude = np.abs(librosa.stft(audio.numpy(), n_fft=1024, hop_length=256, win_length=1024, window="hann",
                                    center=True, pad_mode="reflect"))
    basis = librosa.filters.mel(sr=22050, n_fft=1024, n_mels=80, fmin=0.0, fmax=8000.0)
    reference = np.log(np.clip(basis @ magnitude, 1e-5, None))
    assert ours.shape == (80, 1 + 22050 // 256)
    np.testing.assert_allclose(ours, reference, atol=2e-4)


@pytest.mark.slow
def test_batch_and_single_mels_agree():
    audio = torch.randn(3, 4096).clamp(-1, 1) * 0.3
    batch = MelSpectrogram()(audio)
    single = MelSpectrogram()(audio[1])
    torch.testing.assert_close(batch[1:2], single)


def test_audio_params_mismatch_names_every_difference():
    vocoder = AudioParams(mel_fmax=7000.0, hop_length=200)
    with pytest.raises(ValueError, match=r"hop_length: 200 \(vocoder\) vs 256 \(taco\).*mel_fmax: 7000.0"):
        vocoder.check_matches(AudioParams(), "vocoder", "taco")
    AudioParams().check_matches(AudioParams.from_dict(AudioParams().to_dict()), "a", "b")
    with pytest.raises(ValueError, match="unknown audio parameters"):
        AudioParams.from_dict({"sample_rate": 22050})


def test_load_wav_errors_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.wav"):
        load_wav(tmp_path / "missing.wav", 22050)
    path = tmp_path / "wrong_rate.wav"
    soundfile.write(path, np.zeros(1000, dtype=np.int16), 16000, subtype="PCM_16")
    with pytest.raises(ValueError, match=r"wrong_rate.wav: sampling rate is 16000 Hz, expected 22050"):
        load_wav(path, 22050)
    stereo = tmp_path / "stereo.wav"
    soundfile.write(stereo, np.zeros((1000, 2), dtype=np.int16), 22050, subtype="PCM_16")
    with pytest.raises(ValueError, match="stereo.wav: has 2 channels"):
        load_wav(stereo, 22050)
    short = tmp_path / "short.wav"
    soundfile.write(short, np.zeros(10, dtype=np.int16), 22050, subtype="PCM_16")
    with pytest.raises(ValueError, match="short.wav: has 10 samples"):
        load_wav(short, 22050, min_samples=256)
    garbage = tmp_path / "garbage.wav"
    garbage.write_bytes(b"not a wav file at all")
    with pytest.raises(ValueError, match="cannot read audio file .*garbage.wav"):
        load_wav(garbage, 22050)


def test_wav_round_trip_is_16_bit(tmp_path):
    audio = torch.sin(torch.linspace(0, 200, 5000)) * 0.5
    save_wav(tmp_path / "a.wav", audio, 22050)
    assert soundfile.info(str(tmp_path / "a.wav")).subtype == "PCM_16"
    loaded = load_wav(tmp_path / "a.wav", 22050)
    torch.testing.assert_close(loaded, audio, atol=1 / 32768 + 1e-6, rtol=0)


@pytest.mark.parametrize("frames", [1, 2, 3])  # 1 and 2 frames are shorter than the STFT's reflect padding
def test_griffin_lim_inverts_a_mel_of_a_few_frames(frames):
    audio = griffin_lim(torch.randn(2, 80, frames) - 5.0, AudioParams(), n_iters=2)
    assert audio.shape == (2, frames * 256) and torch.isfinite(audio).all() and audio.abs().max() > 0


def test_griffin_lim_recovers_a_tone():
    params = AudioParams()
    time = torch.arange(22050) / 22050
    tone = 0.5 * torch.sin(2 * np.pi * 440 * time)
    mel = MelSpectrogram(params)(tone)
    audio = griffin_lim(mel, params, n_iters=30)
    assert audio.shape == (1, mel.shape[-1] * params.hop_length)
    spectrum = np.abs(np.fft.rfft(audio[0, 2048:-2048].numpy()))
    peak_hz = np.argmax(spectrum) * 22050 / (len(audio[0]) - 4096)
    assert abs(peak_hz - 440) < 25
    # The mel of the inverted audio is close to the mel it came from (in the bands that carry energy).
    again = MelSpectrogram(params)(audio[0] / audio.abs().max() * tone.abs().max())
    loud = mel[0] > mel[0].max() - 4
    assert (again[0, :, : mel.shape[-1]][loud] - mel[0][loud]).abs().mean() < 1.0


def amplitude_modulated_chirp() -> torch.Tensor:
    """One second of a tone gliding up from 200 Hz, its loudness swelling three times: a test signal for phase
    retrieval (a pure tone would be too easy)."""
    time = torch.arange(22050) / 22050
    return 0.5 * torch.sin(2 * np.pi * (200 + 400 * time) * time) * (1 + torch.sin(2 * np.pi * 3 * time)) / 2


def spectral_convergence(audio: torch.Tensor, target: torch.Tensor) -> float:
    """How far the audio's STFT magnitude is from the target magnitude, after the best gain (relative norm)."""
    magnitude = MelSpectrogram().magnitude(audio)[..., : target.shape[-1]]
    gain = (magnitude * target).sum() / (magnitude * magnitude).sum()
    return float((gain * magnitude - target).norm() / target.norm())


def test_fast_griffin_lim_converges_in_fewer_iterations():
    """Momentum (Perraudin et al. 2013) reaches in 16 iterations the spectral convergence (how far the rebuilt
    audio's STFT magnitude is from the magnitude Griffin-Lim is given, after the best gain) that the original
    algorithm reaches in 32."""
    params = AudioParams()
    chirp = amplitude_modulated_chirp()
    mel = MelSpectrogram(params)(chirp)
    basis = torch.from_numpy(slaney_mel_filterbank(22050, 1024, 80, 0.0, 8000.0))
    target = torch.clamp(torch.linalg.pinv(basis) @ torch.exp(mel[0]), min=0.0)  # what power 1 inverts

    def convergence(n_iters, momentum):
        audio = griffin_lim(mel, params, n_iters=n_iters, power=1.0, momentum=momentum, phase_init="random")
        return spectral_convergence(audio, target)

    fast = convergence(16, 0.99)
    assert fast < 0.8 * convergence(16, 0.0)
    assert fast < 1.02 * convergence(32, 0.0)


def test_griffin_lim_is_the_mel_inverse_then_griffin_lim_phase():
    """griffin_lim = the filterbank's clamped least-squares inverse, raised to the power, then griffin_lim_phase."""
    params = AudioParams()
    mel = torch.randn(1, 80, 20) - 4.0
    basis = torch.from_numpy(slaney_mel_filterbank(22050, 1024, 80, 0.0, 8000.0))
    magnitude = torch.clamp(torch.linalg.pinv(basis) @ torch.exp(mel), min=0.0) ** 1.5
    torch.testing.assert_close(griffin_lim(mel, params, n_iters=3, power=1.5, momentum=0.5, seed=7),
                               griffin_lim_phase(magnitude, params, n_iters=3, momentum=0.5, seed=7))


def test_griffin_lim_phase_rebuilds_a_signal_from_its_exact_magnitude():
    """Given a signal's own STFT magnitude (no mel in between), 32 fast iterations bring the rebuilt audio's
    magnitude within 10 % of it (spectral convergence after the best gain); the random phase it starts from is
    far off."""
    params = AudioParams()
    chirp = amplitude_modulated_chirp()
    target = MelSpectrogram(params).magnitude(chirp.unsqueeze(0))

    def convergence(n_iters):
        return spectral_convergence(griffin_lim_phase(target, params, n_iters=n_iters, phase_init="random"), target)

    assert convergence(32) < 0.1 < 2 * convergence(0)


def test_phase_gradient_heap_integration_starts_where_random_phases_get_after_many_iterations():
    """PGHI's phase, with no iteration, is closer to the signal than random phases after 16 fast iterations; from it,
    16 iterations beat 32 from random phases (on speech too: experiments/griffin_lim_phase)."""
    params = AudioParams()
    target = MelSpectrogram(params).magnitude(amplitude_modulated_chirp().unsqueeze(0))

    def convergence(n_iters, phase_init):
        return spectral_convergence(griffin_lim_phase(target, params, n_iters=n_iters, phase_init=phase_init), target)

    assert convergence(0, "pghi") < convergence(16, "random")
    assert convergence(16, "pghi") < convergence(32, "random")
    assert convergence(0, "pghi") < 0.3 * convergence(0, "random")


def test_phase_gradient_heap_integration_follows_a_tone_from_frame_to_frame():
    """A steady tone between two bins: the estimated phase advances from frame to frame as the tone's own STFT phase
    does (its frequency, not the bin's), and bins 40 dB below the peak are left out (NaN)."""
    params = AudioParams()
    frequency = 1000.3
    tone = torch.sin(2 * np.pi * frequency * torch.arange(22050, dtype=torch.float64) / 22050)
    spectrum = torch.stft(tone, 1024, 256, window=torch.hann_window(1024, periodic=True, dtype=torch.float64),
                          center=True, return_complex=True)
    phase = phase_gradient_heap_integration(spectrum.abs(), params)
    peak = int(spectrum.abs()[:, 40].argmax())
    frames = slice(8, -8)  # away from the padded edges
    estimated = torch.diff(phase[peak])[frames]
    true = torch.diff(torch.angle(spectrum[peak]))[frames]
    wrapped = torch.remainder(estimated - true + np.pi, 2 * np.pi) - np.pi
    assert wrapped.abs().max() < 0.05
    advance = 2 * np.pi * params.hop_length / params.sampling_rate  # radians per frame and Hz
    bin_frequency = peak * params.sampling_rate / params.filter_length
    assert abs(float(estimated.mean()) - advance * frequency) < 0.05 < abs(advance * (bin_frequency - frequency))
    quiet = spectrum.abs() <= 1e-2 * spectrum.abs().max()
    assert quiet.any() and torch.isnan(phase[quiet]).all() and not torch.isnan(phase[~quiet]).any()


def test_griffin_lim_phase_of_silence_is_silence_and_an_unknown_start_is_refused():
    silent = griffin_lim_phase(torch.zeros(1, 513, 10), AudioParams(), n_iters=2)
    assert silent.shape == (1, 2560) and torch.equal(silent, torch.zeros_like(silent))
    with pytest.raises(ValueError, match="phase_init must be one of"):
        griffin_lim_phase(torch.ones(1, 513, 4), AudioParams(), n_iters=1, phase_init="zeros")


@pytest.mark.parametrize("option, message", [({"momentum": 1.0}, "momentum must be in"),
                                             ({"power": 0.0}, "power must be > 0")])
def test_griffin_lim_refuses_settings_outside_their_range(option, message):
    with pytest.raises(ValueError, match=message):
        griffin_lim(torch.zeros(1, 80, 4), AudioParams(), n_iters=1, **option)
