"""A PyTorch older than 2.6, whose torch.load(weights_only=True) a crafted file can bypass (CVE-2025-32434), is refused
in one line: at the start of train.py and inference.py, and where the Python APIs load a checkpoint."""
import re
import subprocess
import sys

import pytest
import torch

from common.checkpoint import load_checkpoint
from common.errors import UserError
from common.torch_version import check_torch_version
from tests.conftest import REPO_ROOT


def refusal(version: str) -> str:
    return (f"PyTorch {version} is too old: this project needs 2.6 or newer, since before 2.6 a crafted checkpoint "
            "can run code even through torch.load(weights_only=True) (CVE-2025-32434); upgrade it "
            "(scripts/setup.sh installs the one requirements-torch.txt pins; or pip install 'torch>=2.6')")


@pytest.mark.parametrize("version", ["2.5.1+cu121", "2.4.0", "1.13.1", "unknown"])
def test_a_torch_before_2_6_is_refused(version):
    with pytest.raises(UserError) as refused:
        check_torch_version(version)
    assert str(refused.value) == refusal(version)


@pytest.mark.parametrize("version", ["2.6.0", "2.13.0+cpu", "2.6.0a0+ecf3bae40a", "2.10.1+cu128", "3.0.0"])
def test_torch_2_6_and_later_are_accepted(version):
    check_torch_version(version)  # NVIDIA's container builds of the 2.6 branch (2.6.0a0+...) too


def test_the_checkpoint_loader_of_the_python_apis_refuses_an_old_torch(tmp_path, monkeypatch):
    path = tmp_path / "weights.pt"
    torch.save({"state_dict": {}}, path)
    monkeypatch.setattr(torch, "__version__", "2.5.1+cu121")
    with pytest.raises(UserError, match=r"PyTorch 2\.5\.1\+cu121 is too old"):
        load_checkpoint(path)


@pytest.mark.slow
@pytest.mark.parametrize("script", ["train.py", "inference.py"])
def test_train_and_inference_refuse_an_old_torch_at_start_up_in_one_line(script):
    program = "\n".join([
        "import runpy, sys, torch",
        "torch.__version__ = '2.5.1+cu121'  # as an installed torch 2.5.1 reports itself",
        f"sys.argv = ['{script}', '--help']",
        f"runpy.run_path('{script}', run_name='__main__')"])
    completed = subprocess.run([sys.executable, "-c", program], cwd=REPO_ROOT, capture_output=True, text=True,
                               timeout=300)
    assert (completed.returncode, completed.stdout, completed.stderr) == (2, "", f"error: {refusal('2.5.1+cu121')}\n")


@pytest.mark.parametrize("version, cuda, kept", [("2.5.1+cu121", "12.1", False), ("2.4.0", None, False),
                                                 ("2.6.0a0+ecf3bae40a", "12.8", True), ("2.13.0+cpu", None, True)])
def test_setup_sh_keeps_only_the_torch_that_the_project_accepts(tmp_path, version, cuda, kept):
    """scripts/setup.sh's TORCH_IS_RECENT, run as setup.sh runs it against a stand-in torch of that version: it keeps
    an installed torch (and a system's CUDA build) only where check_torch_version accepts it, else installs the pinned
    one."""
    text = (REPO_ROOT / "scripts" / "setup.sh").read_text()
    torch_is_recent = re.search(r"^TORCH_IS_RECENT='(.*?)'$", text, re.MULTILINE | re.DOTALL).group(1)
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text(
        f"import types\n__version__ = {version!r}\nversion = types.SimpleNamespace(cuda={cuda!r})\n")
    for extra, expected in (([], kept), (["cuda"], kept and cuda is not None)):
        completed = subprocess.run([sys.executable, "-c", torch_is_recent, *extra], env={"PYTHONPATH": str(tmp_path)},
                                   capture_output=True, text=True, timeout=60)
        assert completed.returncode == (0 if expected else 1), completed.stderr


def test_one_file_names_the_torch_version_and_agrees_with_the_floor():
    """requirements-torch.txt pins the version setup.sh installs; nothing else names one, and it meets the floor that
    requirements.txt and check_torch_version hold."""
    pins = [line for line in (REPO_ROOT / "requirements-torch.txt").read_text().splitlines()
            if line and not line.startswith("#")]
    assert len(pins) == 1 and re.fullmatch(r"torch==\d+\.\d+\.\d+", pins[0]), pins
    check_torch_version(pins[0].split("==")[1])
    assert "torch>=2.6" in (REPO_ROOT / "requirements.txt").read_text().splitlines()
    for path in ("scripts/setup.sh", "Dockerfile", "requirements.txt", "common/torch_version.py"):
        assert not re.search(r"torch==\d|\b2\.1[0-9]\.\d", (REPO_ROOT / path).read_text()), path
