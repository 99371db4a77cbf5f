"""The one audio front-end every model uses: audio file I/O (and resampling), STFT, Slaney mel filterbank, log
compression, Griffin-Lim.

The numbers match NVIDIA's Tacotron 2 (n_fft 1024, hop 256, periodic Hann, centred reflect padding, magnitude
spectrum, Slaney mel 80 x 0..8000 Hz, log(clamp(x, 1e-5))) so its published checkpoints see the mels they were
trained on. The parameters travel inside every checkpoint as an `AudioParams` dict, and a vocoder refuses mels made
with other parameters.
"""
from __future__ import annotations

import dataclasses
import heapq
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile
import torch
import torch.nn.functional as F

from common.errors import UserError, UserFileNotFoundError

LOG_CLAMP_MIN = 1e-5


@dataclass(frozen=True)
class AudioParams:
    sampling_rate: int = 22050
    filter_length: int = 1024  # n_fft
    hop_length: int = 256
    win_length: int = 1024
    n_mel_channels: int = 80
    mel_fmin: float = 0.0
    mel_fmax: float = 8000.0

    @property
    def mel_frames_per_second(self) -> float:
        return self.sampling_rate / self.hop_length

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> "AudioParams":
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(values) - known
        if unknown:
            raise ValueError(f"unknown audio parameters {sorted(unknown)}; known are {sorted(known)}")
        return cls(**values)

    def check_flags(self) -> None:
        """Raise a UserError naming the flags when the values cannot make a mel spectrogram together: a hop longer
        than the window skips samples (torch.istft refuses it), a window longer than the FFT does not fit in it, and
        a filterbank above the Nyquist frequency has filters over frequencies the audio cannot hold. Only a family
        that computes mels checks them (wav2vec 2.0 reads audio at any --sampling-rate and no mel flag)."""
        if self.hop_length > self.win_length:
            raise UserError(f"--hop-length {self.hop_length} is longer than --win-length {self.win_length}: the "
                            "windows would skip samples; give a hop of at most the window")
        if self.win_length > self.filter_length:
            raise UserError(f"--win-length {self.win_length} is longer than --filter-length {self.filter_length} "
                            "(the FFT size): the window must fit in the FFT")
        nyquist = self.sampling_rate / 2
        if self.mel_fmax > nyquist:
            raise UserError(f"--mel-fmax {self.mel_fmax:g} is above the Nyquist frequency of --sampling-rate "
                            f"{self.sampling_rate} ({nyquist:g} Hz): give --mel-fmax {nyquist:g} or less")
        if self.mel_fmin >= self.mel_fmax:
            raise UserError(f"--mel-fmin {self.mel_fmin:g} must be below --mel-fmax {self.mel_fmax:g}")

    def check_matches(self, other: "AudioParams", this_name: str, other_name: str) -> None:
        """Raise a UserError (a ValueError) naming every parameter on which two components disagree."""
        differences = [
            f"{f.name}: {getattr(self, f.name)} ({this_name}) vs {getattr(other, f.name)} ({other_name})"
            for f in dataclasses.fields(self)
            if getattr(self, f.name) != getattr(other, f.name)
        ]
        if differences:
            raise UserError(
                f"audio parameters of {this_name} and {other_name} differ, so the mels would not mean the same "
                "thing to both: " + "; ".join(differences)
            )


# ---------------------------------------------------------------------------------------------------------------
# Wav files


