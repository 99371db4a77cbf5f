"""HiFi-GAN as the vocoder of inference.py:

    python inference.py -i phrases/phrase.txt -o out/ --tacotron2 T.pt --hifigan H.pt [--ema] [-d 0.005]
    python inference.py ... --vocoder HiFiGAN --vocoder-checkpoint H.pt [--chunk-frames 64]

H is one of our checkpoints (train.py -m HiFiGAN) or the folder `python -m scripts.export_weights` makes of one,
NVIDIA's hifigan_gen_checkpoint_*.pt, or jik876's g_XXXXXXXX with --hifigan-config config_v1.json (read by
hifigan/checkpoints.py). Only the generator is built (or, with --ema, the average of its weights that training kept),
weight norm folded away.

The mel: our checkpoints say in their AudioParams which mel they were trained on (common/audio.py's, what Tacotron 2
makes). NVIDIA's and jik876's files say nothing, so they get the mel they were trained on: jik876's (no centring,
384-sample reflect padding) for jik876's files and NVIDIA's base ones, Tacotron 2's for NVIDIA's fine-tuned `_ft`
files; --hifigan-mel-convention overrides that. Mels of the other convention are refused, since the audio drifts half
a hop and comes out degraded, unless --allow-mel-convention-mismatch (then with a warning).

Streaming: --chunk-frames N generates N mel frames at a time, each chunk with the generator's receptive field of real
mel around it, so the audio equals whole-utterance synthesis (to float rounding) while the first chunk is ready early.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import torch
from torch import nn

from common.arguments import flag, not_a_flag
from common.audio import AudioParams
from common.checkpoint import (describe_source, load_checkpoint, load_model_state, model_state_from_checkpoint,
                               unfold_weight_norm_where_folded)
from common.errors import UserError
from common.exported_weights import is_exported_folder, load_exported_as_checkpoint
from common.vocoder import VocoderSettings, VocoderSpec
from hifigan.checkpoints import MEL_JIK876, MEL_TACOTRON, generator_for_inference, is_reference_checkpoint
from hifigan.denoiser import Denoiser
from hifigan.model import Generator
from hifigan.recipe import RECIPE

# MEL_TACOTRON: common/audio.py's mel, centred frames, |X| (Tacotron 2, prepare_mels.sh, GTA extraction);
# MEL_JIK876: frames not centred, 384-sample reflect padding, sqrt(|X|^2 + 1e-9) (NVIDIA's base training).
MEL_CONVENTIONS = (MEL_TACOTRON, MEL_JIK876)


@dataclass
class HiFiGANSettings:
    """The HiFi-GAN vocoder's own flags."""
    ema: bool = flag(False, "use the exponential moving average of the generator's weights kept in the checkpoint")
    hifigan_config: str | None = flag(None, "jik876's config_v*.json, for his g_XXXXXXXX files (which carry no "
                                            "config)", metavar="JSON")
    hifigan_mel_convention: str | None = flag(None, "the mel the HiFi-GAN file was trained on (default: from the "
                                                    "file; NVIDIA's base and jik876's files: jik876, NVIDIA's _ft "
                                                    "files and ours: tacotron)", choices=MEL_CONVENTIONS)
    allow_mel_convention_mismatch: bool = flag(False, "vocode mels of the other convention anyway (with a warning; "
                                                      "expect worse audio)")
    chunk_frames: int = flag(0, "stream: generate this many mel frames at a time (same audio; 0: whole utterances)")
    # The mels it will get: common/audio.py's (Tacotron 2's, or mel files of this project) unless
    # `-m HiFiGAN --input-mel-convention` says otherwise.
    input_mel_convention: str | None = not_a_flag("--input-mel-convention (inference.py -m HiFiGAN)", None)


# ---------------------------------------------------------------------------------------------------------------
# Streaming


def _reach_of_convolution(conv: nn.Module) -> float:
    """How far (in the conv's own samples) one output looks to either side: half its dilated kernel span."""
    return (conv.kernel_size[0] - 1) * conv.dilation[0] / 2


def receptive_field_frames(generator: Generator) -> int:
    """How many mel frames on either side of a frame can change its audio, from the generator's layers.

    Each layer's reach is counted at its own rate (samples per mel frame there) and converted to mel frames: the
    input conv at rate 1; per upsampling stage a transposed conv (an output sample at t sees the inputs s with
    t + padding - kernel < s * rate <= t + padding, so at most (kernel - 1 - padding) / rate input samples away),
    then the fusion blocks, whose convolutions are in series within a block and in parallel across blocks (the
    widest block counts); the output conv at the final rate. Rounded up: an upper bound, tight to a frame."""
    frames = _reach_of_convolution(generator.conv_pre)
    rate = 1
    for upsample, fusion in zip(generator.ups, generator.resblocks):
        kernel, stride, padding = upsample.kernel_size[0], upsample.stride[0], upsample.padding[0]
        frames += (kernel - 1 - padding) / stride / rate
        rate *= stride
        widest_block = max(sum(_reach_of_convolution(conv) for conv in block.modules() if isinstance(conv, nn.Conv1d))
                           for block in fusion)
        frames += widest_block / rate
    frames += _reach_of_convolution(generator.conv_post) / rate
    return math.ceil(frames - 1e-9)


