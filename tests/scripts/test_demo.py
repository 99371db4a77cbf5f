"""scripts/demo.sh (`make demo`) end to end with a tiny model for one epoch: it trains Tacotron 2 and then the mel
inverter on Tacotron 2's teacher-forced mels, synthesizes the phrases and the corpus's held-out test sentences, and
scores them with the recognizer when one exists, or says how to get one. The speech of a one-epoch model means
nothing: the tests check the steps and what they leave."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.wav2vec2.build_lm import main as build_lm
from tests.conftest import TINY_TACOTRON2

ROOT = Path(__file__).resolve().parents[2]


def run_demo(corpus: Path, output: Path, asr_checkpoint: Path, **environment: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHON": sys.executable, "DATA_DIR": str(corpus), "OUTPUT_DIR": str(output),
           "FILELISTS": str(corpus / "filelists"), "ASR_CHECKPOINT": str(asr_checkpoint), "OPEN_SEQUENCES": "2",
           "INVERTER_EPOCHS": "1", "OMP_NUM_THREADS": "1", **environment}
    return subprocess.run(["bash", "scripts/demo.sh", *TINY_TACOTRON2, "--epochs", "1", "--num-workers", "0",
                           "-bs", "8"], cwd=ROOT, capture_output=True, text=True, timeout=900, env=env)


@pytest.mark.slow
def test_demo_trains_synthesizes_and_scores_the_test_sentences(synthetic_corpus, recognizer_checkpoint,
                                                               tmp_path):
    output, corpus = tmp_path / "demo", tmp_path / "corpus"
    shutil.copytree(synthetic_corpus.dataset_dir, corpus)  # the demo adds its open-vocabulary sequences to it
    (tmp_path / "lm.wrd").write_text("THE BRIGHT BOOK\nTHE REST WERE FINE\n")
    build_lm([str(tmp_path / "lm.wrd"), str(tmp_path / "lm.arpa"), "--order", "2"])
    # a beam of 8: the 2-update recognizer's near-uniform letters make the default 100 slow
    (tmp_path / "everyday.txt").write_text("The river ran quietly past the old mill.\nIs it raining again?\n")
    completed = run_demo(corpus, output, recognizer_checkpoint, ASR_LM=str(tmp_path / "lm.arpa"), ASR_BEAM_SIZE="8",
                         EVERYDAY=str(tmp_path / "everyday.txt"))
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    assert (output / "checkpoint_Tacotron2_last.pt").exists()
    # the mel inverter trained on Tacotron 2's teacher-forced mels of the training and validation sentences
    assert (output / "melinverter" / "checkpoint_MelInverter_last.pt").exists()
    sentences = [*synthetic_corpus.val_filelist.read_text().splitlines(),
                 *(corpus / "filelists" / "synthetic_audio_text_train_open.txt").read_text().splitlines()]
    assert len(list((output / "mels_gta").glob("*.pt"))) == len(sentences)
    inference_parameters = json.loads((output / "wavs" / "nvlog.json").read_text().splitlines()[0][5:])["data"]
    assert inference_parameters["vocoder"] == "melinverter"
    # it trained on the corpus's training sentences and the 2 sequences it added
    training = (corpus / "filelists" / "synthetic_audio_text_train_open.txt").read_text().splitlines()
    assert training[:-2] == synthetic_corpus.train_filelist.read_text().splitlines()
    assert [line.split("|")[0] for line in training[-2:]] == ["wavs/OPEN-0001.wav", "wavs/OPEN-0002.wav"]
    assert all((corpus / line.split("|")[0]).is_file() for line in training)
    # the learning rate is held for 3/4 of EPOCHS (20) epochs of whole batches of 16, then decays over the last 1/4
    parameters = json.loads((output / "nvlog.json").read_text().splitlines()[0][5:])["data"]
    updates = 20 * (len(training) // 16)
    assert (parameters["hold_updates"], parameters["decay_updates"]) == (updates * 3 // 4, updates // 4)
    assert parameters["val_interval_epochs"] == 4  # the model is the same; the time goes to the vocoder
    phrases = [line for line in (ROOT / "phrases" / "phrase.txt").read_text().splitlines() if line.strip()]
    assert sorted(path.name for path in (output / "wavs").glob("*.wav")) == sorted(
        f"audio_{n}.wav" for n in range(1, len(phrases) + 1))
    test_texts = [line.split("|")[1] for line in synthetic_corpus.test_filelist.read_text().splitlines()]
    assert (output / "test_sentences.txt").read_text().splitlines() == test_texts
    assert len(list((output / "wavs_test").glob("audio_*.wav"))) == len(test_texts)
    for name, count in (("intelligibility_test", len(test_texts)), ("intelligibility_phrases", len(phrases))):
        report = json.loads((output / name / "intelligibility.json").read_text())
        assert report["asr"] == str(recognizer_checkpoint)
        assert len(report["synthesized"]["files"]) == len(report["espeak"]["files"]) == count
        # decoded greedily and with ASR_LM (make demo-asr's lm_2gram.arpa beside the checkpoint, by default)
        assert report["lm"] == str(tmp_path / "lm.arpa")
        assert len(report["synthesized"]["with_lm"]["files"]) == len(report["espeak"]["with_lm"]["files"]) == count
    # the phrases also at 8 synthesis seeds, the first the wavs' own (inference.py's default seed)
    seeds = json.loads((output / "intelligibility_phrases_seeds" / "intelligibility_seeds.json").read_text())
    assert list(seeds["seeds"]) == ["1234", "1", "2", "3", "4", "5", "6", "7"]
    assert seeds["vocoder"] == str(output / "melinverter" / "checkpoint_MelInverter_last.pt")
    phrases_heard = json.loads((output / "intelligibility_phrases" / "intelligibility.json").read_text())
    assert [{**file, "wav": None} for file in seeds["seeds"]["1234"]["files"]] == [
        {**file, "wav": None} for file in phrases_heard["synthesized"]["files"]]
    assert "8 seeds, 4 lines each: CER" in completed.stdout
    assert "synthesized" in completed.stdout and "eSpeak NG ceiling" in completed.stdout
    assert "; with the language model CER" in completed.stdout
    # Moonshine base judges the same speech and the everyday sentences typed plain, beside eSpeak NG's renderings
    assert (output / "everyday_plain.txt").read_text().splitlines() == ["the river ran quietly past the old mill",
                                                                       "is it raining again"]
    for name, count in (("test", len(test_texts)), ("phrases", len(phrases))):
        report = json.loads((output / f"moonshine_{name}" / "intelligibility.json").read_text())
        assert report["judge"] == "moonshine" and len(report["synthesized"]["files"]) == count
        assert len(report["espeak"]["files"]) == count and "written" in report["espeak"]["files"][0]
    assert "== Intelligibility: what Moonshine base hears ==" in completed.stdout
    # and the everyday sentences at 3 synthesis seeds, each line's transcript kept, against eSpeak NG's; the first
    # seed's wavs are inference.py's (its default seed), and they are the everyday sentences' wavs
    pooled = json.loads((output / "moonshine_everyday_plain_seeds" / "intelligibility_seeds.json").read_text())
    assert pooled["judge"] == "moonshine" and list(pooled["seeds"]) == ["1234", "1", "2"]
    assert len(pooled["seeds"]["1234"]["files"]) == len(pooled["espeak"]["files"]) == 2
    assert "hypothesis" in pooled["seeds"]["1234"]["files"][0]
    assert not (output / "moonshine_everyday_plain").exists()
    # (tests/scripts/test_intelligibility_seeds.py: a seed's wavs are inference.py's to the byte)
    first_seed = output / "moonshine_everyday_plain_seeds" / "seed_1234"
    assert (output / "wavs_everyday_plain").resolve() == first_seed.resolve()
    assert sorted(path.name for path in (output / "wavs_everyday_plain").glob("*.wav")) == ["audio_1.wav", "audio_2.wav"]
    assert "3 seeds, 2 lines each: CER" in completed.stdout and "times eSpeak NG's" in completed.stdout

    # no recognizer: the demo still ends well and says how to get one (the finished training is not redone); and a
    # corpus made with another OPEN_SEQUENCES gets them again, the first ones spoken to the same bytes
    first_sequence = (corpus / "wavs" / "OPEN-0001.wav").read_bytes()
    completed = run_demo(corpus, output, tmp_path / "no_such_asr.pt", OPEN_SEQUENCES="3", MOONSHINE="0")
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    assert "make demo-asr" in completed.stdout and "not measured" in completed.stdout
    training = (corpus / "filelists" / "synthetic_audio_text_train_open.txt").read_text().splitlines()
    assert [line.split("|")[0] for line in training if line.startswith("wavs/OPEN-")] == [
        "wavs/OPEN-0001.wav", "wavs/OPEN-0002.wav", "wavs/OPEN-0003.wav"]
    assert (corpus / "wavs" / "OPEN-0001.wav").read_bytes() == first_sequence

    # a set-up without the language model's packages (make setup, not setup-lm): greedy decoding, said once
    shadow = tmp_path / "no_lm"
    shadow.mkdir()
    (shadow / "pyctcdecode.py").write_text("raise ImportError('pyctcdecode is not installed here')\n")
    completed = run_demo(corpus, output, recognizer_checkpoint, OPEN_SEQUENCES="3", MOONSHINE="0",
                         ASR_LM=str(tmp_path / "lm.arpa"), PYTHONPATH=str(shadow))
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    assert "Greedy decoding only: decoding with" in completed.stdout and "make setup-lm" in completed.stdout
    report = json.loads((output / "intelligibility_test" / "intelligibility.json").read_text())
    assert report["lm"] is None and "with_lm" not in report["synthesized"]


def test_epochs_must_be_a_whole_number(tmp_path):
    completed = run_demo(tmp_path / "corpus", tmp_path / "demo", tmp_path / "asr.pt", EPOCHS="forty")
    assert completed.returncode == 2 and not (tmp_path / "corpus").exists()
    assert completed.stderr.strip() == "error: EPOCHS must be a positive whole number, got 'forty'"


def test_open_sequences_must_be_a_whole_number(tmp_path):
    completed = run_demo(tmp_path / "corpus", tmp_path / "demo", tmp_path / "asr.pt", OPEN_SEQUENCES="many")
    assert completed.returncode == 2 and not (tmp_path / "corpus").exists()
    assert completed.stderr.strip() == "error: OPEN_SEQUENCES must be a whole number, got 'many'"


def test_inverter_epochs_must_be_a_whole_number(tmp_path):
    completed = run_demo(tmp_path / "corpus", tmp_path / "demo", tmp_path / "asr.pt", INVERTER_EPOCHS="some")
    assert completed.returncode == 2 and not (tmp_path / "corpus").exists()
    assert completed.stderr.strip() == "error: INVERTER_EPOCHS must be a whole number, got 'some'"