def load_wav(path: str | Path, expected_sampling_rate: int, min_samples: int = 1, *, source: str | None = None,
             mix_to_mono: bool = False, resample: bool = False, resample_flag: str | None = None,
             normalize: bool = False, min_samples_reason: str | None = None) -> torch.Tensor:
    """Read a sound file (wav, flac, any format soundfile reads) as float32 mono in [-1, 1] at
    expected_sampling_rate; every failure names the file, after `source` (e.g. "train.tsv:5") if given. A file
    holding NaN or infinite samples is refused.

    mix_to_mono: average the channels of a file with several (else it is refused). resample: bring a file at another
    rate to expected_sampling_rate (resample_audio); without it such a file is refused, the message naming
    resample_flag where the caller has a flag that turns resampling on (wav2vec 2.0's --resample). normalize: zero
    mean and unit variance over the whole file (F.layer_norm, as fairseq's --normalize). A file of fewer than
    min_samples samples (after resampling) is refused, saying min_samples_reason if given."""
    path = Path(path)
    where = f"{source}: " if source else ""
    if not path.is_file():
        raise UserFileNotFoundError(f"{where}audio file not found: {path}")
    try:
        audio, sampling_rate = soundfile.read(str(path), dtype="float32", always_2d=True)
    except Exception as error:  # soundfile raises several types for unreadable files
        raise UserError(f"{where}cannot read audio file {path}: {error}") from error
    if audio.shape[0] == 0:
        raise UserError(f"{where}{path} holds no samples")
    non_finite = ~np.isfinite(audio)  # a float wav can hold them; a loss or a transcript of them means nothing
    if non_finite.any():
        first = int(non_finite.any(axis=1).argmax())
        raise UserError(f"{where}{path} holds {int(non_finite.sum())} NaN or infinite samples (the first is sample "
                        f"{first}, at {first / sampling_rate:.3f} s): repair the file or leave it out")
    if sampling_rate != expected_sampling_rate and not resample:
        if resample_flag is not None:
            raise UserError(f"{where}{path} is at {sampling_rate} Hz, expected {expected_sampling_rate} Hz (resample "
                            f"the corpus, or pass {resample_flag} to resample as it is read)")
        raise UserError(f"{where}{path}: sampling rate is {sampling_rate} Hz, expected {expected_sampling_rate} Hz "
                        "(resample the corpus, or set --sampling-rate)")
    if audio.shape[1] != 1 and not mix_to_mono:
        raise UserError(f"{where}{path}: has {audio.shape[1]} channels, expected mono")
    audio = audio.mean(axis=1) if audio.shape[1] > 1 else audio[:, 0]
    if sampling_rate != expected_sampling_rate:
        audio = resample_audio(audio, sampling_rate, expected_sampling_rate)
    if audio.shape[0] < min_samples:
        raise UserError(f"{where}{path}: has {audio.shape[0]} samples, expected at least {min_samples}"
                        + (f": {min_samples_reason}" if min_samples_reason else ""))
    waveform = torch.from_numpy(np.ascontiguousarray(audio))
    if normalize:  # per file, over the whole of it, as fairseq (before any crop)
        waveform = F.layer_norm(waveform, waveform.shape)
    return waveform


