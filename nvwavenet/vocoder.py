"""WaveNet as the vocoder of inference.py:  python inference.py --tacotron2 T.pt --wavenet W.pt --wavenet-impl auto
(`python inference.py -m WaveNet -i mels/ -o out/ --wavenet W.pt` vocodes mel .pt files: nvwavenet/inference.py)."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from common.arguments import flag
from common.audio import AudioParams
from common.errors import UserError
from common.trained_model import load_trained_model
from common.vocoder import VocoderSettings, VocoderSpec
from nvwavenet.incremental import generate
from nvwavenet.model import mu_law_decode
from nvwavenet.recipe import RECIPE

IMPLEMENTATIONS = ["auto", "cpu", "single", "dual", "persistent"]


@dataclass
class WaveNetSettings:
    """The WaveNet vocoder's own flags."""
    wavenet_impl: str = flag("auto", "auto: the fastest CUDA kernel that fits on a GPU, else the CPU path",
                             choices=IMPLEMENTATIONS)


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


def load_vocoder(settings: VocoderSettings, device: torch.device, dtype: torch.dtype) -> WaveNetVocoder:
    path, flag = settings.checkpoint, settings.checkpoint_flag
    model, checkpoint = load_trained_model(RECIPE, path, device, flag=flag)
    if not checkpoint.get("audio_params"):
        raise UserError(f"{flag} {path} carries no audio parameters; it is not a WaveNet checkpoint of this project")
    implementation = settings.options.wavenet_impl
    if device.type != "cuda":
        if implementation not in ("auto", "cpu"):
            raise UserError(f"--wavenet-impl {implementation} needs a CUDA GPU; use --wavenet-impl cpu")
        implementation = "cpu"
    precision = "fp32" if dtype == torch.float32 else "fp16"  # the kernels keep fp16 weights, fp32 arithmetic
    return WaveNetVocoder(model, AudioParams.from_dict(checkpoint["audio_params"]), implementation, precision,
                          settings.seed)


VOCODER = VocoderSpec(name=RECIPE.name, load=load_vocoder, settings=WaveNetSettings, settings_title="WaveNet vocoder")