def stream(generator: Generator, mel: torch.Tensor, chunk_frames: int, overlap: int | None = None
           ) -> Iterator[torch.Tensor]:
    """Audio (B, 1, frames * hop) of consecutive chunks of chunk_frames mel frames; each chunk is generated with
    `overlap` frames of real mel on both sides (default: the receptive field), which are then cut off, so the
    pieces put together equal generator(mel) as long as the overlap covers the receptive field."""
    if chunk_frames < 1:
        raise UserError(f"--chunk-frames must be at least 1 (or 0 for whole utterances), got {chunk_frames}")
    overlap = receptive_field_frames(generator) if overlap is None else overlap
    hop = generator.hop_length
    frames = mel.size(-1)
    for start in range(0, frames, chunk_frames):
        stop = min(start + chunk_frames, frames)
        left, right = max(start - overlap, 0), min(stop + overlap, frames)
        audio = generator(mel[..., left:right])
        yield audio[..., (start - left) * hop:(stop - left) * hop]


def synthesize_in_chunks(generator: Generator, mel: torch.Tensor, chunk_frames: int,
                         overlap: int | None = None) -> torch.Tensor:
    return torch.cat(list(stream(generator, mel, chunk_frames, overlap)), dim=-1)


# ---------------------------------------------------------------------------------------------------------------
# Loading


def _generator_from_our_checkpoint(checkpoint: dict, source: str, ema: bool) -> tuple[Generator, AudioParams, str]:
    config = checkpoint.get("model_config") or {}
    if not isinstance(config.get("generator"), dict):
        raise UserError(f"{source}: its model config has no 'generator' entry; is it a HiFi-GAN checkpoint of this "
                        "project?")
    state_dict = model_state_from_checkpoint(checkpoint, source)
    prefix = "generator_ema." if ema else "generator."
    weights = {key[len(prefix):]: value for key, value in state_dict.items() if key.startswith(prefix)}
    if ema and not weights:
        raise UserError(f"--ema: {source} holds no moving average of the generator (it was trained without "
                        "--ema-decay); drop --ema")
    try:
        generator = Generator(**config["generator"])
    except (TypeError, ValueError) as error:
        raise UserError(f"{source}: its generator config {config['generator']} does not build a generator: "
                        f"{error}") from error
    unfold_weight_norm_where_folded(generator, weights)
    load_model_state(generator, weights, source + (" (EMA generator)" if ema else ""))
    audio_params = (AudioParams.from_dict(checkpoint["audio_params"]) if checkpoint.get("audio_params")
                    else AudioParams())
    # Our checkpoints are trained on common/audio.py's mel; an exported reference generator says its own.
    return generator, audio_params, checkpoint.get("mel_convention") or MEL_TACOTRON


def load_generator(path: str, device: torch.device, ema: bool = False, hifigan_config: str | None = None,
                   mel_convention: str | None = None, flag: str | None = "--hifigan"
                   ) -> tuple[Generator, AudioParams, str]:
    """(generator in eval mode with weight norm folded away, its AudioParams, the mel convention it expects) from
    any of the three kinds of file, or from a folder scripts.export_weights wrote from one of ours (its metadata is
    read as our checkpoint's: the same generator and EMA weights, config and audio parameters). mel_convention
    overrides what the file says or implies."""
    source = describe_source(path, flag)
    if is_exported_folder(path):
        _, checkpoint = load_exported_as_checkpoint(path, RECIPE.name)
    else:
        checkpoint = load_checkpoint(path, expected_model=RECIPE.name, flag=flag)
    if checkpoint.get("model_name") == RECIPE.name:
        if hifigan_config is not None:
            raise UserError(f"--hifigan-config is for jik876's files, which carry no config; {source} carries its "
                            "own: drop --hifigan-config")
        generator, audio_params, convention = _generator_from_our_checkpoint(checkpoint, source, ema)
    else:
        generator, audio_params, convention = generator_for_inference(checkpoint, source, ema=ema,
                                                                      hifigan_config=hifigan_config,
                                                                      file_name=Path(path).name)
    if generator.hop_length != audio_params.hop_length:
        raise UserError(f"{source}: the generator makes {generator.hop_length} samples per mel frame (its upsample "
                        f"rates) but its audio parameters say hop_length {audio_params.hop_length}")
    generator.remove_weight_norm()
    return generator.to(device).eval(), audio_params, mel_convention or convention


