"""fairseq's and NVIDIA's wav2vec 2.0 files, written in their layouts (../shared/reference/wav2vec2.md §3, "Loading
fairseq / NV ckpts"; omegaconf's stand-ins are below, the others in tests/wav2vec2/reference_files.py), read by the
restricted unpickler: argparse.Namespace args, omegaconf cfg (stand-in classes pickled under omegaconf's module and
class names, with omegaconf's own state layout: _metadata, _parent, _content / _val), fine-tuned files with the
pre-training settings nested in w2v_args, NVIDIA's flat args with `module.` prefixes and fused qkv projections, the
legacy (pre-zip) format. The models they build compute what the saved models computed, and a pickle that names anything
else is refused before it runs."""
import argparse
import collections
import enum
import os
import sys
import types
import typing

import pytest
import torch

from common.checkpoint import save_checkpoint
from common.trained_model import load_trained_model
from common.errors import UserError, UserFileNotFoundError
from common.safe_unpickle import read_restricted
from tests.wav2vec2.reference_files import (HOURGLASS, LARGE_STYLE, TINY, ctc_model, fairseq_extra_state,
                                            fairseq_namespace, nvidia_args, nvidia_state, pretraining_model,
                                            pretraining_outputs, waveform)
from wav2vec2.checkpoints import (load_any_checkpoint, load_reference_checkpoint, load_reference_model,
                                  project_checkpoint, read_any_checkpoint)
from wav2vec2.reference_config import flatten_reference_args
from wav2vec2.model import Wav2Vec2CTC, Wav2Vec2Model

# ---- omegaconf as it pickles, without omegaconf ---------------------------------------------------------------------
# Stand-ins named like omegaconf's classes: plain classes pickle as omegaconf's do (copyreg.__newobj__, then a BUILD
# of their __dict__), and they get omegaconf 2.0's state layout. They are in sys.modules only while a test runs.

FAKE_CLASSES = {
    "omegaconf.dictconfig": ["DictConfig"], "omegaconf.listconfig": ["ListConfig"],
    "omegaconf.nodes": ["AnyNode", "StringNode", "IntegerNode", "FloatNode", "BooleanNode"],
    "omegaconf.base": ["Metadata", "ContainerMetadata"],
    "fairseq.dataclass.configs": ["FairseqConfig"], "fairseq.models.wav2vec.wav2vec2": ["Wav2Vec2Config"],
}


@pytest.fixture
def fake_omegaconf(monkeypatch):
    """Modules omegaconf.* and fairseq.* with the stand-in classes, for pickling; returns {class name: class}."""
    classes = {}
    for module_name, names in FAKE_CLASSES.items():
        module = types.ModuleType(module_name)
        for name in names:
            cls = type(name, (), {"__module__": module_name, "__qualname__": name})
            setattr(module, name, cls)
            classes[name] = cls
        parts = module_name.split(".")
        for depth in range(1, len(parts)):
            monkeypatch.setitem(sys.modules, ".".join(parts[:depth]), types.ModuleType(".".join(parts[:depth])))
        monkeypatch.setitem(sys.modules, module_name, module)

    class Choices(enum.Enum):  # fairseq's ChoiceEnum members pickle as Choices(value)
        default = "default"
        layer_norm = "layer_norm"

    Choices.__module__, Choices.__qualname__ = "fairseq.dataclass.constants", "Choices"
    constants = types.ModuleType("fairseq.dataclass.constants")
    constants.Choices = Choices
    monkeypatch.setitem(sys.modules, "fairseq.dataclass.constants", constants)
    classes["Choices"] = Choices
    return classes


def omegaconf_tree(classes: dict, value, key=None, parent=None, object_type=None):
    """A plain value as omegaconf's objects: dicts as DictConfig, lists as ListConfig, scalars as typed nodes."""
    def metadata(container: bool):
        meta = classes["ContainerMetadata" if container else "Metadata"]()
        meta.__dict__.update(ref_type=typing.Any, object_type=object_type, optional=True, key=key, flags={},
                             resolver_cache=collections.defaultdict(dict))
        return meta

    if isinstance(value, (dict, list, tuple)):
        node = classes["DictConfig" if isinstance(value, dict) else "ListConfig"]()
        node.__dict__.update(_metadata=metadata(True), _parent=parent)
        if isinstance(value, dict):
            node._content = {name: omegaconf_tree(classes, item, name, node) for name, item in value.items()}
        else:
            node._content = [omegaconf_tree(classes, item, index, node) for index, item in enumerate(value)]
        return node
    if isinstance(value, enum.Enum):
        return value
    kind = {bool: "BooleanNode", int: "IntegerNode", float: "FloatNode", str: "StringNode"}.get(type(value), "AnyNode")
    node = classes[kind]()
    node.__dict__.update(_metadata=metadata(False), _parent=parent, _val=value)
    return node


