"""The phoneme front-end (common/text/phonemes.py, `--text-cleaners espeak_ipa --language L`): eSpeak NG's IPA for
known words, the same in any order and any process, its cache beside the filelist rebuilt when the filelist changes,
and a Tacotron 2 trained with it synthesizing from text, phonemized the same way at inference."""
import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import inference
import train
from common.errors import exit_on_user_error
from common.espeak import version as espeak_version
from common.text import TextProcessor, symbols_of_transcripts
from common.text.phonemes import cache_path, phonemize
from tacotron2.inference import Synthesizer
from tests.conftest import TINY_TACOTRON2

ROOT = Path(__file__).resolve().parents[2]

# eSpeak NG 1.52.0's IPA (espeakng-loader's library): a newer eSpeak may change a vowel, and these pins say so.
KNOWN = [
    ("Guten Morgen, wie geht es dir?", "de", "ɡˈuːtən mˈɔɾɡən, viː ɡˈeːt ɛs dˈiːɾ?"),
    ("Straße", "de", "ʃtɾˈɑːsə"),
    ("23 Äpfel.", "de", "dɾˈaɪ ʊnttsvˈantsɪç ˈɛpfəl."),  # eSpeak reads the number in the language
    ("¿Dónde está el niño? ¡Aquí!", "es", "¿dˈonde estˈa el nˈiɲo? ¡akˈi!"),
    ("Hello, world. How are you?", "en-us", "həlˈoʊ, wˈɜːld. hˈaʊ ɑːɹ juː?"),
    ("Das kostet 4,50 Euro; ja.", "de", "das kˈɔstət fˈiːɾ kɔmɑː fˈʏnf nˈʊl ˈɔøroː; jˈɑː."),  # "4,50": no clause end
]


def test_the_library_is_the_version_the_pins_were_made_with():
    assert espeak_version() == "1.52.0"


@pytest.mark.parametrize("text, language, expected", KNOWN)
def test_known_words_give_pinned_ipa_with_their_punctuation(text, language, expected):
    assert phonemize(text, language) == expected


_PHONEMIZE_ALL = """
import json, sys
from common.text.phonemes import phonemize
texts = json.loads(sys.argv[1])
print(json.dumps([phonemize(text, language) for text, language in texts]))
"""


def test_phonemes_are_the_same_in_any_order_and_in_any_process():
    """No forking needed (unlike synthesis): the library's phonemes depend on nothing but (text, language)."""
    texts = [(text, language) for text, language, _ in KNOWN] + [("read", "en-us"), ("I have read it", "en-us")]

    def in_a_fresh_process(order):
        completed = subprocess.run([sys.executable, "-c", _PHONEMIZE_ALL, json.dumps([texts[i] for i in order])],
                                   cwd=ROOT, capture_output=True, text=True, timeout=120, check=True)
        return dict(zip(order, json.loads(completed.stdout)))

    forward = in_a_fresh_process(list(range(len(texts))))
    backward = in_a_fresh_process(list(reversed(range(len(texts)))) * 2)  # twice: nothing carries over either
    assert forward == backward
    assert [forward[i] for i in range(len(KNOWN))] == [expected for _, _, expected in KNOWN]


def test_phonemizing_leaves_the_speech_of_the_same_process_unchanged():
    """The corpus's synthesis (scripts/data/espeak.py) forks from this process's library: phonemizing here first,
    in another language too, must not change what it speaks."""
    import numpy as np

    from scripts.data.espeak import synthesize

    before, _ = synthesize("Guten Morgen, wie geht es dir?", voice="de")
    phonemize("Das Mädchen kauft 23 Äpfel für 4,50 Euro.", "de")
    phonemize("Hello there, friend.", "en-us")
    after, _ = synthesize("Guten Morgen, wie geht es dir?", voice="de")
    assert np.array_equal(before, after)


