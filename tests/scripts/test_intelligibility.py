"""scripts/intelligibility.py: synthesized wavs (any rate) paired with their text lines, transcribed by a wav2vec 2.0
CTC checkpoint, scored against the text normalised as the ASR corpus writes it. The recognizer here is trained for 2
updates, so its transcripts are noise: the tests check the plumbing, the normalisation and the arithmetic."""
import json

import jiwer
import librosa
import pytest
import soundfile

import inference
from common.errors import UserError, UserFileNotFoundError, exit_on_user_error
from scripts import intelligibility
from scripts.intelligibility import pair_wavs_with_lines, reference_words, score
from scripts.wav2vec2.build_lm import main as build_lm


def synthesized_wavs(corpus, folder, line_numbers, sampling_rate=22050):
    """Held-out corpus utterances as text-to-wav would name them (audio_<line>.wav), at TTS's rate."""
    folder.mkdir(parents=True, exist_ok=True)
    root, *rows = corpus.valid.read_text().splitlines()
    rows += corpus.test_sentences.read_text().splitlines()[1:]
    for line_number, row in zip(line_numbers, rows):
        audio, rate = soundfile.read(f"{root}/{row.split(chr(9))[0]}", dtype="float32")
        soundfile.write(folder / f"audio_{line_number}.wav", librosa.resample(audio, orig_sr=rate,
                                                                              target_sr=sampling_rate), sampling_rate)
    return folder


@pytest.mark.parametrize("text, words", [
    ("Dr. Smith arrived at 10 o'clock on the 3rd of May.", "DOCTOR SMITH ARRIVED AT TEN O'CLOCK ON THE THIRD OF MAY"),
    ("It costs $3.50, Mr. O'Hara!", "IT COSTS THREE DOLLARS FIFTY CENTS MISTER O'HARA"),
    ("In 1999 we had 21 cats; 2,000 dogs.", "IN NINETEEN NINETY NINE WE HAD TWENTY ONE CATS TWO THOUSAND DOGS"),
    ("  Naïve café \u2014 'really'\u2026  ", "NAIVE CAFE REALLY"),
    ("The quick brown fox jumps over the lazy dog.", "THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG"),
])
def test_references_are_the_text_as_the_asr_corpus_writes_it(text, words):
    assert reference_words(text) == words


def test_scores_per_file_and_overall_against_hand_computed_edits():
    per_file, overall = score(["THE QUICK BROWN FOX", "HELLO WORLD", "DOCTOR SMITH"],
                              ["THE QUIK BROWN FOXES JUMP", "HELLO WORLD", "DOCTER SMITH"])
    # 1: words QUICK->QUIK, FOX->FOXES, +JUMP (3 of 4); letters: C deleted, "ES JUMP" inserted (8 of 19).
    # 3: DOCTOR->DOCTER (1 of 2 words; 1 of 12 letters).
    assert [f["wer"] for f in per_file] == pytest.approx([75.0, 0.0, 50.0])
    assert [f["cer"] for f in per_file] == pytest.approx([800 / 19, 0.0, 100 / 12])
    assert per_file[0]["wer"] == pytest.approx(100 * jiwer.wer("THE QUICK BROWN FOX", "THE QUIK BROWN FOXES JUMP"))
    assert per_file[0]["cer"] == pytest.approx(100 * jiwer.cer("THE QUICK BROWN FOX", "THE QUIK BROWN FOXES JUMP"))
    # Overall: edits summed over the files over the references' total length, not a mean of per-file rates.
    assert overall["wer"] == pytest.approx(100 * 4 / 8) and overall["cer"] == pytest.approx(100 * 9 / 42)
    assert (overall["words"], overall["chars"]) == (8, 42)


