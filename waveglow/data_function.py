"""(mel, audio) training pairs for WaveGlow: a fixed-length crop of each clip and the mel computed from that crop."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset

from common.audio import AudioParams, MelSpectrogram, load_wav
from common.filelist import read_filelist


class MelAudioDataset(Dataset):
    """Items are (log mel (n_mel, 1 + segment_length // hop), audio (segment_length,)).

    Clips longer than segment_length give a crop whose start is drawn from (seed, epoch, item index) alone, so the
    crops do not depend on worker processes and a resumed run sees the same ones (the trainer calls set_epoch).
    With vary_with_epoch=False (validation) the crops are the same every epoch. Shorter clips are zero-padded.
    """

    def __init__(self, filelist: str | Path, dataset_path: str | Path, audio: AudioParams, segment_length: int,
                 seed: int = 0, vary_with_epoch: bool = True):
        if segment_length < 1:
            raise ValueError(f"--segment-length must be positive, got {segment_length}")
        self.entries = read_filelist(filelist, dataset_path, need_text=False)
        for entry in self.entries:  # fail at start-up, not hours into training
            if not entry.path.is_file():
                raise FileNotFoundError(f"{entry.source}: audio file not found: {entry.path}")
        self.audio = audio
        self.segment_length = segment_length
        self.seed, self.vary_with_epoch, self.epoch = seed, vary_with_epoch, 0
        self.mel_spectrogram = MelSpectrogram(audio)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.entries)

    def crop_start(self, index: int, n_samples: int) -> int:
        epoch = self.epoch if self.vary_with_epoch else 0
        rng = np.random.default_rng([self.seed, epoch, index])
        return int(rng.integers(0, n_samples - self.segment_length + 1))

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        entry = self.entries[index]
        try:
            audio = load_wav(entry.path, self.audio.sampling_rate)
        except (FileNotFoundError, ValueError) as error:
            raise type(error)(f"{entry.source}: {error}") from error
        if audio.numel() >= self.segment_length:
            start = self.crop_start(index, audio.numel())
            audio = audio[start:start + self.segment_length]
        else:
            audio = torch.nn.functional.pad(audio, (0, self.segment_length - audio.numel()))
        return self.mel_spectrogram(audio)[0], audio


def collate_mel_audio(batch: list[tuple[torch.Tensor, torch.Tensor]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Every item has the same length, so a batch is just the stacked mels (B, n_mel, T) and audio (B, L)."""
    mels, audios = zip(*batch)
    return torch.stack(mels), torch.stack(audios)
