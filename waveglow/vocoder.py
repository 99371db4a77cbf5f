"""WaveGlow as the vocoder of inference.py:
    python inference.py -i phrases/phrase.txt -o out/ --tacotron2 T.pt --waveglow W.pt -s 0.6 -d 0.01
The model is built from the checkpoint's config (ours, or the `config` NVIDIA's train.py saves); a file of bare
weights needs the model flag: --wn-channels 256 for NVIDIA's waveglow256pyt_fp16 if it carries none. Weights saved
after weight norm was removed (NVIDIA's inference model, saved) load as they are.
`python inference.py -m WaveGlow -i mels/ -o out/ --waveglow W.pt` vocodes mel .pt files (waveglow/inference.py)."""
from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from common.arguments import flag
from common.audio import AudioParams
from common.errors import UserError
from common.layers import remove_weight_norm
from common.trained_model import load_trained_model
from common.vocoder import VocoderSettings, VocoderSpec
from waveglow.denoiser import Denoiser
from waveglow.model import WaveGlow
from waveglow.recipe import RECIPE

DEFAULT_DENOISING_STRENGTH = 0.01  # NVIDIA's inference scripts for WaveGlow


@dataclass
class WaveGlowSettings:
    """The WaveGlow vocoder's own flags."""
    sigma_infer: float = flag(0.9, "standard deviation of the noise z", aliases=["-s"])
    wn_channels: int | None = flag(None, "for a checkpoint without a model config (default 512; waveglow256: 256); "
                                         "with a config, a check")


class WaveGlowVocoder:
    name = "waveglow"

    def __init__(self, model: WaveGlow, audio_params: AudioParams, sigma: float, denoising_strength: float,
                 denoiser_mode: str, seed: int):
        self.model, self.audio_params = model, audio_params
        self.sigma, self.denoising_strength, self.seed = sigma, denoising_strength, seed
        self.denoiser_mode = denoiser_mode
        self.denoiser = Denoiser(model, audio_params, mode=denoiser_mode) if denoising_strength > 0 else None
        self.dtype = next(model.parameters()).dtype

    def set_denoising_strength(self, strength: float) -> None:
        """For the Python API's per-call denoise (tacotron2/api.py): the denoiser is made when first needed."""
        if strength < 0:
            raise UserError(f"the denoising strength must be 0 (off) or more, got {strength}")
        if strength > 0 and self.denoiser is None:
            self.denoiser = Denoiser(self.model, self.audio_params, mode=self.denoiser_mode)
        self.denoising_strength = strength

    def __call__(self, mel: torch.Tensor) -> torch.Tensor:
        # Seeded like torch.manual_seed(seed) before NVIDIA's infer on this device: the same audio for their weights.
        generator = torch.Generator(device=mel.device).manual_seed(self.seed)
        audio = self.model.infer(mel.to(self.dtype), sigma=self.sigma, generator=generator).float()
        if self.denoiser is not None and self.denoising_strength > 0:
            audio = self.denoiser(audio, strength=self.denoising_strength)
        return audio.clamp(-1.0, 1.0)


def load_waveglow(path: str, device: torch.device, wn_channels: int | None = None,
                  flag: str | None = "--waveglow") -> tuple[WaveGlow, AudioParams]:
    """The WaveGlow of a checkpoint (ours or NVIDIA's) in eval mode on device, weight norm folded away, and the
    AudioParams of its mels; wn_channels: --wn-channels, for a file without a config."""
    defaults = AudioParams()
    published_config = {"n_mel_channels": defaults.n_mel_channels, "wn_channels": wn_channels or 512,
                        "hop_length": defaults.hop_length, "win_length": defaults.win_length}
    model, checkpoint = load_trained_model(RECIPE, path, device, published_config=published_config,
                                           flag=flag)
    if wn_channels is not None and wn_channels != model.WN[0].n_channels:
        raise UserError(f"--wn-channels {wn_channels} was given, but the WaveGlow in {flag} {path} has "
                         f"{model.WN[0].n_channels} channels (from its config); drop the flag")
    remove_weight_norm(model)
    audio_params = (AudioParams.from_dict(checkpoint["audio_params"]) if checkpoint.get("audio_params")
                    else defaults)
    return model, audio_params


def load_vocoder(settings: VocoderSettings, device: torch.device, dtype: torch.dtype) -> WaveGlowVocoder:
    options: WaveGlowSettings = settings.options
    model, audio_params = load_waveglow(settings.checkpoint, device, options.wn_channels, settings.checkpoint_flag)
    if settings.compile:
        model.compile_coupling()
    if device.type == "cuda" and dtype != torch.float32:  # whole-model casts are faster than autocast per op
        model = model.to(dtype)
    return WaveGlowVocoder(model, audio_params, options.sigma_infer,
                           settings.denoiser.strength_or(DEFAULT_DENOISING_STRENGTH), settings.denoiser.denoiser_mode,
                           settings.seed)


def is_nvidia_waveglow_file(checkpoint: dict) -> bool:
    """NVIDIA's WaveGlow checkpoint ({'state_dict': ..., 'config': ...}) or a bare WaveGlow state dict."""
    weights = checkpoint.get("state_dict", checkpoint)
    return isinstance(weights, dict) and any(re.match(r"^(module\.(1\.)?)?WN\.0\.", key) for key in weights)


VOCODER = VocoderSpec(name=RECIPE.name, load=load_vocoder, settings=WaveGlowSettings,
                      settings_title="WaveGlow vocoder", has_denoiser=True,
                      recognizes=is_nvidia_waveglow_file)