def test_the_processor_encodes_the_ipa_and_saves_its_language():
    text = "Guten Morgen, wie geht es dir?"
    table = symbols_of_transcripts([text], ["espeak_ipa"], language="de")
    ipa = phonemize(text, "de")
    assert table == ["_", *sorted(set(ipa))]
    processor = TextProcessor(["espeak_ipa"], table, language="de")
    assert processor.encode(text) == [table.index(character) for character in ipa]
    assert processor.clean(text) == ipa
    saved = json.loads(json.dumps(processor.to_dict()))
    assert saved == {"cleaners": ["espeak_ipa"], "symbols": table, "language": "de"}
    assert TextProcessor.from_dict(saved).encode(text) == processor.encode(text)
    assert "language" not in TextProcessor().to_dict()  # the English default saves what it always did


def test_a_line_without_a_final_mark_ends_with_a_full_stop_as_the_phonemized_corpus_does():
    table = symbols_of_transcripts(["Guten Morgen."], ["espeak_ipa"], language="de")
    processor = TextProcessor(["espeak_ipa"], table, language="de")
    assert processor.encode("Guten Morgen") == processor.encode("Guten Morgen.")
    assert processor.clean("Guten Morgen") == phonemize("Guten Morgen.", "de") == "ɡˈuːtən mˈɔɾɡən."
    # "!" is not in this table: dropped (and reported), it leaves a line without a mark, which ends as the corpus's do
    assert processor.encode("Guten Morgen!") == processor.encode("Guten Morgen.")
    # a table of transcripts that never end with a mark holds the full stop encode() gives them
    assert "." in symbols_of_transcripts(["Guten Morgen"], ["espeak_ipa"], language="de")


def test_a_language_without_a_phoneme_cleaner_or_a_phoneme_cleaner_without_one_is_refused():
    with pytest.raises(ValueError, match="needs a language"):
        TextProcessor(["espeak_ipa"], ["_", "a"])
    with pytest.raises(ValueError, match=r"a language \(de\) is only for the text cleaners espeak_ipa"):
        TextProcessor(["basic_cleaners"], ["_", "a"], language="de")


