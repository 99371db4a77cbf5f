"""experiments/tts_intelligibility_breakdown/intelligibility_breakdown.py: the same held-out sentences through each
stage (recordings, eSpeak, each vocoder on the recordings' mels, on teacher-forced and on free-running Tacotron 2
mels), each heard by the recognizer.
The models here are trained for a step or two, so the rates mean nothing: the tests check which audio each row
holds and that its rates are what jiwer computes from the transcripts."""
import json

import jiwer
import pytest
import soundfile
import torch

from common.audio import AudioParams, MelSpectrogram, griffin_lim, griffin_lim_phase, load_wav
from common.errors import UserError
from common.trained_model import load_trained_model
from experiments.tts_intelligibility_breakdown import intelligibility_breakdown
from experiments.tts_intelligibility_breakdown.intelligibility_breakdown import GRIFFIN_LIM_SETTINGS
from melinverter.recipe import RECIPE
from scripts.data.espeak import synthesize
from tests.hifigan.tiny_hifigan import save_our_checkpoint
from tests.training_runs import run_training


@pytest.mark.slow
def test_rows_hold_each_stages_audio_and_its_rates(synthetic_corpus, recognizer_checkpoint,
                                                   tacotron2_checkpoint, tmp_path):
    torch.set_num_threads(1)
    save_our_checkpoint(tmp_path / "hifigan.pt")
    output = tmp_path / "breakdown"
    report = intelligibility_breakdown.main([
        "--asr", str(recognizer_checkpoint), "--tacotron2", str(tacotron2_checkpoint),
        "--hifigan", str(tmp_path / "hifigan.pt"), "-d", str(synthetic_corpus.dataset_dir),
        "--filelist", str(synthetic_corpus.train_filelist), "--limit", "2", "-o", str(output), "--quiet"])
    assert report == json.loads((output / "breakdown.json").read_text())
    vocoders = [setting.name for setting in GRIFFIN_LIM_SETTINGS] + [f"HiFi-GAN ({tmp_path / 'hifigan.pt'})"]
    assert [row["audio"] for row in report["rows"]] == [
        "the recordings", "eSpeak NG speaking the same text (the ceiling)",
        "recordings' STFT magnitudes (no mel) -> fast Griffin-Lim's phase, 32 iterations",
        *[f"{mels} -> {vocoder}" for mels in ("recordings' mels", "Tacotron 2 teacher-forced mels", "Tacotron 2 mels")
          for vocoder in vocoders]]
    recordings = [line.split("|")[0] for line in synthetic_corpus.train_filelist.read_text().splitlines()[:2]]
    assert [file["wav"] for file in report["rows"][0]["files"]] == [
        str(synthetic_corpus.dataset_dir / path) for path in recordings]
    frames = [MelSpectrogram()(load_wav(synthetic_corpus.dataset_dir / path, 22050)).shape[-1] for path in recordings]
    for row in report["rows"][2:]:
        for file, recording_frames in zip(row["files"], frames):
            audio, rate = soundfile.read(file["wav"])
            assert rate == AudioParams().sampling_rate and abs(audio).max() > 0
            if not row["audio"].startswith("Tacotron 2 mels"):  # vocoded mels frame-aligned with the recording
                assert len(audio) == recording_frames * 256
    # the phase-only row is Griffin-Lim's phase on the recording's own magnitude; each Griffin-Lim row after it is its
    # setting applied to the recording's mel
    first_recording = load_wav(synthetic_corpus.dataset_dir / recordings[0], 22050)
    phase_only = griffin_lim_phase(MelSpectrogram().magnitude(first_recording.unsqueeze(0)))[0]
    written = torch.from_numpy(soundfile.read(report["rows"][2]["files"][0]["wav"], dtype="float32")[0])
    torch.testing.assert_close(written, phase_only, atol=1.01 / 32768, rtol=0)
    true_mel = MelSpectrogram()(first_recording)
    for row, setting in zip(report["rows"][3:], GRIFFIN_LIM_SETTINGS):
        expected = griffin_lim(true_mel, n_iters=setting.n_iters, power=setting.power, momentum=setting.momentum)[0]
        written = torch.from_numpy(soundfile.read(row["files"][0]["wav"], dtype="float32")[0])
        torch.testing.assert_close(written, expected, atol=1.01 / 32768, rtol=0)  # 16-bit rounding
    for row in report["rows"]:
        references = [file["reference"] for file in row["files"]]
        hypotheses = [file["hypothesis"] for file in row["files"]]
        assert references[0] == "THE BRIGHT BOOKS ARRIVED QUIETLY FROM THE RIVER"  # the first line, spoken form
        assert row["cer"] == pytest.approx(100 * jiwer.cer(references, hypotheses))


