"""scripts/benchmark_int8_convolutions.py at --quick size: every layer it names is timed in both precisions and
int8's output stays close to float32's."""
from scripts import benchmark_int8_convolutions


def test_every_layer_is_timed_in_both_precisions_and_int8_stays_close(capsys):
    rows = benchmark_int8_convolutions.main(["--quick"])
    names = [row["what"] for row in rows]
    assert names == [layer[0] for layer in benchmark_int8_convolutions.WAV2VEC2_BASE_6S +
                     benchmark_int8_convolutions.HIFIGAN_V1_400_FRAMES]
    assert all(row["fp32_seconds"] > 0 and row["int8_seconds"] > 0 for row in rows)
    assert all(0 < row["error_share_of_range"] < 0.05 for row in rows)
    assert "wav2vec 2.0 extractor layer 1" in capsys.readouterr().out
