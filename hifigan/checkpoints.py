"""NVIDIA's and jik876's HiFi-GAN files, read into this project's modules; and the weights a fine-tuning run
(--fine-tune-from) or a resumed reference run (--checkpoint-path) starts from.

The files (all plain dicts of tensors, read with weights_only=True):
  NVIDIA  hifigan_gen_checkpoint_<epoch>.pt      generator, gen_ema (or None), config (6 generator keys),
                                                 train_setup (audio and training settings), train_state
          hifigan_discrim_checkpoint_<epoch>.pt  mpd, msd, mpd_ema, msd_ema, optim_g, optim_d, scaler_g, scaler_d,
                                                 train_state, steps, epoch
  jik876  g_<8 digits>                           generator (no config: give jik876's config JSON)
          do_<8 digits>                          mpd, msd, optim_g, optim_d, steps, epoch

Their key names differ from ours in three ways, all undone here:
  - resblocks: NVIDIA nests them per stage, resblocks.<i>.<j>.*, as we do; jik876 numbers them flat,
    resblocks.<i * num_kernels + j>.*;
  - weight norm: torch.nn.utils.weight_norm's <conv>.weight_g / weight_v are our parametrizations' original0 /
    original1 (common.checkpoint.remap_legacy_state_dict), and a file saved after weight norm was removed holds a
    plain <conv>.weight, which loads into a generator without weight norm;
  - spectral norm (the first scale discriminator): <conv>.weight_orig / weight_u / weight_v are our
    parametrizations.weight.original / .0._u / .0._v. There weight_v is spectral norm's right singular vector,
    not weight norm's direction, so those keys are renamed before the weight-norm renaming sees them.

Neither kind of file records how its input mel was computed. jik876's code and NVIDIA's base training use the jik876
mel (no centring, 384-sample reflect pad, sqrt(|X|^2 + 1e-9)); NVIDIA's *_ft files were fine-tuned on FastPitch mels,
which are Tacotron 2 mels (common/audio.py). `mel_convention` in the info dict says which; callers may override it.
"""
from __future__ import annotations

import re
from pathlib import Path

from torch import nn

from common.audio import AudioParams
from common.checkpoint import (describe_source, load_checkpoint, load_model_state, model_state_from_checkpoint,
                               remap_legacy_state_dict, unfold_weight_norm_where_folded)
from common.errors import UserError
from common.recipe import WeightsForExport
from common.training_state import ReferenceTrainingState
from hifigan.arg_parser import GENERATOR_KEYS, JIK876_AUDIO_KEYS, config_from_reference, read_hifigan_config
from hifigan.model import MPD_PERIODS, Generator, HiFiGAN, MultiPeriodDiscriminator, MultiScaleDiscriminator

MODEL_NAME = "HiFiGAN"  # the -m value, and the model_name of this project's checkpoints
MEL_JIK876 = "jik876"
MEL_TACOTRON = "tacotron"

_NESTED_RESBLOCK = re.compile(r"^resblocks\.(\d+)\.(\d+)\.(convs1?|convs2)\.")
_FLAT_RESBLOCK = re.compile(r"^resblocks\.(\d+)\.(convs1?|convs2)\.(.*)$")
_SPECTRAL_NORM = {"weight_orig": "parametrizations.weight.original", "weight_u": "parametrizations.weight.0._u",
                  "weight_v": "parametrizations.weight.0._v"}
_SPECTRAL_NORM_OURS = {ours: theirs for theirs, ours in _SPECTRAL_NORM.items()}


def is_reference_checkpoint(checkpoint: dict) -> bool:
    """NVIDIA's or jik876's file (as opposed to one of ours, which names its model)."""
    return "model_name" not in checkpoint and ("generator" in checkpoint or "mpd" in checkpoint)


def checkpoint_format(checkpoint: dict) -> str:
    """'nvidia' (its files carry config/train_setup/train_state) or 'jik876'."""
    nvidia_keys = {"config", "train_setup", "train_state", "gen_ema", "mpd_ema", "msd_ema", "scaler_g", "scaler_d"}
    return "nvidia" if nvidia_keys & set(checkpoint) else "jik876"


def _strip_module_prefix(state_dict: dict) -> dict:
    return {key[len("module."):] if key.startswith("module.") else key: value for key, value in state_dict.items()}


