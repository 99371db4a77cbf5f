"""From CTC logits to words, and word and character error counts (jiwer computes the edit distances).

Two decoders: greedy (the best label per frame, the default) and a CTC beam search (pyctcdecode), optionally with a
word n-gram language model in ARPA format (kenlm reads it; scripts/wav2vec2/build_lm.py writes one) scored by
shallow fusion: log P(CTC) + lm_weight * ln P(LM) + word_score per word.
"""
from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from pathlib import Path

import jiwer
import numpy as np
import torch

from common.errors import UserError, UserFileNotFoundError
from wav2vec2.dictionary import Dictionary, SPECIAL_SYMBOLS, WORD_BOUNDARY

DEFAULT_BEAM_SIZE = 100  # pyctcdecode's defaults (its beam width, alpha and beta)
DEFAULT_LM_WEIGHT = 0.5
DEFAULT_WORD_SCORE = 1.5
# A frame's letters less likely than this (natural log) are not tried as the beam's next letter, the frame's best
# always is (pyctcdecode's token_min_logp, whose default is -5). Lower lets the language model insert a word boundary
# the recognizer heard only faintly, as between run-together words; wav2vec2/RESULTS.md measures it.
DEFAULT_MIN_LETTER_LOG_PROB = -5.0


def greedy_ctc_decode(logits: torch.Tensor, frame_padding_mask: torch.Tensor | None) -> list[list[int]]:
    """Best label per frame, repeats merged, blanks (index 0) dropped: one list of label ids per utterance."""
    best = logits.argmax(-1).cpu().numpy()
    lengths = ([best.shape[1]] * best.shape[0] if frame_padding_mask is None
               else (~frame_padding_mask).sum(-1).tolist())
    return [collapse_ctc_labels(row[:length]) for row, length in zip(best, lengths)]


def collapse_ctc_labels(best: np.ndarray) -> list[int]:
    """One utterance's best label per frame (numpy, valid frames only) -> its label ids: repeats merged, blanks
    (index 0) dropped. Also what the onnxruntime pipeline decodes with (scripts/onnx_pipeline.py)."""
    best = np.asarray(best)
    first_of_run = np.ones(best.shape, dtype=bool)
    first_of_run[1:] = best[1:] != best[:-1]
    labels = best[first_of_run]
    return labels[labels != 0].tolist()


def error_counts(references: list[str], hypotheses: list[str]) -> dict[str, float]:
    """Word and character edit distances of hypotheses against references, and the references' lengths: sums that
    add up over batches and ranks into a corpus-level WER and CER. Empty references count no words."""
    sums = {"word_errors": 0.0, "words": 0.0, "char_errors": 0.0, "chars": 0.0}
    for reference, hypothesis in zip(references, hypotheses):
        reference, hypothesis = " ".join(reference.split()), " ".join(hypothesis.split())
        words, chars = len(reference.split()), len(reference)
        sums["words"] += words
        sums["chars"] += chars
        if words == 0:
            sums["word_errors"] += len(hypothesis.split())
            sums["char_errors"] += len(hypothesis)
            continue
        sums["word_errors"] += _edits(jiwer.process_words(reference, hypothesis))
        sums["char_errors"] += _edits(jiwer.process_characters(reference, hypothesis))
    return sums


def _edits(output) -> int:
    return output.substitutions + output.deletions + output.insertions


def error_rates(sums: dict[str, float]) -> dict[str, float]:
    """WER and CER in percent from error_counts' sums."""
    return {"wer": 100.0 * sums["word_errors"] / max(sums["words"], 1.0),
            "cer": 100.0 * sums["char_errors"] / max(sums["chars"], 1.0)}


@contextlib.contextmanager
def native_stderr_discarded():
    """Discard what C++ code writes to the process's stderr meanwhile: kenlm reports reading an ARPA file there
    ("Loading the LM will be faster if you build a binary file", the path, a progress bar), past Python's
    sys.stderr. Its errors still reach the user: it raises them as exceptions, which carry the message."""
    sys.stderr.flush()
    saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


