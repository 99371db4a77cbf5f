"""`inference.py -m WaveNet`: mel .pt files to wavs with a WaveNet checkpoint (common/mel_to_wav.py).

    python inference.py -m WaveNet -i out/mels/ -o out/wavs --wavenet N.pt [--wavenet-impl auto]
"""
from common.mel_to_wav import MelToWav

_PART = MelToWav("WaveNet")
add_args, run = _PART.add_args, _PART.run
