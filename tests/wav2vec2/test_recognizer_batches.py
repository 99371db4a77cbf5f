"""How the Recognizer batches what it is given (wav2vec2/api.py: pad): a batch without a shorter utterance goes to the
model without a padding mask, as the reference calls it for one utterance (the padding-aware path costs time and
changes nothing there), and a batch with one is masked, each row equal to that utterance alone."""
from __future__ import annotations

import numpy as np
import torch

from experiments.wav2vec2_padding_mask.measure import build
from wav2vec2.api import Recognizer, Utterance, pad


def test_a_batch_without_padding_has_no_mask_and_one_with_padding_marks_it():
    equal = [Utterance(index, f"u{index}", torch.ones(800)) for index in range(3)]
    source, mask = pad(equal, torch.device("cpu"))
    assert source.shape == (3, 800) and mask is None
    unequal = [Utterance(0, "long", torch.ones(800)), Utterance(1, "short", torch.ones(500))]
    source, mask = pad(unequal, torch.device("cpu"))
    assert source.shape == (2, 800) and mask.tolist() == [[False] * 800, [False] * 500 + [True] * 300]
    assert float(source[1, 500:].abs().sum()) == 0.0


def test_the_recognizers_logits_are_the_bare_models_alone_and_in_a_padded_batch():
    model, dictionary = build(tiny=True)
    recognizer = Recognizer(model, dictionary, torch.device("cpu"))
    rng = np.random.default_rng(1)
    long, short = (rng.standard_normal(samples).astype(np.float32) for samples in (16000, 11000))
    alone = recognizer.utterances([long, short], 16000)
    with torch.no_grad():
        bare = [model(utterance.audio[None, :], padding_mask=None)["logits"][0] for utterance in alone]
        logits, frame_mask = recognizer.logits(alone[:1])
        assert frame_mask is None and torch.equal(logits[0], bare[0])  # the same call, bit for bit
        logits, frame_mask = recognizer.logits(alone)  # one batch: the short one padded and masked
    frames = [int((~frame_mask[row]).sum()) for row in range(2)]
    assert frames[0] == bare[0].shape[0] and frames[1] == bare[1].shape[0] < frames[0]
    for row in range(2):
        torch.testing.assert_close(logits[row, :frames[row]], bare[row], atol=1e-4, rtol=1e-4)
