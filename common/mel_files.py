"""Mel files: log mels of shape (n_mel_channels, frames) saved as .pt tensors (scripts/prepare_mels.sh,
`inference.py --save-mels`, scripts/extract_gta_mels.sh) or .npy arrays (NVIDIA's mel extraction), read by
Tacotron 2's --load-mel-from-disk and by the vocoders' mel-to-wav inference."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from common.errors import UserError


def read_mel(path: Path, n_mel_channels: int) -> torch.Tensor:
    """(n_mel_channels, frames) float mel from a .pt or .npy file (one of shape (1, n_mel_channels, frames) too); a
    file of anything else is a user error naming it."""
    if path.suffix == ".npy":
        try:
            mel = torch.from_numpy(np.load(path, allow_pickle=False))
        except (ValueError, OSError, EOFError) as error:
            raise UserError(f"cannot read mel file {path}: it is damaged or not a saved numpy array") from error
    else:
        try:
            mel = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as error:  # torch.load's failures on a damaged file come in many types
            raise UserError(f"cannot read mel file {path}: it is damaged or not a saved tensor") from error
    if isinstance(mel, torch.Tensor) and mel.dim() == 3 and mel.size(0) == 1:
        mel = mel[0]
    if (not isinstance(mel, torch.Tensor) or mel.dim() != 2 or mel.size(0) != n_mel_channels or mel.size(1) < 1
            or not mel.is_floating_point()):
        held = (f"a {str(mel.dtype).removeprefix('torch.')} array of shape {tuple(mel.shape)}"
                if isinstance(mel, torch.Tensor) else type(mel).__name__)
        raise UserError(f"{path} holds {held}, expected a float log mel of shape ({n_mel_channels}, frames)")
    return mel.float()
