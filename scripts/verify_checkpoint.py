"""Check that a downloaded checkpoint is what it says it is, by loading it.

    python -m scripts.verify_checkpoint -m Tacotron2 pretrained/nvidia_tacotron2pyt_fp32_20190427
    python -m scripts.verify_checkpoint -m hifigan pretrained/hifigan_gen_checkpoint_10000_ft.pt

NVIDIA publishes no checksums for its checkpoints, so a file is verified by what it holds: the family's reader
(common.exported_weights.read_checkpoint: ours, NVIDIA's, jik876's, fairseq's) reads it, the model its config
describes is built, and its weights load strictly, every key and every shape. A truncated or corrupted download, a
file of another model, or weights of another size end in one `error:` line and exit status 2. The file's sha256 is
printed too, to compare with another download or to record. scripts/download_pretrained.sh runs this on each file
it fetches.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

from common.errors import ArgumentParser, UserError, exit_on_user_error
from common.exported_weights import load_any_checkpoint
from common.registry import FAMILIES


def model_name_of(name: str) -> str:
    """A -m NAME, given as the model's name (HiFiGAN) or its folder (hifigan), as the download manifest names it."""
    by_folder = {folder: model for model, folder in FAMILIES.items()}
    if name in FAMILIES:
        return name
    if name in by_folder:
        return by_folder[name]
    raise UserError(f"-m {name}: no such model; one of {', '.join(FAMILIES)} (or its folder name)")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify(path: Path, model_name: str, reference_config: str | None = None) -> str:
    """One line saying what `path` holds; a UserError where it does not load as a `model_name` model (the reader
    refuses a missing file and a file that names another model)."""
    model, _ = load_any_checkpoint(path, model_name, reference_config)
    tensors = len(model.state_dict())
    weights = sum(parameter.numel() for parameter in model.parameters())
    return (f"{path}: a {model_name} checkpoint, every one of its model's {tensors} tensors ({weights:,} weights) "
            f"loaded in its shape; sha256 {sha256_of(path)}")


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(description="Verify checkpoints by loading them into the model they describe.")
    parser.add_argument("checkpoints", nargs="+", type=Path, metavar="CKPT")
    parser.add_argument("-m", "--model-name", required=True,
                        help=f"the family: {', '.join(FAMILIES)} (or its folder name, as the download manifest has)")
    parser.add_argument("--hifigan-config", default=None, metavar="JSON",
                        help="-m HiFiGAN: the config_v*.json of a jik876 g_* generator file, which carries none")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    model_name = model_name_of(args.model_name)
    for path in args.checkpoints:
        print(verify(path, model_name, args.hifigan_config), flush=True)


if __name__ == "__main__":
    exit_on_user_error(main)
