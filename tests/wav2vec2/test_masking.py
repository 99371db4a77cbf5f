"""wav2vec 2.0's random choices: conv output lengths, fairseq's span masks, and same-utterance negatives."""
import numpy as np
import pytest
import torch

from wav2vec2.masking import compute_mask_indices, conv_output_lengths, sample_negative_indices

BASE_CONV_LAYERS = [(512, 10, 5)] + [(512, 3, 2)] * 4 + [(512, 2, 2)] * 2


def runs_of_true(row):
    """Lengths of the maximal runs of True in a 1-D bool array."""
    padded = np.concatenate([[False], row, [False]]).astype(int)
    edges = np.diff(padded)
    return np.nonzero(edges == -1)[0] - np.nonzero(edges == 1)[0]


def test_conv_output_lengths_follow_the_floor_formula_layer_by_layer():
    lengths = torch.tensor([16000, 400, 399, 320 * 100 + 80, 0])
    expected = []
    for length in lengths.tolist():
        for _, kernel, stride in BASE_CONV_LAYERS:
            length = (length - kernel) // stride + 1 if length >= kernel else 0
        expected.append(length)
    assert conv_output_lengths(lengths, BASE_CONV_LAYERS).tolist() == expected
    assert expected[:3] == [49, 1, 0]  # one second of 16 kHz audio is 49 frames; 400 samples is the receptive field


def test_per_row_span_count_follows_fairseqs_formula():
    # mask_length 1: spans cannot overlap, so a single row masks exactly its number of spans.
    for seed in range(20):
        mask = compute_mask_indices([537], 600, 0.3, 1, np.random.default_rng(seed))
        replay = np.random.default_rng(seed)
        assert mask.sum() == max(0, int(0.3 * 537 / 1 + replay.random()))


def test_min_masks_sets_the_floor_of_the_span_count():
    mask = compute_mask_indices([300, 200], 300, 0.0, 1, np.random.default_rng(0), min_masks=2)
    assert mask.sum(axis=1).tolist() == [2, 2]


def test_spans_have_mask_length_frames_and_stay_in_valid_frames():
    rng = np.random.default_rng(1)
    lengths = [400, 250, 333]
    mask = compute_mask_indices(lengths, 400, 0.3, 10, rng, min_masks=2)
    for row, length in zip(mask, lengths):
        assert not row[length:].any()
    # A single row is not subsampled, so every run is one span or several overlapping ones: at least 10 frames.
    single = compute_mask_indices([400], 420, 0.3, 10, np.random.default_rng(2))
    runs = runs_of_true(single[0])
    assert len(runs) > 3 and (runs >= 10).all()
    assert not single[0, 400:].any()


def test_every_row_gets_the_same_number_of_masked_frames():
    rng = np.random.default_rng(3)
    for _ in range(10):
        lengths = rng.integers(20, 300, size=6)
        mask = compute_mask_indices(lengths, 300, 0.65, 10, rng, min_masks=2)
        counts = mask.sum(axis=1)
        assert (counts == counts[0]).all() and counts[0] > 0


def test_overlapping_spans_mask_about_49_percent_at_p_065_length_10():
    rng = np.random.default_rng(4)
    single_rows = [compute_mask_indices([20000], 20000, 0.65, 10, rng, min_masks=2).mean() for _ in range(8)]
    # A frame stays unmasked when none of the 10 positions that could start a span over it does: 1 - 0.935^10.
    assert abs(np.mean(single_rows) - (1 - (1 - 0.065) ** 10)) < 0.005
    # A batch keeps its smallest row's count, a little less.
    batch = compute_mask_indices([20000] * 8, 20000, 0.65, 10, rng, min_masks=2)
    assert 0.46 < batch.mean() < 0.489


def test_rows_shorter_than_a_span_mask_only_their_own_frames():
    mask = compute_mask_indices([5, 30], 30, 0.65, 10, np.random.default_rng(5), min_masks=2)
    assert not mask[0, 5:].any()
    assert mask.sum(axis=1)[0] == mask.sum(axis=1)[1]


def test_masks_are_a_function_of_the_generator_state():
    first = compute_mask_indices([90, 120], 120, 0.65, 10, np.random.default_rng(6), min_masks=2)
    again = compute_mask_indices([90, 120], 120, 0.65, 10, np.random.default_rng(6), min_masks=2)
    other = compute_mask_indices([90, 120], 120, 0.65, 10, np.random.default_rng(7), min_masks=2)
    assert (first == again).all() and (first != other).any()


def test_negatives_come_from_the_same_row_and_never_the_frame_itself():
    mask = np.zeros((3, 40), dtype=bool)
    mask[0, [1, 5, 9, 20]] = True
    mask[1, [0, 2, 3, 4]] = True
    mask[2, [30, 31, 38, 39]] = True
    negatives = sample_negative_indices(torch.from_numpy(mask), 7, np.random.default_rng(8))
    assert negatives.shape == (12, 7) and negatives.dtype == torch.long
    for flat_index in range(12):
        row = flat_index // 4
        picked = negatives[flat_index]
        assert ((picked >= 4 * row) & (picked < 4 * row + 4)).all()
        assert (picked != flat_index).all()


def test_negatives_are_uniform_over_the_other_masked_frames():
    mask = np.zeros((2, 10), dtype=bool)
    mask[:, :5] = True
    negatives = sample_negative_indices(mask, 20000, np.random.default_rng(9)).numpy()
    counts = np.bincount(negatives[7], minlength=10)  # frame 2 of row 1 (flat 7) draws among flat 5, 6, 8, 9
    assert counts[[0, 1, 2, 3, 4, 7]].sum() == 0
    assert np.allclose(counts[[5, 6, 8, 9]] / 20000, 0.25, atol=0.015)


def test_rows_with_fewer_than_two_masked_frames_are_refused():
    mask = np.zeros((2, 10), dtype=bool)
    mask[0, :3] = True
    mask[1, 4] = True
    with pytest.raises(ValueError, match="rows \\[1\\]"):
        sample_negative_indices(mask, 5, np.random.default_rng(0))
    assert sample_negative_indices(mask, 0, np.random.default_rng(0)).shape == (4, 0)
