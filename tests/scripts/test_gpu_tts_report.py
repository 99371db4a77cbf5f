"""scripts/tacotron2/gpu_tts_report.py: the GPU text-to-speech run's curves and scores."""
from __future__ import annotations

import json

import pytest

from common.errors import exit_on_user_error
from common.logger import RunLogger
from scripts.tacotron2.gpu_tts_report import main


def write_training_log(path, losses_and_validations):
    logger = RunLogger(path)
    for step, data in losses_and_validations:
        logger.log(step, data, echo=False)
    logger.close()


def write_scores(folder, cer, wer, espeak=None):
    folder.mkdir(parents=True)
    result = {"synthesized": {"cer": cer, "wer": wer}}
    if espeak is not None:
        result["espeak"] = {"cer": espeak[0], "wer": espeak[1]}
    (folder / "intelligibility.json").write_text(json.dumps(result))


def test_each_validation_names_the_update_it_followed(tmp_path, capsys):
    log = [([1, 1], {"train_loss": 2.0}), ([1, 2], {"train_loss": 1.5}),
           ([1, 2], {"val_loss": 1.4, "alignment_score": 0.51234, "val_stopped_by_gate": 0.25}),
           ([1, 3], {"train_loss": 1.2}), ([1], {"val_loss": 1.1, "alignment_score": 0.7})]
    write_training_log(tmp_path / "tacotron2_nvlog.json", log)
    for texts in ("test_sentences", "phrases"):
        write_scores(tmp_path / f"intelligibility_{texts}_griffin_lim", 12.345, 50.0, espeak=(1.2, 6.4))

    report = main([str(tmp_path), "tacotron2", "griffin_lim"])

    assert report["tacotron2"]["updates"] == 3
    assert report["tacotron2"]["train_loss"] == [[1, 2.0], [2, 1.5], [3, 1.2]]
    assert report["tacotron2"]["validation"] == [
        {"update": 2, "val_loss": 1.4, "alignment_score": 0.512, "val_stopped_by_gate": 0.25},
        {"update": 3, "val_loss": 1.1, "alignment_score": 0.7}]
    assert report["phrases"]["cer"] == {"griffin_lim": 12.35, "espeak_ceiling": 1.2}
    assert json.loads((tmp_path / "report.json").read_text()) == report
    assert "tacotron2: 3 updates, loss 2.0 -> 1.2" in capsys.readouterr().out


def test_no_trainings_scores_the_vocoders_alone(tmp_path):
    for texts in ("test_sentences", "phrases"):
        write_scores(tmp_path / f"intelligibility_{texts}_griffin_lim", 30.0, 90.0, espeak=(1.0, 5.0))
        write_scores(tmp_path / f"intelligibility_{texts}_hifigan", 20.0, 70.0)
    report = main([str(tmp_path), "", "griffin_lim", "hifigan"])
    assert set(report) == {"test_sentences", "phrases"}
    assert report["test_sentences"]["wer"] == {"griffin_lim": 90.0, "hifigan": 70.0, "espeak_ceiling": 5.0}


def test_a_missing_score_names_the_file_and_its_stage(tmp_path, capsys):
    write_scores(tmp_path / "intelligibility_test_sentences_griffin_lim", 30.0, 90.0, espeak=(1.0, 5.0))
    with pytest.raises(SystemExit) as stopped:
        exit_on_user_error(lambda: main([str(tmp_path), "", "griffin_lim"]))
    assert stopped.value.code == 2
    assert (f"error: {tmp_path}/intelligibility_phrases_griffin_lim/intelligibility.json not found: the griffin_lim "
            f"scores of the phrases (did its stage of gpu_tts_run.sh run?)") in capsys.readouterr().err
