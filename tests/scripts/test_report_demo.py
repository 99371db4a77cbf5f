"""scripts/report_demo.py: the demo's summary reads the training and inference logs."""
import subprocess
import sys

from common.logger import RunLogger
from tests.conftest import REPO_ROOT


def test_the_summary_counts_epochs_by_the_last_validations_epoch_not_by_validations(tmp_path):
    training = RunLogger(tmp_path / "nvlog.json")
    for epoch in (4, 8, 10):  # --val-interval-epochs 4, and at the end of 10 epochs
        training.log([epoch], {"val_loss": 1.0 / epoch, "alignment_score": 0.5 + epoch / 100}, echo=False)
    training.close()
    inference = RunLogger(tmp_path / "inference.json")
    inference.log([0], {"alignment_score": 0.8}, echo=False)
    inference.close()
    (tmp_path / "phrases.txt").write_text("Hello there.\n")
    completed = subprocess.run(
        [sys.executable, "-m", "scripts.report_demo", "--log", str(tmp_path / "nvlog.json"), "--inference-log",
         str(tmp_path / "inference.json"), "--wavs", str(tmp_path), "--phrases", str(tmp_path / "phrases.txt")],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    assert ("epochs: 10; final validation loss 0.1000; validation alignment-health score 0.600"
            in completed.stdout), completed.stdout
    assert "alignment-health score of the synthesized phrases: 0.800" in completed.stdout
