"""`inference.py -m wav2vec2`: speech to text with greedy CTC, in input order, batched as one by one, with WER and CER
against the references beside a manifest (jiwer), and one clear error for each kind of bad input."""
import shutil
import subprocess
import sys
from pathlib import Path

import jiwer
import numpy as np
import pytest
import soundfile
import torch

import inference
import train
from common.errors import UserError
from common.logger import read_dllogger_file
from tests.wav2vec2.tiny_finetuning import finetune_args

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def recognizer(synthetic_asr_corpus, tmp_path_factory) -> Path:
    """A tiny CTC model after a few updates (its transcripts are poor, but its own)."""
    output = tmp_path_factory.mktemp("recognizer")
    torch.set_num_threads(1)
    train.main(finetune_args(synthetic_asr_corpus, output, "--epochs", "1"))
    return output / "checkpoint_wav2vec2_last.pt"


def transcribe(checkpoint, inputs, output, *extra):
    inference.main(["-m", "wav2vec2", "--checkpoint", str(checkpoint), "-i", *map(str, inputs), "-o", str(output),
                    "--cpu", "--quiet", "--save-predictions", "--save-logits", *extra])
    lines = (Path(output) / "predictions.txt").read_text().splitlines()
    logits = [torch.load(Path(output) / "logits" / f"{number}.pt", weights_only=True)
              for number in range(1, len(lines) + 1)]
    return lines, logits


def test_a_batch_gives_each_utterance_what_it_gets_alone_in_input_order(recognizer, synthetic_asr_corpus, tmp_path):
    # Not in int8 (an AVX2 CPU's default): it rounds the padded batch's last-digit differences to whole steps, which
    # move this barely trained model's near-tie letters (docs/inference.md).
    manifest = synthetic_asr_corpus.test_sentences
    batched, batched_logits = transcribe(recognizer, [manifest], tmp_path / "batched", "-bs", "4", "--quantize",
                                         "none")
    root = Path(manifest.read_text().splitlines()[0])
    files = [root / line.split("\t")[0] for line in manifest.read_text().splitlines()[1:]]
    for number, path in enumerate(files):
        alone, alone_logits = transcribe(recognizer, [path], tmp_path / f"alone{number}", "-bs", "1", "--quantize",
                                         "none")
        assert alone == [batched[number]]
        torch.testing.assert_close(batched_logits[number], alone_logits[0], atol=1e-4, rtol=1e-4)
    lengths = [soundfile.info(str(path)).frames for path in files]
    assert len(set(lengths)) > 1  # the batch really was padded


def test_wer_and_cer_against_the_references_beside_the_manifest(recognizer, synthetic_asr_corpus, tmp_path):
    manifest = synthetic_asr_corpus.test_voice
    predictions, _ = transcribe(recognizer, [manifest], tmp_path, "-bs", "3")
    references = manifest.with_suffix(".wrd").read_text().splitlines()
    summary = [r["data"] for r in read_dllogger_file(tmp_path / "nvlog.json") if r["step"] == [] and
               "wer" in r["data"]][0]
    assert summary["wer"] == pytest.approx(100 * jiwer.wer(references, predictions), rel=1e-6)
    assert summary["cer"] == pytest.approx(100 * jiwer.cer(references, predictions), rel=1e-6)
    per_utterance = [r["data"] for r in read_dllogger_file(tmp_path / "nvlog.json")
                     if r["step"] and "reference" in r["data"]]
    assert [r["reference"] for r in per_utterance] == references


@pytest.mark.slow
def test_wav_files_at_another_rate_are_resampled(recognizer, synthetic_asr_corpus, tmp_path):
    manifest = synthetic_asr_corpus.test_sentences
    first = Path(manifest.read_text().splitlines()[0]) / manifest.read_text().splitlines()[1].split("\t")[0]
    audio, rate = soundfile.read(str(first), dtype="float32")
    import librosa
    faster = tmp_path / "at_22050.wav"
    soundfile.write(str(faster), librosa.resample(audio, orig_sr=rate, target_sr=22050), 22050)
    _, (original,) = transcribe(recognizer, [first], tmp_path / "original")
    _, (resampled,) = transcribe(recognizer, [faster], tmp_path / "resampled")
    assert abs(original.shape[0] - resampled.shape[0]) <= 1  # the same 20 ms frames