@pytest.mark.slow
def test_open_text_stands_espeak_in_for_the_recordings_and_times_the_phase(synthetic_corpus, recognizer_checkpoint,
                                                                           tacotron2_checkpoint, tmp_path):
    torch.set_num_threads(1)
    run_training(synthetic_corpus, tmp_path / "inverter", "MelInverter", "--channels", "8", "--n-blocks", "1",
                 "--segment-length", "2048", "--epochs", "1")
    inverter = tmp_path / "inverter" / "checkpoint_MelInverter_last.pt"
    texts = tmp_path / "plain.txt"
    texts.write_text("the kettle is on the stove\nwe walked home in the rain\nnot this one\n")
    output = tmp_path / "breakdown"
    report = intelligibility_breakdown.main([
        "--asr", str(recognizer_checkpoint), "--tacotron2", str(tacotron2_checkpoint), "--melinverter", str(inverter),
        "--texts", str(texts), "--limit", "2", "--phase-iterations", "2", "5", "-o", str(output), "--quiet"])
    inverters = [f"mel inverter + fast Griffin-Lim, {n} iterations ({inverter})" for n in (2, 5)]
    vocoders = [setting.name for setting in GRIFFIN_LIM_SETTINGS] + inverters
    assert [row["audio"] for row in report["rows"]] == [
        "eSpeak NG speaking the text (the recordings, and the ceiling)",
        *[f"recordings' STFT magnitudes (no mel) -> fast Griffin-Lim's phase, {n} iterations" for n in (2, 5)],
        *[f"{mels} -> {vocoder}" for mels in ("recordings' mels", "Tacotron 2 teacher-forced mels", "Tacotron 2 mels")
          for vocoder in vocoders]]
    assert report["sentences"] == 2 and report["judge"] == "wav2vec2"
    assert [file["reference"] for file in report["rows"][0]["files"]] == ["THE KETTLE IS ON THE STOVE",
                                                                          "WE WALKED HOME IN THE RAIN"]
    # the "recordings" are eSpeak NG's rendering of each line at the ceiling's voice and rate
    espeak = load_wav(report["rows"][0]["files"][0]["wav"], 22050)
    samples, rate = synthesize("the kettle is on the stove", voice="en-us", words_per_minute=175)
    assert rate == 22050 and torch.equal(espeak, load_wav(report["rows"][0]["files"][0]["wav"], 22050))
    assert len(espeak) == len(samples)
    # each phase-only row is Griffin-Lim's phase at its own iteration count; the inverter's rows take its magnitude
    magnitude = MelSpectrogram().magnitude(espeak.unsqueeze(0))
    for row, iterations in zip(report["rows"][1:3], (2, 5)):
        written = torch.from_numpy(soundfile.read(row["files"][0]["wav"], dtype="float32")[0])
        torch.testing.assert_close(written, griffin_lim_phase(magnitude, n_iters=iterations)[0], atol=1.01 / 32768,
                                   rtol=0)
    model, _ = load_trained_model(RECIPE, inverter, torch.device("cpu"))
    true_mel = MelSpectrogram()(espeak)
    rows = {row["audio"]: row for row in report["rows"]}
    for name, iterations in zip(inverters, (2, 5)):
        with torch.no_grad():
            expected = griffin_lim_phase(torch.exp(model(true_mel)), n_iters=iterations)[0]
        written = torch.from_numpy(soundfile.read(rows[f"recordings' mels -> {name}"]["files"][0]["wav"],
                                                  dtype="float32")[0])
        torch.testing.assert_close(written, expected, atol=1.01 / 32768, rtol=0)


def test_a_judge_without_its_recognizer_or_empty_text_is_a_user_error(tacotron2_checkpoint, tmp_path):
    with pytest.raises(UserError, match="--asr CKPT"):
        intelligibility_breakdown.main(["--tacotron2", str(tacotron2_checkpoint), "-o", str(tmp_path)])
    (tmp_path / "empty.txt").write_text("")
    with pytest.raises(UserError, match="empty.txt has no text"):
        intelligibility_breakdown.main(["--judge", "moonshine", "--tacotron2", str(tacotron2_checkpoint),
                                        "--texts", str(tmp_path / "empty.txt"), "-o", str(tmp_path)])
