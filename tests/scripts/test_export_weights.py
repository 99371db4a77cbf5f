"""scripts/export_weights.py and common/exported_weights.py: every family's checkpoint exported as safetensors plus
JSON metadata loads back into the same weights and the same outputs; mistakes are one `error:` line."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from common.trained_model import load_trained_model
from common.errors import UserError
from common.exported_weights import load_exported, read_exported
from common.registry import FAMILIES, get_recipe
from scripts import export_weights, model_card
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
        if name == "MelInverter":
            return model(mel)
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
    from tests.wav2vec2.reference_files import (TINY, ctc_model, fairseq_extra_state, fairseq_namespace, nvidia_args,
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


def test_the_hifigan_vocoder_takes_an_exported_folder_generator_and_ema(synthetic_corpus, tmp_path):
    import inference
    from hifigan.vocoder import load_generator
    from tests.hifigan.tiny_hifigan import log_mel

    checkpoint = untrained_checkpoint(run_args("HiFiGAN", synthetic_corpus, tmp_path), tmp_path / "hifigan.pt")
    saved = torch.load(checkpoint, weights_only=True)
    for key, value in saved["state_dict"].items():  # an average that differs from the generator, so a mix-up shows
        if key.startswith("generator_ema.") and value.is_floating_point():
            value.add_(0.01)
    torch.save(saved, checkpoint)
    export_weights.main([str(checkpoint), str(tmp_path / "exported")])

    mel = log_mel(9)
    outputs = {}
    for ema in (False, True):
        for source in (checkpoint, tmp_path / "exported"):
            generator, audio_params, convention = load_generator(str(source), torch.device("cpu"), ema=ema)
            with torch.no_grad():
                outputs[ema, source] = generator(mel)
            assert audio_params.to_dict() == saved["audio_params"] and convention == "tacotron"
        assert torch.equal(outputs[ema, checkpoint], outputs[ema, tmp_path / "exported"])
    assert not torch.equal(outputs[False, checkpoint], outputs[True, checkpoint])

    # inference.py --hifigan: the same wav bytes from the folder as from the checkpoint
    torch.save(mel[0], tmp_path / "m.pt")
    for name, source in (("file", checkpoint), ("folder", tmp_path / "exported")):
        inference.main(["-m", "HiFiGAN", "-i", str(tmp_path / "m.pt"), "-o", str(tmp_path / name), "--hifigan",
                        str(source), "--ema", "--cpu", "--quiet"])
    assert (tmp_path / "file" / "m.wav").read_bytes() == (tmp_path / "folder" / "m.wav").read_bytes()

    waveglow = untrained_checkpoint(run_args("WaveGlow", synthetic_corpus, tmp_path), tmp_path / "waveglow.pt")
    export_weights.main([str(waveglow), str(tmp_path / "waveglow")])
    with pytest.raises(UserError, match="holds WaveGlow weights, expected HiFiGAN"):
        load_generator(str(tmp_path / "waveglow"), torch.device("cpu"))


def test_the_recognizer_takes_an_exported_folder(recognizer_checkpoint, synthetic_asr_corpus, synthetic_corpus,
                                                 tmp_path):
    import inference
    from wav2vec2.api import Recognizer

    export_weights.main([str(recognizer_checkpoint), str(tmp_path / "exported")])
    root = Path(synthetic_asr_corpus.test_voice.read_text().splitlines()[0])
    wavs = [root / line.split("\t")[0] for line in synthetic_asr_corpus.test_voice.read_text().splitlines()[1:]]
    from_file, from_folder = (Recognizer.from_checkpoint(source, device="cpu")
                              for source in (recognizer_checkpoint, tmp_path / "exported"))
    assert from_folder.labels == from_file.labels
    texts_of_file, log_probs_of_file = from_file.transcribe(wavs, return_log_probs=True)
    texts_of_folder, log_probs_of_folder = from_folder.transcribe(wavs, return_log_probs=True)
    assert texts_of_folder == texts_of_file
    for of_file, of_folder in zip(log_probs_of_file, log_probs_of_folder, strict=True):
        assert np.array_equal(of_file, of_folder)

    # inference.py -m wav2vec2 --checkpoint: the same predictions
    for name, source in (("file", recognizer_checkpoint), ("folder", tmp_path / "exported")):
        inference.main(["-m", "wav2vec2", "--checkpoint", str(source), "-i", str(synthetic_asr_corpus.test_voice),
                        "-o", str(tmp_path / name), "--cpu", "--quiet", "--save-predictions"])
    assert ((tmp_path / "folder" / "predictions.txt").read_text()
            == (tmp_path / "file" / "predictions.txt").read_text())

    # a folder of another family is one error line
    waveglow = untrained_checkpoint(run_args("WaveGlow", synthetic_corpus, tmp_path), tmp_path / "waveglow.pt")
    export_weights.main([str(waveglow), str(tmp_path / "waveglow")])
    completed = subprocess.run([sys.executable, "inference.py", "-m", "wav2vec2", "--checkpoint",
                                str(tmp_path / "waveglow"), "-i", str(wavs[0]), "-o", str(tmp_path / "out"), "--cpu"],
                               cwd=ROOT, capture_output=True, text=True, timeout=300, env={"OMP_NUM_THREADS": "1",
                                                                                            "PATH": ""})
    assert completed.returncode == 2, completed.stderr
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), completed.stderr
    assert "holds WaveGlow weights, expected wav2vec2" in lines[0]


def test_nvidia_and_jik876_generator_files_export_as_the_generator_alone(tmp_path):
    """A reference generator file has no discriminators: its folder holds the generator, its mel convention and its
    audio parameters, and vocodes exactly as the file does."""
    from hifigan.model import Generator
    from hifigan.vocoder import load_generator
    from tests.hifigan.tiny_hifigan import TINY_GENERATOR, log_mel, save_reference_files, tiny_generator

    generator = tiny_generator()
    config = save_reference_files(tmp_path, generator)
    with pytest.raises(UserError, match="give --hifigan-config"):
        export_weights.main([str(tmp_path / "g_00002000"), str(tmp_path / "no_config"), "-m", "HiFiGAN"])

    mel = log_mel(7)
    with torch.no_grad():
        expected = generator(mel)
    for name, flags, convention in (("hifigan_gen_checkpoint_20.pt", [], "jik876"),
                                    ("hifigan_gen_checkpoint_20_ft.pt", [], "tacotron"),
                                    ("g_00002000", ["--hifigan-config", str(config)], "jik876")):
        folder = tmp_path / f"exported_{name}"
        export_weights.main([str(tmp_path / name), str(folder), "-m", "HiFiGAN", *flags])
        from_file = load_generator(str(tmp_path / name), torch.device("cpu"), hifigan_config=(flags or [None])[-1])
        from_folder = load_generator(str(folder), torch.device("cpu"))
        assert from_folder[1:] == from_file[1:] and from_folder[2] == convention  # audio parameters, convention
        with torch.no_grad():
            audio = from_folder[0](mel)
            assert torch.equal(audio, from_file[0](mel))
        assert (audio - expected).abs().max() < 1e-5  # weight norm folded on loading: equal up to rounding

        model, metadata = load_exported(folder, "HiFiGAN")
        assert isinstance(model, Generator) and metadata["generator_only"] and metadata["mel_convention"] == convention
        assert metadata["model_config"] == {"generator": {**TINY_GENERATOR, "n_mel_channels": 80}}
        nvidia = name.startswith("hifigan_gen")
        assert metadata["training"]["epoch"] == (20 if nvidia else None)
        assert metadata["training"]["iteration"] == (2000 if nvidia else None)
        assert set(read_exported(folder)[1]) == {f"generator.{key}" for key in generator.state_dict()}
        with pytest.raises(UserError, match="holds no moving average"):
            load_generator(str(folder), torch.device("cpu"), ema=True)
        model_card.main([str(folder), "-o", str(tmp_path / f"card_{name}.md")])
        card = (tmp_path / f"card_{name}.md").read_text()
        assert f"The generator alone of a published reference file (`{name}`, NVIDIA's or jik876's), trained on " \
               f"{convention} mels" in card and "train.py" not in card
