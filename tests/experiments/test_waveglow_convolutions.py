"""experiments/waveglow_convolutions/benchmark_waveglow_convs.py: every way of writing a 1x1 layer is timed, and
WaveGlow with its 1x1 layers as matrix products gives the audio of WaveGlow as it is."""
from __future__ import annotations

import pytest

from experiments.waveglow_convolutions import benchmark_waveglow_convs


@pytest.mark.slow
def test_matrix_product_waveglow_equals_the_convolutional_one():
    assert benchmark_waveglow_convs.time_waveglow(wn_channels=8, mel_frames=3, repeats=1) < 1e-5


@pytest.mark.slow
def test_prints_every_shape_and_way(capsys):
    benchmark_waveglow_convs.main(["--wn-channels", "8", "--mel-frames", "3", "--threads", "1", "--repeats", "1"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("positions 96, WN channels 8")
    assert lines[1].startswith("in_layer k3 8->16: conv1d ")
    for line, shape in zip(lines[2:4], ("cond_layer 1x1 640->16", "res_skip_layer 1x1 8->16")):
        assert line.startswith(shape)
        assert all(way in line for way in ("conv1d", "without oneDNN", "addmm", "linear"))
    assert lines[4].startswith("WaveGlow-8 inference, 3 mel frames: conv1d ")


@pytest.mark.slow
def test_the_equality_check_sees_a_broken_layer(monkeypatch):
    """The coupling layers reach the audio: a matrix product that drops its bias is caught."""
    forward = benchmark_waveglow_convs.MatrixProduct1x1.forward
    monkeypatch.setattr(benchmark_waveglow_convs.MatrixProduct1x1, "forward",
                        lambda self, inputs: forward(self, inputs) - self.bias[None, :, None])
    assert benchmark_waveglow_convs.time_waveglow(wn_channels=8, mel_frames=3, repeats=1) > 1e-4
