import pytest
import torch
from torch import nn

from common import checkpoint as ckpt
from common.errors import UserError, UserFileNotFoundError
from common.layers import remove_weight_norm, weight_norm


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = weight_norm(nn.Conv1d(3, 4, 3))
        self.linear = nn.Linear(4, 2)


def legacy_state_dict(model: TinyNet) -> dict:
    """What torch.nn.utils.weight_norm + DDP wrote in older checkpoints (NVIDIA's published ones)."""
    state = model.state_dict()
    return {
        "module.conv.weight_g": state["conv.parametrizations.weight.original0"],
        "module.conv.weight_v": state["conv.parametrizations.weight.original1"],
        "module.conv.bias": state["conv.bias"],
        "module.linear.weight": state["linear.weight"],
        "module.linear.bias": state["linear.bias"],
    }


def test_legacy_names_and_module_prefix_load(tmp_path):
    torch.manual_seed(0)
    source, target = TinyNet(), TinyNet()
    path = tmp_path / "published.pt"
    torch.save({"state_dict": legacy_state_dict(source), "config": {}}, path)
    loaded = ckpt.load_checkpoint(path)
    ckpt.load_model_state(target, ckpt.model_state_from_checkpoint(loaded), str(path))
    x = torch.randn(2, 3, 9)
    torch.testing.assert_close(target.conv(x), source.conv(x))
    # A bare state dict (no 'state_dict' key) loads too.
    torch.save(legacy_state_dict(source), path)
    ckpt.load_model_state(target, ckpt.model_state_from_checkpoint(ckpt.load_checkpoint(path)), str(path))


def test_folded_weight_norm_equals_parametrized():
    torch.manual_seed(0)
    model = TinyNet()
    x = torch.randn(2, 3, 9)
    before = model.conv(x)
    remove_weight_norm(model)
    assert "conv.weight" in model.state_dict()
    torch.testing.assert_close(model.conv(x), before)


def test_atomic_save_round_trip_and_pointer(tmp_path):
    state = {"model_name": "Tiny", "state_dict": TinyNet().state_dict(), "epoch": 3}
    path = ckpt.checkpoint_path(tmp_path, "Tiny", 3)
    ckpt.save_checkpoint(state, path)
    ckpt.point_last_checkpoint_to(tmp_path, "Tiny", path)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary left behind
    pointer = ckpt.last_checkpoint_pointer(tmp_path, "Tiny")
    assert pointer.resolve() == path.resolve()
    assert ckpt.load_checkpoint(pointer, expected_model="Tiny")["epoch"] == 3
    newer = ckpt.checkpoint_path(tmp_path, "Tiny", 4)
    ckpt.save_checkpoint({**state, "epoch": 4}, newer)
    ckpt.point_last_checkpoint_to(tmp_path, "Tiny", newer)
    assert ckpt.load_checkpoint(pointer)["epoch"] == 4


def test_failed_save_keeps_the_old_file(tmp_path):
    path = tmp_path / "checkpoint.pt"
    ckpt.save_checkpoint({"epoch": 1}, path)

    class Unpicklable:
        def __reduce__(self):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        ckpt.save_checkpoint({"epoch": 2, "bad": Unpicklable()}, path)
    assert ckpt.load_checkpoint(path)["epoch"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.pt"]


def test_wrong_model_and_bad_files_are_clear_errors(tmp_path):
    path = tmp_path / "waveglow.pt"
    ckpt.save_checkpoint({"model_name": "WaveGlow", "state_dict": {}}, path)
    with pytest.raises(ValueError, match="is a WaveGlow checkpoint, expected Tacotron2"):
        ckpt.load_checkpoint(path, expected_model="Tacotron2")
    with pytest.raises(FileNotFoundError, match="checkpoint not found: .*nothing.pt"):
        ckpt.load_checkpoint(tmp_path / "nothing.pt")
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"\x00\x01 not a checkpoint")
    with pytest.raises(ValueError, match="cannot read checkpoint .*garbage.pt"):
        ckpt.load_checkpoint(garbage)


class Payload:
    pass


