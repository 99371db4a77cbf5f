"""tacotron2/export.py through scripts/export_onnx.py: the encoder, decoder-step and postnet files (newest opset,
dynamic batch and lengths) match PyTorch, and the decoding loop run in onnxruntime with numpy (OnnxTacotron2) gives
Tacotron2.infer's mels, lengths and alignments, stop gate included."""
import numpy as np
import pytest
import torch

from common.audio import AudioParams
from common.checkpoint import save_checkpoint
from common.errors import UserError
from scripts import export_onnx
from tacotron2 import export
from tests.onnx_files import onnx, opset_of, shapes_of
from tests.tacotron2.tiny_tacotron2 import TINY, padded_text, tiny_model

CONFIG = {**TINY, "n_frames_per_step": 2}


def model_with_a_lively_gate() -> torch.nn.Module:
    """The tiny model with its gate weights scaled up, so that with gate threshold 0.285 the utterances of the test
    batch stop at different steps (and at 0.29 two of them run to max_decoder_steps)."""
    model = tiny_model(**CONFIG).eval()
    with torch.no_grad():
        model.decoder.gate_layer.linear_layer.weight.mul_(20.0)
    return model


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tacotron2_onnx")
    torch.set_num_threads(1)
    model = model_with_a_lively_gate()
    save_checkpoint({"model_name": "Tacotron2", "model_config": CONFIG, "state_dict": model.state_dict(),
                     "audio_params": AudioParams().to_dict()}, folder / "t.pt")
    differences = export_onnx.main(["-m", "Tacotron2", "--checkpoint", str(folder / "t.pt"), "-o", str(folder)])
    return folder, differences, model


def test_three_files_at_the_newest_opset_with_dynamic_batch_and_lengths(exported):
    folder, differences, _ = exported
    assert sorted(differences) == sorted(export.FILES)
    assert all(difference < 1e-4 for difference in differences.values()), differences
    dynamic = {}
    for name in export.FILES:
        assert opset_of(folder / name) == onnx.defs.onnx_opset_version()
        dynamic.update(shapes_of(folder / name))
    assert dynamic["text"] == ["batch", "text_length"]
    assert dynamic["memory"] == ["batch", "text_length", 32]  # the LSTM's length stays symbolic
    assert dynamic["prenet_keep_masks"] == [2, 1, 16]
    assert dynamic["frames"] == ["batch", 2, 8] and dynamic["gate"] == ["batch"]
    assert dynamic["next_attention_weights"] == ["batch", "text_length"]
    assert dynamic["mel"] == ["batch", 8, "frames"] and dynamic["mel_postnet"] == ["batch", 8, "frames"]


def test_the_encoder_without_packed_sequences_equals_the_packed_one():
    model = model_with_a_lively_gate()
    text, lengths = padded_text([9, 3, 14, 1])
    with torch.no_grad():
        memory, processed_memory = export.TextEncoder(model)(text, lengths)
        expected = model.encode(text, lengths)
    torch.testing.assert_close(memory, expected, atol=1e-6, rtol=0)
    torch.testing.assert_close(processed_memory, model.decoder.attention_layer.memory_layer(expected), atol=1e-6,
                               rtol=0)


@pytest.mark.parametrize("gate_threshold, lengths", [(0.285, [18, 8, 28, 8]), (0.29, [18, 10, 120, 120])])
def test_the_onnxruntime_loop_gives_tacotron2_infer(exported, gate_threshold, lengths):
    folder, _, model = exported
    onnx_tacotron2 = export.OnnxTacotron2(folder, threads=1)
    text, text_lengths = padded_text([7, 12, 4, 9], seed=3)
    masks = onnx_tacotron2.draw_prenet_masks(np.random.default_rng(0), 60)
    result = onnx_tacotron2.infer(text.numpy(), text_lengths.numpy(), masks, 60, gate_threshold)
    expected = model.infer(text, text_lengths, 60, gate_threshold, prenet_masks=torch.from_numpy(masks))
    assert result.mel_lengths.tolist() == expected.mel_lengths.tolist() == lengths
    assert result.hit_max_decoder_steps.tolist() == expected.hit_max_decoder_steps.tolist() == [
        length == 120 for length in lengths]
    assert result.mel.shape == tuple(expected.mel.shape) == (4, 8, max(lengths))
    np.testing.assert_allclose(result.mel, expected.mel.numpy(), atol=1e-4, rtol=0)
    np.testing.assert_allclose(result.alignments, expected.alignments.numpy(), atol=1e-5, rtol=0)


def test_the_onnxruntime_loop_stops_after_the_text_s_end_as_tacotron2_infer_does(exported):
    """A limit of 6 frames after the text's end: the first utterance stops 3 steps after its attention reached its
    last symbol, before its gate (18 frames alone), the last (one symbol, its gate never fires) 3 steps after the
    first; the third's attention never reaches its end, and it runs to max_decoder_steps. Both loops alike."""
    folder, _, model = exported
    onnx_tacotron2 = export.OnnxTacotron2(folder, threads=1)
    text, text_lengths = padded_text([7, 12, 4, 1], seed=3)
    masks = onnx_tacotron2.draw_prenet_masks(np.random.default_rng(0), 60)
    gate_alone = model.infer(text, text_lengths, 60, 0.29, prenet_masks=torch.from_numpy(masks),
                             max_frames_after_text_end=0)
    assert gate_alone.mel_lengths.tolist() == [18, 10, 120, 120]
    result = onnx_tacotron2.infer(text.numpy(), text_lengths.numpy(), masks, 60, 0.29, max_frames_after_text_end=6)
    expected = model.infer(text, text_lengths, 60, 0.29, prenet_masks=torch.from_numpy(masks),
                           max_frames_after_text_end=6)
    assert result.mel_lengths.tolist() == expected.mel_lengths.tolist() == [8, 10, 120, 8]
    assert result.hit_max_decoder_steps.tolist() == expected.hit_max_decoder_steps.tolist() == [
        False, False, True, False]
    np.testing.assert_allclose(result.mel, expected.mel.numpy(), atol=1e-4, rtol=0)


def test_other_families_flags_and_old_opsets_are_user_errors(exported):
    folder, _, _ = exported
    with pytest.raises(UserError, match="--ema is for -m HiFiGAN, not -m Tacotron2"):
        export_onnx.main(["-m", "Tacotron2", "--checkpoint", str(folder / "t.pt"), "-o", str(folder), "--ema"])
    with pytest.raises(UserError, match="--opset 16: give 17 or newer"):
        export_onnx.main(["-m", "Tacotron2", "--checkpoint", str(folder / "t.pt"), "-o", str(folder), "--opset", "16"])
    with pytest.raises(UserError, match="is a Tacotron2 checkpoint, expected WaveGlow"):
        export_onnx.main(["-m", "WaveGlow", "--checkpoint", str(folder / "t.pt"), "-o", str(folder)])


def test_a_family_without_export_is_one_error_line(capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_request:
        export_onnx.main(["-m", "WaveNet", "--checkpoint", "w.pt", "-o", str(tmp_path)])
    assert exit_request.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: argument -m/--model-name: invalid choice: 'WaveNet'")
