"""CTC decoding with a beam search and a word n-gram language model (wav2vec2/decoding.py, `inference.py -m wav2vec2
--decoder beam --lm`), and the ARPA model that scripts/wav2vec2/build_lm.py writes."""
import math
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import kenlm
import pytest
import torch

import inference
from common.errors import UserError
from common.logger import read_dllogger_file
from scripts.data.open_text import lexicon
from scripts.wav2vec2.build_lm import main as build_lm
from wav2vec2.decoding import BeamSearchDecoder, transcripts
from wav2vec2.dictionary import Dictionary

REPO_ROOT = Path(__file__).resolve().parents[2]
LETTERS = Dictionary(list("|ABC"))  # 0-3 the special symbols, 4 the word boundary, 5 A, 6 B, 7 C


def test_a_beam_of_one_without_a_language_model_is_greedy_decoding():
    torch.manual_seed(0)
    decoder = BeamSearchDecoder(LETTERS, beam_size=1)
    for _ in range(20):
        logits = torch.randn(3, 40, len(LETTERS)) * 3
        logits[0, ::7, 1:4] += 6  # frames where <pad>, </s> or <unk> wins: dropped by both, separating repeats
        frame_padding_mask = torch.zeros(3, 40, dtype=torch.bool)
        frame_padding_mask[1, 25:] = True
        greedy = transcripts(logits, frame_padding_mask, LETTERS)
        assert transcripts(logits, frame_padding_mask, LETTERS, decoder) == greedy
    assert any(" " in text for text in greedy)


def frames(*spelled: dict) -> torch.Tensor:
    """Log-probabilities, one frame per {symbol: probability} (the rest spread over the other labels)."""
    rows = []
    for probabilities in spelled:
        rest = (1 - sum(probabilities.values())) / (len(LETTERS) - len(probabilities))
        row = [probabilities.get(symbol, rest) for symbol in LETTERS.symbols_with_specials]
        rows.append([math.log(p) for p in row])
    return torch.tensor([rows])


def test_a_language_model_that_favours_a_word_changes_a_close_decision(tmp_path):
    corpus = tmp_path / "text.wrd"
    corpus.write_text("BA AB\n" * 5 + "AC\n")
    build_lm([str(corpus), str(tmp_path / "lm.arpa"), "--order", "2"])
    # "BA A" then a last letter that sounds a little more like C than B.
    log_probs = frames({"B": 0.9}, {"A": 0.9}, {"|": 0.9}, {"A": 0.9}, {"C": 0.5, "B": 0.4})
    assert transcripts(log_probs, None, LETTERS) == ["BA AC"]
    assert transcripts(log_probs, None, LETTERS, BeamSearchDecoder(LETTERS, beam_size=8)) == ["BA AC"]
    with_lm = BeamSearchDecoder(LETTERS, beam_size=8, lm_path=tmp_path / "lm.arpa")
    assert transcripts(log_probs, None, LETTERS, with_lm) == ["BA AB"]
    weightless = BeamSearchDecoder(LETTERS, beam_size=8, lm_path=tmp_path / "lm.arpa", lm_weight=0.0, word_score=0.0)
    assert transcripts(log_probs, None, LETTERS, weightless) == ["BA AC"]


def test_a_lower_least_letter_log_probability_lets_the_model_place_a_faint_word_boundary(tmp_path):
    corpus = tmp_path / "text.wrd"
    corpus.write_text("AB C\n" * 5 + "CA\n")
    build_lm([str(corpus), str(tmp_path / "lm.arpa"), "--order", "2"])
    # "AB", a frame of blank whose word boundary has probability 0.0025 (log -6), then "C": heard as one word.
    log_probs = frames({"A": 0.9}, {"B": 0.9}, {"<s>": 0.99, "|": 0.0025}, {"C": 0.9})
    assert transcripts(log_probs, None, LETTERS) == ["ABC"]

    def decoded(min_letter_log_prob: float, lm_path: Path | None = tmp_path / "lm.arpa") -> str:
        decoder = BeamSearchDecoder(LETTERS, beam_size=8, lm_path=lm_path, min_letter_log_prob=min_letter_log_prob)
        return transcripts(log_probs, None, LETTERS, decoder)[0]

    assert decoded(-5.0) != "AB C"  # pyctcdecode's default: the boundary is never tried
    assert decoded(-6.5) == "AB C"  # tried, and the language model knows the words "AB" and "C"
    assert decoded(-6.5, lm_path=None) == "ABC"  # without a model nothing favours the faint boundary


