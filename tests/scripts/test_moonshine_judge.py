"""scripts/moonshine_judge.py and `scripts/intelligibility.py --judge moonshine`: Moonshine base, shipped in the
moonshine-cpp wheel, run on onnxruntime, hears real eSpeak NG speech (the synthetic ASR corpus's) close to its words;
its written text is scored through the same spoken-word normalisation as the reference; and a missing package or a
flag that means nothing with it is one error line."""
import json
import sys

import numpy as np
import pytest

from common.audio import load_wav
from common.errors import UserError, exit_on_user_error
from scripts import intelligibility
from scripts.moonshine_judge import MoonshineJudge, read_tokenizer

@pytest.fixture(scope="module")
def judge():
    return MoonshineJudge(threads=1)


def corpus_utterances(corpus, count):
    root, *rows = corpus.test_sentences.read_text().splitlines()
    words = corpus.test_sentences.with_suffix(".wrd").read_text().splitlines()
    return [(f"{root}/{row.split(chr(9))[0]}", text) for row, text in zip(rows[:count], words)]


def test_the_tokenizer_file_is_read_token_by_token(tmp_path):
    path = tmp_path / "tokenizer.bin"
    long_token = b"x" * 200  # a length from 128 takes two bytes
    path.write_bytes(b"\x05<unk>\x03<s>\x04</s>\x01\x00" + bytes([128 + 200 % 128, 200 // 128]) + long_token
                     + b"\x04\xe2\x96\x81a")
    assert read_tokenizer(path) == [b"<unk>", b"<s>", b"</s>", b"\x00", long_token, "\u2581a".encode()]


def test_moonshine_hears_espeak_speech_close_to_its_words(judge, synthetic_asr_corpus):
    utterances = corpus_utterances(synthetic_asr_corpus, 2)
    written = judge.transcribe([path for path, _ in utterances])
    heard = [intelligibility.reference_words(text) for text in written]
    references = [words for _, words in utterances]
    _, overall = intelligibility.score(references, heard)
    assert overall["cer"] < 25, (written, references)  # an independent ear: not exact on eSpeak, but close
    assert all(text[:1].isupper() for text in written)  # it writes text, which the normalisation reads


def test_the_judges_silence_is_heard_around_the_clip_and_counts_in_its_token_limit(judge, synthetic_asr_corpus):
    (path, words), = corpus_utterances(synthetic_asr_corpus, 1)
    clip = load_wav(path, 16000, resample=True).numpy()
    silence = np.zeros(8000, np.float32)
    with_silence = MoonshineJudge(threads=1, silence_seconds=0.5)
    assert with_silence.transcribe_audio(clip) == judge.transcribe_audio(np.concatenate([silence, clip, silence]))
    heard = intelligibility.reference_words(with_silence.transcribe_audio(clip))
    assert intelligibility.score([words], [heard])[1]["cer"] < 25
    # The limit of 6 tokens a second counts the silence: a fifth of a second with a tenth on each side takes at most
    # int(0.4 * 6) + 1 = 3 decoder steps.
    short_silence = MoonshineJudge(threads=1, silence_seconds=0.1)
    decoder, steps = short_silence.decoder, []

    class CountedDecoder:
        def run(self, *args):
            steps.append(1)
            return decoder.run(*args)

    short_silence.decoder = CountedDecoder()
    short_silence.transcribe_audio(clip[:3200])
    assert 1 <= len(steps) <= 3
    with pytest.raises(ValueError, match="silence_seconds must be at least 0"):
        MoonshineJudge(silence_seconds=-0.5)


def test_intelligibility_with_moonshine_reports_what_it_wrote(synthetic_asr_corpus, tmp_path):
    import soundfile

    utterances = corpus_utterances(synthetic_asr_corpus, 2)
    (tmp_path / "wavs").mkdir()
    for number, (path, _) in enumerate(utterances, 1):
        audio, rate = soundfile.read(path, dtype="float32")
        soundfile.write(tmp_path / "wavs" / f"audio_{number}.wav", audio, rate)
    (tmp_path / "texts.txt").write_text("".join(words.lower() + "\n" for _, words in utterances))
    report = intelligibility.main(["--judge", "moonshine", "--wavs", str(tmp_path / "wavs"), "--texts",
                                   str(tmp_path / "texts.txt"), "-o", str(tmp_path / "out"), "--quiet"])
    files = report["synthesized"]["files"]
    assert [file["line"] for file in files] == [1, 2] and all(file["written"] for file in files)
    assert all(file["hypothesis"] == intelligibility.reference_words(file["written"]) for file in files)
    assert json.loads((tmp_path / "out" / "intelligibility.json").read_text())["judge"] == "moonshine"


def test_flags_that_mean_nothing_with_moonshine_and_a_missing_package_are_one_error(tmp_path, monkeypatch, capsys):
    (tmp_path / "wavs").mkdir()
    (tmp_path / "texts.txt").write_text("hello\n")
    common = ["--wavs", str(tmp_path / "wavs"), "--texts", str(tmp_path / "texts.txt")]
    with pytest.raises(UserError, match="^--judge moonshine is its own recognizer: drop --asr$"):
        intelligibility.main(["--judge", "moonshine", "--asr", "x.pt", *common])
    with pytest.raises(UserError, match=r"^--asr CKPT \(a fine-tuned wav2vec 2.0\) is the judge, or give --judge"):
        intelligibility.main(common)
    with pytest.raises(UserError, match="^--judge-silence is for --judge moonshine"):
        intelligibility.main([*common, "--asr", "x.pt", "--judge-silence", "0.5"])
    monkeypatch.setitem(sys.modules, "moonshine_cpp", None)  # as if not installed: importing it fails
    with pytest.raises(SystemExit) as exit_info:
        exit_on_user_error(MoonshineJudge)
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip() == ("error: --judge moonshine needs the moonshine-cpp, onnx and "
                                               "onnxruntime packages: pip install -r requirements-judge.txt")
