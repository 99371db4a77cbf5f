"""The oldest PyTorch this project runs on, checked where checkpoints are loaded and at the start of train.py and
inference.py.

Every checkpoint is read with torch.load(weights_only=True), which is what keeps a file from running code when it is
unpickled; before PyTorch 2.6 that restriction could be bypassed by a crafted file (CVE-2025-32434, fixed in 2.6.0).
An older torch is refused in one line rather than trusted.
"""
from __future__ import annotations

import re

import torch

from common.errors import UserError

MINIMUM_TORCH = (2, 6)


def release_of(version: str) -> tuple[int, int] | None:
    """(major, minor) of a torch version string: "2.5.1+cu121" -> (2, 5); None if it does not start so. Only the
    release counts: NVIDIA's containers ship builds such as "2.6.0a0+ecf3bae40a" from the 2.6 branch, which have the
    fix although packaging's order puts them before 2.6.0."""
    match = re.match(r"(\d+)\.(\d+)", version)
    return (int(match.group(1)), int(match.group(2))) if match else None


def check_torch_version(version: str | None = None) -> None:
    """A UserError (one `error:` line) unless `version` (default: the installed torch's) is MINIMUM_TORCH or newer."""
    version = torch.__version__ if version is None else version
    release = release_of(version)
    if release is not None and release >= MINIMUM_TORCH:
        return
    minimum = ".".join(map(str, MINIMUM_TORCH))
    raise UserError(f"PyTorch {version} is too old: this project needs {minimum} or newer, since before {minimum} "
                    "a crafted checkpoint can run code even through torch.load(weights_only=True) (CVE-2025-32434); "
                    f"upgrade it (scripts/setup.sh installs the one requirements-torch.txt pins; or pip install "
                    f"'torch>={minimum}')")
