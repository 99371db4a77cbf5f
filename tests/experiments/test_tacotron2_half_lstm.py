"""experiments/tacotron2_half_lstm/sweep.py on a small model: both ways run at every batch asked, beyond inference's
own limit too, and the limit is left as it was."""
import json

import pytest

import tacotron2.model as tacotron2_model
from experiments.tacotron2_half_lstm import sweep


def test_the_sweep_times_both_ways_at_each_size_and_batch(tmp_path):
    limit = tacotron2_model.HALF_LSTM_WEIGHTS_MAX_BATCH
    rows = sweep.main(["--rnn-dims", "32", "--batches", "1", str(limit + 1), "--steps", "4", "--repeats", "1",
                       "--json", str(tmp_path / "rows.json")])
    assert [(row["rnn_dim"], row["batch"]) for row in rows] == [(32, 1), (32, limit + 1)]
    for row in rows:
        assert row["speedup"] == pytest.approx(row["float32_seconds"] / row["float16_seconds"])
        assert 0 < row["mel_max_abs_difference"] < 1e-2  # float16 products ran, beyond the limit too
        assert row["lstm_weights_mib_float32"] == pytest.approx(4 * 4 * 32 * (256 + 512 + 32 + 32 + 512 + 32) / 2**20)
    assert tacotron2_model.HALF_LSTM_WEIGHTS_MAX_BATCH == limit
    assert json.loads((tmp_path / "rows.json").read_text())["rows"] == rows