@pytest.mark.slow
def test_transcribes_synthesized_wavs_at_any_rate_and_scores_them(synthetic_asr_corpus, recognizer_checkpoint,
                                                                  tmp_path):
    wavs = synthesized_wavs(synthetic_asr_corpus, tmp_path / "wavs", [1, 3])
    texts = tmp_path / "phrases.txt"
    texts.write_text("Peter Adams paid $1 for the bright book.\n\nThe 29th bottle was heavy, and the rest were fine.\n")
    # --fp32 in both: int8 (an AVX2 CPU's default) rounds the two paths' last-digit differences to whole steps, and
    # this barely trained model's letters are near ties.
    report = intelligibility.main(["--asr", str(recognizer_checkpoint), "--wavs", str(wavs), "--texts", str(texts),
                                   "-o", str(tmp_path / "out"), "--cpu", "--fp32", "--espeak-ceiling", "--quiet"])
    files = report["synthesized"]["files"]
    assert [f["line"] for f in files] == [1, 3]  # text-to-wav numbers its outputs by line, empty lines included
    assert [f["reference"] for f in files] == ["PETER ADAMS PAID ONE DOLLAR FOR THE BRIGHT BOOK",
                                               "THE TWENTY NINTH BOTTLE WAS HEAVY AND THE REST WERE FINE"]
    for file in files:  # jiwer on what the recognizer heard, computed here
        assert file["hypothesis"]
        assert file["wer"] == pytest.approx(100 * jiwer.wer(file["reference"], file["hypothesis"]))
        assert file["cer"] == pytest.approx(100 * jiwer.cer(file["reference"], file["hypothesis"]))
    edits = sum(jiwer.process_characters(f["reference"], f["hypothesis"]).substitutions
                + jiwer.process_characters(f["reference"], f["hypothesis"]).deletions
                + jiwer.process_characters(f["reference"], f["hypothesis"]).insertions for f in files)
    assert report["synthesized"]["cer"] == pytest.approx(100 * edits / sum(len(f["reference"]) for f in files))

    # The recognizer is inference.py's: the same model and resampling give the same words.
    inference.main(["-m", "wav2vec2", "--checkpoint", str(recognizer_checkpoint), "-i", str(wavs / "audio_1.wav"),
                    str(wavs / "audio_3.wav"), "-o", str(tmp_path / "inference"), "--save-predictions", "--cpu",
                    "--fp32", "--quiet"])
    predictions = (tmp_path / "inference" / "predictions.txt").read_text().splitlines()
    assert predictions == [f["hypothesis"] for f in files]

    # eSpeak NG's renderings of the same lines, scored against the same references; everything is in the JSON.
    espeak = report["espeak"]
    assert [f["reference"] for f in espeak["files"]] == [f["reference"] for f in files]
    assert soundfile.info(tmp_path / "out" / "espeak" / "audio_3.wav").samplerate == 22050
    assert json.loads((tmp_path / "out" / "intelligibility.json").read_text()) == report