def generator_state_from_reference(state_dict: dict, num_kernels: int, source: str) -> dict:
    """A reference generator state dict (NVIDIA's nested or jik876's flat resblocks, legacy weight norm, DDP
    prefixes) -> our key names. num_kernels: residual blocks per stage (len(resblock_kernel_sizes))."""
    ours = {}
    for key, value in _strip_module_prefix(state_dict).items():
        flat = _FLAT_RESBLOCK.match(key)
        if flat:
            index, rest = int(flat.group(1)), f"{flat.group(2)}.{flat.group(3)}"
            key = f"resblocks.{index // num_kernels}.{index % num_kernels}.{rest}"
        ours[key] = value
    layouts = {"flat" if _FLAT_RESBLOCK.match(key) else "nested"
               for key in _strip_module_prefix(state_dict) if key.startswith("resblocks.")}
    if len(layouts) > 1:
        raise UserError(f"{source}: its generator mixes flat (jik876) and nested (NVIDIA) resblock keys")
    return remap_legacy_state_dict(ours)


def generator_layout(state_dict: dict) -> str:
    """'flat' (jik876: resblocks.<N>.convs1...) or 'nested' (NVIDIA and ours: resblocks.<i>.<j>.convs1...)."""
    return "flat" if any(_FLAT_RESBLOCK.match(key) for key in _strip_module_prefix(state_dict)) else "nested"


def discriminator_state_from_reference(state_dict: dict) -> dict:
    """A reference MPD or MSD state dict -> our key names (spectral norm first, then weight norm, see above)."""
    stripped = _strip_module_prefix(state_dict)
    ours = {}
    for key, value in stripped.items():
        module, _, name = key.rpartition(".")
        if name in _SPECTRAL_NORM and f"{module}.weight_orig" in stripped:
            key = f"{module}.{_SPECTRAL_NORM[name]}"
        ours[key] = value
    return remap_legacy_state_dict(ours)


def mel_convention_of(file_name: str | Path, checkpoint: dict) -> str:
    """NVIDIA's *_ft files (and any fine-tuned one: train_state has fine_tune_epoch_start) saw Tacotron/FastPitch
    mels; everything else of theirs and jik876's saw the jik876 mel."""
    train_state = checkpoint.get("train_state") if isinstance(checkpoint.get("train_state"), dict) else {}
    if re.search(r"_ft(\.pt|\.pth)?$", str(file_name)) or "fine_tune_epoch_start" in train_state:
        return MEL_TACOTRON
    return MEL_JIK876


def audio_params_from_train_setup(train_setup: dict) -> AudioParams | None:
    """NVIDIA's train_setup -> AudioParams (the STFT sizes; the mel convention is separate, see the module doc)."""
    try:
        return AudioParams(sampling_rate=int(train_setup["sampling_rate"]),
                           filter_length=int(train_setup["filter_length"]),
                           hop_length=int(train_setup["hop_length"]), win_length=int(train_setup["win_length"]),
                           n_mel_channels=int(train_setup["num_mels"]), mel_fmin=float(train_setup["mel_fmin"]),
                           mel_fmax=float(train_setup["mel_fmax"]))
    except (KeyError, TypeError, ValueError):
        return None


def _generator_config(checkpoint: dict, config, source: str) -> dict:
    """Generator kwargs: from `config` (kwargs dict, or a jik876 JSON path) when given, else from the file's own
    NVIDIA `config`."""
    if isinstance(config, (str, Path)):
        return read_hifigan_config(config)
    if config is not None:
        return dict(config)
    if isinstance(checkpoint.get("config"), dict):
        try:
            return config_from_reference(checkpoint["config"])["generator"]
        except KeyError as error:
            raise UserError(f"{source}: its config {checkpoint['config']} lacks the generator key {error}; give "
                            "--hifigan-config") from error
    raise UserError(f"{source} carries no generator config (a jik876 g_* file): give --hifigan-config with its "
                    f"config_v*.json (keys {list(GENERATOR_KEYS)})")


