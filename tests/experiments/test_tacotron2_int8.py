"""experiments/tacotron2_int8/compare_mels.py: the difference of two --save-mels runs over the frames both have."""
import pytest
import torch

from common.errors import UserError
from experiments.tacotron2_int8 import compare_mels


def test_reports_the_difference_over_common_frames_and_the_length_change(tmp_path, capsys):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    reference = torch.full((80, 10), -4.0)
    torch.save(reference, tmp_path / "a" / "mel_1.pt")
    torch.save(torch.cat([reference + 0.5, torch.zeros(80, 2)], dim=1), tmp_path / "b" / "mel_1.pt")
    torch.save(reference, tmp_path / "a" / "mel_2.pt")  # only in the first run: not compared
    (row,) = compare_mels.main([str(tmp_path / "a"), str(tmp_path / "b")])
    assert row["file"] == "mel_1.pt"
    assert row["mean_abs_difference"] == pytest.approx(0.5) and row["max_abs_difference"] == pytest.approx(0.5)
    assert row["length_difference"] == 2 and row["mean_abs_log_mel"] == pytest.approx(4.0)
    assert "1 files: mean |diff| 0.5000 (mean |log mel| 4.00), 1 with another length" in capsys.readouterr().out


def test_a_folder_without_mels_is_a_user_error_naming_it(tmp_path):
    (tmp_path / "a").mkdir()
    with pytest.raises(UserError, match="no mel_\\*.pt files"):
        compare_mels.main([str(tmp_path / "a"), str(tmp_path)])
