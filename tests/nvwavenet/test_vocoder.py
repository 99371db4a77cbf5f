"""WaveNet as the vocoder of inference.py (CPU path): text -> Tacotron 2 -> WaveNet -> wav."""
import pytest
import soundfile
import torch

import inference
from common.errors import UserError
from tests.families import FAMILIES
from tests.training_runs import TINY_TACOTRON2, run_training

TINY_WAVENET = FAMILIES["WaveNet"].flags


@pytest.mark.slow
def test_text_to_wav_with_the_wavenet_cpu_path(synthetic_corpus, tmp_path):
    torch.set_num_threads(1)
    run_training(synthetic_corpus, tmp_path / "wavenet", "WaveNet", *TINY_WAVENET)
    run_training(synthetic_corpus, tmp_path / "tacotron2", "Tacotron2", *TINY_TACOTRON2)
    phrases = tmp_path / "phrases.txt"
    phrases.write_text("Hi.\n")
    arguments = ["-i", str(phrases), "-o", str(tmp_path / "out"), "--cpu", "--quiet", "--max-decoder-steps", "4",
                 "--tacotron2", str(tmp_path / "tacotron2" / "checkpoint_Tacotron2_last.pt"),
                 "--wavenet", str(tmp_path / "wavenet" / "checkpoint_WaveNet_last.pt")]
    inference.main(arguments + ["--save-mels"])
    first, rate = soundfile.read(str(tmp_path / "out" / "audio_1.wav"))
    assert rate == 22050 and len(first) == 4 * 256
    # The mel alone through `inference.py -m WaveNet` gives the same wav.
    inference.main(["-m", "WaveNet", "-i", str(tmp_path / "out" / "mel_1.pt"), "-o", str(tmp_path / "vocoded"),
                    "--cpu", "--quiet", "--wavenet", arguments[-1]])
    assert (tmp_path / "vocoded" / "mel_1.wav").read_bytes() == (tmp_path / "out" / "audio_1.wav").read_bytes()
    inference.main(arguments[:3] + [str(tmp_path / "again")] + arguments[4:])
    again, _ = soundfile.read(str(tmp_path / "again" / "audio_1.wav"))
    assert (first == again).all()  # --seed fixes the sampling
    with pytest.raises(UserError, match="--wavenet-impl persistent needs a CUDA GPU"):
        inference.main(arguments + ["--wavenet-impl", "persistent"])