class BeamSearchDecoder:
    """CTC beam search over the dictionary's letters (pyctcdecode), with a word n-gram language model if given an
    ARPA file. Without a model and with beam_size 1 it keeps the best label per frame, as greedy decoding does."""

    def __init__(self, dictionary: Dictionary, beam_size: int, lm_path: str | Path | None = None,
                 lm_weight: float = DEFAULT_LM_WEIGHT, word_score: float = DEFAULT_WORD_SCORE,
                 min_letter_log_prob: float = DEFAULT_MIN_LETTER_LOG_PROB):
        if beam_size < 1:
            raise UserError(f"--beam-size must be at least 1, got {beam_size}")
        if not min_letter_log_prob < 0:
            raise UserError(f"--min-letter-log-prob must be below 0 (a natural log), got {min_letter_log_prob}")
        if lm_path is not None and not Path(lm_path).is_file():
            raise UserFileNotFoundError(f"--lm: language model not found: {lm_path}")
        # pyctcdecode warns at import when kenlm is missing, and logs its alphabet choices: not for our users.
        logging.getLogger("pyctcdecode").setLevel(logging.ERROR)
        try:
            from pyctcdecode import build_ctcdecoder
        except ImportError as error:
            raise UserError("--decoder beam needs pyctcdecode: pip install --no-deps pyctcdecode pygtrie (or "
                            "scripts/setup.sh --lm)") from error
        if lm_path is not None:
            try:
                import kenlm  # noqa: F401  (pyctcdecode reads the ARPA file with it)
            except ImportError as error:
                raise UserError("--lm needs kenlm's Python module: pip install kenlm (or scripts/setup.sh --lm)") from error
        self.beam_size = beam_size
        self.min_letter_log_prob = min_letter_log_prob
        if lm_path is None:
            self.decoder = build_ctcdecoder(self.labels(dictionary))
            return
        try:
            with native_stderr_discarded():
                self.decoder = build_ctcdecoder(self.labels(dictionary), str(lm_path), alpha=lm_weight,
                                                beta=word_score)
        except (OSError, RuntimeError, ValueError, UnicodeDecodeError) as error:  # kenlm: OSError on a bad file
            raise UserError(f"--lm {lm_path}: cannot read it as an ARPA language model: {error}") from error

    @staticmethod
    def labels(dictionary: Dictionary) -> list[str]:
        """pyctcdecode's alphabet: "" for the blank, " " for the word boundary, then the letters (the other special
        symbols are folded into the blank's column, see __call__)."""
        return [""] + [" " if symbol == WORD_BOUNDARY else symbol for symbol in dictionary.symbols]

    def __call__(self, log_probs: torch.Tensor) -> str:
        """One utterance's log-probabilities (frames, labels) to its words. The blank's column becomes the best of
        the four special symbols' (greedy decoding drops each of them and each separates repeats, as the blank
        does), so a frame's best label is the same here as greedy's."""
        specials = len(SPECIAL_SYMBOLS)
        columns = torch.cat([log_probs[:, :specials].max(-1, keepdim=True).values, log_probs[:, specials:]], -1)
        return " ".join(self.decoder.decode(columns.numpy(), beam_width=self.beam_size,
                                            token_min_logp=self.min_letter_log_prob).split())


def add_beam_search_args(group: argparse._ArgumentGroup, beam_size_help: str, lm_help: str) -> None:
    """--beam-size, --lm, --lm-weight, --word-score and --min-letter-log-prob, each None when left out
    (beam_search_from_flags)."""
    group.add_argument("--beam-size", type=int, default=None,
                       help=f"{beam_size_help}: hypotheses kept per frame (default {DEFAULT_BEAM_SIZE})")
    group.add_argument("--lm", default=None, metavar="ARPA", help=lm_help)
    group.add_argument("--lm-weight", type=float, default=None,
                       help=f"--lm: the language model's weight (default {DEFAULT_LM_WEIGHT})")
    group.add_argument("--word-score", type=float, default=None,
                       help=f"--lm: a score added per word, against deletions (default {DEFAULT_WORD_SCORE})")
    group.add_argument("--min-letter-log-prob", type=float, default=None,
                       help=f"{beam_size_help}: a frame's letters below this log-probability (natural log) are not "
                            f"tried, its best always is (default {DEFAULT_MIN_LETTER_LOG_PROB:g}; lower lets the "
                            f"language model split run-together words, and is slower)")


def beam_search_from_flags(dictionary: Dictionary, args: argparse.Namespace) -> BeamSearchDecoder:
    """The beam search of add_beam_search_args' flags in `args`, each left out (None) at its default."""
    def given(value, default):
        return default if value is None else value

    return BeamSearchDecoder(dictionary, given(args.beam_size, DEFAULT_BEAM_SIZE), args.lm,
                             given(args.lm_weight, DEFAULT_LM_WEIGHT), given(args.word_score, DEFAULT_WORD_SCORE),
                             given(args.min_letter_log_prob, DEFAULT_MIN_LETTER_LOG_PROB))


def transcripts(logits: torch.Tensor, frame_padding_mask: torch.Tensor | None, dictionary: Dictionary,
                decoder: BeamSearchDecoder | None = None) -> list[str]:
    """Each utterance's words: greedy decoding, or `decoder`'s beam search over the valid frames."""
    if decoder is None:
        return [dictionary.decode(ids) for ids in greedy_ctc_decode(logits, frame_padding_mask)]
    lengths = ([logits.shape[1]] * logits.shape[0] if frame_padding_mask is None
               else (~frame_padding_mask).sum(-1).tolist())
    log_probs = logits.float().log_softmax(-1).cpu()
    return [decoder(rows[:length]) for rows, length in zip(log_probs, lengths)]
