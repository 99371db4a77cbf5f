"""A word n-gram language model in ARPA format from a text corpus, for `inference.py -m wav2vec2 --decoder beam --lm`.

    python -m scripts.wav2vec2.build_lm data/asr/train.wrd output/asr_lm.arpa [--order 3] [--lexicon] \
        [--english-weight 0.5]

TEXT holds one sentence a line (a `.wrd` file: words separated by spaces; case is kept, so give the case the
recognizer writes). The model is interpolated Witten-Bell smoothing written as a backoff model, in pure Python:
kenlm's `lmplz` is not part of its pip package, and a corpus of transcripts is small. Each order's estimate mixes
the seen continuations of a context with the next lower order's, weighted by how many different words followed
the context (T) against how often it was seen (c):

    P(w | h) = c(h) / (c(h) + T(h)) * c(h w) / c(h)  +  T(h) / (c(h) + T(h)) * P(w | h without its first word)

and the unigrams mix with a uniform distribution over the vocabulary and <unk>. The ARPA file stores P(w | h) for
every seen n-gram and the backoff weight T(h) / (c(h) + T(h)) for every seen context, so for each context the
probabilities of all words (</s> and <unk> included) sum to 1. Sentences are scored as kenlm does: `<s>` before
the first word, `</s>` after the last.

--lexicon adds each word of the open ASR corpus's 20,000-word lexicon (scripts/data/open_text.py), upper case, as a
sentence of its own: a word the transcripts never say is then a word the model knows, not <unk>. `make demo-asr`
decodes with such a model (wav2vec2/RESULTS.md: it chose it on the validation split).

--english-weight W mixes in what the text cannot teach, how English words follow one another: the word and word-pair
counts that symspellpy ships (its frequency dictionaries, from Google Books' n-grams: 82,765 words, 242,342 pairs),
kept to the model's own vocabulary. They make a bigram model by absolute discounting: the pair table lists only pairs
counted at least 6.4 million times, so each listed pair gives up that smallest count to the pairs left out, which
share it by their unigram probability. (The two tables count at scales some 40 times apart, so a context's size is
its listed pairs' total, not its word's count.) The result is the linear interpolation (1 - W) * the text's model +
W * the English model, written as one backoff model: every n-gram either model lists keeps its mixed probability,
and each context's backoff weight makes its distribution sum to 1 (for words neither model lists after the context
that is an approximation, the one SRILM's model mixing makes too). The English model never predicts </s> or <unk>;
the text's model alone does.
"""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from pathlib import Path

from common.errors import ArgumentParser, UserError, UserFileNotFoundError, exit_on_user_error

BEGIN, END, UNKNOWN = "<s>", "</s>", "<unk>"
NEVER = -99.0  # ARPA's log10 probability of <s>, which is never predicted


def ngram_counts(sentences: list[list[str]], order: int) -> list[Counter]:
    """counts[n - 1][(w1, ..., wn)]: how often each n-gram occurs in the sentences padded with <s> and </s>."""
    counts = [Counter() for _ in range(order)]
    for words in sentences:
        padded = [BEGIN, *words, END]
        for n in range(1, order + 1):
            for start in range(len(padded) - n + 1):
                counts[n - 1][tuple(padded[start:start + n])] += 1
    return counts


class BackoffModel:
    """An ARPA backoff model: the probabilities (log10) of its listed n-grams and the backoff weights (log10) of its
    listed contexts."""

    def __init__(self, order: int):
        if order < 1:
            raise UserError(f"--order must be at least 1, got {order}")
        self.order = order
        self.log10_probs: list[dict[tuple, float]] = []
        self.log10_backoffs: dict[tuple, float] = {}

    def log10_prob(self, context: tuple, word: str) -> float:
        """log10 P(word | context) as an ARPA reader computes it: the longest seen n-gram, plus the backoff weights
        of the longer contexts that were not followed by the word."""
        context = context[max(len(context) - self.order + 1, 0):]
        backoff = 0.0
        for start in range(len(context) + 1):
            history = context[start:]
            ngram = history + (word,)
            if ngram in self.log10_probs[len(ngram) - 1]:
                return backoff + self.log10_probs[len(ngram) - 1][ngram]
            if history:
                backoff += self.log10_backoffs.get(history, 0.0)
        return backoff + self.log10_probs[0][(UNKNOWN,)]

    def probability(self, context: tuple, word: str) -> float:
        return 10 ** self.log10_prob(context, word)

    def write_arpa(self, path: Path) -> None:
        lines = ["", "\\data\\"]
        lines += [f"ngram {n}={len(level)}" for n, level in enumerate(self.log10_probs, 1)]
        for n, level in enumerate(self.log10_probs, 1):
            lines += ["", f"\\{n}-grams:"]
            for ngram in sorted(level):
                entry = f"{level[ngram]:.6f}\t{' '.join(ngram)}"
                if n < self.order and ngram in self.log10_backoffs:
                    entry += f"\t{self.log10_backoffs[ngram]:.6f}"
                lines.append(entry)
        lines += ["", "\\end\\", ""]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines), encoding="utf-8")