def load_reference_generator(path: str | Path, config=None, use_ema: bool = False,
                             flag: str | None = None) -> tuple[Generator, dict]:
    """Build and load the generator of NVIDIA's hifigan_gen_checkpoint_*.pt or jik876's g_* file.

    config: Generator kwargs, or the path of a jik876 JSON, or None to use the file's own `config` (NVIDIA).
    use_ema: take NVIDIA's gen_ema instead of generator. Returns (generator in eval mode, info) where info has
    format ('nvidia'/'jik876'), layout ('nested'/'flat'), config (the kwargs), mel_convention ('jik876'/'tacotron'),
    and, where the file has them, train_setup, train_state and audio (AudioParams of train_setup)."""
    return generator_from_checkpoint(load_checkpoint(path, flag=flag), describe_source(path, flag), Path(path).name,
                                     config, use_ema)


def generator_from_checkpoint(checkpoint: dict, source: str, file_name: str, config=None,
                              use_ema: bool = False) -> tuple[Generator, dict]:
    """load_reference_generator for a file already read (common.checkpoint.load_checkpoint)."""
    key = "gen_ema" if use_ema else "generator"
    if not isinstance(checkpoint.get(key), dict):
        if use_ema and isinstance(checkpoint.get("generator"), dict):
            raise UserError(f"{source} holds no EMA generator ('gen_ema' is {checkpoint.get('gen_ema')!r}: it was "
                            "trained without --ema_decay); drop --ema")
        raise UserError(f"{source} has no 'generator' entry (keys: {sorted(checkpoint)[:10]}); give a HiFi-GAN "
                        "generator file (NVIDIA's hifigan_gen_checkpoint_*.pt or jik876's g_*)")
    generator_kwargs = _generator_config(checkpoint, config, source)
    try:
        generator = Generator(**generator_kwargs)
    except (TypeError, ValueError) as error:
        raise UserError(f"{source}: generator config {generator_kwargs} does not build a generator: {error}") from error
    state_dict = generator_state_from_reference(checkpoint[key], generator.num_kernels, source)
    unfold_weight_norm_where_folded(generator, state_dict)
    load_model_state(generator, state_dict, f"{source} ('{key}')")
    info = {"format": checkpoint_format(checkpoint), "layout": generator_layout(checkpoint[key]),
            "config": generator_kwargs, "mel_convention": mel_convention_of(file_name, checkpoint)}
    if isinstance(checkpoint.get("train_setup"), dict):
        info["train_setup"] = checkpoint["train_setup"]
        info["audio"] = audio_params_from_train_setup(checkpoint["train_setup"])
    if isinstance(checkpoint.get("train_state"), dict):
        info["train_state"] = checkpoint["train_state"]
    return generator.eval(), info


def generator_for_inference(checkpoint: dict, source: str, ema: bool = False, hifigan_config: str | None = None,
                            file_name: str | None = None) -> tuple[Generator, AudioParams, str]:
    """(generator, its AudioParams, the mel convention it was trained on) from a reference file already read:
    the audio parameters from NVIDIA's train_setup, or from the audio keys of jik876's JSON, else the defaults
    (22050 Hz, n_fft 1024, hop 256, 80 mels up to 8 kHz, which both references use)."""
    generator, info = generator_from_checkpoint(checkpoint, source, file_name or source.split()[-1],
                                                hifigan_config, ema)
    return generator, reference_audio_params(info, hifigan_config), info["mel_convention"]


def reference_audio_params(info: dict, hifigan_config: str | None = None) -> AudioParams:
    """The audio parameters of a reference generator file (generator_from_checkpoint's info): NVIDIA's train_setup,
    else the audio keys of jik876's JSON, else the defaults both references use."""
    audio = info.get("audio")
    if audio is None and hifigan_config is not None:
        audio = audio_params_from_jik876_config(hifigan_config)
    return audio or AudioParams()


def read_for_export(path: Path, checkpoint: dict | None, flag: str | None, hifigan_config: str | None
                    ) -> WeightsForExport | None:
    """NVIDIA's or jik876's generator file (jik876's with `hifigan_config`, his JSON) as an exported folder holds it:
    the generator alone, under the whole model's names, since the file has no discriminators to fill the training
    model with. None for a checkpoint of this project, which the common path exports whole."""
    if checkpoint is None or checkpoint.get("model_name") == MODEL_NAME:
        return None
    generator, info = generator_from_checkpoint(checkpoint, describe_source(path, flag), Path(path).name,
                                                hifigan_config)
    train_state = info.get("train_state", {})
    return WeightsForExport(
        {"generator": info["config"]}, {f"generator.{key}": value for key, value in generator.state_dict().items()},
        None, reference_audio_params(info, hifigan_config).to_dict(),
        extra_metadata={"generator_only": True, "mel_convention": info["mel_convention"]},
        training={"epoch": train_state.get("epoch"), "iteration": train_state.get("iters_all")})