def test_a_least_letter_log_probability_of_zero_or_more_is_refused():
    with pytest.raises(UserError, match=r"--min-letter-log-prob must be below 0 \(a natural log\), got 0.5"):
        BeamSearchDecoder(LETTERS, beam_size=4, min_letter_log_prob=0.5)


def read_arpa(path: Path) -> tuple[dict, dict, list[int]]:
    """An ARPA file's log10 probabilities and backoff weights by n-gram, and its header's counts, checked as read."""
    probabilities, backoffs, declared, order = {}, {}, [], 0
    for line in path.read_text().splitlines():
        if line.startswith("ngram "):
            declared.append(int(line.split("=")[1]))
        elif line.endswith("-grams:"):
            order = int(line[1:].split("-")[0])
        elif line and order and not line.startswith("\\"):
            fields = line.split("\t")
            ngram = tuple(fields[1].split())
            assert len(ngram) == order
            probabilities[ngram] = float(fields[0])
            if len(fields) == 3:
                backoffs[ngram] = float(fields[2])
    return probabilities, backoffs, declared


def arpa_log10_prob(probabilities: dict, backoffs: dict, context: tuple, word: str) -> float:
    """The ARPA backoff rule: the longest n-gram seen, plus the backoff weights of the longer contexts."""
    if context + (word,) in probabilities:
        return probabilities[context + (word,)]
    if not context:
        return probabilities[("<unk>",)]
    return backoffs.get(context, 0.0) + arpa_log10_prob(probabilities, backoffs, context[1:], word)


def test_the_arpa_model_parses_and_its_probabilities_sum_to_one_after_every_context(tmp_path):
    corpus = tmp_path / "train.wrd"
    corpus.write_text("THE CAT SAT\nTHE CAT RAN\nA DOG SAT ON THE MAT\n\nTHE DOG\n")
    model = build_lm([str(corpus), str(tmp_path / "lm.arpa"), "--order", "3"])
    probabilities, backoffs, declared = read_arpa(tmp_path / "lm.arpa")
    counts = defaultdict(int)
    for ngram in probabilities:
        counts[len(ngram)] += 1
    assert declared == [counts[1], counts[2], counts[3]] == [len(level) for level in model.log10_probs]
    assert {("<s>",), ("</s>",), ("<unk>",), ("MAT",)} <= set(probabilities)
    for ngram in probabilities:  # every n-gram's context and its lower order are there to back off to
        assert len(ngram) == 1 or (ngram[:-1] in probabilities and ngram[1:] in probabilities)
    predicted = [ngram[0] for ngram in probabilities if len(ngram) == 1 and ngram != ("<s>",)]
    contexts = [(), ("<s>",), ("<s>", "THE"), ("THE", "CAT"), ("CAT",), ("ON", "THE"), ("MAT", "SAT"), ("ZEBRA",)]
    for context in contexts:
        total = sum(10 ** arpa_log10_prob(probabilities, backoffs, context, word) for word in predicted)
        assert total == pytest.approx(1.0, abs=1e-5), context
        for word in ("CAT", "SAT", "</s>", "ZEBRA"):
            assert arpa_log10_prob(probabilities, backoffs, context, word) == pytest.approx(
                model.log10_prob(context, word), abs=1e-5)
    # Witten-Bell by hand: "THE" is followed by CAT twice, DOG once and MAT once (3 kinds in 4).
    unigram_cat = 10 ** probabilities[("CAT",)]
    assert 10 ** model.log10_prob(("THE",), "CAT") == pytest.approx(4 / 7 * 2 / 4 + 3 / 7 * unigram_cat, rel=1e-5)


def test_kenlm_reads_the_arpa_model_with_the_same_probabilities(tmp_path):
    corpus = tmp_path / "train.wrd"
    corpus.write_text("THE CAT SAT\nTHE CAT RAN\nA DOG SAT ON THE MAT\n")
    model = build_lm([str(corpus), str(tmp_path / "lm.arpa")])
    reader = kenlm.Model(str(tmp_path / "lm.arpa"))
    assert reader.order == 3
    sentence = "THE DOG SAT ON A CAT"
    ours, context = 0.0, ("<s>",)
    for word in sentence.split() + ["</s>"]:
        ours += model.log10_prob(context, word)
        context = (context + (word,))[-2:]
    assert reader.score(sentence, bos=True, eos=True) == pytest.approx(ours, abs=1e-4)


