"""experiments/cpu_convolution_layouts/benchmark_convolutions.py at --quick size: every layer it names is timed three
ways (float32 as signals, float32 as image rows, int8), and int8's output stays close to float32's."""
from experiments.cpu_convolution_layouts import benchmark_convolutions


def test_every_layer_is_timed_three_ways_and_int8_stays_close(capsys):
    rows = benchmark_convolutions.main(["--quick"])
    assert [row["what"] for row in rows] == [layer[0] for layer in benchmark_convolutions.LAYERS]
    for row in rows:
        assert set(row["seconds"]) == {"fp32", "fp32_image_rows", "int8"}
        assert all(seconds > 0 for seconds in row["seconds"].values())
        assert row["speed_up"]["fp32"] == 1.0
        assert 0 < row["int8_error_share_of_range"] < 0.05
    printed = capsys.readouterr().out
    assert "wav2vec 2.0 extractor layer 1" in printed and "WaveGlow-256 gated layer, dilation 64" in printed
