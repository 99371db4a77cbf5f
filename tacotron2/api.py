"""Text to speech in Python: Tacotron 2 and a vocoder, loaded once.

    from tacotron2.api import Synthesizer
    synthesizer = Synthesizer.from_checkpoints(tacotron2="T.pt", vocoder="W.pt", device="cpu")
    audio = synthesizer.synthesize(["Hello world.", "A second line."], seed=1)   # float32 arrays in [-1, 1]

The vocoder is a WaveGlow, HiFi-GAN (ours, NVIDIA's or jik876's) or WaveNet file, its family read from the file
(common/vocoder.py: vocoder_family), or "griffin-lim". Each checkpoint may also be the URL of a file whose name
carries its sha256 prefix (common/api.py). The audio is at `synthesizer.sampling_rate`. A Synthesizer is exactly what
`inference.py --tacotron2 T.pt --<vocoder> V.pt` runs (tacotron2/inference.py is the command line over this class),
and `synthesize(texts, seed=S)` gives the audio that command writes with --seed S.
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
import torch

from common.api import api_device, api_dtype, local_checkpoint
from common.arguments import (check_values_as_flags, config_from_args, flag, non_negative_float, non_negative_int,
                              not_a_flag, positive_int)
from common.audio import LOG_CLAMP_MIN, AudioParams
from common.checkpoint import load_checkpoint
from common.cpu import native_bf16, vectorized_half_products
from common.errors import UserError
from common.inference_args import Stopwatch, autocast, inference_device, inference_dtype
from common.layers import lengths_to_mask
from common.quantization import QUANTIZE_CHOICES, check_quantize, quantize_help, quantize_int8
from common.text import TextProcessor
from common.text.sentences import split_long, split_sentences
from common.trained_model import load_trained_model
from common.vocoder import (VocoderSettings, is_griffin_lim, load_vocoder, vocoder_option_names,
                            vocoder_settings_from_args, vocoder_settings_of_options)
from tacotron2.alignment import alignment_health
from tacotron2.cuda_graphs import use_cuda_graphs
from tacotron2.model import HALF_LSTM_WEIGHTS_MAX_BATCH, max_steps_warnings_silenced
from tacotron2.recipe import RECIPE


@dataclass
class SynthesisSettings:
    """How Tacotron 2 synthesizes: the options of Synthesizer.from_checkpoints, by name, and the flags of
    `inference.py -m Tacotron2` (made from these fields: tacotron2/inference.py)."""
    torchscript: bool | None = flag(None, "run Tacotron 2 through TorchScript (default: on with --cpu and "
                                          "--no-fast-decoder)",
                                    action=argparse.BooleanOptionalAction)
    fast_decoder: bool | None = flag(None, "the decoder step rearranged for speed, equal to rounding "
                                            "(tacotron2/model.py: fast_inference_step); --compile implies it "
                                            "(default: on with --cpu, where it is faster than the reference step, "
                                            "unless --torchscript; off on a GPU, where it is slower)",
                                     action=argparse.BooleanOptionalAction)
    half_lstm_weights: bool | None = flag(
        None, "the fast decoder reads its two LSTMs' weights in 16 bits: float16 when it decodes one or two utterances "
              "at once, bf16 for more where the CPU computes bf16 natively (products summed in float32; about 3x "
              "faster at NVIDIA's size, the mel moved by rounding: tacotron2/RESULTS.md; default: on with the fast "
              "decoder in float32 on a CPU with AVX2 or AVX-512)",
        action=argparse.BooleanOptionalAction)
    cuda_graphs: bool = flag(False, "replay the decoder's steps from CUDA graphs, 16 steps a launch "
                                    "(tacotron2/cuda_graphs.py; a GPU only; implies --fast-decoder)",
                             action=argparse.BooleanOptionalAction)
    quantize: str = flag("none", quantize_help("Tacotron 2's LSTMs and linear layers, and with --fast-decoder its "
                                               "merged products (not with --compile or --torchscript)"),
                         choices=QUANTIZE_CHOICES)
    batch_size: int = flag(8, "utterances synthesized together", aliases=["-bs"])
    max_decoder_steps: int | None = flag(None, "default: the checkpoint's", type=positive_int)
    gate_threshold: float | None = flag(None, "default: the checkpoint's")
    max_frames_after_text_end: int | None = flag(
        None, "stop an utterance this many mel frames after its attention reached the text's last symbol, if its "
              "gate has not stopped it (0: the gate alone, NVIDIA's rule; default: the checkpoint's, 40 unless it "
              "was trained with another)", type=non_negative_int, metavar="FRAMES")
    split_sentences: bool = flag(True, "say a text of several sentences one sentence at a time, joined by "
                                       "--sentence-pause, and cut a sentence too long for --max-decoder-steps at its "
                                       "commas, then between words (common/text/sentences.py)",
                                 action=argparse.BooleanOptionalAction)
    sentence_pause: float = flag(0.3, "seconds of silence between the sentences of a text", type=non_negative_float)
    compile: bool = not_a_flag("--compile (every inference part)", False)  # torch.compile the decoder step


# A piece of text may take at most max_decoder_steps * r / FRAMES_PER_SYMBOL symbols: the demo's voice takes 5.2 to
# 6.3 mel frames per symbol of its text front-end (measured on 25 sentences), so a piece within the limit stops well
# before the decoder's.
FRAMES_PER_SYMBOL = 8


@dataclass
class Piece:
    """What one decoder run says: a whole text, or one of the sentences (or parts of a long one) of a longer text."""
    utterance: int  # the index of the text it is part of
    text: str
    source: str  # names it in messages
    part: int = 1  # its place among the pieces of its text, from 1
    parts: int = 1


# What --quantize int8 makes int8: the encoder's and decoder's LSTMs, the prenet, attention and projections' linear
# layers. The convolutions (encoder, location, postnet) stay float32.
TACOTRON2_INT8_LAYERS = {torch.nn.LSTM, torch.nn.LSTMCell, torch.nn.Linear}


def default_fast_decoder(settings: SynthesisSettings, device: torch.device) -> bool:
    """--fast-decoder as given, or by default on the CPU (unless --torchscript, which runs the reference step): there
    the fast step is 1.06-1.22x the reference step's speed, equal to rounding (docs/benchmarks.md); on a GPU it is
    slower."""
    if settings.fast_decoder is not None:
        return settings.fast_decoder
    return device.type == "cpu" and not settings.torchscript


def default_half_lstm_weights(settings: SynthesisSettings, device: torch.device, dtype: torch.dtype,
                              fast_decoder: bool, quantized: bool) -> bool:
    """--half-lstm-weights as given, or by default where it is faster: the eager fast decoder (not compiled, not
    int8) in float32 on a CPU whose ATen kernels are vectorized (common/cpu.py: vectorized_half_products)."""
    conflicts = [(device.type != "cpu", "a GPU (it is a CPU path: add --cpu)"),
                 (not fast_decoder, "--no-fast-decoder (it is the fast decoder's)"),
                 (settings.compile, "--compile"), (quantized, "--quantize int8 (its LSTMs are int8)"),
                 (dtype != torch.float32, "--amp or --bf16 (it is for float32 synthesis)")]
    conflict = next((reason for found, reason in conflicts if found), None)
    if settings.half_lstm_weights is None:
        return conflict is None and vectorized_half_products()
    if settings.half_lstm_weights and conflict is not None:
        raise UserError(f"--half-lstm-weights cannot be combined with {conflict}: drop one of them")
    return settings.half_lstm_weights


def quantize_tacotron2(model: torch.nn.Module, fast_decoder: bool) -> None:
    """--quantize int8 (CPU inference): TACOTRON2_INT8_LAYERS in int8; with the fast decoder, its merged products
    in int8 too (Decoder.quantize_fast_step, before the layers it merges are replaced)."""
    if fast_decoder:
        model.decoder.quantize_fast_step()
    quantize_int8(model.eval(), TACOTRON2_INT8_LAYERS)


def check_cuda_graphs(settings: SynthesisSettings, device: torch.device, quantized: bool) -> None:
    """--cuda-graphs records the eager fast decoder's steps on a GPU: nothing else."""
    for flag_name, given in (("--compile", settings.compile), ("--torchscript", settings.torchscript),
                             ("--quantize", quantized)):
        if given:
            raise UserError(f"--cuda-graphs records the eager fast decoder; it cannot be combined with {flag_name}: "
                            "drop one of them")
    if device.type != "cuda":
        raise UserError("--cuda-graphs needs a CUDA GPU: drop --cuda-graphs (or --cpu)")


