"""scripts/extract_gta_mels.sh: teacher-forced Tacotron 2 mels, one per wav, with the audio's own frame count,
the same in any batch, kept on a rerun."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from common.audio import AudioParams, MelSpectrogram, load_wav
from common.filelist import read_filelist
from scripts import extract_gta_mels

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_gta_mels_are_frame_aligned_with_their_audio_and_batch_independent(synthetic_corpus, tacotron2_checkpoint,
                                                                          tmp_path):
    output = tmp_path / "gta"
    completed = subprocess.run(
        ["bash", "scripts/extract_gta_mels.sh", "--synthetic", "--data-dir", str(synthetic_corpus.dataset_dir),
         "--filelists-dir", str(synthetic_corpus.train_filelist.parent), "--output-dir", str(output),
         "--tacotron2", str(tacotron2_checkpoint), "--cpu", "--quiet", "-bs", "5"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHON": sys.executable, "OMP_NUM_THREADS": "1"})
    assert completed.returncode == 0, completed.stderr[-2000:]
    mel_spectrogram = MelSpectrogram(AudioParams())
    entries = [entry for filelist in (synthetic_corpus.train_filelist, synthetic_corpus.val_filelist,
                                      synthetic_corpus.test_filelist)
               for entry in read_filelist(filelist, synthetic_corpus.dataset_dir)]
    assert sorted(path.stem for path in output.glob("*.pt")) == sorted(entry.path.stem for entry in entries)
    assert (output / "audio_params.json").is_file()
    for entry in entries:
        mel = torch.load(output / f"{entry.path.stem}.pt", weights_only=True)
        own = mel_spectrogram(load_wav(entry.path, 22050))[0]
        assert mel.dtype == torch.float32 and mel.shape == own.shape  # (80, 1 + samples // 256)

    # one at a time gives the same mels (the prenet masks follow the file, not the batch)
    alone = tmp_path / "alone"
    extract_gta_mels.main(["--tacotron2", str(tacotron2_checkpoint), "-d", str(synthetic_corpus.dataset_dir),
                           "--filelists", str(synthetic_corpus.val_filelist), str(synthetic_corpus.test_filelist),
                           "--output-dir", str(alone), "-bs", "1", "--cpu", "--quiet"])
    for path in alone.glob("*.pt"):
        torch.testing.assert_close(torch.load(path, weights_only=True),
                                   torch.load(output / path.name, weights_only=True), atol=1e-4, rtol=1e-4)
    # a rerun keeps what is there; --overwrite recomputes
    rerun = ["--tacotron2", str(tacotron2_checkpoint), "-d", str(synthetic_corpus.dataset_dir), "--filelists",
             str(synthetic_corpus.val_filelist), "--output-dir", str(alone), "--cpu", "--quiet"]
    assert extract_gta_mels.main(rerun) == 0
    assert extract_gta_mels.main([*rerun, "--overwrite"]) == 1
