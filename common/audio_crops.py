"""Fixed-length audio crops and their mels: the training items of the vocoders (WaveGlow, WaveNet, HiFi-GAN).

The crop start of item i is drawn from (seed, epoch, i) alone, so crops do not depend on worker processes and a
resumed run sees the same ones (the trainer calls set_epoch). With vary_with_epoch=False (validation) they are the
same every epoch. Clips shorter than a crop are zero-padded at the end.

Two ways to pair a crop with its mel:
- hop_aligned=False (WaveGlow, as NVIDIA trains it): the crop starts at any sample and its mel is computed from the
  crop alone, 1 + segment_length // hop frames, the edges reflect-padded.
- hop_aligned=True (WaveNet): the crop starts on a hop boundary and spans whole hops, and its mel is frames
  start/hop ... of the whole utterance's mel (real context at the edges), one frame per hop: what inference sees.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import Dataset

from common.audio import AudioParams, MelSpectrogram, load_wav
from common.errors import UserError
from common.filelist import read_filelist


def crop_audio_and_mel(audio: torch.Tensor, start: int, segment_length: int,
                       mel_spectrogram: MelSpectrogram) -> tuple[torch.Tensor, torch.Tensor]:
    """audio[start:start + segment_length] and its segment_length / hop frames of the full utterance's mel.

    `start` and `segment_length` are multiples of the hop; audio shorter than the crop is zero-padded first. Only
    the stretch the crop's frames can see (half an FFT either side, rounded up to hops) is transformed.
    """
    params = mel_spectrogram.params
    hop = params.hop_length
    if start % hop or segment_length % hop:
        raise ValueError(f"crop start {start} and length {segment_length} must be multiples of the hop {hop}")
    if audio.numel() < start + segment_length:
        audio = F.pad(audio, (0, start + segment_length - audio.numel()))
    context = math.ceil(params.filter_length / 2 / hop) * hop
    # Where the stretch is cut at the utterance's own ends, the STFT's reflect padding is the same as for the whole
    # utterance; where it is cut inside, the frames we keep do not reach the cut.
    stretch_start = max(0, start - context)
    stretch = audio[stretch_start:min(audio.numel(), start + segment_length + context)]
    first_frame = (start - stretch_start) // hop
    mel = mel_spectrogram(stretch)[0, :, first_frame:first_frame + segment_length // hop]
    return audio[start:start + segment_length], mel


class AudioCropDataset(Dataset):
    """Items are (log mel (n_mel, frames), audio crop (segment_length,) float in [-1, 1])."""

    def __init__(self, filelist: str | Path, dataset_path: str | Path, audio: AudioParams, segment_length: int,
                 seed: int = 0, vary_with_epoch: bool = True, hop_aligned: bool = False):
        if segment_length < 1:
            raise UserError(f"--segment-length must be positive, got {segment_length}")
        if hop_aligned and segment_length % audio.hop_length:
            raise UserError(f"--segment-length ({segment_length}) must be a multiple of --hop-length "
                            f"({audio.hop_length}): one mel frame per hop of audio")
        self.entries = read_filelist(filelist, dataset_path, need_text=False)
        self.audio = audio
        self.segment_length, self.hop_aligned = segment_length, hop_aligned
        self.seed, self.vary_with_epoch, self.epoch = seed, vary_with_epoch, 0
        self.mel_spectrogram = MelSpectrogram(audio)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.entries)

    def crop_start(self, index: int, num_samples: int) -> int:
        """Where item index's crop starts (0 when the clip is shorter than a crop)."""
        step = self.audio.hop_length if self.hop_aligned else 1
        last_start = max(0, num_samples - self.segment_length) // step
        rng = np.random.default_rng([self.seed, self.epoch if self.vary_with_epoch else 0, index])
        return int(rng.integers(0, last_start + 1)) * step

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        entry = self.entries[index]
        try:
            audio = load_wav(entry.path, self.audio.sampling_rate)
        except (FileNotFoundError, ValueError) as error:
            raise type(error)(f"{entry.source}: {error}") from error
        start = self.crop_start(index, audio.numel())
        if self.hop_aligned:
            audio, mel = crop_audio_and_mel(audio, start, self.segment_length, self.mel_spectrogram)
            return mel, audio
        audio = F.pad(audio[start:start + self.segment_length], (0, max(0, self.segment_length - audio.numel())))
        return self.mel_spectrogram(audio)[0], audio


def collate_equal_length(batch: list[tuple[torch.Tensor, torch.Tensor]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Items of equal shapes: (mels (B, n_mel, frames), audio (B, L))."""
    mels, audios = zip(*batch)
    return torch.stack(mels), torch.stack(audios)


def crops_to_device(batch: tuple[torch.Tensor, torch.Tensor], device: torch.device):
    mel, audio = batch
    return mel.to(device, non_blocking=True), audio.to(device, non_blocking=True)
