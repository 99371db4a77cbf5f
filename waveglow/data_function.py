"""(mel, audio) training pairs for WaveGlow: a random crop of each clip and the mel computed from that crop alone,
1 + segment_length // hop frames, as NVIDIA trains it (see common/audio_crops.py)."""
from __future__ import annotations

from functools import partial

from common.audio_crops import AudioCropDataset, collate_equal_length

MelAudioDataset = partial(AudioCropDataset, hop_aligned=False)
collate_mel_audio = collate_equal_length
