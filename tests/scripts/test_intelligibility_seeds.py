"""scripts/intelligibility_seeds.py: each seed's wavs are what `inference.py --seed S` writes, each seed is heard as
scripts/intelligibility.py hears it, and the rates over all seeds are the summed edits over the summed lengths. The
tiny models' speech and transcripts are noise: the tests check the plumbing and the arithmetic."""
import json

import pytest

import inference
from common.errors import UserError
from scripts import intelligibility, intelligibility_seeds
from scripts.wav2vec2.build_lm import main as build_lm


@pytest.mark.slow
def test_each_seed_is_inference_pys_audio_judged_and_the_seeds_are_pooled(synthetic_asr_corpus, tacotron2_checkpoint,
                                                                          recognizer_checkpoint, tmp_path):
    texts = tmp_path / "texts.txt"
    texts.write_text("The quick brown fox.\n\nA second line, after an empty one.\n")
    build_lm([str(synthetic_asr_corpus.directory / "train.wrd"), str(tmp_path / "lm.arpa"), "--order", "2"])
    decoding = ["--lm", str(tmp_path / "lm.arpa"), "--beam-size", "4", "--cpu"]
    result = intelligibility_seeds.main(["--asr", str(recognizer_checkpoint), "--tacotron2", str(tacotron2_checkpoint),
                                         "--texts", str(texts), "--seeds", "5", "9", "-o", str(tmp_path / "out"),
                                         *decoding])
    inference.main(["-i", str(texts), "-o", str(tmp_path / "inference_9"), "--tacotron2", str(tacotron2_checkpoint),
                    "--seed", "9", "--cpu", "--quiet"])
    for number in (1, 3):  # text-to-wav's line numbers
        name = f"audio_{number}.wav"
        assert (tmp_path / "out" / "seed_9" / name).read_bytes() == (tmp_path / "inference_9" / name).read_bytes()
    alone = intelligibility.main(["--asr", str(recognizer_checkpoint), "--wavs", str(tmp_path / "out" / "seed_9"),
                                  "--texts", str(texts), *decoding])
    assert result["seeds"][9] == alone["synthesized"]
    reports = list(result["seeds"].values())
    for pooled, per_seed in ((result["all_seeds"], reports),
                             (result["all_seeds"]["with_lm"], [report["with_lm"] for report in reports])):
        char_errors = sum(report["char_errors"] for report in per_seed)
        chars = sum(report["chars"] for report in per_seed)
        assert chars == 2 * len("THE QUICK BROWN FOX") + 2 * len("A SECOND LINE AFTER AN EMPTY ONE")
        assert pooled["cer"] == pytest.approx(100 * char_errors / chars)
        assert pooled["wer"] == pytest.approx(100 * sum(report["word_errors"] for report in per_seed) /
                                              sum(report["words"] for report in per_seed))
    written = json.loads((tmp_path / "out" / "intelligibility_seeds.json").read_text())
    assert written["all_seeds"] == result["all_seeds"] and set(written["seeds"]) == {"5", "9"}


def test_moonshine_judges_every_seed_and_the_pooled_cer_is_set_against_espeak_ng(tacotron2_checkpoint, tmp_path):
    texts = tmp_path / "texts.txt"
    texts.write_text("the quick brown fox\na second line without a stop\n")
    result = intelligibility_seeds.main(["--judge", "moonshine", "--espeak-ceiling", "--tacotron2",
                                         str(tacotron2_checkpoint), "--texts", str(texts), "--seeds", "5", "9",
                                         "-o", str(tmp_path / "out"), "--cpu", "--no-half-lstm-weights",
                                         "--griffin-lim-iters", "4", "--griffin-lim-phase-init", "pghi"])
    alone = intelligibility.main(["--judge", "moonshine", "--wavs", str(tmp_path / "out" / "seed_9"),
                                  "--texts", str(texts), "--espeak-ceiling", "-o", str(tmp_path / "alone")])
    assert result["seeds"][9]["cer"] == alone["synthesized"]["cer"] and "with_lm" not in result["all_seeds"]
    assert result["espeak"]["cer"] == alone["espeak"]["cer"]
    assert result["espeak"]["chars"] == sum(len(line) for line in ("THE QUICK BROWN FOX", "A SECOND LINE WITHOUT A STOP"))
    assert result["cer_to_espeak"] == pytest.approx(result["all_seeds"]["cer"] / max(result["espeak"]["cer"], 1e-9))
    for iterations in ("4", "32"):
        inference.main(["-i", str(texts), "-o", str(tmp_path / f"float32_{iterations}"), "--tacotron2",
                        str(tacotron2_checkpoint), "--seed", "9", "--cpu", "--quiet", "--no-half-lstm-weights",
                        "--griffin-lim-iters", iterations, "--griffin-lim-phase-init", "pghi"])
    # the three flags reach the synthesizer
    written = (tmp_path / "out" / "seed_9" / "audio_2.wav").read_bytes()
    assert written == (tmp_path / "float32_4" / "audio_2.wav").read_bytes()
    assert written != (tmp_path / "float32_32" / "audio_2.wav").read_bytes()
    written_settings = json.loads((tmp_path / "out" / "intelligibility_seeds.json").read_text())
    assert written_settings["griffin_lim_iters"] == 4 and written_settings["griffin_lim_phase_init"] == "pghi"


def test_a_repeated_seed_is_an_error(tmp_path):
    with pytest.raises(UserError, match="--seeds 1 2 1 repeats a seed: give each once"):
        intelligibility_seeds.main(["--asr", "a.pt", "--tacotron2", "t.pt", "--texts", "x.txt", "--seeds", "1", "2",
                                    "1", "-o", str(tmp_path)])
