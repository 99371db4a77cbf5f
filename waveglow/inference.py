"""`inference.py -m WaveGlow`: mel .pt files to wavs with a WaveGlow checkpoint (common/mel_to_wav.py).

    python inference.py -m WaveGlow -i out/mels/ -o out/wavs --waveglow W.pt [-s 0.6 -d 0.01]
"""
from common.mel_to_wav import mel_to_wav_part
from waveglow import export
from waveglow.vocoder import VOCODER

INFERENCE = mel_to_wav_part(VOCODER, export_onnx=export.export_checkpoint, add_export_args=export.add_export_args)
