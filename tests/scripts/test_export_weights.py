"""scripts/export_weights.py and common/exported_weights.py: every family's checkpoint exported as safetensors plus
JSON metadata loads back into the same weights and the same outputs; mistakes are one `error:` line."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from common.checkpoint import load_trained_model
from common.errors import UserError
from common.exported_weights import load_exported, read_exported
from common.registry import FAMILIES, get_recipe
from scripts import export_weights
from tests.families import corpus_of, run_args
from tests.training_runs import untrained_checkpoint

ROOT = Path(__file__).resolve().parents[2]


def fixed_output(name: str, model: torch.nn.Module, config: dict) -> torch.Tensor:
    """The model's output on an input fixed per family, every random draw from seed 0."""
    torch.manual_seed(0)
    mel = torch.linspace(-4, 1, 80 * 6).reshape(1, 80, 6)[:, :config.get("n_mel_channels", 80)]
    with torch.no_grad():
        if name == "Tacotron2":
            return model.infer(torch.tensor([[3, 8, 12, 20, 7]]), torch.tensor([5]), max_decoder_steps=8,
                               generator=torch.Generator().manual_seed(0)).mel
        if name == "WaveGlow":
            return model.infer(mel, sigma=0.6, generator=torch.Generator().manual_seed(0))
        if name == "WaveNet":
            classes = torch.arange(mel.shape[2] * model.hop_length) % 256
            return model(mel, classes[None])
        if name == "HiFiGAN":
            return model.generator(mel)
        source = torch.sin(torch.arange(4000) / 7.0)[None]
        return model.extract_features(source)["x"] if "vocab_size" not in config else model(source)["logits"]


@pytest.mark.parametrize("name", list(FAMILIES))
def test_export_then_load_gives_the_same_weights_outputs_and_metadata(name, request, tmp_path):
    torch.set_num_threads(1)
    checkpoint = untrained_checkpoint(run_args(name, corpus_of(name, request), tmp_path), tmp_path / "model.pt")
    original, saved = load_trained_model(get_recipe(name), checkpoint, torch.device("cpu"))
    saved.update(epoch=3, iteration=42)  # the steps a trained checkpoint records
    torch.save(saved, checkpoint)

    export_weights.main([str(checkpoint), str(tmp_path / "exported")])
    model, metadata = load_exported(tmp_path / "exported", expected_model=name)

    assert set(model.state_dict()) == set(original.state_dict())
    for key, value in original.state_dict().items():
        assert torch.equal(model.state_dict()[key], value), key
    assert torch.equal(fixed_output(name, model, metadata["model_config"]),
                       fixed_output(name, original, saved["model_config"]))
    on_disk = json.loads((tmp_path / "exported" / "metadata.json").read_text())
    assert on_disk == metadata
    assert metadata["model_name"] == name
    assert metadata["model_config"] == json.loads(json.dumps(saved["model_config"]))
    assert metadata["audio_params"]["sampling_rate"] == saved["audio_params"]["sampling_rate"]
    assert metadata["training"]["epoch"] == 3 and metadata["training"]["iteration"] == 42
    if saved.get("text") is not None:
        assert metadata["text"] == saved["text"]
        assert len(metadata["text"]["symbols"]) > 10


def test_a_mismatched_family_is_one_user_error(synthetic_corpus, tmp_path):
    checkpoint = untrained_checkpoint(run_args("HiFiGAN", synthetic_corpus, tmp_path), tmp_path / "hifigan.pt")
    export_weights.main([str(checkpoint), str(tmp_path / "exported")])
    with pytest.raises(UserError) as raised:
        load_exported(tmp_path / "exported", expected_model="WaveGlow")
    message = str(raised.value)
    assert "HiFiGAN" in message and "WaveGlow" in message and str(tmp_path / "exported") in message
    assert "\n" not in message


def test_a_second_export_replaces_the_files_whole_with_the_usual_permissions(synthetic_corpus, tmp_path):
    checkpoint = untrained_checkpoint(run_args("WaveGlow", synthetic_corpus, tmp_path), tmp_path / "waveglow.pt")
    for _ in range(2):  # the second one replaces the first's files
        export_weights.main([str(checkpoint), str(tmp_path / "exported")])
    umask = os.umask(0)
    os.umask(umask)
    assert sorted(path.name for path in (tmp_path / "exported").iterdir()) == ["metadata.json", "model.safetensors"]
    for name in ("metadata.json", "model.safetensors"):
        assert stat.S_IMODE((tmp_path / "exported" / name).stat().st_mode) == 0o666 & ~umask, name


def test_nvidias_waveglow_checkpoint_exports_with_its_config(nvidia_checkpoint, tmp_path):
    path, _ = nvidia_checkpoint
    with pytest.raises(UserError, match="does not say which model it holds .*give -m"):
        export_weights.main([str(path), str(tmp_path / "exported")])
    export_weights.main([str(path), str(tmp_path / "exported"), "-m", "WaveGlow"])
    model, metadata = load_exported(tmp_path / "exported", "WaveGlow")
    assert metadata["model_name"] == "WaveGlow" and metadata["training"]["epoch"] == 1000
    reference, _ = load_trained_model(get_recipe("WaveGlow"), path, torch.device("cpu"))
    for key, value in reference.state_dict().items():
        assert torch.equal(model.state_dict()[key], value), key