def test_unsafe_pickles_are_refused(tmp_path):
    path = tmp_path / "evil.pt"
    torch.save({"state_dict": {}, "payload": Payload()}, path)
    with pytest.raises(ValueError, match="cannot read checkpoint"):
        ckpt.load_checkpoint(path)


def test_mismatched_weights_list_missing_unexpected_and_shapes():
    model = TinyNet()
    state = dict(model.state_dict())
    state.pop("linear.bias")
    state["extra.weight"] = torch.zeros(1)
    state["linear.weight"] = torch.zeros(5, 4)
    with pytest.raises(ValueError) as error:
        ckpt.load_model_state(model, state, "some.pt")
    message = str(error.value)
    assert "some.pt" in message and "missing keys: linear.bias" in message
    assert "unexpected keys: extra.weight" in message and "linear.weight: (5, 4) in some.pt, (2, 4)" in message


def test_a_damaged_checkpoint_says_so_without_torchs_weights_only_advice(tmp_path):
    """torch's own message suggests weights_only=False ("will likely succeed"): wrong for a damaged file."""
    whole = tmp_path / "whole.pt"
    torch.save({"state_dict": TinyNet().state_dict()}, whole)
    truncated, empty, text = tmp_path / "truncated.pt", tmp_path / "empty.pt", tmp_path / "notes.pt"
    truncated.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    empty.write_bytes(b"")
    text.write_text("hello\n")
    expected = {truncated: "the file is damaged or truncated", empty: "the file is empty",
                text: "the file is damaged, truncated, or not a PyTorch checkpoint"}
    for path, reason in expected.items():
        with pytest.raises(UserError) as error:
            ckpt.load_checkpoint(path, flag="--tacotron2")
        message = str(error.value)
        assert message.startswith(f"cannot read checkpoint --tacotron2 {path}: {reason}")
        assert message.endswith("copy or download it again, or give another file")
        assert "weights_only" not in message and "\n" not in message


def test_a_checkpoint_holding_python_objects_names_the_object_and_how_to_resave(tmp_path):
    path = tmp_path / "pickled.pt"
    torch.save({"state_dict": {}, "payload": Payload()}, path)
    with pytest.raises(UserError, match=r"it stores a Python object \(.*Payload\) .* re-save its weights once: "
                                        r"torch.save\(torch.load\('.*pickled.pt', weights_only=False\)"):
        ckpt.load_checkpoint(path)


def test_missing_file_folder_and_wrong_model_name_the_flag(tmp_path):
    with pytest.raises(UserFileNotFoundError, match=r"^checkpoint not found: --waveglow .*nothing.pt$"):
        ckpt.load_checkpoint(tmp_path / "nothing.pt", flag="--waveglow")
    with pytest.raises(UserError, match=r"is a folder; give a checkpoint file"):
        ckpt.load_checkpoint(tmp_path)
    path = tmp_path / "waveglow.pt"
    ckpt.save_checkpoint({"model_name": "WaveGlow", "state_dict": {}}, path)
    with pytest.raises(UserError, match=r"^checkpoint --tacotron2 .*waveglow.pt is a WaveGlow checkpoint, expected "
                                        r"Tacotron2; give a Tacotron2 checkpoint there$"):
        ckpt.load_checkpoint(path, expected_model="Tacotron2", flag="--tacotron2")


def test_weights_saved_after_folding_weight_norm_load_as_plain_weights():
    """A state dict saved after weight norm was removed has `conv.weight` where the model has parametrizations:
    that module takes the plain weight, and computes what the original did."""
    torch.manual_seed(0)
    original = TinyNet()
    x = torch.randn(2, 3, 9)
    expected = original.conv(x)
    folded_state = remove_weight_norm(original).state_dict()
    assert "conv.weight" in folded_state and not any("parametrizations" in key for key in folded_state)
    target = TinyNet()
    assert ckpt.unfold_weight_norm_where_folded(target, folded_state) == ["conv"]
    ckpt.load_model_state(target, folded_state, "folded.pt")
    torch.testing.assert_close(target.conv(x), expected)
    # Weights with weight norm still in place change nothing.
    assert ckpt.unfold_weight_norm_where_folded(TinyNet(), TinyNet().state_dict()) == []