def fairseq_cfg(classes: dict, model: dict, task: dict | None = None) -> object:
    cfg = {"_name": None, "common": {"fp16": True, "seed": 1, "log_interval": 200},
           "optimization": {"max_update": 400000, "lr": [0.0005], "update_freq": [1]},
           "task": {"_name": "audio_pretraining", "data": "/data/librispeech", "normalize": False,
                    "sample_rate": 16000, **(task or {})},
           "model": model}
    return omegaconf_tree(classes, cfg, object_type=classes["FairseqConfig"])


# ---- fairseq ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("config", [TINY, LARGE_STYLE], ids=["base-style", "large-style"])
def test_fairseq_pretrained_file_with_namespace_args(tmp_path, config):
    model = pretraining_model(config)
    path = tmp_path / "wav2vec_small.pt"
    torch.save({"args": fairseq_namespace(config), "model": model.state_dict(), **fairseq_extra_state()}, path)

    loaded, info = load_reference_model(path)
    assert isinstance(loaded, Wav2Vec2Model) and info["format"] == "fairseq" and not info["finetuned"]
    assert info["model_config"] == model.config
    source = waveform()
    expected, got = pretraining_outputs(model, source), pretraining_outputs(loaded, source)
    for key in ("x", "logits", "code_perplexity", "prob_perplexity", "features_pen"):
        torch.testing.assert_close(got[key], expected[key], rtol=0, atol=0)


def test_fairseq_legacy_format_file(tmp_path):
    """Files of torch < 1.6 are not zip archives: torch.load reads them through the same restricted unpickler."""
    model = pretraining_model(TINY)
    path = tmp_path / "old.pt"
    torch.save({"args": fairseq_namespace(TINY), "model": model.state_dict(), **fairseq_extra_state()}, path,
               _use_new_zipfile_serialization=False)
    loaded, _ = load_reference_model(path)
    torch.testing.assert_close(loaded.extract_features(waveform())["x"], model.extract_features(waveform())["x"])


def test_fairseq_finetuned_file_with_omegaconf_cfg(tmp_path, fake_omegaconf):
    """A fine-tuned fairseq file: cfg.model is the fine-tuning config (wav2vec_ctc) with the pre-training cfg nested
    in w2v_args; the architecture comes from there, the fine-tuning settings override dropouts and masking, and the
    CTC head's size comes from w2v_encoder.proj."""
    architecture = dict(LARGE_STYLE, dropout=0.1, encoder_layerdrop=0.05, mask_prob=0.65)
    model = ctc_model(dict(architecture, dropout=0.0, encoder_layerdrop=0.1, mask_prob=0.5), vocab_size=12)
    pretraining_model_cfg = {"_name": "wav2vec2", **{key: value for key, value in architecture.items()
                                                     if key != "extractor_mode"},
                             "extractor_mode": fake_omegaconf["Choices"].layer_norm, "latent_temp": [2.0, 0.1, 0.9]}
    finetuning_model_cfg = {"_name": "wav2vec_ctc", "w2v_path": "/models/wav2vec_vox.pt", "final_dropout": 0.1,
                            "dropout": 0.0, "layerdrop": 0.1, "mask_prob": 0.5, "apply_mask": True,
                            "freeze_finetune_updates": 10000, "normalize": "${task.normalize}",
                            "w2v_args": {"_name": None, "task": {"_name": "audio_pretraining", "normalize": True},
                                         "model": pretraining_model_cfg}}
    cfg = fairseq_cfg(fake_omegaconf, finetuning_model_cfg, task={"_name": "audio_finetuning", "normalize": True})
    path = tmp_path / "wav2vec_vox_960h.pt"
    torch.save({"args": None, "cfg": cfg, "model": model.state_dict(), **fairseq_extra_state()}, path)

    loaded, info = load_reference_model(path)
    assert isinstance(loaded, Wav2Vec2CTC)
    assert (info["vocab_size"], info["final_dropout"], info["freeze_finetune_updates"]) == (12, 0.1, 10000)
    config = info["model_config"]
    assert config["extractor_mode"] == "layer_norm" and config["layer_norm_first"] and config["normalize"]
    assert (config["dropout"], config["encoder_layerdrop"], config["mask_prob"]) == (0.0, 0.1, 0.5)
    assert config["latent_temp"] == [2.0, 0.1, 0.9]
    source = waveform()
    torch.testing.assert_close(loaded(source)["logits"], model(source)["logits"], rtol=0, atol=0)

    config, state = load_any_checkpoint(path)  # what fine-tuning's --w2v-path reads
    assert config["vocab_size"] == 12 and config["final_dropout"] == 0.1
    assert state.keys() == model.state_dict().keys()


