"""The random choices of wav2vec 2.0 pre-training, as pure functions: which frames are masked, which masked frames
serve as negatives, and how many frames the convolutional feature extractor makes of a waveform.

They live apart from the model so that the data side draws them in its collate function (a batch then carries its
masks and negatives: the loss's item count is known before the forward pass, and a run is a pure function of the
seed) and tests can pass them in to recompute a loss by hand.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch


def conv_output_lengths(input_lengths: torch.Tensor, conv_layers: list[tuple[int, int, int]]) -> torch.Tensor:
    """Frames out of a stack of unpadded convolutions (dim, kernel, stride): floor((L - kernel) / stride + 1) per
    layer; an input shorter than a kernel gives 0 frames."""
    lengths = torch.as_tensor(input_lengths).long()
    for _, kernel, stride in conv_layers:
        lengths = (torch.div(lengths - kernel, stride, rounding_mode="floor") + 1).clamp(min=0)
    return lengths


def compute_mask_indices(frame_lengths: Sequence[int], num_frames: int, mask_prob: float, mask_length: int,
                         rng: np.random.Generator, min_masks: int = 0) -> np.ndarray:
    """Span masks (B, num_frames) bool with fairseq's static semantics.

    Row b (of frame_lengths[b] valid frames) gets max(min_masks, int(mask_prob * length / mask_length + U[0, 1)))
    span starts drawn without replacement, each masking mask_length frames; spans may overlap, which is why
    p = 0.65, L = 10 masks about 49 % of the frames, not 65 %. Every row is then subsampled at random down to the
    batch's smallest number of masked frames, so that each row has the same count M (the model gathers the masked
    frames into (B, M, C)). Only valid frames are ever masked.
    """
    if mask_length < 1:
        raise ValueError(f"mask_length must be at least 1, got {mask_length}")
    masked_per_row = []
    for length in frame_lengths:
        length = int(length)
        if length > num_frames:
            raise ValueError(f"a frame length ({length}) exceeds the number of frames ({num_frames})")
        num_spans = max(min_masks, int(mask_prob * length / mask_length + rng.random()))
        # fairseq: when the row is too short for num_spans distinct starts before length - mask_length, the starts
        # range over num_spans + 1 positions instead; spans running past the row are cut (fewer masked frames).
        start_range = max(length - mask_length, num_spans + 1)
        starts = rng.choice(start_range, num_spans, replace=False)
        frames = (starts[:, None] + np.arange(mask_length)[None, :]).ravel()
        masked_per_row.append(np.unique(frames[frames < length]))

    mask = np.zeros((len(masked_per_row), num_frames), dtype=bool)
    if not masked_per_row:
        return mask
    common_count = min(len(frames) for frames in masked_per_row)
    for row, frames in enumerate(masked_per_row):
        if len(frames) > common_count:
            frames = rng.choice(frames, common_count, replace=False)
        mask[row, frames] = True
    return mask


def sample_negative_indices(mask: np.ndarray | torch.Tensor, num_negatives: int,
                            rng: np.random.Generator) -> torch.Tensor:
    """For every masked frame (row-major order, as mask.nonzero()), num_negatives indices into the flat list of
    masked frames: other masked frames of the same row, uniform with replacement, never the frame itself.
    Returns (N, num_negatives) long, N = mask.sum()."""
    mask = torch.as_tensor(mask).bool().cpu().numpy()
    counts = mask.sum(axis=1)
    if num_negatives == 0:
        return torch.zeros(int(counts.sum()), 0, dtype=torch.long)
    if np.any(counts < 2):
        rows = np.nonzero(counts < 2)[0].tolist()
        raise ValueError(f"rows {rows} have fewer than 2 masked frames, too few to draw negatives from "
                         f"(the utterances are too short to mask)")
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
    row_of_frame = np.repeat(np.arange(len(counts)), counts)
    frame_offset = offsets[row_of_frame]
    position_in_row = np.arange(int(counts.sum())) - frame_offset
    # Draw among the M - 1 other frames: r in [0, M - 1), shifted past the frame's own position.
    draws = rng.integers(0, (counts[row_of_frame] - 1)[:, None], size=(len(row_of_frame), num_negatives))
    draws = draws + (draws >= position_in_row[:, None])
    return torch.from_numpy(frame_offset[:, None] + draws).long()
