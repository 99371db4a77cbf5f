"""waveglow/export.py through scripts/export_onnx.py: one file, mel and noise z in, audio out, at the newest opset
with dynamic batch and frames, equal to WaveGlow.infer(mel, sigma, noise) run on (mel, sigma * noise)."""
import pytest
import torch

from common.audio import AudioParams
from common.checkpoint import save_checkpoint
from scripts import export_onnx
from tests.onnx_files import onnx, opset_of, shapes_of
from tests.waveglow.tiny_waveglow import TINY, tiny_model
from waveglow import export
from waveglow.vocoder import load_waveglow

onnxruntime = pytest.importorskip("onnxruntime")


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    folder = tmp_path_factory.mktemp("waveglow_onnx")
    torch.set_num_threads(1)
    save_checkpoint({"model_name": "WaveGlow", "model_config": TINY, "state_dict": tiny_model().state_dict(),
                     "audio_params": AudioParams(n_mel_channels=8).to_dict()}, folder / "w.pt")
    differences = export_onnx.main(["-m", "WaveGlow", "--checkpoint", str(folder / "w.pt"), "-o", str(folder)])
    model, _ = load_waveglow(str(folder / "w.pt"), torch.device("cpu"))
    return folder, differences, model


def test_one_file_at_the_newest_opset_with_dynamic_batch_and_frames(exported):
    folder, differences, _ = exported
    assert list(differences) == [export.WAVEGLOW_FILE] and differences[export.WAVEGLOW_FILE] < 1e-4
    assert opset_of(folder / export.WAVEGLOW_FILE) == onnx.defs.onnx_opset_version()
    assert shapes_of(folder / export.WAVEGLOW_FILE) == {
        "mel": ["batch", 8, "frames"], "z": ["batch", 8, "32*frames"], "audio": ["batch", "256*frames"]}


@pytest.mark.parametrize("batch, frames, sigma", [(1, 5, 0.6), (2, 23, 1.0)])
def test_the_file_on_sigma_times_noise_is_infer_with_that_noise(exported, batch, frames, sigma):
    folder, _, model = exported
    generator = torch.Generator().manual_seed(frames)
    mel = torch.randn(batch, 8, frames, generator=generator) - 4.0
    noise = torch.randn(batch, 8, frames * 32, generator=generator)
    session = onnxruntime.InferenceSession(str(folder / export.WAVEGLOW_FILE), providers=["CPUExecutionProvider"])
    (audio,) = session.run(["audio"], {"mel": mel.numpy(), "z": (sigma * noise).numpy()})
    expected = model.infer(mel, sigma, noise)
    assert audio.shape == (batch, frames * 256)
    torch.testing.assert_close(torch.from_numpy(audio), expected, atol=1e-4, rtol=0)


def test_the_export_leaves_the_models_own_inverses_alone(exported):
    _, _, model = exported
    wrapper = export.WaveGlowInference(model)
    assert all(isinstance(layer, export.FixedInverse) for layer in wrapper.model.convinv)
    assert not any(isinstance(layer, export.FixedInverse) for layer in model.convinv)
    torch.testing.assert_close(wrapper.model.convinv[1].inverse_weight, model.convinv[1].inverse_weight())