def test_bad_inputs_are_one_clear_error_naming_the_file(recognizer, synthetic_asr_corpus, tmp_path):
    with pytest.raises(UserError, match="audio file not found: .*missing.wav"):
        transcribe(recognizer, [tmp_path / "missing.wav"], tmp_path / "out")
    empty = tmp_path / "empty.wav"
    soundfile.write(str(empty), np.zeros(0, dtype=np.float32), 16000)
    with pytest.raises(UserError, match="empty.wav holds no samples"):
        transcribe(recognizer, [empty], tmp_path / "out")
    wrong_counts = tmp_path / "wrong.tsv"
    lines = synthetic_asr_corpus.test_sentences.read_text().splitlines()
    path, count = lines[1].split("\t")
    wrong_counts.write_text("\n".join([lines[0], f"{path}\t{int(count) + 7}", *lines[2:]]) + "\n")
    with pytest.raises(UserError, match="wrong.tsv:2"):
        transcribe(recognizer, [wrong_counts], tmp_path / "out")
    small_dictionary = tmp_path / "dict.ltr.txt"
    small_dictionary.write_text("| 5\nE 3\n")
    with pytest.raises(UserError, match="the dictionary has 6 symbols but the checkpoint's CTC head has 32"):
        transcribe(recognizer, [wrong_counts], tmp_path / "out", "--labels-path", str(small_dictionary))


@pytest.mark.slow
def test_a_pretrained_checkpoint_is_refused_with_what_to_do(synthetic_asr_corpus, tmp_path):
    from tests.families import run_args
    train.main(run_args("wav2vec2", synthetic_asr_corpus, tmp_path / "pretrain", "--max-updates", "1"))
    completed = subprocess.run([sys.executable, str(REPO_ROOT / "inference.py"), "-m", "wav2vec2", "--checkpoint",
                                str(tmp_path / "pretrain" / "checkpoint_wav2vec2_last.pt"), "-i",
                                str(synthetic_asr_corpus.test_voice), "-o", str(tmp_path / "out"), "--cpu"],
                               cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert completed.returncode == 2
    assert completed.stderr.strip().splitlines() == [completed.stderr.strip().splitlines()[-1]]
    assert completed.stderr.startswith("error: --checkpoint") and "without a CTC head; fine-tune it" in completed.stderr
    shutil.rmtree(tmp_path / "out", ignore_errors=True)


def test_nvidias_inference_command_line_gives_the_transcripts_of_ours(recognizer, synthetic_asr_corpus, tmp_path):
    """NVIDIA's scripts/inference.sh command line (tests/data/nvidia_inference_command_lines.json), run as it is on
    the tiny model: the transcripts of our own spelling of the same command, and the WER beside them."""
    from tests.nvidia_command_lines import INFERENCE_COMMAND_LINES, filled

    output = tmp_path / "nvidia"
    placeholders = {"{checkpoint}": str(recognizer), "{asr_data}": str(synthetic_asr_corpus.directory),
                    "{subset}": synthetic_asr_corpus.test_sentences.stem, "{output}": str(output)}
    argv = filled(INFERENCE_COMMAND_LINES["wav2vec2/scripts/inference.sh"]["argv"], placeholders)
    assert "--w2v_path" in argv and "--valid_subset" in argv and "--batch_size=8" in argv
    inference.main([*argv, "--quiet", "--save-predictions"])
    ours, _ = transcribe(recognizer, [synthetic_asr_corpus.test_sentences], tmp_path / "ours", "-bs", "8",
                         "--seed", "1")
    assert (output / "predictions.txt").read_text().splitlines() == ours and any(ours)
    summary = [r["data"] for r in read_dllogger_file(output / "nvlog.json") if r["step"] == [] and "wer" in r["data"]]
    assert len(summary) == 1 and 0 <= summary[0]["wer"]