def build_exported_model(metadata: dict) -> tuple[nn.Module, str] | None:
    """The generator of a generator file's export (read_for_export) and the prefix of its names; None otherwise."""
    if not metadata.get("generator_only"):
        return None
    return Generator(**metadata["model_config"]["generator"]), "generator."


def audio_params_from_jik876_config(path: str | Path) -> AudioParams | None:
    """The audio keys of a jik876 JSON (already checked by read_hifigan_config) as AudioParams; None without them."""
    import json

    content = json.loads(Path(path).read_text())
    values = {ours: content[theirs] for theirs, ours in JIK876_AUDIO_KEYS.items() if content.get(theirs) is not None}
    if not values:
        return None
    if "fmax" in content and content["fmax"] is None:  # jik876: no upper limit, i.e. the Nyquist frequency
        values["mel_fmax"] = values.get("sampling_rate", AudioParams().sampling_rate) / 2
    defaults = AudioParams().to_dict()
    return AudioParams(**{key: type(defaults[key])(values.get(key, defaults[key])) for key in defaults})


def load_reference_discriminators(path: str | Path, mpd_periods=MPD_PERIODS, flag: str | None = None,
                                  use_ema: bool = False, width_divisor: int = 1
                                  ) -> tuple[MultiPeriodDiscriminator, MultiScaleDiscriminator]:
    """Build and load MPD and MSD from NVIDIA's hifigan_discrim_checkpoint_*.pt or jik876's do_* file."""
    mpd, msd, _ = read_reference_discriminators(path, mpd_periods, flag, use_ema, width_divisor)
    return mpd, msd


def read_reference_discriminators(path: str | Path, mpd_periods=MPD_PERIODS, flag: str | None = None,
                                  use_ema: bool = False, width_divisor: int = 1
                                  ) -> tuple[MultiPeriodDiscriminator, MultiScaleDiscriminator, dict]:
    """load_reference_discriminators plus the file's training state: (mpd, msd, info) with info: format, and what
    the file has of optim_g, optim_d, scaler_g, scaler_d,
    steps, epoch, train_state (for resuming; the optimizer states follow the reference's parameter order, which is
    ours: generator.parameters() for optim_g, chain(msd, mpd) for optim_d)."""
    source = describe_source(path, flag)
    checkpoint = load_checkpoint(path, flag=flag)
    suffix = "_ema" if use_ema else ""
    missing = [key + suffix for key in ("mpd", "msd") if not isinstance(checkpoint.get(key + suffix), dict)]
    if missing:
        raise UserError(f"{source} has no {' or '.join(repr(key) for key in missing)} entry (keys: "
                        f"{sorted(checkpoint)[:12]}); give a HiFi-GAN discriminator file (NVIDIA's "
                        "hifigan_discrim_checkpoint_*.pt or jik876's do_*)")
    mpd = MultiPeriodDiscriminator(mpd_periods, width_divisor=width_divisor)
    msd = MultiScaleDiscriminator(width_divisor=width_divisor)
    load_model_state(mpd, discriminator_state_from_reference(checkpoint["mpd" + suffix]), f"{source} ('mpd')")
    load_model_state(msd, discriminator_state_from_reference(checkpoint["msd" + suffix]), f"{source} ('msd')")
    info = {"format": checkpoint_format(checkpoint)}
    for key in ("optim_g", "optim_d", "scaler_g", "scaler_d", "steps", "epoch", "train_state"):
        if checkpoint.get(key) is not None:
            info[key] = checkpoint[key]
    return mpd, msd, info


# ---- fine-tuning: the weights a run starts from ------------------------------------------------------------------

