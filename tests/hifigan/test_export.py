"""hifigan.export: ONNX (newest opset of the installed onnx, dynamic batch and length) run by onnxruntime, and
TorchScript, both against PyTorch at batch sizes and lengths other than the export's."""
import pytest
import torch

from common.errors import UserError
from hifigan import export
from hifigan.vocoder import load_generator
from tests.hifigan.tiny_hifigan import log_mel, save_our_checkpoint

onnx = pytest.importorskip("onnx")
onnxruntime = pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    folder = tmp_path_factory.mktemp("export")
    save_our_checkpoint(folder / "h.pt", ema=True)
    torch.set_num_threads(1)
    differences = export.main(["--checkpoint", str(folder / "h.pt"), "--ema", "--onnx", str(folder / "g.onnx"),
                               "--torchscript", str(folder / "g.ts")])
    generator, _, _ = load_generator(folder / "h.pt", torch.device("cpu"), ema=True)
    return folder, differences, generator


def test_onnx_has_the_newest_opset_and_dynamic_batch_and_length(exported):
    folder, differences, _ = exported
    assert differences["onnx"] < export.ONNX_TOLERANCE
    model = onnx.load(str(folder / "g.onnx"))
    assert [entry.version for entry in model.opset_import if entry.domain in ("", "ai.onnx")] == [
        onnx.defs.onnx_opset_version()]
    (mel,) = model.graph.input
    dims = mel.type.tensor_type.shape.dim
    assert dims[0].dim_param and dims[2].dim_param and dims[1].dim_value == 80  # batch and frames are symbolic


@pytest.mark.parametrize("batch, frames", [(2, 5), (4, 50)])
def test_onnxruntime_matches_pytorch(exported, batch, frames):
    folder, _, generator = exported
    mel = log_mel(frames, batch=batch, seed=frames)
    session = onnxruntime.InferenceSession(str(folder / "g.onnx"), providers=["CPUExecutionProvider"])
    (audio,) = session.run(["audio"], {"mel": mel.numpy()})
    with torch.no_grad():
        expected = generator(mel)
    assert audio.shape == (batch, 1, frames * 256)
    torch.testing.assert_close(torch.from_numpy(audio), expected, atol=1e-4, rtol=0)


@pytest.mark.parametrize("batch, frames", [(1, 3), (3, 41)])
def test_torchscript_matches_pytorch(exported, batch, frames):
    folder, differences, generator = exported
    assert differences["torchscript"] < export.TORCHSCRIPT_TOLERANCE
    scripted = torch.jit.load(str(folder / "g.ts"))
    mel = log_mel(frames, batch=batch, seed=frames)
    with torch.no_grad():
        torch.testing.assert_close(scripted(mel), generator(mel), atol=1e-5, rtol=0)


def test_nothing_to_export_is_a_user_error(tmp_path):
    save_our_checkpoint(tmp_path / "h.pt")
    with pytest.raises(UserError, match="give --onnx FILE and/or --torchscript FILE"):
        export.main(["--checkpoint", str(tmp_path / "h.pt")])


def test_scripts_export_onnx_writes_the_generator_from_the_families_inference_part(tmp_path):
    """scripts/export_onnx.py finds each family's export through the registry (InferencePart.export_onnx): the
    families that have one are its -m choices, and HiFi-GAN's writes hifigan.onnx from the moving average."""
    from scripts import export_onnx

    assert export_onnx.exporting_families() == ["Tacotron2", "WaveGlow", "HiFiGAN", "wav2vec2"]
    save_our_checkpoint(tmp_path / "h.pt", ema=True)
    differences = export_onnx.main(["-m", "HiFiGAN", "--checkpoint", str(tmp_path / "h.pt"), "--ema",
                                    "-o", str(tmp_path / "onnx")])
    assert list(differences) == [export.ONNX_FILE] and differences[export.ONNX_FILE] < export.ONNX_TOLERANCE
    assert (tmp_path / "onnx" / export.ONNX_FILE).is_file()
