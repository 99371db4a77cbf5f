"""`inference.py -m MelInverter`: mel files to wavs through the mel inverter and Griffin-Lim (common/mel_to_wav.py).

    python inference.py -m MelInverter -i mels/ more.npy -o out/wavs --melinverter M.pt

-i takes common/audio.py's log mels (n_mel_channels, frames) as .pt tensors or .npy arrays, or folders of them.
Text to wav: inference.py --tacotron2 T --melinverter M (melinverter/vocoder.py).
"""
from __future__ import annotations

from common.mel_to_wav import mel_to_wav_part
from melinverter.vocoder import VOCODER

INFERENCE = mel_to_wav_part(VOCODER)
