"""(mel, mu-law audio) training crops for WaveNet.

A crop starts on a hop boundary and spans a whole number of hops, so mel frame i of the crop is frame
(start / hop + i) of the whole utterance's mel: exactly the frames, with their real left and right context, that
inference will see for those samples. One frame per hop: frames * hop == segment_length, as the model requires.
"""
from __future__ import annotations

from pathlib import Path

import torch

from common.audio import AudioParams
from common.audio_crops import AudioCropDataset, collate_equal_length
from nvwavenet.model import mu_law_encode


class MelAudioCrops(AudioCropDataset):
    """Items are (log mel (n_mel, segment_length / hop), mu-law classes (segment_length,) int64): hop-aligned crops
    whose mel frames come from the whole utterance (common/audio_crops.py)."""

    def __init__(self, filelist: str | Path, dataset_path: str | Path, audio: AudioParams, segment_length: int,
                 quantization: int = 256, seed: int = 0, vary_with_epoch: bool = True):
        super().__init__(filelist, dataset_path, audio, segment_length, seed=seed, vary_with_epoch=vary_with_epoch,
                         hop_aligned=True)
        self.quantization = quantization

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        mel, audio = super().__getitem__(index)
        return mel, mu_law_encode(audio, self.quantization)


collate_crops = collate_equal_length