def test_lexicon_words_join_the_vocabulary_as_sentences_of_their_own(tmp_path):
    corpus = tmp_path / "train.wrd"
    corpus.write_text("THE CAT SAT\nTHE CAT RAN\n")
    plain = build_lm([str(corpus), str(tmp_path / "plain.arpa"), "--order", "2"])
    with_lexicon = build_lm([str(corpus), str(tmp_path / "lexicon.arpa"), "--order", "2", "--lexicon"])
    words = {ngram[0] for ngram in with_lexicon.log10_probs[0]} - {"<s>", "</s>", "<unk>"}
    assert words == {"THE", "CAT", "SAT", "RAN"} | {word.upper() for word in lexicon()}
    assert "SYNTHESIS" in words and "SYNTHESIS" not in {ngram[0] for ngram in plain.log10_probs[0]}
    # A lexicon word is a whole sentence: it follows <s> and is followed by </s>, and the transcripts' bigrams stay.
    assert ("<s>", "SYNTHESIS") in with_lexicon.log10_probs[1] and ("SYNTHESIS", "</s>") in with_lexicon.log10_probs[1]
    assert with_lexicon.log10_prob(("<s>",), "SYNTHESIS") > with_lexicon.log10_prob(("CAT",), "SYNTHESIS")
    assert ("THE", "CAT") in with_lexicon.log10_probs[1]


def symspell_table(name: str) -> dict[str, int]:
    """One of symspellpy's tables: count by line (a word, or two joined by a space; lower case)."""
    from importlib.resources import files

    lines = files("symspellpy").joinpath(name).read_text(encoding="utf-8").splitlines()
    return {" ".join(fields[:-1]): int(fields[-1]) for fields in (line.split() for line in lines)}


def test_english_word_pairs_mix_into_the_model_by_their_weight(tmp_path):
    corpus = tmp_path / "train.wrd"
    corpus.write_text("THE RIVER SAT\nTHE CAT RAN\nA DOG RAN ON THE MAT\nZORBLAT RAN\n")
    text_only = build_lm([str(corpus), str(tmp_path / "text.arpa"), "--order", "2"])
    mixed = build_lm([str(corpus), str(tmp_path / "mixed.arpa"), "--order", "2", "--english-weight", "0.9"])
    probabilities, backoffs, _ = read_arpa(tmp_path / "mixed.arpa")
    predicted = [ngram[0] for ngram in probabilities if len(ngram) == 1 and ngram != ("<s>",)]
    assert sorted(predicted) == sorted(ngram[0] for ngram in text_only.log10_probs[0] if ngram != ("<s>",))
    for context in [(), ("<s>",), ("THE",), ("RIVER",), ("ZORBLAT",), ("ON",)]:
        total = sum(10 ** arpa_log10_prob(probabilities, backoffs, context, word) for word in predicted)
        assert total == pytest.approx(1.0, abs=1e-5), context
    # By hand from the tables, over the vocabulary both know (ZORBLAT is in neither): a pair the table lists gives up
    # the table's smallest count; a context's size is its listed pairs' total; a unigram is its share of the words.
    vocabulary = {"the", "river", "sat", "cat", "ran", "a", "dog", "on", "mat"}
    word_counts = {word: count for word, count in symspell_table("frequency_dictionary_en_82_765.txt").items()
                   if word in vocabulary}
    pair_table = symspell_table("frequency_bigramdictionary_en_243_342.txt")
    smallest = min(pair_table.values())
    assert set(word_counts) == vocabulary and smallest == 6_400_000
    for first, second in (("THE", "RIVER"), ("ON", "THE")):
        followers = {pair: count for pair, count in pair_table.items()
                     if pair.split()[0] == first.lower() and pair.split()[1] in vocabulary}
        english = (followers[f"{first} {second}".lower()] - smallest) / sum(followers.values())
        expected = 0.1 * 10 ** text_only.log10_prob((first,), second) + 0.9 * english
        assert 10 ** mixed.log10_prob((first,), second) == pytest.approx(expected, rel=1e-4)
    english_cat = word_counts["cat"] / sum(word_counts.values())
    assert 10 ** mixed.log10_prob((), "CAT") == pytest.approx(
        0.1 * 10 ** text_only.log10_prob((), "CAT") + 0.9 * english_cat, rel=1e-4)
    # English knows "the cat" better than "the mat", which the text saw as often; it never ends a sentence.
    assert mixed.log10_prob(("THE",), "CAT") > mixed.log10_prob(("THE",), "MAT")
    assert text_only.log10_prob(("THE",), "CAT") == pytest.approx(text_only.log10_prob(("THE",), "MAT"))
    assert 10 ** mixed.log10_prob(("RAN",), "</s>") == pytest.approx(
        0.1 * 10 ** text_only.log10_prob(("RAN",), "</s>"), rel=1e-4)
    reader, ours, context = kenlm.Model(str(tmp_path / "mixed.arpa")), 0.0, ("<s>",)
    for word in "THE DOG RAN ON THE RIVER".split() + ["</s>"]:
        ours += mixed.log10_prob(context, word)
        context = (word,)
    assert reader.score("THE DOG RAN ON THE RIVER", bos=True, eos=True) == pytest.approx(ours, abs=1e-4)