def test_the_cache_beside_the_filelist_is_used_and_rebuilt_when_the_filelist_changes(tmp_path, caplog):
    filelist = tmp_path / "train.txt"
    filelist.write_text("a.wav|Guten Morgen.\nb.wav|Die Straße.\n", encoding="utf-8")
    transcripts = ["Guten Morgen.", "Die Straße."]
    processor = TextProcessor(["espeak_ipa"], ["_"], language="de")
    processor.cache_phonemes(filelist, transcripts)
    cache = cache_path(filelist, "de")
    assert cache == tmp_path / "train.txt.espeak_ipa-de.json"
    saved = json.loads(cache.read_text(encoding="utf-8"))
    assert saved["phonemes"] == {"Guten Morgen.": "ɡˈuːtən mˈɔɾɡən.", "Die Straße.": "diː ʃtɾˈɑːsə."}
    assert saved["key"]["language"] == "de" and saved["key"]["espeak_ng"] == "1.52.0"

    # A cache that matches is what phonemize answers from: plant a marker to see it read.
    saved["phonemes"]["Ein Satz, der so nie phonemisiert wurde."] = "marker"
    filelist.write_text(filelist.read_text(encoding="utf-8") + "c.wav|Ein Satz, der so nie phonemisiert wurde.\n",
                        encoding="utf-8")
    saved["key"]["filelist_sha256"] = __import__("hashlib").sha256(filelist.read_bytes()).hexdigest()
    cache.write_text(json.dumps(saved, ensure_ascii=False), encoding="utf-8")
    processor.cache_phonemes(filelist, [*transcripts, "Ein Satz, der so nie phonemisiert wurde."])
    assert processor.clean("Ein Satz, der so nie phonemisiert wurde.") == "marker"

    # The filelist changes: the cache is rebuilt, with a warning, and never read.
    filelist.write_text("a.wav|Guten Abend.\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="common.text.phonemes"):
        processor.cache_phonemes(filelist, ["Guten Abend."])
    assert any("rebuilding the phoneme cache" in record.getMessage() and "filelist_sha256" in record.getMessage()
               for record in caplog.records)
    rebuilt = json.loads(cache.read_text(encoding="utf-8"))
    assert rebuilt["phonemes"] == {"Guten Abend.": "ɡˈuːtən ˈɑːbənt."}
    assert rebuilt["key"]["filelist_sha256"] != saved["key"]["filelist_sha256"]


def german_run(corpus, output: Path, *extra: str) -> list[str]:
    return ["-m", "Tacotron2", "-o", str(output), "-d", str(corpus.dataset_dir),
            "--training-files", str(corpus.train_filelist), "--validation-files", str(corpus.val_filelist),
            "-lr", "1e-3", "-bs", "8", "--num-workers", "0", "--quiet", "--cpu", *TINY_TACOTRON2, *extra]


@pytest.mark.parametrize("flags, expected", [
    (["--text-cleaners", "espeak_ipa", "--language", "xx-nowhere"],
     "error: --language xx-nowhere: eSpeak NG has no voice named 'xx-nowhere'"),
    (["--text-cleaners", "espeak_ipa"], "error: --text-cleaners espeak_ipa needs --language"),
    (["--language", "de"], "error: --language de is for --text-cleaners espeak_ipa"),
])
def test_language_mistakes_end_training_with_one_error_line_naming_the_flag(flags, expected, german_corpus,
                                                                           tmp_path, capsys):
    capsys.readouterr()
    with pytest.raises(SystemExit) as stopped:
        exit_on_user_error(lambda: train.main(german_run(german_corpus, tmp_path / "run", "--epochs", "1", *flags)))
    lines = capsys.readouterr().err.strip().splitlines()
    assert stopped.value.code == 2 and len(lines) == 1, lines
    assert lines[0].startswith(expected), lines[0]


@pytest.fixture(scope="module")
def german_corpus(tmp_path_factory):
    """A 12-utterance German synthetic corpus (eSpeak NG's de voice speaking sentences_de.py's sentences)."""
    from scripts.data.synthetic_corpus import build_corpus
    from tests.conftest import SyntheticCorpus

    folder = tmp_path_factory.mktemp("german_corpus")
    summary = build_corpus(folder, folder / "filelists", num_utterances=12, seed=1234, voice="de")
    return SyntheticCorpus(folder, summary.filelists["audio_train"], summary.filelists["audio_val"],
                           summary.filelists["audio_test"], summary.num_utterances)


@pytest.mark.slow
def test_a_phoneme_model_trains_and_synthesizes_text_phonemized_the_same_way(german_corpus, tmp_path):
    torch.set_num_threads(1)
    train.main(german_run(german_corpus, tmp_path / "run", "--epochs", "1", "--text-cleaners", "espeak_ipa",
                          "--language", "de"))
    checkpoint_path = tmp_path / "run" / "checkpoint_Tacotron2_last.pt"
    checkpoint = torch.load(checkpoint_path, map_location="cpu", weights_only=True)
    transcripts = [line.split("|")[1] for line in german_corpus.train_filelist.read_text("utf-8").splitlines()]
    ipa = [phonemize(transcript, "de") for transcript in transcripts]
    # The table is the phonemized transcripts' (no --symbols-from-filelist needed), saved with cleaner and language.
    assert checkpoint["text"] == {"cleaners": ["espeak_ipa"], "language": "de",
                                  "symbols": ["_", *sorted(set("".join(ipa)))]}
    assert checkpoint["model_config"]["n_symbols"] == len(checkpoint["text"]["symbols"])
    cache = json.loads(cache_path(german_corpus.train_filelist, "de").read_text(encoding="utf-8"))
    assert cache["phonemes"] == dict(zip(transcripts, ipa))

    phrases = tmp_path / "phrases.txt"
    phrases.write_text(f"{transcripts[0]}\nGuten Morgen!\n", encoding="utf-8")
    inference.main(["-i", str(phrases), "-o", str(tmp_path / "out"), "--tacotron2", str(checkpoint_path),
                    "--quiet", "--cpu", "--griffin-lim-iters", "2"])
    assert sorted(path.name for path in (tmp_path / "out").glob("*.wav")) == ["audio_1.wav", "audio_2.wav"]
    synthesizer = Synthesizer.from_args(inference.build_parser().parse_args(["-i", "x", "-o", "y", "--tacotron2",
                                                                   str(checkpoint_path), "--cpu"]))
    symbols = checkpoint["text"]["symbols"]
    assert synthesizer.text.language == "de"
    assert synthesizer.text.encode(transcripts[0]) == [symbols.index(character) for character in ipa[0]]
