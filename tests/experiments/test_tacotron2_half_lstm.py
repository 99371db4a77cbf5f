"""experiments/tacotron2_half_lstm/sweep.py on a small model: each way runs at every batch asked, float16 beyond
inference's own limit too, and the limit is left as it was."""
import json

import pytest

import tacotron2.model as tacotron2_model
from experiments.tacotron2_half_lstm import sweep


def test_the_sweep_times_each_way_at_each_size_and_batch(tmp_path):
    limit = tacotron2_model.HALF_LSTM_WEIGHTS_MAX_BATCH
    rows = sweep.main(["--rnn-dims", "32", "--batches", "1", str(limit + 1), "--steps", "4", "--repeats", "1",
                       "--bf16", "on", "--json", str(tmp_path / "rows.json")])
    assert [(row["rnn_dim"], row["batch"]) for row in rows] == [(32, 1), (32, limit + 1)]
    for row in rows:
        for name, largest in (("float16", 1e-3), ("bfloat16", 1e-2)):
            assert row[f"{name}_speedup"] == pytest.approx(row["float32_seconds"] / row[f"{name}_seconds"])
            assert 0 < row[f"{name}_mel_max_abs_difference"] < largest  # the 16-bit products ran, at every batch
        assert row["lstm_weights_mib_float32"] == pytest.approx(4 * 4 * 32 * (256 + 512 + 32 + 32 + 512 + 32) / 2**20)
    assert tacotron2_model.HALF_LSTM_WEIGHTS_MAX_BATCH == limit
    assert json.loads((tmp_path / "rows.json").read_text())["rows"] == rows