def test_fairseq_cfg_of_plain_dicts(tmp_path):
    """Newer fairseq saves cfg as plain containers (OmegaConf.to_container): that file needs no stand-ins."""
    model = pretraining_model(TINY)
    cfg = {"common": {"seed": 1}, "task": {"_name": "audio_pretraining", "normalize": False},
           "model": {"_name": "wav2vec2", **TINY, "latent_temp": [2.0, 0.5, 0.999995]}}
    path = tmp_path / "new.pt"
    torch.save({"args": None, "cfg": cfg, "model": model.state_dict()}, path)
    loaded, info = load_reference_model(path)
    assert info["model_config"] == model.config


def test_omegaconf_stand_ins_read_as_plain_values(tmp_path, fake_omegaconf):
    tree = {"model": {"layers": [1, 2, 3], "temp": (2.0, 0.5), "mode": fake_omegaconf["Choices"].default,
                      "missing": "???", "nothing": None, "flag": True, "dim": "${task.dim}"},
            "task": {"dim": 768}}
    path = tmp_path / "cfg.pt"
    torch.save({"cfg": omegaconf_tree(fake_omegaconf, tree), "model": {}}, path)
    cfg = read_restricted(path)["cfg"]
    assert cfg["model"] == {"layers": [1, 2, 3], "temp": [2.0, 0.5], "mode": "default", "missing": "???",
                            "nothing": None, "flag": True, "dim": "${task.dim}"}
    flat = flatten_reference_args(None, cfg)
    assert flat["dim"] == 768 and flat["layers"] == [1, 2, 3]  # the model section wins, interpolations resolved


def test_finetuned_fairseq_file_without_w2v_args_needs_the_pretrained_file(tmp_path):
    model = ctc_model(TINY)
    path = tmp_path / "ft.pt"
    torch.save({"args": argparse.Namespace(arch="wav2vec_ctc", w2v_path="/gone.pt", w2v_args=None,
                                           final_dropout=0.0), "model": model.state_dict()}, path)
    with pytest.raises(UserError, match="w2v_args"):
        load_reference_model(path)
    pretrained = tmp_path / "pre.pt"
    torch.save({"args": fairseq_namespace(TINY), "model": pretraining_model(TINY).state_dict()}, pretrained)
    loaded, info = load_reference_model(path, architecture_from=pretrained)
    torch.testing.assert_close(loaded(waveform())["logits"], model(waveform())["logits"])


# ---- NVIDIA ----------------------------------------------------------------------------------------------------------

def test_nvidia_hourglass_pretraining_file(tmp_path):
    model = pretraining_model(HOURGLASS)
    path = tmp_path / "wav2vec2_update400000.pt"
    torch.save({"args": nvidia_args(HOURGLASS, "pretrain"), "model": nvidia_state(model), "ema_model": None,
                "optimizer": {"state": {}, "param_groups": []}, "scaler": {},
                "train_state": {"step": 400000, "epoch": 301, "best_val_loss": 2.1}}, path)
    checkpoint = load_reference_checkpoint(path)
    assert checkpoint["format"] == "nvidia"
    assert "encoder.hourglass_layers.1.self_attn.k_proj.weight" in checkpoint["model"]
    loaded, info = load_reference_model(path)
    assert info["model_config"]["hourglass_transformer"] == "[1,(2,2),1]"
    source = waveform()
    expected, got = pretraining_outputs(model, source), pretraining_outputs(loaded, source)
    torch.testing.assert_close(got["logits"], expected["logits"], rtol=0, atol=0)


def test_nvidia_finetuned_file_carries_its_dictionary(tmp_path):
    model = ctc_model(TINY, vocab_size=4 + 3)
    path = tmp_path / "wav2vec2_best.pt"
    torch.save({"args": nvidia_args(TINY, "finetune", w2v_path="pre.pt", final_dropout=0.0, labels="ltr"),
                "model": nvidia_state(model), "output_labels": "| 94802\nE 51860\nT 38431\n"}, path)
    found = read_any_checkpoint(path)
    assert found["symbols"] == ["<s>", "<pad>", "</s>", "<unk>", "|", "E", "T"]
    assert found["model_config"]["vocab_size"] == 7
    loaded, _ = load_reference_model(path)
    torch.testing.assert_close(loaded(waveform())["logits"], model(waveform())["logits"], rtol=0, atol=0)