@pytest.mark.slow
def test_with_a_language_model_both_decodings_are_scored_as_inference_py_decodes(synthetic_asr_corpus,
                                                                                  recognizer_checkpoint, tmp_path):
    wavs = synthesized_wavs(synthetic_asr_corpus, tmp_path / "wavs", [1, 2])
    texts = tmp_path / "phrases.txt"
    texts.write_text("Peter Adams paid $1 for the bright book.\nThe rest were fine.\n")
    build_lm([str(synthetic_asr_corpus.directory / "train.wrd"), str(tmp_path / "lm.arpa"), "--order", "2"])
    lm_flags = ["--lm", str(tmp_path / "lm.arpa"), "--lm-weight", "1.0", "--word-score", "2.0", "--beam-size", "8"]
    report = intelligibility.main(["--asr", str(recognizer_checkpoint), "--wavs", str(wavs), "--texts", str(texts),
                                   "--cpu", "--fp32", "--quiet", *lm_flags])  # --fp32: as above
    greedy, with_lm = report["synthesized"], report["synthesized"]["with_lm"]
    assert report["lm"] == str(tmp_path / "lm.arpa")
    assert [f["reference"] for f in with_lm["files"]] == [f["reference"] for f in greedy["files"]]
    for file in with_lm["files"]:
        assert file["cer"] == pytest.approx(100 * jiwer.cer(file["reference"], file["hypothesis"]))
    # The same words as inference.py's beam search with the same model and weights.
    inference.main(["-m", "wav2vec2", "--checkpoint", str(recognizer_checkpoint), "-i",
                    str(wavs / "audio_1.wav"), str(wavs / "audio_2.wav"), "-o", str(tmp_path / "inference"),
                    "--save-predictions", "--cpu", "--fp32", "--quiet", "--decoder", "beam", *lm_flags])
    predictions = (tmp_path / "inference" / "predictions.txt").read_text().splitlines()
    assert predictions == [f["hypothesis"] for f in with_lm["files"]]
    # A language model's weight without the model would change nothing: refused.
    with pytest.raises(UserError, match="--word-score is for decoding with a language model: give the model with --lm"):
        intelligibility.main(["--asr", str(recognizer_checkpoint), "--wavs", str(wavs), "--texts", str(texts),
                              "--cpu", "--word-score", "2.0"])
    with pytest.raises(UserError, match="--min-letter-log-prob is for decoding with a language model"):
        intelligibility.main(["--asr", str(recognizer_checkpoint), "--wavs", str(wavs), "--texts", str(texts),
                              "--cpu", "--min-letter-log-prob", "-8"])


def test_wavs_and_lines_must_match_and_mistakes_name_the_file(tmp_path):
    texts = tmp_path / "texts.txt"
    texts.write_text("one\n\nthree\nfour\n")
    wavs = tmp_path / "wavs"
    wavs.mkdir()
    for name in ("audio_1.wav", "audio_3.wav", "audio_7.wav", "audio_4_x.wav", "notes.txt"):
        (wavs / name).write_bytes(b"")
    with pytest.raises(UserError, match=r"3 audio_<n>.wav files but --texts .* has 3 non-empty lines: missing "
                                        r"audio_4.wav for line 4; without a line audio_7.wav \(no text on line 7\)"):
        pair_wavs_with_lines(wavs, texts)
    (wavs / "audio_7.wav").unlink()
    (wavs / "audio_4.wav").write_bytes(b"")
    assert [(n, text, path.name) for n, text, path in pair_wavs_with_lines(wavs, texts)] == [
        (1, "one", "audio_1.wav"), (3, "three", "audio_3.wav"), (4, "four", "audio_4.wav")]
    with pytest.raises(UserError, match="missing audio_1_x.wav for line 1, audio_3_x.wav for line 3"):
        pair_wavs_with_lines(wavs, texts, suffix="_x")
    with pytest.raises(UserFileNotFoundError, match="--wavs .*nowhere: folder not found"):
        pair_wavs_with_lines(tmp_path / "nowhere", texts)
    with pytest.raises(UserFileNotFoundError, match="--texts .*missing.txt: file not found"):
        pair_wavs_with_lines(wavs, tmp_path / "missing.txt")
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="holds no audio_<n>.wav files"):
        pair_wavs_with_lines(tmp_path / "empty", texts)


def test_a_mistake_ends_in_one_error_line(tmp_path, capsys):
    (tmp_path / "wavs").mkdir()
    (tmp_path / "wavs" / "audio_1.wav").write_bytes(b"")
    (tmp_path / "texts.txt").write_text("hello\n")
    with pytest.raises(SystemExit) as exit_info:
        exit_on_user_error(lambda: intelligibility.main(["--asr", str(tmp_path / "no.pt"), "--wavs",
                                                         str(tmp_path / "wavs"), "--texts",
                                                         str(tmp_path / "texts.txt")]))
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("error:") and "--asr" in error and "no.pt" in error and len(error.splitlines()) == 1
