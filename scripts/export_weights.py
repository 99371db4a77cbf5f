"""Export a checkpoint's weights as data: safetensors weights plus JSON metadata (common/exported_weights.py).

    python -m scripts.export_weights CKPT OUT [-m NAME]

writes OUT/model.safetensors and OUT/metadata.json (model name, model config, audio parameters, symbol table or
dictionary, epochs and steps trained). CKPT is a checkpoint of any family, ours or NVIDIA's (fairseq's too for
wav2vec 2.0); -m names the family of a file that does not say (NVIDIA's Tacotron 2, WaveGlow and HiFi-GAN files). A
HiFi-GAN generator file of NVIDIA's or jik876's (`-m HiFiGAN`, jik876's with `--hifigan-config config_v1.json`) is
exported as the generator alone. Load it back with common.exported_weights.load_exported(OUT).
"""
from __future__ import annotations

from common.errors import ArgumentParser, exit_on_user_error
from common.exported_weights import METADATA_FILE, WEIGHTS_FILE, export_weights
from common.registry import FAMILIES


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(description=f"Write a checkpoint's weights as OUT/{WEIGHTS_FILE} and OUT/{METADATA_FILE}.")
    parser.add_argument("checkpoint", help="a training checkpoint (ours, NVIDIA's, or fairseq's for wav2vec 2.0)")
    parser.add_argument("output", help="the folder to write (created if needed)")
    parser.add_argument("-m", "--model-name", choices=list(FAMILIES), default=None,
                        help="the family, for a file that does not name it (NVIDIA's)")
    parser.add_argument("--hifigan-config", default=None, metavar="JSON",
                        help="-m HiFiGAN: the config_v*.json of a jik876 g_* generator file, which carries none")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    folder = export_weights(args.checkpoint, args.output, args.model_name, args.hifigan_config)
    print(f"wrote {folder / WEIGHTS_FILE} and {folder / METADATA_FILE}")


if __name__ == "__main__":
    exit_on_user_error(main)
