"""The mel inverter as the vocoder of inference.py: the inverter's linear magnitude, then fast Griffin-Lim's phase
(common/audio.py), with the same --griffin-lim-iters, --griffin-lim-momentum and --griffin-lim-phase-init as
Griffin-Lim alone:

    python inference.py -i phrases/phrase.txt -o out/ --tacotron2 T.pt --melinverter M.pt
    python inference.py ... --vocoder MelInverter --vocoder-checkpoint M.pt
"""
from __future__ import annotations

import torch

from common.audio import GRIFFIN_LIM_ITERS, GRIFFIN_LIM_MOMENTUM, GRIFFIN_LIM_PHASE_INIT, AudioParams, griffin_lim_phase
from common.errors import UserError
from common.trained_model import load_trained_model
from common.vocoder import VocoderSettings, VocoderSpec
from melinverter.model import MelInverter
from melinverter.recipe import RECIPE


class MelInverterVocoder:
    """(B, n_mel_channels, T) log mel -> (B, T * hop_length) audio; the Vocoder of common/vocoder.py."""

    name = "melinverter"

    def __init__(self, model: MelInverter, audio_params: AudioParams, n_iters: int = GRIFFIN_LIM_ITERS,
                 momentum: float = GRIFFIN_LIM_MOMENTUM, phase_init: str = GRIFFIN_LIM_PHASE_INIT):
        self.model, self.audio_params = model, audio_params
        self.n_iters, self.momentum, self.phase_init = n_iters, momentum, phase_init

    @torch.no_grad()
    def __call__(self, mel: torch.Tensor) -> torch.Tensor:
        magnitude = torch.exp(self.model(mel.float()))
        return griffin_lim_phase(magnitude, self.audio_params, self.n_iters, self.momentum,
                                 phase_init=self.phase_init)


def load_vocoder(settings: VocoderSettings, device: torch.device, dtype: torch.dtype) -> MelInverterVocoder:
    path, flag = settings.checkpoint, settings.checkpoint_flag
    model, checkpoint = load_trained_model(RECIPE, path, device, flag=flag)
    if not checkpoint.get("audio_params"):
        raise UserError(f"{flag} {path} carries no audio parameters; it is not a MelInverter checkpoint of this "
                        "project")
    # `inference.py -m MelInverter` offers no Griffin-Lim flags (they belong to text to wav's vocoder choice): there
    # the settings keep their defaults.
    return MelInverterVocoder(model, AudioParams.from_dict(checkpoint["audio_params"]),
                              settings.griffin_lim.griffin_lim_iters, settings.griffin_lim.griffin_lim_momentum,
                              settings.griffin_lim.griffin_lim_phase_init)


VOCODER = VocoderSpec(name=RECIPE.name, load=load_vocoder,
                      griffin_lim_settings=("griffin_lim_iters", "griffin_lim_momentum",
                                            "griffin_lim_phase_init"))
