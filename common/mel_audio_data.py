"""Items of the vocoders trained on (mel, audio) pairs, HiFi-GAN and the mel inverter: audio and the mel the model is
given for it.

The input mel is common/audio.py's mel of the whole utterance, the one Tacotron 2 predicts, so Tacotron 2 feeds
these vocoders without conversion. Training crops start on a hop boundary and span whole hops (common/audio_crops.py,
as WaveNet's): mel frame k of a crop is centred on the crop's sample k * hop and pairs with samples
[k * hop, (k + 1) * hop).

For training on an acoustic model's own mels (--input-mels-dir), the input mel is read from `<stem>.pt` or
`<stem>.npy` (n_mel_channels, frames) instead, frame-aligned with the wav (teacher-forced, as
scripts/extract_gta_mels.sh writes them); the audio stays the ground truth, from which each family's loss
computes its target.
"""
from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import Dataset, Sampler

from common.arguments import flag
from common.audio import LOG_CLAMP_MIN, AudioParams, MelSpectrogram, load_wav
from common.audio_crops import AudioCropDataset, crop_audio_and_mel
from common.errors import UserError, UserFileNotFoundError
from common.filelist import read_filelist
from common.item_cache import ItemCache
from common.recipe import BatchingContext
from common.sampler import EpochBatchSampler, fixed_size_batches
from common.training_settings import TrainingSettings

DATA = "data (hop-aligned audio crops and their mels)"
SILENCE = math.log(LOG_CLAMP_MIN)  # the log mel of zero audio: what a loaded mel is padded with past its end


@dataclass(kw_only=True)
class MelAudioDataSettings(TrainingSettings):
    """The data flags of a vocoder trained on these items; its settings class subclasses this one and gives
    --segment-length its own default (default_of)."""
    segment_length: int = flag(8192, "audio samples per training crop, a multiple of --hop-length (default "
                                     "%(default)s); --segment-size is NVIDIA's HiFi-GAN's name",
                               aliases=["--segment-size"], group=DATA)
    input_mels_dir: str | None = flag(None, "train on an acoustic model's own mels: the input mels are <stem>.pt or "
                                            "<stem>.npy files (n_mel_channels x frames, frame-aligned with the wav) "
                                            "in this folder", group=DATA)
    keep_in_memory: bool = flag(False, "keep each training clip (and its input mel) in memory once read, instead of "
                                       "reading it for every crop: for a corpus that fits (make demo's: about 250 "
                                       "MB); with --num-workers 0", action=argparse.BooleanOptionalAction,
                                group=DATA)


def frames_of(num_samples: int, hop_length: int) -> int:
    """Frames of common/audio.py's centred mel of num_samples samples."""
    return 1 + num_samples // hop_length


class InputMels:
    """The mels of --input-mels-dir, looked up by the wav's stem and checked against the wav's length."""

    def __init__(self, directory: str | Path, audio: AudioParams):
        self.directory, self.audio = Path(directory), audio
        if not self.directory.is_dir():
            raise UserFileNotFoundError(f"--input-mels-dir {self.directory} is not a folder")

    def path_for(self, wav: Path) -> Path:
        for suffix in (".pt", ".npy"):
            candidate = self.directory / f"{wav.stem}{suffix}"
            if candidate.is_file():
                return candidate
        raise UserFileNotFoundError(f"--input-mels-dir {self.directory}: no {wav.stem}.pt or {wav.stem}.npy for "
                                    f"{wav} (extract the mels with scripts/extract_gta_mels.sh)")

    def load(self, wav: Path, num_samples: int) -> torch.Tensor:
        path = self.path_for(wav)
        try:
            mel = (torch.from_numpy(np.load(path)) if path.suffix == ".npy"
                   else torch.load(path, map_location="cpu", weights_only=True))
        except Exception as error:  # numpy and torch raise many types for a damaged file
            raise UserError(f"--input-mels-dir: cannot read {path}: {error}") from error
        if not isinstance(mel, torch.Tensor) or mel.dim() != 2 or mel.shape[0] != self.audio.n_mel_channels:
            shape = tuple(mel.shape) if isinstance(mel, torch.Tensor) else type(mel).__name__
            raise UserError(f"--input-mels-dir: {path} holds {shape}, expected a mel of shape "
                            f"({self.audio.n_mel_channels}, frames)")
        expected = frames_of(num_samples, self.audio.hop_length)
        if mel.shape[1] != expected:
            raise UserError(f"--input-mels-dir: {path} has {mel.shape[1]} frames, but {wav} ({num_samples} samples) "
                            f"has {expected} at hop {self.audio.hop_length}: the mel is not frame-aligned with "
                            "the audio (extract it teacher-forced from this wav)")
        return mel.float()