@pytest.mark.parametrize("weight", ["1", "-0.1", "1.5"])
def test_the_english_weight_must_leave_the_text_a_share(tmp_path, weight):
    (tmp_path / "train.wrd").write_text("THE CAT\n")
    with pytest.raises(UserError, match=f"--english-weight must be at least 0 and below 1, got {float(weight)}"):
        build_lm([str(tmp_path / "train.wrd"), str(tmp_path / "lm.arpa"), "--english-weight", weight])


def test_build_lm_mistakes_are_user_errors(tmp_path):
    with pytest.raises(UserError, match="TEXT not found: .*missing.wrd"):
        build_lm([str(tmp_path / "missing.wrd"), str(tmp_path / "lm.arpa")])
    (tmp_path / "blank.wrd").write_text("\n \n")
    with pytest.raises(UserError, match="blank.wrd holds no words"):
        build_lm([str(tmp_path / "blank.wrd"), str(tmp_path / "lm.arpa")])


def run_inference(checkpoint, manifest, output, *extra) -> list[str]:
    inference.main(["-m", "wav2vec2", "--checkpoint", str(checkpoint), "-i", str(manifest), "-o", str(output),
                    "--cpu", "--quiet", "--save-predictions", *extra])
    return (Path(output) / "predictions.txt").read_text().splitlines()


def test_a_beam_of_one_end_to_end_gives_the_greedy_transcripts(recognizer_checkpoint, synthetic_asr_corpus,
                                                                tmp_path):
    manifest = synthetic_asr_corpus.test_sentences
    greedy = run_inference(recognizer_checkpoint, manifest, tmp_path / "greedy")
    assert run_inference(recognizer_checkpoint, manifest, tmp_path / "beam1", "--decoder", "beam",
                         "--beam-size", "1") == greedy


def test_a_beam_search_with_a_language_model_end_to_end(recognizer_checkpoint, synthetic_asr_corpus, tmp_path):
    build_lm([str(synthetic_asr_corpus.directory / "train.wrd"), str(tmp_path / "lm.arpa")])
    # --fp32: the same logits on every CPU (its default is bf16 or int8 where those are fast), so the same beams
    with_lm = run_inference(recognizer_checkpoint, synthetic_asr_corpus.test_sentences, tmp_path / "lm", "--decoder",
                            "beam", "--beam-size", "4", "--lm", str(tmp_path / "lm.arpa"), "--lm-weight", "1",
                            "--word-score", "0", "--fp32")
    references = synthetic_asr_corpus.test_sentences.with_suffix(".wrd").read_text().splitlines()
    assert len(with_lm) == len(references)
    # The barely trained model's letters are noise; the language model turns them into words it knows.
    vocabulary = set((synthetic_asr_corpus.directory / "train.wrd").read_text().split())
    assert any(with_lm) and set(" ".join(with_lm).split()) <= vocabulary
    records = read_dllogger_file(tmp_path / "lm" / "nvlog.json")
    parameters = [r["data"] for r in records if r["step"] == "PARAMETER"][0]
    assert parameters["decoder"] == "beam" and parameters["beam_size"] == 4
    assert parameters["min_letter_log_prob"] == -5.0  # pyctcdecode's default, logged so that a run can be repeated
    assert parameters["lm"] == str(tmp_path / "lm.arpa")
    summary = [r["data"] for r in records if r["step"] == [] and "wer" in r["data"]][0]
    assert summary["decode_seconds"] > 0


