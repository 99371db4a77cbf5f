"""Text-mel pairs for Tacotron 2: a dataset over a filelist (wavs, or mels precomputed by scripts/prepare_mels.sh)
and the collate function that pads a batch and builds the stop-gate targets."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset

from common.audio import AudioParams, MelSpectrogram, load_wav
from common.errors import UserError
from common.filelist import FilelistEntry, read_filelist
from common.item_cache import ItemCache
from common.mel_files import read_mel
from common.text import TextProcessor


def encode_transcript(text: TextProcessor, entry: FilelistEntry) -> list[int]:
    """The symbol ids of a filelist line's transcript; one the text front-end cannot read (no symbol left after
    cleaning, or an unknown one with strict symbols) is the user's to fix: a UserError naming the file and line."""
    try:
        return text.encode(entry.text, source=entry.source)
    except UserError:
        raise
    except ValueError as error:
        raise UserError(str(error)) from error


class TextMelDataset(Dataset):
    """Items are (token ids (T_text,), log mel (n_mels, T_mel)). Transcripts are encoded up front, so a bad line
    fails at start-up, naming the file and line, not hours into training.

    With final_punctuation_dropout p, item i of epoch e is read without the marks that end its transcript with
    probability p, drawn from (seed, e, i) alone: the same items in any worker and in a resumed run (the trainer
    calls set_epoch)."""

    def __init__(self, filelist: str | Path, dataset_path: str | Path, text: TextProcessor, audio: AudioParams,
                 load_mel_from_disk: bool = False, keep_in_memory: bool = False,
                 final_punctuation_dropout: float = 0.0, seed: int = 0):
        self.entries = read_filelist(filelist, dataset_path)
        self.text = text
        self.final_punctuation_dropout, self.seed, self.epoch = final_punctuation_dropout, seed, 0
        self.audio = audio
        self.load_mel_from_disk = load_mel_from_disk
        text.cache_phonemes(filelist, [entry.text for entry in self.entries])  # a phoneme front-end's, else nothing
        self.token_ids = [torch.tensor(encode_transcript(text, entry), dtype=torch.long) for entry in self.entries]
        self.bucket_lengths = [len(ids) for ids in self.token_ids]  # text length predicts mel length well
        self.mel_spectrogram = MelSpectrogram(audio)
        self.in_memory = ItemCache(keep_in_memory)
        if load_mel_from_disk:
            self._check_mel_params(Path(self.entries[0].path).parent / "audio_params.json")

    def _check_mel_params(self, params_file: Path) -> None:
        if params_file.is_file():
            saved = AudioParams.from_dict(json.loads(params_file.read_text()))
            saved.check_matches(self.audio, str(params_file), "the audio flags of this run")

    def __len__(self) -> int:
        return len(self.entries)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def drops_final_punctuation(self, index: int) -> bool:
        """Whether item `index` is read without its final marks this epoch."""
        if not self.final_punctuation_dropout:
            return False
        return bool(np.random.default_rng([self.seed, self.epoch, index]).random() < self.final_punctuation_dropout)

    def load_mel(self, index: int) -> torch.Tensor:
        entry = self.entries[index]
        try:
            if self.load_mel_from_disk:
                return read_mel(entry.path, self.audio.n_mel_channels)
            audio = load_wav(entry.path, self.audio.sampling_rate, min_samples=self.audio.hop_length)
        except (FileNotFoundError, ValueError) as error:
            raise type(error)(f"{entry.source}: {error}") from error
        return self.mel_spectrogram(audio)[0]

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        token_ids = self.token_ids[index]
        if self.drops_final_punctuation(index):
            token_ids = torch.tensor(self.text.without_final_mark(token_ids.tolist()), dtype=torch.long)
        return token_ids, self.in_memory.get(index, self.load_mel)


class TextMelCollate:
    """Pads a batch, longest text first. The gate target is 1 from each utterance's last real frame on (the frame
    at which the decoder should stop). With n_frames_per_step > 1 the model groups frames itself."""

    def __call__(self, batch: list[tuple[torch.Tensor, torch.Tensor]]) -> dict:
        order = sorted(range(len(batch)), key=lambda i: len(batch[i][0]), reverse=True)
        text_lengths = torch.tensor([len(batch[i][0]) for i in order], dtype=torch.long)
        mel_lengths = torch.tensor([batch[i][1].shape[1] for i in order], dtype=torch.long)
        text = torch.zeros(len(batch), int(text_lengths[0]), dtype=torch.long)
        mel = torch.zeros(len(batch), batch[0][1].shape[0], int(mel_lengths.max()))
        gate = torch.zeros(len(batch), int(mel_lengths.max()))
        for row, i in enumerate(order):
            ids, item_mel = batch[i]
            text[row, : len(ids)] = ids
            mel[row, :, : item_mel.shape[1]] = item_mel
            gate[row, item_mel.shape[1] - 1:] = 1.0
        return {"text": text, "text_lengths": text_lengths, "mel": mel, "gate": gate, "mel_lengths": mel_lengths}


def batch_to_device(batch: dict, device: torch.device) -> dict:
    return {name: value.to(device, non_blocking=True) for name, value in batch.items()}
