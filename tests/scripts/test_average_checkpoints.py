"""scripts/average_checkpoints.py: the mean of several checkpoints' weights, as a checkpoint the model readers take."""
import subprocess
import sys

import pytest
import torch

from common.checkpoint import load_checkpoint
from common.errors import UserError
from scripts.average_checkpoints import main
from tests.families import ROOT


def write(path, iteration, weight, config=None, keys=("weight",)):
    state = {key: torch.full((2, 3), weight) for key in keys}
    state["counter"] = torch.tensor(iteration)
    torch.save({"model_name": "wav2vec2", "model_config": config or {"layers": 2}, "state_dict": state,
                "iteration": iteration, "optimizers": {"adam": {"step": iteration}}, "scalers": {}}, path)
    return str(path)


def test_the_weights_are_the_mean_and_the_rest_is_the_newest_checkpoints(tmp_path):
    paths = [write(tmp_path / f"c{i}.pt", iteration, weight)
             for i, (iteration, weight) in enumerate([(500, 1.0), (1500, 4.0), (1000, 2.5)])]
    main(["-o", str(tmp_path / "mean.pt"), *paths])
    averaged = load_checkpoint(tmp_path / "mean.pt")  # weights_only, as every reader loads it
    torch.testing.assert_close(averaged["state_dict"]["weight"], torch.full((2, 3), 2.5))
    assert averaged["state_dict"]["counter"].item() == 1500 and averaged["iteration"] == 1500
    assert averaged["optimizers"] == {} and averaged["averaged_from"] == paths


def test_checkpoints_of_different_models_are_refused_by_name(tmp_path):
    first = write(tmp_path / "a.pt", 500, 1.0)
    with pytest.raises(UserError, match=r"b.pt: its model_config differs from .*a.pt's"):
        main(["-o", str(tmp_path / "mean.pt"), first, write(tmp_path / "b.pt", 600, 1.0, config={"layers": 3})])
    with pytest.raises(UserError, match=r"c.pt: its weights are not those of .*a.pt"):
        main(["-o", str(tmp_path / "mean.pt"), first, write(tmp_path / "c.pt", 600, 1.0, keys=("other",))])
    with pytest.raises(UserError, match="is one of the inputs"):
        main(["-o", first, first, write(tmp_path / "d.pt", 600, 1.0)])
    assert not (tmp_path / "mean.pt").exists()


def test_a_missing_file_is_one_error_line(tmp_path):
    result = subprocess.run([sys.executable, "-m", "scripts.average_checkpoints", "-o", str(tmp_path / "mean.pt"),
                             write(tmp_path / "a.pt", 500, 1.0), str(tmp_path / "missing.pt")],
                            cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [f"error: checkpoint not found: {tmp_path / 'missing.pt'}"]