def load_fine_tune_weights(model: HiFiGAN, generator_path: str, discriminator_path: str | None,
                           audio: AudioParams, hifigan_config: str | None = None) -> None:
    """--fine-tune-from's weights into the run's `model`: from a checkpoint of ours the generator, and the
    discriminators unless discriminator_path (--fine-tune-discriminator-from, NVIDIA's or jik876's discriminator
    file) gives them; from NVIDIA's or jik876's generator file (jik876's needs hifigan_config) the generator."""
    flag = "--fine-tune-from"
    source = describe_source(generator_path, flag)
    checkpoint = load_checkpoint(generator_path, expected_model=MODEL_NAME, flag=flag)
    if checkpoint.get("model_name") == MODEL_NAME:  # ours: the whole HiFiGAN state, and its audio parameters
        if "audio_params" in checkpoint:
            AudioParams.from_dict(checkpoint["audio_params"]).check_matches(audio, source, "this run's audio flags")
        state = model_state_from_checkpoint(checkpoint, source)
        load_model_state(model.generator, _substate(state, "generator."), source)
        if not discriminator_path:
            load_model_state(model.mpd, _substate(state, "mpd."), source)
            load_model_state(model.msd, _substate(state, "msd."), source)
    else:
        generator, info = generator_from_checkpoint(checkpoint, source, Path(generator_path).name, hifigan_config)
        load_model_state(model.generator, generator.state_dict(), source)
        print(f"{source}: fine-tuning a {info['format']} generator; it was trained on {info['mel_convention']} "
              "mels, this run feeds it common/audio.py's", flush=True)
    if discriminator_path:
        flag = "--fine-tune-discriminator-from"
        periods, width_divisor = _discriminator_shape(model)
        mpd, msd = load_reference_discriminators(discriminator_path, periods, flag=flag, width_divisor=width_divisor)
        load_model_state(model.mpd, mpd.state_dict(), describe_source(discriminator_path, flag))
        load_model_state(model.msd, msd.state_dict(), describe_source(discriminator_path, flag))


def _substate(state: dict, prefix: str) -> dict:
    return {key[len(prefix):]: value for key, value in state.items() if key.startswith(prefix)}


# ---- the reverse: our weights in the reference's layouts (for export to their code, and for tests) -------------

def _legacy_weight_norm_names(state_dict: dict) -> dict:
    out = {}
    for key, value in state_dict.items():
        key = key.replace("parametrizations.weight.original0", "weight_g")
        key = key.replace("parametrizations.weight.original1", "weight_v")
        out[key] = value
    return out


def generator_state_to_reference(state_dict: dict, layout: str = "nested", num_kernels: int = 3) -> dict:
    """Our generator state dict -> NVIDIA's ('nested') or jik876's ('flat') keys, with weight_g/weight_v."""
    out = {}
    for key, value in _legacy_weight_norm_names(state_dict).items():
        nested = re.match(r"^resblocks\.(\d+)\.(\d+)\.(.*)$", key)
        if layout == "flat" and nested:
            key = f"resblocks.{int(nested.group(1)) * num_kernels + int(nested.group(2))}.{nested.group(3)}"
        out[key] = value
    return out


def discriminator_state_to_reference(state_dict: dict) -> dict:
    """Our MPD or MSD state dict -> the reference's keys (weight_g/weight_v; weight_orig/weight_u/weight_v)."""
    out = {}
    for key, value in state_dict.items():
        for ours, theirs in _SPECTRAL_NORM_OURS.items():
            if key.endswith(ours):
                key = key[: -len(ours)] + theirs
        out[key] = value
    return _legacy_weight_norm_names(out)


def hifigan_state_from_reference(generator_path: str | Path, discriminator_path: str | Path,
                                 model: nn.Module, generator_checkpoint: dict | None = None) -> dict:
    """Load a reference generator file and discriminator file into our HiFiGAN container `model` (generator, mpd,
    msd, and generator_ema from NVIDIA's gen_ema when both exist, else the generator's weights); returns the
    discriminator file's info (optimizer states, steps, epoch) for a recipe that resumes training from them.
    generator_checkpoint: the generator file's contents when the caller has read it already."""
    generator_path = Path(generator_path)
    checkpoint = load_checkpoint(generator_path) if generator_checkpoint is None else generator_checkpoint
    source, config = describe_source(generator_path, None), _container_generator_config(model)
    generator, _ = generator_from_checkpoint(checkpoint, source, generator_path.name, config)
    periods, width_divisor = _discriminator_shape(model)
    mpd, msd, info = read_reference_discriminators(discriminator_path, periods, width_divisor=width_divisor)
    model.generator.load_state_dict(generator.state_dict())
    model.mpd.load_state_dict(mpd.state_dict())
    model.msd.load_state_dict(msd.state_dict())
    if model.generator_ema is not None:
        if isinstance(checkpoint.get("gen_ema"), dict):
            ema, _ = generator_from_checkpoint(checkpoint, source, generator_path.name, config, use_ema=True)
            model.generator_ema.load_state_dict(ema.state_dict())
        else:
            model.reset_ema()
    return info


