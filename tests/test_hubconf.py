"""hubconf.py through torch.hub.load(source="local"): NVIDIA's four entry names and wav2vec2_ctc give ready models
(eval mode, on the device, in the precision asked) equal to what inference.py runs; checkpoints by path or by a
file:// URL checked against the sha256 prefix in its name; importing hubconf imports nothing of the project."""
import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch.nn.utils import parametrize

from common.errors import UserError
from tacotron2.api import Synthesizer, TextInput
from tests.hifigan.tiny_hifigan import log_mel, save_our_checkpoint
from wav2vec2.api import Recognizer

REPO_ROOT = Path(__file__).resolve().parents[1]
ENTRIES = ["nvidia_hifigan", "nvidia_tacotron2", "nvidia_tts_utils", "nvidia_waveglow", "wav2vec2_ctc"]


def hub_load(name, **kwargs):
    return torch.hub.load(str(REPO_ROOT), name, source="local", **kwargs)


def test_the_entries_and_a_light_import():
    import hubconf

    # What torch.hub.list reports for a GitHub repository: the module's public callables.
    assert sorted(name for name in dir(hubconf) if callable(getattr(hubconf, name)) and not name.startswith("_")) \
        == ENTRIES
    assert {"torch", "numpy", "soundfile"} <= set(hubconf.dependencies)
    code = ("import sys; import hubconf; print(sorted({name.split('.')[0] for name in sys.modules} & "
            "{'torch', 'numpy', 'common', 'tacotron2', 'waveglow', 'hifigan', 'wav2vec2', 'inference'}))")
    imported = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert imported.stdout.strip() == "[]"


def test_tacotron2_and_tts_utils_give_what_the_synthesizer_makes(tacotron2_checkpoint):
    tacotron2 = hub_load("nvidia_tacotron2", checkpoint=str(tacotron2_checkpoint), device="cpu")
    utils = hub_load("nvidia_tts_utils", checkpoint=str(tacotron2_checkpoint))
    assert not tacotron2.training and next(tacotron2.parameters()).device == torch.device("cpu")
    texts = ["Hello world.", "Short."]
    sequences, lengths = utils.prepare_input_sequence(texts, cpu_run=True)
    # The hub's model runs the float32 reference step: the synthesizer's float16 LSTM weights (the CPU's default)
    # are left out, so that the two agree to rounding.
    synthesizer = Synthesizer.from_checkpoints(tacotron2=tacotron2_checkpoint, device="cpu", torchscript=False,
                                               half_lstm_weights=False)
    assert lengths.tolist() == [len(synthesizer.text.encode(text)) for text in texts]
    assert sequences.shape == (2, max(lengths)) and sequences.device.type == "cpu"
    assert int(sequences[1, lengths[1]:].abs().sum()) == 0  # zero-padded
    mel, mel_lengths, _, _ = tacotron2.infer(sequences, lengths, generator=torch.Generator().manual_seed(4))
    expected = synthesizer.synthesize_batch(texts, ["a", "b"], seed=4, warn_max_steps=False)
    assert mel_lengths.tolist() == expected["mel_lengths"].tolist()
    for row, length in enumerate(mel_lengths.tolist()):
        torch.testing.assert_close(mel[row, :, :length], expected["mel"][row, :, :length])

    half = hub_load("nvidia_tacotron2", checkpoint=str(tacotron2_checkpoint), device="cpu", model_math="fp16")
    assert next(half.parameters()).dtype == torch.float16
    # Without a checkpoint, the default text front-end (english_cleaners), as NVIDIA's entry has.
    default, _ = hub_load("nvidia_tts_utils").prepare_input_sequence(["Hello world."], cpu_run=True)
    assert default.tolist() == [synthesizer.text.encode("Hello world.")]


def test_waveglow_and_hifigan_are_the_vocoders_inference_py_runs(nvidia_checkpoint, tmp_path):
    from waveglow.vocoder import load_waveglow

    path, _ = nvidia_checkpoint
    waveglow = hub_load("nvidia_waveglow", checkpoint=str(path), device="cpu")
    assert not waveglow.training
    assert not any(parametrize.is_parametrized(module) for module in waveglow.modules())  # weight norm folded
    mel = log_mel(6)
    expected, _ = load_waveglow(str(path), torch.device("cpu"))
    torch.testing.assert_close(waveglow.infer(mel, sigma=0.0), expected.infer(mel, sigma=0.0))
    half = hub_load("nvidia_waveglow", checkpoint=str(path), device="cpu", model_math="fp16")
    assert all(parameter.dtype == torch.float16 for parameter in half.parameters())

    generator_path = tmp_path / "hifigan.pt"
    ours, _ = save_our_checkpoint(generator_path)
    generator, train_setup, denoiser = hub_load("nvidia_hifigan", checkpoint=str(generator_path), device="cpu")
    assert train_setup["sampling_rate"] == 22050 and train_setup["hop_length"] == 256
    assert train_setup["mel_convention"] == "tacotron"
    assert generator.image_rows  # the CPU's fast layout, as inference.py runs it
    with torch.no_grad():
        ours.remove_weight_norm()
        audio = generator(mel)
        torch.testing.assert_close(audio, ours(mel))
        denoised = denoiser(audio.squeeze(1), strength=0.5)
    assert denoised.shape == audio.squeeze(1).shape and not torch.equal(denoised, audio.squeeze(1))