def pad_token_ids(sequences: list[list[int]], device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    lengths = torch.tensor([len(ids) for ids in sequences], dtype=torch.long)
    padded = torch.zeros(len(sequences), int(lengths.max()), dtype=torch.long)
    for row, ids in enumerate(sequences):
        padded[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
    return padded.to(device), lengths.to(device)


def encode_texts(text_processor: TextProcessor, texts: list[str], sources: list[str], device: torch.device
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """Tacotron 2's input: the texts' symbol ids, zero-padded (B, longest), and their lengths (B,)."""
    try:
        token_ids = [text_processor.encode(text, source=source) for text, source in zip(texts, sources)]
    except ValueError as error:  # a line the text front-end cannot read; the message names it
        raise UserError(str(error)) from error
    return pad_token_ids(token_ids, device)


def text_processor_of(checkpoint: dict) -> TextProcessor:
    """The text front-end a Tacotron 2 checkpoint was trained with (NVIDIA's carry none: their default)."""
    return TextProcessor.from_dict(checkpoint["text"]) if checkpoint.get("text") else TextProcessor()


class TextInput:
    """Texts as Tacotron 2's input, with a checkpoint's text front-end (or the default one): what NVIDIA's torch.hub
    `nvidia_tts_utils` gives (hubconf.py)."""

    def __init__(self, text_processor: TextProcessor):
        self.text_processor = text_processor

    @classmethod
    def from_checkpoint(cls, path: str | Path | None = None, check_hash: bool = True) -> "TextInput":
        if path is None:
            return cls(TextProcessor())
        return cls(text_processor_of(load_checkpoint(local_checkpoint(path, check_hash), RECIPE.name)))

    def prepare_input_sequence(self, texts: list[str], cpu_run: bool = False, device: str | torch.device | None = None
                               ) -> tuple[torch.Tensor, torch.Tensor]:
        """(symbol ids (B, longest) zero-padded, lengths (B,)) in input order, for Tacotron2.infer; on device
        (default: the GPU if there is one, unless cpu_run, NVIDIA's flag)."""
        device = api_device("cpu" if cpu_run and device is None else device)
        return encode_texts(self.text_processor, list(texts), [f"texts[{index}]" for index in range(len(texts))],
                            device)


class Synthesizer:
    """Tacotron 2 + vocoder on one device, in one precision, with per-stage timing: from a Tacotron 2 checkpoint, the
    VocoderSettings and the SynthesisSettings. from_checkpoints is the Python API's way in; from_args builds one from
    the flags of `inference.py -m Tacotron2`."""

    def __init__(self, tacotron2: str, vocoder: VocoderSettings, settings: SynthesisSettings | None = None,
                 device: torch.device = torch.device("cpu"), dtype: torch.dtype = torch.float32):
        settings = settings or SynthesisSettings()
        if settings.batch_size < 1 or settings.sentence_pause < 0:
            raise UserError(f"batch_size must be at least 1 and sentence_pause 0 or more, got {settings.batch_size} "
                            f"and {settings.sentence_pause}")
        self.settings, self.device, self.dtype = settings, device, dtype
        self.batch_size = settings.batch_size
        # NVIDIA's published checkpoint carries no config: it is the default architecture.
        self.tacotron2, checkpoint = load_trained_model(RECIPE, tacotron2, self.device, published_config={},
                                                        flag="--tacotron2")
        self.text = text_processor_of(checkpoint)
        if self.text.n_symbols != self.tacotron2.embedding.num_embeddings:
            raise UserError(f"--tacotron2 {tacotron2}: its symbol table has {self.text.n_symbols} symbols but "
                            f"its embedding {self.tacotron2.embedding.num_embeddings} rows; the file was altered or "
                            "mixes two checkpoints")
        self.audio_params = (AudioParams.from_dict(checkpoint["audio_params"]) if checkpoint.get("audio_params")
                             else AudioParams())
        self.vocoder = load_vocoder(vocoder, self.device, self.dtype, self.audio_params)
        self.vocoder.audio_params.check_matches(self.audio_params, f"the vocoder ({self.vocoder.name})",
                                                f"the Tacotron 2 checkpoint {tacotron2}")
        quantized = check_quantize(settings.quantize, self.device, self.dtype)
        if settings.cuda_graphs:
            check_cuda_graphs(settings, self.device, quantized)
        fast_decoder = default_fast_decoder(settings, self.device)
        fast = fast_decoder or settings.compile or settings.cuda_graphs
        if fast and settings.torchscript:
            raise UserError("--torchscript runs the reference decoder; it cannot be combined with "
                            f"{'--compile' if settings.compile else '--fast-decoder'}: drop one of them")
        if quantized and (settings.compile or settings.torchscript):
            raise UserError("--quantize int8 runs eagerly; it cannot be combined with "
                            f"{'--torchscript' if settings.torchscript else '--compile'}: drop one of them")
        if settings.compile:
            self.tacotron2.decoder.compile_step()
        else:
            self.tacotron2.decoder.fast = fast_decoder
        self.tacotron2.decoder.half_lstm_weights = default_half_lstm_weights(settings, self.device, self.dtype,
                                                                            fast_decoder, quantized)
        self.tacotron2.decoder.native_bf16 = native_bf16()
        if settings.cuda_graphs:
            use_cuda_graphs(self.tacotron2.decoder)
        if quantized:
            if not fast_decoder:
                # Measured on the demo's model (tacotron2/RESULTS.md, "int8 Tacotron 2"): per-tensor int8 LSTMs cost
                # 9-12 CER points; the fast step's per-row int8 products stay within a change of seed.
                print("warning: --quantize int8 with --no-fast-decoder makes the LSTMs int8 with one scale per "
                      "tensor, which degrades the speech (tacotron2/RESULTS.md); drop --no-fast-decoder",
                      file=sys.stderr)
            quantize_tacotron2(self.tacotron2, fast_decoder=fast_decoder)
        use_torchscript = (settings.torchscript if settings.torchscript is not None
                           else self.device.type == "cpu" and not fast and not quantized)
        self.infer = torch.jit.script(self.tacotron2).infer if use_torchscript else self.tacotron2.infer
        # What the run's log calls the decoder path taken
        path = ["compiled fast step" if settings.compile else "fast step" if fast else "reference step"]
        if use_torchscript:
            path.append("TorchScript")
        if quantized:
            path.append("int8")
        if self.tacotron2.decoder.half_lstm_weights:
            path.append(f"LSTM weights in float16 up to {HALF_LSTM_WEIGHTS_MAX_BATCH} utterances"
                        + (", in bf16 beyond" if self.tacotron2.decoder.native_bf16 else ""))
        self.decoder_path = ", ".join(path)
        self.default_denoising_strength = getattr(self.vocoder, "denoising_strength", 0.0)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "Synthesizer":
        """The synthesizer of `inference.py -m Tacotron2`'s parsed flags."""
        return cls(args.tacotron2, vocoder_settings_from_args(args), config_from_args(SynthesisSettings, args),
                   inference_device(args), inference_dtype(args))

    @classmethod
    def from_checkpoints(cls, tacotron2: str | Path, vocoder: str | Path = "griffin-lim",
                         device: str | torch.device | None = None, precision: str = "fp32", batch_size: int = 8,
                         check_hash: bool = True, **options) -> "Synthesizer":
        """tacotron2: a Tacotron 2 checkpoint (ours or NVIDIA's). vocoder: a WaveGlow, HiFi-GAN or WaveNet checkpoint
        (its family read from the file), or "griffin-lim". Either may be a URL whose file name carries its sha256
        prefix. device: default the GPU if there is one. precision: fp32, fp16 or bf16. batch_size: utterances
        synthesized together. options: a SynthesisSettings field or a setting of the vocoder (its flag's Python
        name), e.g. max_decoder_steps=1000 (default: the checkpoint's), torchscript=False, fast_decoder=True,
        half_lstm_weights=False, quantize="int8" (CPU only: common/quantization.py), compile=True; sigma_infer=0.6,
        wn_channels=256 (WaveGlow), hifigan_config="config_v1.json", ema=True (HiFi-GAN), denoising_strength=0.01 (the
        default of synthesize's denoise), griffin_lim_iters=60 (default 32). A value its flag would refuse is a
        UserError naming the option."""
        device, dtype = api_device(device), api_dtype(precision)
        if batch_size < 1:
            raise UserError(f"batch_size must be at least 1, got {batch_size}")
        synthesis_names = {setting.name for setting in dataclasses.fields(SynthesisSettings)} - {"batch_size"}
        unknown = sorted(set(options) - synthesis_names - set(vocoder_option_names()))
        if unknown:
            raise TypeError(f"unknown option(s) {', '.join(unknown)}; the options are "
                            f"{', '.join(sorted(synthesis_names | set(vocoder_option_names())))}")
        if not is_griffin_lim(vocoder):
            vocoder = local_checkpoint(vocoder, check_hash)
        vocoder_options = {key: value for key, value in options.items() if key not in synthesis_names}
        vocoder_settings = vocoder_settings_of_options(vocoder, vocoder_options, compile=options.get("compile", False))
        settings = SynthesisSettings(batch_size=batch_size,
                                     **{key: value for key, value in options.items() if key in synthesis_names})
        check_values_as_flags(settings)
        return cls(local_checkpoint(tacotron2, check_hash), vocoder_settings, settings, device, dtype)

    @property
    def sampling_rate(self) -> int:
        return self.audio_params.sampling_rate

    def synthesize(self, texts: str | list[str], seed: int | None = None, denoise: float | None = None
                   ) -> list[np.ndarray]:
        """The audio of each text (float32 in [-1, 1] at self.sampling_rate), in batches of self.batch_size pieces
        (a text of several sentences is said a sentence at a time, and joined: pieces). seed: seeds Tacotron 2's
        prenet dropout (batch i: seed + i) and the vocoder's noise, so the same seed gives the same audio (default: a
        draw from torch's global generator). denoise: the vocoder's denoising strength for this call (0: off;
        default: the strength it was loaded with; WaveGlow and HiFi-GAN only)."""
        texts = [texts] if isinstance(texts, str) else list(texts)
        seed = int(torch.randint(0, 2**31 - 1, ())) if seed is None else seed
        self._set_vocoder_seed_and_denoising(seed, denoise)
        pieces = self.pieces(texts, [f"texts[{index}]" for index in range(len(texts))])
        audio: list[list[torch.Tensor]] = [[] for _ in texts]
        for batch, result in self.synthesize_pieces(pieces, seed):
            for row, piece in enumerate(batch):
                audio[piece.utterance].append(result["audio"][row, :int(result["audio_lengths"][row])])
        return [self.join(parts).numpy().astype(np.float32) for parts in audio]

    def synthesize_pieces(self, pieces: list[Piece], seed: int) -> Iterator[tuple[list[Piece], dict]]:
        """Each batch of self.batch_size pieces, in order, with its synthesize_batch result; batch i is seeded
        seed + i (what synthesize and inference.py both do)."""
        for index, start in enumerate(range(0, len(pieces), self.batch_size)):
            batch = pieces[start:start + self.batch_size]
            yield batch, self.synthesize_batch([piece.text for piece in batch], [piece.source for piece in batch],
                                               seed + index)

    def max_piece_symbols(self) -> int:
        """The most symbols a piece of text may have: what the demo's voice says within --max-decoder-steps with a
        margin (FRAMES_PER_SYMBOL)."""
        steps = self.settings.max_decoder_steps or self.tacotron2.max_decoder_steps
        return max(1, steps * self.tacotron2.n_frames_per_step // FRAMES_PER_SYMBOL)

    def symbol_count(self, text: str, source: str) -> int:
        try:
            return len(self.text.encode(text, source=source))
        except ValueError:  # a text the front-end refuses: synthesize_batch says so, naming its line
            return len(text)

    def pieces(self, texts: list[str], sources: list[str]) -> list[Piece]:
        """The pieces the decoder says, in order: each text whole, or (settings.split_sentences) its sentences, a
        sentence longer than max_piece_symbols cut at its commas, then between words."""
        if not self.settings.split_sentences:
            return [Piece(index, text, source) for index, (text, source) in enumerate(zip(texts, sources))]
        limit = self.max_piece_symbols()
        pieces = []
        for index, (text, source) in enumerate(zip(texts, sources)):
            parts = [part for sentence in split_sentences(text) or [text]
                     for part in split_long(sentence, limit, lambda piece: self.symbol_count(piece, source))]
            pieces += [Piece(index, part, source if len(parts) == 1 else f"{source} (part {number} of {len(parts)})",
                             number, len(parts)) for number, part in enumerate(parts, 1)]
        return pieces

    def pause_frames(self) -> int:
        return round(self.settings.sentence_pause * self.audio_params.sampling_rate / self.audio_params.hop_length)

    def join(self, parts: list[torch.Tensor]) -> torch.Tensor:
        """The pieces of one text as one: audio (samples,) or mels (n_mels, frames), with settings.sentence_pause
        of silence between them (whole mel frames, so the mels and the audio stay aligned)."""
        if parts[0].dim() == 1:
            pause = parts[0].new_zeros(self.pause_frames() * self.audio_params.hop_length)
        else:
            pause = parts[0].new_full((parts[0].size(0), self.pause_frames()), math.log(LOG_CLAMP_MIN))
        joined = [parts[0]]
        for part in parts[1:]:
            joined += [pause, part]
        return torch.cat(joined, dim=-1)

    def _set_vocoder_seed_and_denoising(self, seed: int, denoise: float | None) -> None:
        if hasattr(self.vocoder, "seed"):  # WaveGlow's noise, WaveNet's sampling
            self.vocoder.seed = seed
        strength = self.default_denoising_strength if denoise is None else denoise
        if hasattr(self.vocoder, "set_denoising_strength"):  # the vocoders with a denoiser (WaveGlow, HiFi-GAN)
            self.vocoder.set_denoising_strength(strength)
        elif denoise:
            raise UserError(f"denoise={denoise}: the {self.vocoder.name} vocoder has no denoiser; drop denoise")

    @torch.no_grad()
    def synthesize_batch(self, texts: list[str], sources: list[str], seed: int, warn_max_steps: bool = True
                         ) -> dict:
        """One batch, padded: mel, mel_lengths, alignments, audio (B, samples), audio_lengths, text_lengths, the
        timings of each stage and the alignment score. sources name the texts in messages."""
        timings = {}
        with Stopwatch(torch.device("cpu")) as preprocessing:
            text, text_lengths = encode_texts(self.text, texts, sources, self.device)
        timings["preprocessing"] = preprocessing.seconds

        generator = torch.Generator(device=self.device).manual_seed(seed)
        with Stopwatch(self.device) as tacotron2_time:
            with autocast(self.device, self.dtype), max_steps_warnings_silenced():  # warned below, naming the line
                result = self.infer(text, text_lengths, self.settings.max_decoder_steps, self.settings.gate_threshold,
                                    generator, max_frames_after_text_end=self.settings.max_frames_after_text_end)
            mel, mel_lengths, alignments, hit_max_steps = result
        timings["tacotron2"] = tacotron2_time.seconds

        # Past each utterance's end the mel is silence for the vocoder (a zero log-mel would be loud).
        valid = lengths_to_mask(mel_lengths, mel.shape[-1]).unsqueeze(1)
        mel = mel.float().masked_fill(~valid, math.log(LOG_CLAMP_MIN))
        with Stopwatch(self.device) as vocoder_time:
            with autocast(self.device, self.dtype):
                audio = self.vocoder(mel)
            audio = audio.float()
        timings["vocoder"] = vocoder_time.seconds
        timings["latency"] = timings["tacotron2"] + timings["vocoder"]
        for index in torch.nonzero(hit_max_steps).flatten().tolist() if warn_max_steps else []:
            print(f"warning: {sources[index]}: reached --max-decoder-steps before it stopped (its gate never fired, "
                  "nor did its attention reach the text's end); the audio is cut off", file=sys.stderr)
        audio_lengths = mel_lengths.cpu() * self.audio_params.hop_length
        health = alignment_health(alignments, text_lengths, mel_lengths, self.tacotron2.n_frames_per_step)
        return {"mel": mel, "mel_lengths": mel_lengths.cpu(), "alignments": alignments, "audio": audio.cpu(),
                "audio_lengths": audio_lengths, "text_lengths": text_lengths.cpu(), "timings": timings,
                "alignment_score": health["score"]}


