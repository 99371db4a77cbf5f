"""What the Python APIs (tacotron2/api.py, wav2vec2/api.py) and hubconf.py share: the device and precision by name,
and checkpoints given by path or URL.

A URL is downloaded once into torch.hub's cache (`torch.hub.get_dir()/checkpoints`, where
torch.hub.load_state_dict_from_url keeps its files) and checked as that function checks it: the file name carries the
first hex digits of the file's sha256 after a dash (`tacotron2-1a2b3c4d.pt`), and a download whose sha256 does not
start with them is refused and not kept. Unlike load_state_dict_from_url, the file is then handed as a path to the
family's own loader, which reads it without unpickling code (common/checkpoint.py, common/safe_unpickle.py).
"""
from __future__ import annotations

import os
from pathlib import Path
from urllib.error import URLError
from urllib.parse import unquote, urlparse

import torch

from common.cpu import default_dtype
from common.errors import UserError

PRECISIONS = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}  # fp16/bf16: --amp/--bf16's
URL_SCHEMES = ("http", "https", "ftp", "file")


def is_url(text: str | Path) -> bool:
    return isinstance(text, str) and urlparse(text).scheme in URL_SCHEMES


def local_checkpoint(path_or_url: str | Path, check_hash: bool = True) -> str:
    """A local path as it is; a URL as the path of its downloaded (and checked) copy in torch.hub's cache."""
    if not is_url(path_or_url):
        return str(path_or_url)
    url = str(path_or_url)
    file_name = os.path.basename(unquote(urlparse(url).path))
    if not file_name:
        raise UserError(f"{url} names no file: give the URL of a checkpoint file")
    match = torch.hub.HASH_REGEX.search(file_name)
    hash_prefix = match.group(1) if match and match.group(1) else None
    if check_hash and hash_prefix is None:
        raise UserError(f"{url}: its file name carries no sha256 prefix (NAME-<first hex digits of the file's "
                        "sha256>.EXT, as torch.hub expects), so the download cannot be checked; rename the file so, "
                        "or pass check_hash=False")
    cached = Path(torch.hub.get_dir()) / "checkpoints" / file_name
    if cached.is_file():
        return str(cached)
    cached.parent.mkdir(parents=True, exist_ok=True)
    try:
        torch.hub.download_url_to_file(url, str(cached), hash_prefix if check_hash else None, progress=False)
    except RuntimeError as error:
        if "invalid hash value" not in str(error):
            raise
        raise UserError(f"{url}: the downloaded file's sha256 does not start with {hash_prefix}, as its name says "
                        f"({error}); the file is damaged or not the one named, and was not kept") from error
    except (URLError, OSError) as error:
        raise UserError(f"cannot download {url}: {error}") from error
    return str(cached)


def api_device(device: str | torch.device | None) -> torch.device:
    """None: the GPU where there is one, else the CPU (as inference.py without --cpu)."""
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise UserError(f"device {device} was asked for, but no CUDA GPU is available: use device='cpu'")
    return device


def api_dtype(precision: str | torch.dtype, device: torch.device | None = None,
              bf16_within_tolerance: bool = False) -> torch.dtype:
    """'fp32', 'fp16' or 'bf16' (or the torch dtype): the precision models run in (autocast, or weights cast).
    'auto': common.cpu.default_dtype on device (bf16 on a CPU with native bf16 where the model's family measured
    bf16 within its tolerance, else fp32)."""
    if isinstance(precision, torch.dtype) and precision in PRECISIONS.values():
        return precision
    if precision == "auto":
        return default_dtype(device or torch.device("cpu"), bf16_within_tolerance)
    if precision not in PRECISIONS:
        raise UserError(f"unknown precision {precision!r}; choose one of auto, {', '.join(PRECISIONS)}")
    return PRECISIONS[precision]
