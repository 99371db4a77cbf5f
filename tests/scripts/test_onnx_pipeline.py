"""scripts/onnx_pipeline.py: text to wav and speech to text in onnxruntime alone agree with eager PyTorch (and
TorchScript) on tiny random models, and print their times; mistakes are one error."""
import pytest
import torch

from common.errors import UserError
from scripts import onnx_pipeline

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")


@pytest.mark.slow
def test_quick_waveglow_pipeline_agrees_with_pytorch_and_torchscript(tmp_path, capsys):
    torch.set_num_threads(1)
    assert onnx_pipeline.main(["--quick", "-o", str(tmp_path), "--torchscript", "--threads", "1"]) is True
    out = capsys.readouterr().out
    for check in ("Tacotron 2 mel lengths: equal", "Tacotron 2 mel (encoder, decoder-step loop, postnet)",
                  "WaveGlow audio (the same mel)", "TorchScript mel against eager", "wav2vec 2.0 logits",
                  "transcripts: equal"):
        assert f"ok  {check}" in out, check
    header = next(line for line in out.splitlines() if line.startswith("stage"))
    assert header.split()[3:] == ["onnxruntime", "s", "RTF", "PyTorch", "s", "RTF", "TorchScript", "s", "RTF"]
    rows = {line[:38].strip(): line[38:].split() for line in out.splitlines()[out.splitlines().index(header) + 1:]}
    assert len(rows["Tacotron 2 (2 texts, batch)"]) == 7 and len(rows["text to wav"]) == 5
    audio_seconds, seconds, rtf = (float(value) for value in rows["text to wav"][:3])
    assert rtf == pytest.approx(seconds / audio_seconds, rel=0.05, abs=1e-4)
    assert sorted(path.name for path in tmp_path.glob("*.wav")) == ["onnx_1.wav", "onnx_2.wav"]
    assert sorted(path.name for path in tmp_path.glob("*.onnx")) == [
        "tacotron2_decoder_step.onnx", "tacotron2_encoder.onnx", "tacotron2_postnet.onnx", "wav2vec2_ctc.onnx",
        "waveglow.onnx"]


@pytest.mark.slow
def test_quick_hifigan_pipeline_reports_a_disagreement_and_exits_1(tmp_path, capsys, monkeypatch):
    torch.set_num_threads(1)
    monkeypatch.setattr(onnx_pipeline, "LOGITS_TOLERANCE", 0.0)  # onnxruntime's rounding is not PyTorch's
    with pytest.raises(SystemExit) as exit_request:
        onnx_pipeline.main(["--quick", "hifigan", "-o", str(tmp_path), "--threads", "1"])
    assert exit_request.value.code == 1
    captured = capsys.readouterr()
    assert "ok  HiFi-GAN audio (the same mel)" in captured.out and "ok  transcripts: equal" in captured.out
    assert "MISMATCH  wav2vec 2.0 logits" in captured.out
    assert "error: onnxruntime and PyTorch disagree" in captured.err
    assert (tmp_path / "hifigan.onnx").is_file()


def test_mistakes_are_user_errors(tmp_path, capsys):
    with pytest.raises(UserError, match="give --tacotron2, --waveglow or --hifigan, and --wav2vec2"):
        onnx_pipeline.main(["--tacotron2", "t.pt", "-o", str(tmp_path)])
    with pytest.raises(UserError, match="--quick makes its own tiny models"):
        onnx_pipeline.main(["--quick", "--tacotron2", "t.pt", "-o", str(tmp_path)])
    with pytest.raises(UserError, match="--repeats must be at least 1"):
        onnx_pipeline.main(["--quick", "--repeats", "0", "-o", str(tmp_path)])
    with pytest.raises(SystemExit) as exit_request:
        onnx_pipeline.main(["--waveglow", "w.pt", "--hifigan", "h.pt", "-o", str(tmp_path)])
    assert exit_request.value.code == 2
    assert capsys.readouterr().err.startswith("error: argument --hifigan: not allowed with argument --waveglow")
    assert not any(tmp_path.iterdir())
