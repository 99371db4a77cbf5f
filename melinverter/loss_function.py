"""The mel inverter's loss: the mean absolute difference between the predicted and the true natural-log magnitude of
the linear spectrogram, the true one from the audio itself (common/audio.py's STFT, the one the mel is made from).

Frames whose FFT window reaches past the ends of a crop or clip are left out: their true spectrum there was made from
reflected samples that the whole utterance, whose mel the inverter is given, does not have."""
from __future__ import annotations

import functools

import torch

from common.audio import LOG_CLAMP_MIN, AudioParams, MelSpectrogram


@functools.cache
def _stft(params: AudioParams, device: torch.device) -> MelSpectrogram:
    return MelSpectrogram(params).to(device)


def log_magnitude(audio: torch.Tensor, params: AudioParams) -> torch.Tensor:
    """(B, samples) -> (B, filter_length // 2 + 1, samples // hop + 1): the log of the clamped STFT magnitude."""
    return torch.log(torch.clamp(_stft(params, audio.device).magnitude(audio), min=LOG_CLAMP_MIN))


def edge_frames(params: AudioParams) -> int:
    """Frames at each end of a crop whose window reaches past it."""
    return params.filter_length // 2 // params.hop_length


def absolute_errors(predicted: torch.Tensor, audio: torch.Tensor, params: AudioParams) -> torch.Tensor:
    """|predicted - true| log magnitude (B, bins, frames - 2 x edge_frames) for predicted (B, bins, frames) of
    audio (B, frames x hop)."""
    frames = predicted.shape[-1]
    edge = min(edge_frames(params), (frames - 1) // 2)  # a clip of a few frames keeps its middle one
    target = log_magnitude(audio.float(), params)[..., :frames]
    return (predicted.float() - target).abs()[..., edge:frames - edge]
