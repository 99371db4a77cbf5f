"""experiments/cpu_bf16 on tiny models: the scripts run every variant, and their figures are consistent (the
measurement itself is in the experiment's README)."""
import json

import pytest

from experiments.cpu_bf16 import recognition, synthesis, vocoder
from tacotron2.api import Synthesizer
from tests.hifigan.tiny_hifigan import save_our_checkpoint
from wav2vec2.api import Recognizer
from wav2vec2.decoding import error_counts, error_rates
from wav2vec2.inference import read_inputs


def test_synthesis_reports_each_variant_and_seed_against_fp32(tacotron2_checkpoint, tmp_path):
    texts = tmp_path / "texts.txt"
    texts.write_text("a plain sentence without a full stop\nAnother one, with a comma.\n")
    report = synthesis.main(["--tacotron2", str(tacotron2_checkpoint), "--texts", str(texts), "--seeds", "1", "2",
                             "--no-judge", "--json", str(tmp_path / "report.json")])
    assert [(run["variant"], run["seed"]) for run in report["runs"]] == [
        (variant, seed) for seed in (1, 2) for variant in ("fp32", "bf16", "int8", "fp16-lstm")]
    for run in report["runs"]:
        assert run["tacotron2_seconds"] > 0 and run["mel_frames"] > 0
        assert ("mels_against_fp32" in run) == (run["variant"] != "fp32")
    assert set(report["vocoder_alone_seconds"]) == {"fp32", "bf16", "int8", "fp16-lstm"}
    assert json.loads((tmp_path / "report.json").read_text()) == report


def test_synthesis_in_batches_reports_each_line_of_the_batch(tacotron2_checkpoint, tmp_path):
    lines = ["one line", "a second line", "and a third one here"]
    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(lines) + "\n")
    report = synthesis.main(["--tacotron2", str(tacotron2_checkpoint), "--texts", str(texts), "--variants", "fp32",
                             "fp16-lstm", "--batch-size", "3", "--no-judge"])
    assert report["batch_size"] == 3 and [run["variant"] for run in report["runs"]] == ["fp32", "fp16-lstm"]
    whole = Synthesizer.from_checkpoints(tacotron2_checkpoint, device="cpu", half_lstm_weights=False).synthesize_batch(
        lines, ["a", "b", "c"], seed=1234, warn_max_steps=False)
    assert report["runs"][0]["mel_frames"] == int(whole["mel_lengths"].sum())
    assert report["runs"][0]["tacotron2_seconds"] > 0
    assert report["runs"][1]["mels_against_fp32"]["mel_mean_abs_difference"] < 1e-2


def test_recognition_scores_each_variant_against_the_right_references(recognizer_checkpoint, synthetic_asr_corpus):
    manifest = str(synthetic_asr_corpus.test_sentences)
    report = recognition.main(["--checkpoint", str(recognizer_checkpoint), "--manifests", manifest,
                               "--batch-size", "1", "--variants", "bf16", "int8"])
    result = report["manifests"][0]
    assert result["utterances"] > 1 and "frames_whose_best_label_differs" not in result["fp32"]
    for name in ("bf16", "int8"):
        assert 0 <= result[name]["frames_whose_best_label_differs"] <= 1
        assert 0 <= result[name]["transcripts_that_differ"] <= result["utterances"]
    for name in ("fp32", "bf16", "int8"):
        recognizer = Recognizer.from_checkpoint(recognizer_checkpoint, "cpu", batch_size=1,
                                                **recognition.VARIANTS[name])
        utterances = read_inputs([manifest], Recognizer.sampling_rate, recognizer.model.config["normalize"])
        heard = recognizer.transcribe([utterance.audio.numpy() for utterance in utterances])
        expected = error_rates(error_counts([utterance.reference for utterance in utterances], heard))
        assert result[name]["seconds"] > 0
        assert result[name]["cer"] == pytest.approx(expected["cer"])


def test_vocoder_compares_bf16_with_fp32_on_each_checkpoint(synthetic_corpus, tmp_path):
    checkpoints = [tmp_path / "first.pt", tmp_path / "second.pt"]
    save_our_checkpoint(checkpoints[0], seed=0)
    save_our_checkpoint(checkpoints[1], seed=1)
    report = vocoder.main(["--vocoder", *map(str, checkpoints), "-d", str(synthetic_corpus.dataset_dir),
                           "--filelist", str(synthetic_corpus.test_filelist), "--no-judge"])
    assert [result["vocoder"] for result in report["vocoders"]] == list(map(str, checkpoints))
    first, second = report["vocoders"]
    assert first["files"] == len(synthetic_corpus.test_filelist.read_text().splitlines()) and first["frames"] > 0
    assert first["precisions"]["fp32"]["mel_l1_to_recordings"] != second["precisions"]["fp32"]["mel_l1_to_recordings"]
    for result in report["vocoders"]:
        against = result["bf16_against_fp32"]
        # bf16 did round (the audio moved), yet far below the signal (the tiny generator keeps about 45 dB)
        assert 25 < against["worst_file_signal_to_difference_db"] <= against["signal_to_difference_db"] < 80
        assert 0 < against["mel_l1"] < 0.1
