"""From CTC logits to words, and word and character error counts (jiwer computes the edit distances)."""
from __future__ import annotations

import jiwer
import torch

from wav2vec2.dictionary import Dictionary


def greedy_ctc_decode(logits: torch.Tensor, frame_padding_mask: torch.Tensor | None) -> list[list[int]]:
    """Best label per frame, repeats merged, blanks (index 0) dropped: one list of label ids per utterance."""
    best = logits.argmax(-1).cpu()
    lengths = ([best.shape[1]] * best.shape[0] if frame_padding_mask is None
               else (~frame_padding_mask).sum(-1).tolist())
    decoded = []
    for row, length in zip(best, lengths):
        row = torch.unique_consecutive(row[:length])
        decoded.append(row[row != 0].tolist())
    return decoded


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


def transcripts(logits: torch.Tensor, frame_padding_mask: torch.Tensor | None, dictionary: Dictionary) -> list[str]:
    return [dictionary.decode(ids) for ids in greedy_ctc_decode(logits, frame_padding_mask)]