def test_positional_conv_saved_with_weight_norm_folded(tmp_path):
    """NVIDIA's inference removes weight norm: pos_conv.0.weight alone becomes g = ||w||, v = w again."""
    model = pretraining_model(TINY)
    state = model.state_dict()
    g, v = state.pop("encoder.pos_conv.0.weight_g"), state.pop("encoder.pos_conv.0.weight_v")
    state["encoder.pos_conv.0.weight"] = g * v / v.norm(dim=(0, 1), keepdim=True)
    path = tmp_path / "folded.pt"
    torch.save({"args": nvidia_args(TINY, "pretrain"), "model": state}, path)
    loaded, _ = load_reference_model(path)
    torch.testing.assert_close(loaded.extract_features(waveform())["x"], model.extract_features(waveform())["x"],
                               rtol=1e-5, atol=1e-5)


# ---- this project's format -------------------------------------------------------------------------------------------

def test_project_checkpoint_loads_for_inference_and_fine_tuning(tmp_path):
    """What wav2vec2.convert writes is what common.trained_model.load_trained_model and --w2v-path read."""
    model = ctc_model(TINY, vocab_size=7)
    config = dict(model.config, vocab_size=7, final_dropout=0.0, freeze_finetune_updates=0)
    path = tmp_path / "ours.pt"
    save_checkpoint(project_checkpoint(config, model.state_dict(), ["<s>", "<pad>", "</s>", "<unk>", "|", "A", "B"]),
                    path)

    def build_model(values):
        architecture = {key: value for key, value in values.items()
                        if key not in ("vocab_size", "final_dropout", "freeze_finetune_updates")}
        return Wav2Vec2CTC(architecture, values["vocab_size"], values["final_dropout"])

    recipe = types.SimpleNamespace(name="wav2vec2", build_model=build_model, config_from_reference=None)
    loaded, checkpoint = load_trained_model(recipe, path, torch.device("cpu"))
    assert checkpoint["text"]["symbols"][4:] == ["|", "A", "B"]
    torch.testing.assert_close(loaded(waveform())["logits"], model(waveform())["logits"], rtol=0, atol=0)
    found_config, state = load_any_checkpoint(path)
    assert found_config == config and state.keys() == model.state_dict().keys()


# ---- refusals --------------------------------------------------------------------------------------------------------

class RunsACommand:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_pickle_that_would_run_code_is_refused_without_running_it(tmp_path):
    marker = tmp_path / "ran"
    path = tmp_path / "evil.pt"
    torch.save({"args": fairseq_namespace(TINY), "model": {}, "extra_state": RunsACommand(marker)}, path)
    with pytest.raises(UserError, match=r"evil\.pt.*system.*refused without running it"):
        load_reference_checkpoint(path)
    assert not marker.exists()


def test_a_whole_pickled_module_is_refused_naming_its_class(tmp_path):
    path = tmp_path / "module.pt"
    torch.save({"args": fairseq_namespace(TINY), "model": torch.nn.Linear(2, 2)}, path)
    with pytest.raises(UserError, match=r"torch\.nn\.modules\.linear\.Linear"):
        read_any_checkpoint(path)


def test_unreadable_and_foreign_files(tmp_path):
    with pytest.raises(UserFileNotFoundError, match="missing.pt"):
        load_reference_checkpoint(tmp_path / "missing.pt", flag="--w2v-path")
    damaged = tmp_path / "damaged.pt"
    torch.save({"args": fairseq_namespace(TINY), "model": pretraining_model(TINY).state_dict()}, damaged)
    damaged.write_bytes(damaged.read_bytes()[:5000])
    with pytest.raises(UserError, match="damaged.pt.*damaged, truncated"):
        load_reference_checkpoint(damaged)
    cyclic, loop = tmp_path / "cyclic.pt", []
    loop.append(loop)
    torch.save({"args": fairseq_namespace(TINY), "model": {}, "extra_state": loop}, cyclic)
    with pytest.raises(UserError, match="cyclic.pt.*cycle"):
        load_reference_checkpoint(cyclic)
    no_model = tmp_path / "no_model.pt"
    torch.save({"weights": {}}, no_model)
    with pytest.raises(UserError, match="no_model.pt.*neither"):
        load_any_checkpoint(no_model)
    other = tmp_path / "other.pt"
    torch.save({"model_name": "HiFiGAN", "model_config": {}, "state_dict": {}}, other)
    with pytest.raises(UserError, match="HiFiGAN checkpoint, expected wav2vec2"):
        load_any_checkpoint(other)


def test_architectures_this_model_does_not_build_are_refused(tmp_path):
    path = tmp_path / "conformer.pt"
    torch.save({"args": fairseq_namespace(TINY, layer_type="conformer"), "model": {}}, path)
    with pytest.raises(UserError, match="layer_type='conformer'"):
        load_reference_model(path)