def resample_audio(audio: np.ndarray, from_rate: int, to_rate: int) -> np.ndarray:
    """Polyphase resampling (scipy's resample_poly): resampled_length(len(audio), from_rate, to_rate) samples."""
    from scipy.signal import resample_poly  # imported late: only resampling needs scipy

    divisor = math.gcd(from_rate, to_rate)
    return resample_poly(audio, to_rate // divisor, from_rate // divisor).astype(np.float32)


def resampled_length(num_samples: int, from_rate: int, to_rate: int) -> int:
    return -(-num_samples * to_rate // from_rate)


def save_wav(path: str | Path, audio: torch.Tensor | np.ndarray, sampling_rate: int) -> None:
    """Write float audio in [-1, 1] as 16-bit PCM."""
    if isinstance(audio, torch.Tensor):
        audio = audio.detach().float().cpu().numpy()
    audio = np.clip(audio, -1.0, 1.0)
    soundfile.write(str(path), audio, sampling_rate, subtype="PCM_16")


# ---------------------------------------------------------------------------------------------------------------
# Mel filterbank


def slaney_mel_filterbank(sampling_rate: int, n_fft: int, n_mels: int, fmin: float, fmax: float) -> np.ndarray:
    """(n_mels, n_fft // 2 + 1) triangular filters on the Auditory Toolbox ("Slaney") mel scale, each scaled to unit
    area: librosa.filters.mel with its defaults, as NVIDIA's Tacotron 2, WaveGlow and HiFi-GAN build their mels."""
    import librosa  # here: its import costs a second, and only a mel spectrogram's construction needs it

    return librosa.filters.mel(sr=sampling_rate, n_fft=n_fft, n_mels=n_mels, fmin=fmin, fmax=fmax, htk=False,
                               norm="slaney", dtype=np.float32)


# ---------------------------------------------------------------------------------------------------------------
# STFT and mel spectrogram


def dynamic_range_compression(magnitudes: torch.Tensor) -> torch.Tensor:
    return torch.log(torch.clamp(magnitudes, min=LOG_CLAMP_MIN))


def dynamic_range_decompression(log_magnitudes: torch.Tensor) -> torch.Tensor:
    return torch.exp(log_magnitudes)


class MelSpectrogram(torch.nn.Module):
    """Audio (B, T) in [-1, 1] -> log mel (B, n_mel_channels, 1 + T // hop_length)."""

    def __init__(self, params: AudioParams = AudioParams()):
        super().__init__()
        if params.mel_fmax > params.sampling_rate / 2:
            raise ValueError(f"mel_fmax {params.mel_fmax} is above the Nyquist frequency {params.sampling_rate / 2}")
        self.params = params
        self.register_buffer("window", torch.hann_window(params.win_length, periodic=True), persistent=False)
        basis = slaney_mel_filterbank(
            params.sampling_rate, params.filter_length, params.n_mel_channels, params.mel_fmin, params.mel_fmax
        )
        self.register_buffer("mel_basis", torch.from_numpy(basis), persistent=False)

    def magnitude(self, audio: torch.Tensor) -> torch.Tensor:
        spectrum = torch.stft(
            audio.float(),
            n_fft=self.params.filter_length,
            hop_length=self.params.hop_length,
            win_length=self.params.win_length,
            window=self.window,
            center=True,
            pad_mode="reflect",
            return_complex=True,
        )
        return spectrum.abs()

    def forward(self, audio: torch.Tensor) -> torch.Tensor:
        if audio.dim() == 1:
            audio = audio.unsqueeze(0)
        return dynamic_range_compression(torch.matmul(self.mel_basis, self.magnitude(audio)))


# Griffin-Lim's defaults, chosen by what make demo-asr's recognizer hears in the TTS corpus's own mels
# (tacotron2/RESULTS.md, "Intelligibility of the demo"): CER 5.7 % at power 1 against 32.6 % at the usual 1.5, whose
# sharpening erases the weaker formants; with momentum, 32 iterations do as well as 60 (60 plain ones: 6.1 %).
GRIFFIN_LIM_ITERS = 32
GRIFFIN_LIM_POWER = 1.0
GRIFFIN_LIM_MOMENTUM = 0.99


# Where fast Griffin-Lim starts: "random" phases, or "pghi" (phase_gradient_heap_integration). From PGHI's start, 32
# iterations reach the spectral convergence random phases reach after about 90, but Moonshine hears no difference in
# the demo's speech and the start costs as much time as the 32 iterations (experiments/griffin_lim_phase), so random
# stays the default.
PHASE_INITS = ("random", "pghi")
GRIFFIN_LIM_PHASE_INIT = "random"
# Bins more than 40 dB below the spectrogram's peak keep a random phase: Griffin-Lim's iterations find theirs, and
# the heap is a Python loop over every bin it reaches.
PGHI_RELATIVE_TOLERANCE = 1e-2
# The constant of a Hann window of length L in the phase-gradient relations: gamma = 0.25645 * L ** 2 (Prusa,
# Balazs and Sondergaard, "A noniterative method for reconstruction of phase from STFT magnitude", 2017).
HANN_GAMMA_PER_SQUARED_LENGTH = 0.25645


def griffin_lim(log_mel: torch.Tensor, params: AudioParams = AudioParams(), n_iters: int = GRIFFIN_LIM_ITERS,
                power: float = GRIFFIN_LIM_POWER, momentum: float = GRIFFIN_LIM_MOMENTUM, seed: int = 0,
                phase_init: str = GRIFFIN_LIM_PHASE_INIT) -> torch.Tensor:
    """Vocoder-free inversion: log mel (B, n_mel, T) -> audio (B, T * hop_length).

    The linear magnitude is the least-squares inverse of the filterbank (clamped at zero), raised to `power` (above 1
    sharpens it); the phase is then found by griffin_lim_phase.
    """
    if power <= 0:
        raise ValueError(f"Griffin-Lim magnitude power must be > 0, got {power}")
    if log_mel.dim() == 2:
        log_mel = log_mel.unsqueeze(0)
    magnitude = least_squares_magnitude(log_mel, params) ** power
    return griffin_lim_phase(magnitude, params, n_iters, momentum, seed, phase_init)


def least_squares_magnitude(log_mel: torch.Tensor, params: AudioParams = AudioParams()) -> torch.Tensor:
    """Log mel (..., n_mel, T) -> linear magnitude (..., filter_length // 2 + 1, T): the filterbank's pseudo-inverse,
    clamped at zero (what the mel inverter, melinverter/, learns to do better)."""
    basis = torch.from_numpy(
        slaney_mel_filterbank(params.sampling_rate, params.filter_length, params.n_mel_channels,
                              params.mel_fmin, params.mel_fmax)
    ).to(log_mel.device)
    return torch.clamp(torch.matmul(torch.linalg.pinv(basis), dynamic_range_decompression(log_mel.float())), min=0.0)


def griffin_lim_phase(magnitude: torch.Tensor, params: AudioParams = AudioParams(), n_iters: int = GRIFFIN_LIM_ITERS,
                      momentum: float = GRIFFIN_LIM_MOMENTUM, seed: int = 0,
                      phase_init: str = GRIFFIN_LIM_PHASE_INIT) -> torch.Tensor:
    """Audio (B, T * hop_length) whose STFT magnitude approaches `magnitude` (B, filter_length // 2 + 1, T). The
    phase starts at random ("random", drawn from `seed`) or from phase_gradient_heap_integration's estimate ("pghi";
    the bins it leaves out start random) and is refined iteratively. With momentum > 0 this is the "fast Griffin-Lim" of
    Perraudin, Balazs and Sondergaard (2013): each new phase estimate overshoots along its last change, which
    converges in far fewer iterations; momentum 0 is the original algorithm. The audio is scaled to a peak of 0.95.
    """
    if not 0.0 <= momentum < 1.0:
        raise ValueError(f"Griffin-Lim momentum must be in [0, 1), got {momentum}")
    if phase_init not in PHASE_INITS:
        raise ValueError(f"Griffin-Lim phase_init must be one of {PHASE_INITS}, got {phase_init!r}")
    generator = torch.Generator(device="cpu").manual_seed(seed)
    angles = 2 * np.pi * torch.rand(magnitude.shape, generator=generator)
    if phase_init == "pghi":
        flat = magnitude.detach().reshape(-1, *magnitude.shape[-2:]).cpu()
        estimated = torch.stack([phase_gradient_heap_integration(one, params) for one in flat]).reshape(angles.shape)
        angles = torch.where(torch.isnan(estimated), angles, estimated.float())
    phases = torch.exp(1j * angles).to(magnitude.device)
    window = torch.hann_window(params.win_length, periodic=True, device=magnitude.device)
    stft_args = dict(n_fft=params.filter_length, hop_length=params.hop_length, win_length=params.win_length,
                     window=window, center=True)
    length = magnitude.shape[-1] * params.hop_length
    audio = torch.istft(magnitude * phases, length=length, **stft_args)
    # Reflection needs more samples than the filter_length / 2 it pads; a mel of a frame or two gets zeros instead.
    pad_mode = "reflect" if length > params.filter_length // 2 else "constant"
    overshoot = momentum / (1.0 + momentum)
    previous = torch.zeros_like(magnitude, dtype=phases.dtype)
    for _ in range(n_iters):
        rebuilt = torch.stft(audio, return_complex=True, pad_mode=pad_mode, **stft_args)[..., : magnitude.shape[-1]]
        accelerated = rebuilt - overshoot * previous
        phases = accelerated / accelerated.abs().clamp(min=1e-16)
        previous = rebuilt
        audio = torch.istft(magnitude * phases, length=length, **stft_args)
    peak = audio.abs().amax(dim=-1, keepdim=True).clamp(min=1e-8)
    return audio / peak * 0.95


def phase_gradient_heap_integration(magnitude: torch.Tensor, params: AudioParams = AudioParams(),
                                    relative_tolerance: float = PGHI_RELATIVE_TOLERANCE) -> torch.Tensor:
    """A phase for an STFT magnitude (filter_length // 2 + 1, T) without iterating: Phase Gradient Heap Integration
    (Prusa, Balazs and Sondergaard, 2017). For a Gaussian-like window the phase's derivatives follow from the log
    magnitude's: along time, the bin's frequency corrected by the magnitude's slope across frequency; along
    frequency, the magnitude's slope across time (and pi from torch.stft's frame-start phase reference). The phase
    is integrated from the loudest bin outwards, always from the loudest bin already reached, so that errors start
    where the magnitude is reliable. Bins at or below relative_tolerance of the peak are left out: NaN in the
    result.
    """
    bins, frames = magnitude.shape
    hop, n_fft = params.hop_length, params.filter_length
    gamma = HANN_GAMMA_PER_SQUARED_LENGTH * params.win_length ** 2
    log_magnitude = torch.log(magnitude.double().clamp(min=1e-30))
    slope_across_frequency = torch.gradient(log_magnitude, dim=0)[0] if bins > 1 else torch.zeros_like(log_magnitude)
    slope_across_time = torch.gradient(log_magnitude, dim=1)[0] if frames > 1 else torch.zeros_like(log_magnitude)
    bin_frequency = 2 * np.pi * hop * torch.arange(bins, dtype=torch.float64).unsqueeze(1) / n_fft
    step_in_time = (hop * n_fft / gamma) * slope_across_frequency + bin_frequency
    step_in_frequency = np.pi - (gamma / (hop * n_fft)) * slope_across_time

    # Plain Python lists and a heap: one pass over the reached bins, each index i = bin * frames + frame.
    flat_magnitude = magnitude.double().reshape(-1)
    reached = flat_magnitude > relative_tolerance * float(flat_magnitude.max())
    loudest_first = torch.argsort(flat_magnitude, descending=True)
    loudest_first = loudest_first[reached[loudest_first]].tolist()
    magnitudes, time_steps, frequency_steps = (flat_magnitude.tolist(), step_in_time.reshape(-1).tolist(),
                                               step_in_frequency.reshape(-1).tolist())
    waiting = bytearray(reached.to(torch.uint8).numpy().tobytes())
    phase = [math.nan] * (bins * frames)
    for start in loudest_first:
        if not waiting[start]:
            continue
        waiting[start] = 0
        phase[start] = 0.0  # a new region's phase is free: only differences within a region are known
        heap = [(-magnitudes[start], start)]
        while heap:
            _, index = heapq.heappop(heap)
            frame = index % frames
            neighbours = ((index + 1, time_steps, frame + 1 < frames), (index - 1, time_steps, frame > 0),
                          (index + frames, frequency_steps, index + frames < bins * frames),
                          (index - frames, frequency_steps, index >= frames))
            for neighbour, steps, inside in neighbours:
                if inside and waiting[neighbour]:
                    step = (steps[index] + steps[neighbour]) / 2
                    phase[neighbour] = phase[index] + (step if neighbour > index else -step)
                    waiting[neighbour] = 0
                    heapq.heappush(heap, (-magnitudes[neighbour], neighbour))
    return torch.tensor(phase, dtype=torch.float64).reshape(bins, frames)
