"""A word n-gram language model in ARPA format from a text corpus, for `inference.py -m wav2vec2 --decoder beam --lm`.

    python -m scripts.wav2vec2.build_lm data/asr/train.wrd output/asr_lm.arpa [--order 3] [--lexicon]

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


class WittenBellModel:
    """The smoothed probabilities (log10) of every seen n-gram and the backoff weights (log10) of every seen context."""

    def __init__(self, sentences: list[list[str]], order: int):
        if order < 1:
            raise UserError(f"--order must be at least 1, got {order}")
        self.order = order
        counts = ngram_counts(sentences, order)
        self.log10_probs: list[dict[tuple, float]] = []
        self.log10_backoffs: dict[tuple, float] = {}
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


def read_sentences(path: Path) -> list[list[str]]:
    if not path.is_file():
        raise UserFileNotFoundError(f"TEXT not found: {path}")
    sentences = [line.split() for line in path.read_text(encoding="utf-8").splitlines() if line.split()]
    if not sentences:
        raise UserError(f"{path} holds no words")
    reserved = {BEGIN, END, UNKNOWN} & {word for words in sentences for word in words}
    if reserved:
        raise UserError(f"{path} holds {', '.join(sorted(reserved))}, which the model reserves")
    return sentences


def main(argv: list[str] | None = None) -> WittenBellModel:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("text", help="the corpus: one sentence a line, words separated by spaces (e.g. train.wrd)")
    parser.add_argument("output", help="the ARPA file to write")
    parser.add_argument("--order", type=int, default=3, help="the n of the n-grams (default 3)")
    parser.add_argument("--lexicon", action="store_true",
                        help="also each word of the open corpus's lexicon as a one-word sentence")
    args = parser.parse_args(argv)
    sentences = read_sentences(Path(args.text))
    if args.lexicon:
        from scripts.data.open_text import lexicon

        sentences += [[word.upper()] for word in lexicon()]
    model = WittenBellModel(sentences, args.order)
    model.write_arpa(Path(args.output))
    sizes = ", ".join(f"{len(level)} {n}-grams" for n, level in enumerate(model.log10_probs, 1))
    print(f"{args.output}: {sizes} from {len(sentences)} sentences")
    return model


if __name__ == "__main__":
    exit_on_user_error(main)