def test_wav2vec2_ctc_is_the_recognizer(recognizer_checkpoint, synthetic_asr_corpus):
    recognizer = hub_load("wav2vec2_ctc", checkpoint=str(recognizer_checkpoint), device="cpu", batch_size=2)
    assert isinstance(recognizer, Recognizer) and recognizer.batch_size == 2 and not recognizer.model.training
    root, *rows = synthetic_asr_corpus.test_sentences.read_text().splitlines()
    files = [f"{root}/{row.split(chr(9))[0]}" for row in rows]
    assert recognizer.transcribe(files) == Recognizer.from_checkpoint(recognizer_checkpoint, "cpu").transcribe(files)
    floating = hub_load("wav2vec2_ctc", checkpoint=str(recognizer_checkpoint), device="cpu", quantize="none")
    assert floating.quantize == "none"
    int8 = hub_load("wav2vec2_ctc", checkpoint=str(recognizer_checkpoint), device="cpu", quantize="int8")
    assert int8.quantize == "int8"


def test_a_file_url_is_downloaded_once_and_checked_against_its_name(tacotron2_checkpoint, tmp_path):
    digest = hashlib.sha256(tacotron2_checkpoint.read_bytes()).hexdigest()
    served = tmp_path / "served"
    served.mkdir()
    good = served / f"tacotron2-{digest[:10]}.pt"
    shutil.copy(tacotron2_checkpoint, good)
    for wrong_name in ("tacotron2-0123456789.pt", "tacotron2.pt"):
        shutil.copy(tacotron2_checkpoint, served / wrong_name)
    saved_dir = torch.hub.get_dir()
    torch.hub.set_dir(str(tmp_path / "hub"))
    try:
        model = hub_load("nvidia_tacotron2", checkpoint=good.as_uri(), device="cpu")
        cached = tmp_path / "hub" / "checkpoints" / good.name
        assert cached.read_bytes() == good.read_bytes()
        expected = hub_load("nvidia_tacotron2", checkpoint=str(tacotron2_checkpoint), device="cpu")
        for (name, value), (_, reference) in zip(model.state_dict().items(), expected.state_dict().items()):
            assert torch.equal(value, reference), name

        with pytest.raises(UserError, match=r"tacotron2-0123456789.pt: the downloaded file's sha256 does not start "
                                            r"with 0123456789, as its name says"):
            hub_load("nvidia_tacotron2", checkpoint=(served / "tacotron2-0123456789.pt").as_uri(), device="cpu")
        assert not (tmp_path / "hub" / "checkpoints" / "tacotron2-0123456789.pt").exists()  # not kept
        with pytest.raises(UserError, match="carries no sha256 prefix"):
            hub_load("nvidia_tacotron2", checkpoint=(served / "tacotron2.pt").as_uri(), device="cpu")
        hub_load("nvidia_tacotron2", checkpoint=(served / "tacotron2.pt").as_uri(), device="cpu", check_hash=False)
        with pytest.raises(UserError, match="cannot download .*nowhere-abcdef.pt"):
            hub_load("nvidia_tacotron2", checkpoint=(served / "nowhere-abcdef.pt").as_uri(), device="cpu")
        with pytest.raises(UserError, match="nvidia_tacotron2: give checkpoint=PATH"):
            hub_load("nvidia_tacotron2")
    finally:
        torch.hub.set_dir(saved_dir)


@pytest.mark.slow
def test_an_entry_loaded_from_elsewhere_keeps_working_after_the_load(tacotron2_checkpoint, tmp_path):
    """torch.hub puts the repository on sys.path only while the entry runs: the object it returns must need nothing
    imported later. Run from another folder, without this repository on the path."""
    code = (f"import torch; repo = {str(REPO_ROOT)!r}\n"
            f"synthesizer_utils = torch.hub.load(repo, 'nvidia_tts_utils', checkpoint={str(tacotron2_checkpoint)!r}, "
            "source='local')\n"
            "import sys; assert repo not in sys.path\n"
            "sequences, lengths = synthesizer_utils.prepare_input_sequence(['Hello there.'], cpu_run=True)\n"
            f"model = torch.hub.load(repo, 'nvidia_tacotron2', checkpoint={str(tacotron2_checkpoint)!r}, "
            "source='local', device='cpu')\n"
            "mel, mel_lengths, _, _ = model.infer(sequences, lengths)\n"
            "print(tuple(sequences.shape), mel.shape[1])\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    _, lengths = TextInput.from_checkpoint(tacotron2_checkpoint).prepare_input_sequence(["Hello there."], cpu_run=True)
    assert done.stdout.split() == ["(1,", f"{int(lengths[0])})", "80"]