def test_a_fine_tuned_recognizer_exports_with_its_dictionary(recognizer_checkpoint, tmp_path):
    export_weights.main([str(recognizer_checkpoint), str(tmp_path / "exported")])
    model, metadata = load_exported(tmp_path / "exported", "wav2vec2")
    original, saved = load_trained_model(get_recipe("wav2vec2"), recognizer_checkpoint, torch.device("cpu"))
    assert metadata["text"] == saved["text"] and metadata["text"]["symbols"][:4] == ["<s>", "<pad>", "</s>", "<unk>"]
    assert metadata["training"]["iteration"] == saved["iteration"] == 2
    assert torch.equal(fixed_output("wav2vec2", model, metadata["model_config"]),
                       fixed_output("wav2vec2", original, saved["model_config"]))


def run_script(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scripts.export_weights", *arguments], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env={"OMP_NUM_THREADS": "1", "PATH": ""})


def test_missing_and_corrupt_checkpoints_are_one_error_line(tmp_path):
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(b"PK\x03\x04 not really a zip")
    for checkpoint, expected in ((tmp_path / "absent.pt", "checkpoint not found"), (corrupt, "cannot read")):
        completed = run_script(str(checkpoint), str(tmp_path / "out"))
        assert completed.returncode == 2, completed.stderr
        lines = completed.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0], completed.stderr
        assert str(checkpoint) in lines[0]


def test_damaged_exported_weights_are_a_user_error(synthetic_corpus, tmp_path):
    checkpoint = untrained_checkpoint(run_args("WaveGlow", synthetic_corpus, tmp_path), tmp_path / "waveglow.pt")
    export_weights.main([str(checkpoint), str(tmp_path / "exported")])
    weights = tmp_path / "exported" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    with pytest.raises(UserError, match="cannot read .*model.safetensors"):
        read_exported(tmp_path / "exported")
    (tmp_path / "exported" / "metadata.json").unlink()
    with pytest.raises(UserError, match="exported weights not found: .*metadata.json"):
        load_exported(tmp_path / "exported")


def test_inference_loads_an_exported_folder_like_the_checkpoint(tacotron2_checkpoint, tmp_path):
    export_weights.main([str(tacotron2_checkpoint), str(tmp_path / "exported")])
    recipe = get_recipe("Tacotron2")
    model, checkpoint = load_trained_model(recipe, tmp_path / "exported", torch.device("cpu"))
    original, saved = load_trained_model(recipe, tacotron2_checkpoint, torch.device("cpu"))
    assert checkpoint["text"] == saved["text"] and checkpoint["audio_params"] == saved["audio_params"]
    assert checkpoint["epoch"] == saved["epoch"] and checkpoint["iteration"] == saved["iteration"]
    assert torch.equal(fixed_output("Tacotron2", model, checkpoint["model_config"]),
                       fixed_output("Tacotron2", original, saved["model_config"]))
    with pytest.raises(UserError, match="holds Tacotron2 weights, expected WaveGlow"):
        load_trained_model(get_recipe("WaveGlow"), tmp_path / "exported", torch.device("cpu"))


def test_the_synthesizer_takes_exported_folders_for_tacotron2_and_the_vocoder(tacotron2_checkpoint, synthetic_corpus,
                                                                              tmp_path):
    from tacotron2.api import Synthesizer

    waveglow = untrained_checkpoint(run_args("WaveGlow", synthetic_corpus, tmp_path), tmp_path / "waveglow.pt")
    export_weights.main([str(tacotron2_checkpoint), str(tmp_path / "tacotron2")])
    export_weights.main([str(waveglow), str(tmp_path / "waveglow")])
    from_files = Synthesizer.from_checkpoints(tacotron2_checkpoint, waveglow, device="cpu")
    from_folders = Synthesizer.from_checkpoints(tmp_path / "tacotron2", tmp_path / "waveglow", device="cpu")
    assert from_folders.vocoder.name == from_files.vocoder.name == "waveglow"
    audio_of_files, audio_of_folders = (synthesizer.synthesize("A short test.", seed=1)
                                        for synthesizer in (from_files, from_folders))
    assert torch.equal(torch.as_tensor(audio_of_files[0]), torch.as_tensor(audio_of_folders[0]))


def test_fairseq_and_nvidia_wav2vec2_files_export(tmp_path):
    from tests.wav2vec2.test_checkpoints import (TINY, ctc_model, fairseq_extra_state, fairseq_namespace, nvidia_args,
                                                 nvidia_state, pretraining_model, waveform)

    pretrained = pretraining_model(TINY)
    torch.save({"args": fairseq_namespace(TINY), "model": pretrained.state_dict(), **fairseq_extra_state()},
               tmp_path / "wav2vec_small.pt")
    export_weights.main([str(tmp_path / "wav2vec_small.pt"), str(tmp_path / "fairseq")])
    model, metadata = load_exported(tmp_path / "fairseq", "wav2vec2")
    assert metadata["text"] is None and metadata["audio_params"] == {"sampling_rate": 16000}
    with torch.no_grad():
        assert torch.equal(model.extract_features(waveform())["x"], pretrained.extract_features(waveform())["x"])

    recognizer = ctc_model(TINY, vocab_size=4 + 3)
    torch.save({"args": nvidia_args(TINY, "finetune", w2v_path="pre.pt", final_dropout=0.0, labels="ltr"),
                "model": nvidia_state(recognizer), "output_labels": "| 94802\nE 51860\nT 38431\n"},
               tmp_path / "wav2vec2_best.pt")
    export_weights.main([str(tmp_path / "wav2vec2_best.pt"), str(tmp_path / "nvidia")])
    model, metadata = load_exported(tmp_path / "nvidia", "wav2vec2")
    assert metadata["text"] == {"symbols": ["<s>", "<pad>", "</s>", "<unk>", "|", "E", "T"]}
    with torch.no_grad():
        assert torch.equal(model(waveform())["logits"], recognizer(waveform())["logits"])