def test_decoder_flag_mistakes_are_one_error_line(synthetic_asr_corpus, tmp_path):
    def refused(*extra):
        with pytest.raises(UserError) as raised:
            run_inference(tmp_path / "unread.pt", synthetic_asr_corpus.test_voice, tmp_path / "out", *extra)
        return str(raised.value)

    assert refused("--lm", "lm.arpa") == "--lm is for the beam search decoder: add --decoder beam"
    assert refused("--beam-size", "4") == "--beam-size is for the beam search decoder: add --decoder beam"
    assert refused("--min-letter-log-prob", "-8") == (
        "--min-letter-log-prob is for the beam search decoder: add --decoder beam")
    assert refused("--decoder", "beam", "--lm-weight", "2").startswith("--lm-weight weighs the language model's")
    assert refused("--decoder", "beam", "--lm", str(tmp_path / "missing.arpa")) == (
        f"--lm: language model not found: {tmp_path / 'missing.arpa'}")
    completed = subprocess.run([sys.executable, str(REPO_ROOT / "inference.py"), "-m", "wav2vec2", "--checkpoint",
                                "unread.pt", "-i", str(synthetic_asr_corpus.test_voice), "-o", str(tmp_path / "out"),
                                "--cpu", "--lm", "lm.arpa"], cwd=REPO_ROOT, capture_output=True, text=True,
                               timeout=300)
    assert completed.returncode == 2
    assert completed.stderr == "error: --lm is for the beam search decoder: add --decoder beam\n"


def test_a_beam_size_below_one_is_refused():
    with pytest.raises(UserError, match="--beam-size must be at least 1, got 0"):
        BeamSearchDecoder(LETTERS, beam_size=0)


def test_a_file_that_is_not_an_arpa_model_is_refused_naming_it(tmp_path):
    (tmp_path / "notes.arpa").write_text("hello\n")
    with pytest.raises(UserError, match=r"--lm .*notes.arpa: cannot read it as an ARPA language model: .*\\data\\"):
        BeamSearchDecoder(LETTERS, beam_size=4, lm_path=tmp_path / "notes.arpa")


def test_reading_a_language_model_writes_nothing_to_stderr(tmp_path, capfd):
    corpus = tmp_path / "text.wrd"
    corpus.write_text("BA AB\n")
    build_lm([str(corpus), str(tmp_path / "lm.arpa"), "--order", "2"])
    capfd.readouterr()
    decoder = BeamSearchDecoder(LETTERS, beam_size=4, lm_path=tmp_path / "lm.arpa")
    assert capfd.readouterr().err == ""  # kenlm's "Loading the LM will be faster..." and progress bar are gone
    assert transcripts(frames({"B": 0.9}, {"A": 0.9}), None, LETTERS, decoder) == ["BA"]
    print("still here", file=sys.stderr)  # and stderr works again afterwards
    assert capfd.readouterr().err == "still here\n"


@pytest.mark.parametrize("missing, flags, message", [
    ("kenlm", ["--decoder", "beam", "--lm", "LM"], "error: --lm needs kenlm's Python module: pip install kenlm "
                                                   "(or scripts/setup.sh --lm)\n"),
    ("pyctcdecode", ["--decoder", "beam"], "error: --decoder beam needs pyctcdecode: pip install --no-deps "
                                           "pyctcdecode pygtrie (or scripts/setup.sh --lm)\n"),
])
def test_without_the_language_model_packages_the_beam_search_is_one_error_line(
        recognizer_checkpoint, synthetic_asr_corpus, tmp_path, missing, flags, message):
    """A text-to-speech set-up (scripts/setup.sh without --lm) lacks them: the module is made unimportable in a real
    inference.py process, as it is where it was never installed."""
    (tmp_path / "lm.arpa").write_text("\\data\\\nngram 1=1\n\n\\1-grams:\n-1.0\t<unk>\n\n\\end\\\n")
    flags = [str(tmp_path / "lm.arpa") if flag == "LM" else flag for flag in flags]
    program = (f"import sys; sys.modules[{missing!r}] = None; sys.argv[0] = 'inference.py'; import inference; "
               f"inference.exit_on_user_error(inference.main)")
    completed = subprocess.run([sys.executable, "-c", program, "-m", "wav2vec2", "--checkpoint",
                                str(recognizer_checkpoint), "-i", str(synthetic_asr_corpus.test_voice), "-o",
                                str(tmp_path / "out"), "--cpu", "--quiet", *flags], cwd=REPO_ROOT,
                               capture_output=True, text=True, timeout=300)
    assert (completed.returncode, completed.stderr) == (2, message)