def _discriminator_shape(model: HiFiGAN) -> tuple[list[int], int]:
    """(MPD periods, width divisor) of the model's discriminators, for reading a file's into the same shapes."""
    width_divisor = 32 // model.mpd.discriminators[0].convs[0].out_channels  # the first MPD conv has 32 at full width
    return [d.period for d in model.mpd.discriminators], width_divisor


def _container_generator_config(model: nn.Module) -> dict:
    config = getattr(model, "generator_config", None)
    if config is None:
        raise UserError("the HiFiGAN model does not record its generator config")
    return config


def companion_discriminator_file(generator_path: Path) -> Path:
    """Where a reference generator file's discriminator file lies: NVIDIA's hifigan_gen_checkpoint_E.pt beside
    hifigan_discrim_checkpoint_E.pt, jik876's g_N beside do_N."""
    name = generator_path.name
    if "_gen_" in name:
        return generator_path.with_name(name.replace("_gen_", "_discrim_", 1))
    if name.startswith("g_"):
        return generator_path.with_name("do_" + name[len("g_"):])
    raise UserError(f"{generator_path}: cannot tell its discriminator file from the name (NVIDIA's "
                    "hifigan_gen_checkpoint_E.pt or jik876's g_N); rename it so, with the discriminator file beside it")


def training_state_from_reference(path: Path, checkpoint: dict, model: HiFiGAN) -> ReferenceTrainingState:
    """--checkpoint-path with NVIDIA's or jik876's generator file: the generator and EMA from it, discriminators,
    optimizer and loss-scaler states, epoch and step from the discriminator file beside it, loaded into `model`
    (the run's HiFiGAN) and returned for common/training_state.py to resume from."""
    if not is_reference_checkpoint(checkpoint):
        raise UserError(f"{path} is neither a training checkpoint of this project nor a HiFi-GAN file of NVIDIA or "
                        "jik876 (no 'model_name', 'generator' or 'mpd' entry)")
    if "generator" not in checkpoint:
        raise UserError(f"{path} is a discriminator file; give --checkpoint-path the generator file "
                        "(hifigan_gen_checkpoint_E.pt or g_N), with this one beside it")
    discriminator_path = companion_discriminator_file(path)
    if not discriminator_path.exists():
        raise UserError(f"resuming {path} needs its discriminator file {discriminator_path} (the discriminators and "
                        "the optimizer states are there); put it beside, or start from the weights alone with "
                        "--fine-tune-from")
    info = hifigan_state_from_reference(path, discriminator_path, model, generator_checkpoint=checkpoint)
    missing = [key for key in ("optim_g", "optim_d") if key not in info]
    if missing:
        raise UserError(f"{discriminator_path} holds no optimizer states ({', '.join(missing)} missing), so training "
                        f"cannot continue where it stopped; start from its weights with --fine-tune-from {path} "
                        f"--fine-tune-discriminator-from {discriminator_path}")
    if mel_convention_of(path.name, checkpoint) == MEL_JIK876:
        print(f"{path} was trained on jik876-style mels; training goes on with this project's (Tacotron 2's) mels, "
              "as a fine-tune would", flush=True)
    train_state = checkpoint.get("train_state") or info.get("train_state") or {}
    # NVIDIA's train_state counts completed epochs (from 1) and iterations; jik876's file has the epoch in progress
    # (from 0) and 'steps'. Either way the run restarts at the beginning of an epoch.
    return ReferenceTrainingState(
        state_dict=model.state_dict(),
        # The reference's optim_d runs over chain(msd, mpd): build_optimizers keeps that order, index for index.
        optimizers={"generator": info["optim_g"], "discriminator": info["optim_d"]},
        scalers={"generator": info.get("scaler_g") or {}, "discriminator": info.get("scaler_d") or {}},
        epoch=int(train_state.get("epoch", info.get("epoch", 0))),
        iteration=int(train_state.get("iters_all", info.get("steps", 0))))