def shortest_for_loss(audio: AudioParams) -> int:
    """The fewest whole hops of audio whose centred STFT can reflect-pad half an FFT at each end."""
    return (audio.filter_length // 2 // audio.hop_length + 1) * audio.hop_length


def load_entry_audio(entry, audio: AudioParams) -> torch.Tensor:
    try:
        return load_wav(entry.path, audio.sampling_rate)
    except (FileNotFoundError, ValueError) as error:
        raise type(error)(f"{entry.source}: {error}") from error


class MelAudioCrops(AudioCropDataset):
    """Training items (input mel (n_mel, segment_length / hop), audio crop (segment_length,)): hop-aligned crops
    whose frames come from the whole utterance's mel (or from --input-mels-dir), drawn from (seed, epoch, item)
    alone; clips shorter than a crop are zero-padded."""

    def __init__(self, filelist: str | Path, dataset_path: str | Path, audio: AudioParams, segment_length: int,
                 seed: int = 0, input_mels_dir: str | Path | None = None, keep_in_memory: bool = False):
        if segment_length < 1 or segment_length % audio.hop_length:
            raise UserError(f"--segment-length ({segment_length}) must be a positive multiple of --hop-length "
                            f"({audio.hop_length}): one mel frame per hop of audio")
        if segment_length < shortest_for_loss(audio):
            raise UserError(f"--segment-length ({segment_length}) must be at least {shortest_for_loss(audio)}: the "
                            f"loss's spectrogram of a crop reflects half an FFT (--filter-length "
                            f"{audio.filter_length}) at each end")
        super().__init__(filelist, dataset_path, audio, segment_length, seed=seed, hop_aligned=True)
        self.input_mels = InputMels(input_mels_dir, audio) if input_mels_dir else None
        if self.input_mels is not None:
            for entry in self.entries:  # a missing mel fails at start-up; lengths are checked as items are read
                self.input_mels.path_for(entry.path)
        self.in_memory = ItemCache(keep_in_memory)

    def read_clip(self, index: int) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Item index's whole audio and its --input-mels-dir mel (None without one)."""
        entry = self.entries[index]
        audio = load_entry_audio(entry, self.audio)
        return audio, (self.input_mels.load(entry.path, audio.numel()) if self.input_mels is not None else None)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        audio, mel = self.in_memory.get(index, self.read_clip)
        start = self.crop_start(index, audio.numel())
        if mel is None:
            crop, mel = crop_audio_and_mel(audio, start, self.segment_length, self.mel_spectrogram)
            return mel, crop
        frames, first = self.segment_length // self.audio.hop_length, start // self.audio.hop_length
        mel = F.pad(mel[:, first:first + frames], (0, max(0, first + frames - mel.shape[1])), value=SILENCE)
        crop = F.pad(audio[start:start + self.segment_length], (0, max(0, start + self.segment_length - audio.numel())))
        return mel, crop


class FullUtterances(Dataset):
    """Validation items: whole utterances cut to whole hops, (input mel (n_mel, frames), audio (frames * hop,)),
    frames = samples // hop; the mel frames are those of the whole utterance's mel. A clip too short for the loss's
    spectrogram is zero-padded to the shortest length it takes."""

    def __init__(self, filelist: str | Path, dataset_path: str | Path, audio: AudioParams,
                 input_mels_dir: str | Path | None = None):
        self.entries = read_filelist(filelist, dataset_path, need_text=False)
        self.audio = audio
        self.input_mels = InputMels(input_mels_dir, audio) if input_mels_dir else None
        if self.input_mels is not None:
            for entry in self.entries:
                self.input_mels.path_for(entry.path)
        self.mel_spectrogram = MelSpectrogram(audio)

    def __len__(self) -> int:
        return len(self.entries)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        entry = self.entries[index]
        audio = load_entry_audio(entry, self.audio)
        hop = self.audio.hop_length
        length = max(shortest_for_loss(self.audio), audio.numel() // hop * hop)  # very short clips: zero-padded
        if self.input_mels is not None:
            mel = self.input_mels.load(entry.path, audio.numel())[:, :length // hop]
            mel = F.pad(mel, (0, length // hop - mel.shape[1]), value=SILENCE)
            return mel, F.pad(audio, (0, max(0, length - audio.numel())))[:length]
        crop, mel = crop_audio_and_mel(audio, 0, length, self.mel_spectrogram)
        return mel, crop


@dataclass
class MelAudioBatch:
    """A batch of equal-length items."""
    mel: torch.Tensor  # (B, n_mel_channels, frames)
    audio: torch.Tensor  # (B, frames * hop)

    def to(self, device: torch.device) -> "MelAudioBatch":
        return MelAudioBatch(self.mel.to(device, non_blocking=True), self.audio.to(device, non_blocking=True))


def collate(items: list[tuple[torch.Tensor, torch.Tensor]]) -> MelAudioBatch:
    mels, audios = zip(*items)
    return MelAudioBatch(torch.stack(mels), torch.stack(audios))


def batch_to_device(batch: MelAudioBatch, device: torch.device) -> MelAudioBatch:
    return batch.to(device)


def crops_or_whole_utterances(settings: MelAudioDataSettings, dataset: Dataset, context: BatchingContext) -> Sampler:
    """The batch sampler (common/recipe.py): training, -bs crops; validation, one whole utterance per batch, so no
    padding changes what is measured."""
    if context.training:
        return fixed_size_batches(settings, dataset, context)
    return EpochBatchSampler(len(dataset), 1, shuffle=False, drop_last=False, seed=context.seed,
                             rank=context.rank, world_size=context.world_size)
