"""torch.hub entries: NVIDIA's four text-to-speech names (their meanings kept), and a wav2vec 2.0 recognizer.

    import torch
    repo = "path/to/this/checkout"   # with source="local"; or the GitHub "owner/name" of this project
    tacotron2 = torch.hub.load(repo, "nvidia_tacotron2", checkpoint="T.pt", source="local")
    waveglow = torch.hub.load(repo, "nvidia_waveglow", checkpoint="W.pt", source="local")
    utils = torch.hub.load(repo, "nvidia_tts_utils", checkpoint="T.pt", source="local")
    sequences, lengths = utils.prepare_input_sequence(["Hello world."])
    with torch.no_grad():
        mel, mel_lengths, alignments, stopped = tacotron2.infer(sequences, lengths)
        audio = waveglow.infer(mel)
    generator, train_setup, denoiser = torch.hub.load(repo, "nvidia_hifigan", checkpoint="H.pt", source="local")
    recognizer = torch.hub.load(repo, "wav2vec2_ctc", checkpoint="CTC.pt", source="local")
    texts = recognizer.transcribe(["a.wav"])

`checkpoint` is a local path (files of this project, NVIDIA's published files, jik876's generators, fairseq's
wav2vec 2.0) or a URL whose file name carries the first hex digits of its sha256 (`tacotron2-1a2b3c4d.pt`, as
torch.hub.load_state_dict_from_url expects): downloaded once into torch.hub's cache and refused if its sha256 does
not match (common/api.py). There is no default download: NVIDIA's NGC files carry no hash in their names. Each
model comes back in eval mode on `device` (default: the GPU if there is one), in `model_math` fp32 or fp16 (weights
cast, as NVIDIA's entries do). Unlike NVIDIA's, Tacotron2.infer also returns whether each utterance stopped, and
WaveGlow comes with weight norm already folded away (no remove_weightnorm to call). The Python API behind the last
entry (and tacotron2/api.py's Synthesizer, text to wav in one object) is described in tacotron2/README.md and
wav2vec2/README.md.

This module imports nothing of the project at import time: each entry imports what it needs when called.
"""
dependencies = ["torch", "numpy", "scipy", "soundfile", "inflect", "unidecode", "jiwer", "safetensors"]

MODEL_MATH = ("fp32", "fp16")


def _prepared(model, model_math: str, device):
    """model in eval mode on device, its weights cast to model_math."""
    import torch

    from common.errors import UserError

    if model_math not in MODEL_MATH:
        raise UserError(f"model_math must be one of {', '.join(MODEL_MATH)}, got {model_math!r}")
    model = model.to(device).eval()
    return model.half() if model_math == "fp16" else model.to(torch.float32)


def _required(checkpoint, entry: str) -> str:
    from common.errors import UserError

    if checkpoint is None:
        raise UserError(f"{entry}: give checkpoint=PATH or a URL whose file name carries its sha256 prefix; this "
                        "project downloads nothing by default")
    return checkpoint


def nvidia_tacotron2(checkpoint=None, model_math: str = "fp32", device=None, check_hash: bool = True):
    """Tacotron 2 (ours, or NVIDIA's checkpoint) ready for Tacotron2.infer(sequences, lengths)."""
    from common.api import api_device, local_checkpoint
    from common.trained_model import load_trained_model
    from tacotron2.recipe import RECIPE

    device = api_device(device)
    path = local_checkpoint(_required(checkpoint, "nvidia_tacotron2"), check_hash)
    model, _ = load_trained_model(RECIPE, path, device, published_config={})  # NVIDIA's: the default architecture
    return _prepared(model, model_math, device)


def nvidia_waveglow(checkpoint=None, model_math: str = "fp32", device=None, check_hash: bool = True,
                    wn_channels=None):
    """WaveGlow (ours, or NVIDIA's; wn_channels=256 for a waveglow256 file without a config), weight norm folded
    away, ready for WaveGlow.infer(mel, sigma=...)."""
    from common.api import api_device, local_checkpoint
    from waveglow.vocoder import load_waveglow

    device = api_device(device)
    path = local_checkpoint(_required(checkpoint, "nvidia_waveglow"), check_hash)
    model, _ = load_waveglow(path, device, wn_channels, flag=None)
    return _prepared(model, model_math, device)


def nvidia_hifigan(checkpoint=None, model_math: str = "fp32", device=None, check_hash: bool = True,
                   ema: bool = False, hifigan_config=None):
    """(generator, train_setup, denoiser), as NVIDIA's entry: the HiFi-GAN generator (ours, NVIDIA's, or jik876's
    with hifigan_config=config_v1.json) with weight norm folded away; train_setup: the audio parameters of its mels
    and their convention (tacotron or jik876, hifigan/vocoder.py); denoiser(audio, strength) removes its bias."""
    from common.api import api_device, local_checkpoint
    from hifigan.denoiser import Denoiser
    from hifigan.vocoder import load_generator

    device = api_device(device)
    path = local_checkpoint(_required(checkpoint, "nvidia_hifigan"), check_hash)
    generator, audio_params, mel_convention = load_generator(path, device, ema=ema, hifigan_config=hifigan_config,
                                                             flag=None)
    denoiser = Denoiser(generator, audio_params).to(device).eval()  # from the fp32 weights
    train_setup = {**audio_params.to_dict(), "mel_convention": mel_convention}
    generator.use_fast_layout_for(device)  # as inference.py runs it
    return _prepared(generator, model_math, device), train_setup, denoiser


def nvidia_tts_utils(checkpoint=None, check_hash: bool = True):
    """The text preparation for Tacotron 2: .prepare_input_sequence(texts, cpu_run=False) -> (padded symbol ids,
    lengths), with the text front-end of `checkpoint` (a Tacotron 2 file), else the default one (english_cleaners,
    as NVIDIA's)."""
    from tacotron2.api import TextInput

    return TextInput.from_checkpoint(checkpoint, check_hash)


def wav2vec2_ctc(checkpoint=None, device=None, precision: str = "auto", batch_size: int = 8, labels_path=None,
                 check_hash: bool = True, quantize: str = "auto"):
    """A wav2vec2.api.Recognizer: .transcribe(paths or arrays, sampling_rate=None) -> texts. checkpoint: a fine-tuned
    wav2vec 2.0 of ours, NVIDIA's or fairseq's, or a Hugging Face Wav2Vec2ForCTC folder. precision and quantize as
    Recognizer.from_checkpoint's: by default bf16 on a CPU with native bf16, int8 layers on other x86 CPUs;
    precision="fp32" for float32 throughout."""
    from wav2vec2.api import Recognizer

    return Recognizer.from_checkpoint(_required(checkpoint, "wav2vec2_ctc"), device, precision, batch_size,
                                      labels_path, check_hash, quantize=quantize)