class WittenBellModel(BackoffModel):
    """Interpolated Witten-Bell smoothing of a text's n-gram counts."""

    def __init__(self, sentences: list[list[str]], order: int):
        super().__init__(order)
        counts = ngram_counts(sentences, order)
        unigrams = counts[0]
        predicted = {ngram: count for ngram, count in unigrams.items() if ngram != (BEGIN,)}
        total, distinct = sum(predicted.values()), len(predicted)
        vocabulary = distinct + 1  # <unk> too
        seen_weight = total / (total + distinct)
        first = {ngram: math.log10(seen_weight * count / total + (1 - seen_weight) / vocabulary)
                 for ngram, count in predicted.items()}
        first[(UNKNOWN,)] = math.log10((1 - seen_weight) / vocabulary)
        first[(BEGIN,)] = NEVER
        self.log10_probs.append(first)
        for n in range(2, order + 1):
            followers: dict[tuple, Counter] = defaultdict(Counter)
            for ngram, count in counts[n - 1].items():
                followers[ngram[:-1]][ngram[-1]] += count
            level = {}
            for context, words in followers.items():
                seen, distinct = sum(words.values()), len(words)
                seen_weight = seen / (seen + distinct)
                self.log10_backoffs[context] = math.log10(1 - seen_weight)
                for word, count in words.items():
                    lower = 10 ** self.log10_prob(context[1:], word)
                    level[context + (word,)] = math.log10(seen_weight * count / seen + (1 - seen_weight) * lower)
            self.log10_probs.append(level)


class EnglishBigrams:
    """A bigram model of English from Google Books' word and word-pair counts (symspellpy's frequency dictionaries),
    over the given vocabulary (upper case). Probabilities are plain numbers; 0 for a word outside the vocabulary."""

    WORDS_FILE, PAIRS_FILE = "frequency_dictionary_en_82_765.txt", "frequency_bigramdictionary_en_243_342.txt"

    def __init__(self, vocabulary: set[str]):
        word_counts: Counter = Counter()
        for word, count in self._table(self.WORDS_FILE, 1):
            if word in vocabulary:
                word_counts[word] += count
        total = sum(word_counts.values())
        self.unigrams = {word: count / total for word, count in word_counts.items()}
        pair_counts: dict[str, Counter] = defaultdict(Counter)
        smallest = math.inf
        for (first, second), count in self._table(self.PAIRS_FILE, 2):
            smallest = min(smallest, count)
            if first in word_counts and second in word_counts:
                pair_counts[first][second] += count
        self.bigrams: dict[tuple, float] = {}
        self.backoffs: dict[str, float] = {}
        for first, followers in pair_counts.items():
            # Absolute discounting, each listed pair giving up the table's smallest count to the pairs it leaves out
            # (each of those counted less than that).
            size = sum(followers.values())
            for second, count in followers.items():
                if count > smallest:
                    self.bigrams[(first, second)] = (count - smallest) / size
            listed = [second for second in followers if (first, second) in self.bigrams]
            unlisted = 1 - sum(self.unigrams[second] for second in listed)
            if unlisted > 1e-9:
                self.backoffs[first] = smallest * len(followers) / size / unlisted
            else:  # a vocabulary of nothing but this word's listed followers: they share all of it
                given = sum(self.bigrams[(first, second)] for second in listed)
                for second in listed:
                    self.bigrams[(first, second)] /= given
                self.backoffs[first] = 0.0

    @staticmethod
    def _table(name: str, words_per_line: int):
        """(word, count) or ((word, word), count) per line of one of symspellpy's tables, words upper-cased."""
        from importlib.resources import files

        try:
            text = files("symspellpy").joinpath(name).read_text(encoding="utf-8")
        except ModuleNotFoundError as error:
            raise UserError("--english-weight needs symspellpy's frequency tables: pip install symspellpy") from error
        for line in text.splitlines():
            fields = line.split()
            if len(fields) == words_per_line + 1:
                words = tuple(word.upper() for word in fields[:words_per_line])
                yield (words[0] if words_per_line == 1 else words), int(fields[-1])

    def probability(self, context: tuple, word: str) -> float:
        if word not in self.unigrams:
            return 0.0
        previous = context[-1] if context else None
        if (previous, word) in self.bigrams:
            return self.bigrams[(previous, word)]
        return self.backoffs.get(previous, 1.0) * self.unigrams[word]


