"""WaveNet as the vocoder of inference.py:  python inference.py --tacotron2 T.pt --wavenet W.pt --wavenet-impl auto
(`python inference.py -m WaveNet -i mels/ -o out/ --wavenet W.pt` vocodes mel .pt files: nvwavenet/inference.py)."""
from __future__ import annotations

import argparse

import torch

from common.audio import AudioParams
from common.trained_model import load_trained_model
from common.errors import UserError
from common.vocoder import VocoderSpec
from nvwavenet.incremental import generate
from nvwavenet.model import mu_law_decode
from nvwavenet.recipe import RECIPE

IMPLEMENTATIONS = ["auto", "cpu", "single", "dual", "persistent"]


def add_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("WaveNet vocoder")
    group.add_argument("--wavenet-impl", default="auto", choices=IMPLEMENTATIONS,
                       help="auto: the fastest CUDA kernel that fits on a GPU, else the CPU path")


class WaveNetVocoder:
    name = "wavenet"

    def __init__(self, model, audio_params: AudioParams, implementation: str, precision: str, seed: int):
        self.model, self.audio_params = model, audio_params
        self.implementation, self.seed = implementation, seed
        self.kernels = None
        if implementation != "cpu":
            from nvwavenet.kernels import KernelVocoder  # the CUDA extension, built on first use

            self.kernels = KernelVocoder(model, precision=precision)

    def __call__(self, mel: torch.Tensor) -> torch.Tensor:
        generator = torch.Generator().manual_seed(self.seed)  # CPU uniforms, the same for every implementation
        if self.kernels is None:
            classes = generate(self.model, mel.to(next(self.model.parameters()).dtype), generator=generator)
        else:
            classes = self.kernels.generate_classes(mel, self.implementation, generator=generator)
        return mu_law_decode(classes, self.model.out_channels)


def load_vocoder(path: str, args: argparse.Namespace, device: torch.device, flag: str = "--wavenet") -> WaveNetVocoder:
    model, checkpoint = load_trained_model(RECIPE, path, device, flag=flag)
    if not checkpoint.get("audio_params"):
        raise UserError(f"{flag} {path} carries no audio parameters; it is not a WaveNet checkpoint of this project")
    implementation = args.wavenet_impl
    if device.type != "cuda":
        if implementation not in ("auto", "cpu"):
            raise SystemExit(f"error: --wavenet-impl {implementation} needs a CUDA GPU; use --wavenet-impl cpu")
        implementation = "cpu"
    precision = "fp16" if args.amp or args.bf16 else "fp32"  # the kernels keep fp16 weights with fp32 arithmetic
    return WaveNetVocoder(model, AudioParams.from_dict(checkpoint["audio_params"]), implementation, precision,
                          args.seed)


VOCODER = VocoderSpec(name=RECIPE.name, load=load_vocoder, add_args=add_args)