def check_mel_convention(vocoder_convention: str, mel_convention: str, allow: bool, vocoder_source: str,
                         mel_source: str) -> None:
    """Refuse mels of another convention than the vocoder's, or with --allow-mel-convention-mismatch warn."""
    if vocoder_convention == mel_convention:
        return
    message = (f"{vocoder_source} was trained on {vocoder_convention} mels but {mel_source} are {mel_convention} "
               "mels (half a hop apart, framed differently), so the audio would be degraded")
    if not allow:
        raise UserError(message + "; use a HiFi-GAN trained or fine-tuned on these mels (NVIDIA's _ft file, or one "
                                  "of this project), set --hifigan-mel-convention if the file's default is wrong, "
                                  "or pass --allow-mel-convention-mismatch to vocode them anyway")
    print(f"warning: {message}; vocoding anyway (--allow-mel-convention-mismatch)", file=sys.stderr)


class HiFiGANVocoder:
    """(B, n_mel_channels, T) log mel -> (B, T * hop_length) audio; the Vocoder of common/vocoder.py."""

    name = "hifigan"

    def __init__(self, generator: Generator, audio_params: AudioParams, mel_convention: str = MEL_TACOTRON,
                 denoising_strength: float = 0.0, denoiser_mode: str = "zeros", chunk_frames: int = 0):
        if chunk_frames < 0:
            raise UserError(f"--chunk-frames must be 0 (whole utterances) or more, got {chunk_frames}")
        if denoising_strength < 0:
            raise UserError(f"--denoising-strength must be 0 (off) or more, got {denoising_strength}")
        self.generator, self.audio_params, self.mel_convention = generator, audio_params, mel_convention
        self.denoising_strength, self.chunk_frames = denoising_strength, chunk_frames
        self.denoiser_mode = denoiser_mode
        self.denoiser = Denoiser(generator, audio_params, denoiser_mode) if denoising_strength > 0 else None
        self.dtype = next(generator.parameters()).dtype

    def set_denoising_strength(self, strength: float) -> None:
        """For the Python API's per-call denoise (tacotron2/api.py): the denoiser is made when first needed."""
        if strength < 0:
            raise UserError(f"the denoising strength must be 0 (off) or more, got {strength}")
        if strength > 0 and self.denoiser is None:
            self.denoiser = Denoiser(self.generator, self.audio_params, self.denoiser_mode)
        self.denoising_strength = strength

    def _finish(self, audio: torch.Tensor) -> torch.Tensor:
        audio = audio.squeeze(1).float()
        if self.denoiser is not None and self.denoising_strength > 0:
            audio = self.denoiser(audio, strength=self.denoising_strength)
        return audio.clamp(-1.0, 1.0)

    @torch.no_grad()
    def __call__(self, mel: torch.Tensor) -> torch.Tensor:
        mel = mel.to(self.dtype)
        if self.chunk_frames:
            return self._finish(synthesize_in_chunks(self.generator, mel, self.chunk_frames))
        return self._finish(self.generator(mel))

    @torch.no_grad()
    def stream(self, mel: torch.Tensor) -> Iterator[torch.Tensor]:
        """The audio of consecutive chunks of --chunk-frames frames (the whole mel when 0), each as soon as it is
        made. The denoiser works on whole STFT frames, so it is applied per whole utterance only (not here)."""
        mel = mel.to(self.dtype)
        for piece in stream(self.generator, mel, self.chunk_frames or mel.size(-1)):
            yield piece.squeeze(1).float().clamp(-1.0, 1.0)


def load_vocoder(settings: VocoderSettings, device: torch.device, dtype: torch.dtype) -> HiFiGANVocoder:
    """The vocoder for common/vocoder.py."""
    options: HiFiGANSettings = settings.options
    path, flag = settings.checkpoint, settings.checkpoint_flag
    generator, audio_params, convention = load_generator(path, device, ema=options.ema,
                                                         hifigan_config=options.hifigan_config,
                                                         mel_convention=options.hifigan_mel_convention, flag=flag)
    if device.type == "cuda" and dtype != torch.float32:  # a whole-model cast is faster than autocast per op
        generator = generator.to(dtype)
    generator.use_fast_layout_for(device)
    if settings.compile:  # in place (state-dict names unchanged); each new mel length recompiles, then goes dynamic
        generator.compile()
    check_mel_convention(convention, options.input_mel_convention or MEL_TACOTRON,
                         options.allow_mel_convention_mismatch, describe_source(path, flag), "the mels given to it")
    return HiFiGANVocoder(generator, audio_params, convention, settings.denoiser.strength_or(0.0),  # NVIDIA's: off
                          settings.denoiser.denoiser_mode, options.chunk_frames)


VOCODER = VocoderSpec(name=RECIPE.name, load=load_vocoder, settings=HiFiGANSettings,
                      settings_title="HiFi-GAN vocoder", has_denoiser=True,
                      recognizes=is_reference_checkpoint)