def check_english_weight(english_weight: float) -> None:
    if not 0 <= english_weight < 1:  # at 1 nothing would predict </s> or <unk>
        raise UserError(f"--english-weight must be at least 0 and below 1, got {english_weight}")


def interpolate(text_model: BackoffModel, english: EnglishBigrams, english_weight: float) -> BackoffModel:
    """(1 - english_weight) * text_model + english_weight * english, as one backoff model of text_model's order:
    the n-grams either lists, each with its mixed probability, and backoff weights that make each context sum to 1."""
    check_english_weight(english_weight)
    mixed = BackoffModel(text_model.order)

    def probability(context: tuple, word: str) -> float:
        return ((1 - english_weight) * text_model.probability(context, word)
                + english_weight * english.probability(context, word))

    listed = [set(level) for level in text_model.log10_probs]
    listed[0] |= {(word,) for word in english.unigrams}
    if mixed.order > 1:
        listed[1] |= set(english.bigrams)
    for n, ngrams in enumerate(listed, 1):
        level = {ngram: math.log10(probability(ngram[:-1], ngram[-1])) for ngram in ngrams if ngram != (BEGIN,)}
        if n == 1:
            level[(BEGIN,)] = NEVER
        mixed.log10_probs.append(level)
    for n in range(2, mixed.order + 1):
        followers: dict[tuple, list[str]] = defaultdict(list)
        for ngram in mixed.log10_probs[n - 1]:
            followers[ngram[:-1]].append(ngram[-1])
        for context, words in followers.items():
            left = 1 - sum(10 ** mixed.log10_probs[n - 1][context + (word,)] for word in words)
            shorter = 1 - sum(mixed.probability(context[1:], word) for word in words)
            mixed.log10_backoffs[context] = math.log10(max(left, 1e-12) / max(shorter, 1e-12))
    return mixed


def read_sentences(path: Path, with_lexicon: bool = False) -> list[list[str]]:
    """The text's sentences (lists of words); with_lexicon: then each lexicon word, upper case, as one more."""
    if not path.is_file():
        raise UserFileNotFoundError(f"TEXT not found: {path}")
    sentences = [line.split() for line in path.read_text(encoding="utf-8").splitlines() if line.split()]
    if not sentences:
        raise UserError(f"{path} holds no words")
    reserved = {BEGIN, END, UNKNOWN} & {word for words in sentences for word in words}
    if reserved:
        raise UserError(f"{path} holds {', '.join(sorted(reserved))}, which the model reserves")
    if with_lexicon:
        from scripts.data.open_text import lexicon

        sentences += [[word.upper()] for word in lexicon()]
    return sentences


def main(argv: list[str] | None = None) -> BackoffModel:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("text", help="the corpus: one sentence a line, words separated by spaces (e.g. train.wrd)")
    parser.add_argument("output", help="the ARPA file to write")
    parser.add_argument("--order", type=int, default=3, help="the n of the n-grams (default 3)")
    parser.add_argument("--lexicon", action="store_true",
                        help="also each word of the open corpus's lexicon as a one-word sentence")
    parser.add_argument("--english-weight", type=float, default=0.0,
                        help="mix in Google Books' English word pairs (symspellpy) with this weight, at least 0 and "
                             "below 1 (default 0: the text alone)")
    args = parser.parse_args(argv)
    check_english_weight(args.english_weight)
    sentences = read_sentences(Path(args.text), args.lexicon)
    model = WittenBellModel(sentences, args.order)
    if args.english_weight:
        model = interpolate(model, EnglishBigrams(vocabulary(model)), args.english_weight)
    write_model(model, Path(args.output), f"from {len(sentences)} sentences")
    return model


def vocabulary(model: BackoffModel) -> set[str]:
    """The words a model predicts, less its markers."""
    return {ngram[0] for ngram in model.log10_probs[0]} - {BEGIN, END, UNKNOWN}


def write_model(model: BackoffModel, path: Path, source: str) -> None:
    model.write_arpa(path)
    sizes = ", ".join(f"{len(level)} {n}-grams" for n, level in enumerate(model.log10_probs, 1))
    print(f"{path}: {sizes} {source}")


if __name__ == "__main__":
    exit_on_user_error(main)
