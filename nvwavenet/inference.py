"""`inference.py -m WaveNet`: mel .pt files to wavs with a WaveNet checkpoint (common/mel_to_wav.py).

    python inference.py -m WaveNet -i out/mels/ -o out/wavs --wavenet N.pt [--wavenet-impl auto]
"""
from common.mel_to_wav import mel_to_wav_part
from nvwavenet.vocoder import VOCODER

INFERENCE = mel_to_wav_part(VOCODER)
