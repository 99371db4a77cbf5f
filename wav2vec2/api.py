"""Speech to text in Python: a fine-tuned (CTC) wav2vec 2.0 and its letters, loaded once.

    from wav2vec2.api import Recognizer
    recognizer = Recognizer.from_checkpoint("checkpoint_wav2vec2_best.pt", device="cpu")
    texts = recognizer.transcribe(["a.wav", "b.flac"])              # or float arrays, with sampling_rate=...

The checkpoint is one of ours, NVIDIA's or fairseq's fine-tuned files (read without unpickling code,
wav2vec2/checkpoints.py), the folder `python -m scripts.export_weights` makes of one, a Hugging Face Wav2Vec2ForCTC
folder (wav2vec2/convert.py), or the URL of a file, checked against the sha256 prefix in its name (common/api.py). Audio
of any rate is resampled to the model's 16 kHz. Utterances are batched by length; the model is padding-aware, so each
gets what it gets alone. Greedy CTC decoding, or a beam search (transcribe(decoder=...)).
`inference.py -m wav2vec2` (wav2vec2/inference.py) is the command line over this.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
import torch
from torch.nn import functional as F

from common.api import api_device, api_dtype, local_checkpoint
from common.audio import load_wav, resample_audio
from common.checkpoint import describe_source, load_model_state
from common.cpu import native_bf16, vectorized_int8_products
from common.errors import UserError
from common.exported_weights import is_exported_folder, read_exported
from common.inference_args import autocast
from common.quantization import check_quantize, quantize_int8
from wav2vec2.masking import conv_output_lengths
from wav2vec2.model import parse_conv_feature_layers
from wav2vec2 import checkpoints
from wav2vec2.decoding import BeamSearchDecoder, transcripts
from wav2vec2.dictionary import Dictionary
from wav2vec2.recipe import RECIPE

SAMPLING_RATE = 16000  # the rate of every published wav2vec 2.0
# A recording longer than CHUNK_SECONDS is read in chunks with CONTEXT_SECONDS of context on either side: measured
# on the demo's recognizer in wav2vec2/RESULTS.md ("Long recordings").
CHUNK_SECONDS = 30.0
CONTEXT_SECONDS = 5.0
# bf16 autocast is the CPU's default precision (precision="auto") where the CPU computes bf16 natively: the tolerance
# is 0.5 points of greedy CER on each of make demo-asr's test sets, and bf16 moved them by 0.05 at most, with a Base
# model twice as fast (wav2vec2/RESULTS.md, "bf16 and CPUs"; experiments/cpu_bf16). int8 (quantize="int8") runs in
# fp32.
BF16_WITHIN_TOLERANCE = True
# int8 linear layers and convolutions are the default (quantize="auto") on a CPU without native bf16 whose int8
# products are vectorized, unless a precision is asked for: by the same tolerance, int8 moved make demo-asr's CER by
# 0.21 points at most, and a Base model reads 1.4-1.6x faster so with every kernel held to AVX2 (wav2vec2/RESULTS.md,
# "int8 linear layers and convolutions").
INT8_WITHIN_TOLERANCE = True


def default_quantize(device: torch.device, precision_asked: bool) -> str:
    """What quantize="auto" chooses: int8 on a CPU without native bf16 (where bf16 is the default instead) whose int8
    products are vectorized, unless a precision was asked for (fp32 means float32 throughout); none elsewhere."""
    if (INT8_WITHIN_TOLERANCE and device.type == "cpu" and not precision_asked and not native_bf16()
            and vectorized_int8_products()):
        return "int8"
    return "none"


def bf16_by_default(quantize: str = "none") -> bool:
    """Whether the recognizer may take bf16 where no precision is asked for: int8 runs around fp32."""
    return BF16_WITHIN_TOLERANCE and quantize == "none"


@dataclass
class Utterance:
    number: int  # position in the input, from 1
    name: str
    audio: torch.Tensor
    reference: str | None = None


def read_found_checkpoint(path: str | Path, flag: str | None) -> dict:
    """checkpoints.read_any_checkpoint's dict (model_config, state_dict, symbols, format) of a file, of a folder
    scripts.export_weights wrote (its dictionary is in its metadata), or of a Hugging Face model folder (converted in
    memory)."""
    if is_exported_folder(path):
        metadata, state_dict = read_exported(path, RECIPE.name)
        return {"model_config": metadata["model_config"], "state_dict": state_dict,
                "symbols": (metadata.get("text") or {}).get("symbols"), "format": "exported"}
    if Path(path).is_dir():
        from wav2vec2.convert import from_hf  # imported late: only HF folders need it

        converted = from_hf(path)
        text = converted.get("text") or {}
        return {"model_config": converted["model_config"], "state_dict": converted["state_dict"],
                "symbols": text.get("symbols"), "format": "huggingface"}
    return checkpoints.read_any_checkpoint(path, flag)


def load_ctc_model(path: str | Path, device: torch.device, labels_path: str | None = None,
                   flag: str | None = "--checkpoint") -> tuple[torch.nn.Module, Dictionary]:
    """The CTC model of a fine-tuned checkpoint (ours, NVIDIA's, fairseq's, or an HF folder) in eval mode on device,
    and its dictionary (the file's, or labels_path's dict.ltr.txt). flag: the option that gave the path, for
    messages."""
    source = describe_source(path, flag)
    found = read_found_checkpoint(path, flag)
    config = found["model_config"]
    if "vocab_size" not in config:
        raise UserError(f"{source} is a pre-trained wav2vec 2.0 without a CTC head; "
                        "fine-tune it first (train.py -m wav2vec2 finetune --w2v-path ...)")
    model = RECIPE.build_model(config)
    load_model_state(model, found["state_dict"], source)
    if labels_path:
        dictionary = Dictionary.load(labels_path)
    elif found["symbols"]:
        dictionary = Dictionary.from_dict({"symbols": found["symbols"]})
    else:
        raise UserError(f"{source} carries no dictionary; give --labels-path dict.ltr.txt")
    if len(dictionary) != config["vocab_size"]:
        raise UserError(f"the dictionary has {len(dictionary)} symbols but the checkpoint's CTC head has "
                        f"{config['vocab_size']} outputs: give the dictionary it was trained with (--labels-path)")
    return model.to(device).eval(), dictionary


@dataclass
class Window:
    """What the model reads of an utterance in one pass: all of it, or (a long recording) one chunk with some
    context on each side, whose output frames outside `keep` are dropped."""
    utterance: Utterance
    audio: torch.Tensor
    keep: tuple[int, int] | None  # the window's output frames that are the utterance's (None: all its valid ones)
    part: int = 1
    parts: int = 1


def samples_for(frames: int, conv_layers: list[tuple[int, int, int]]) -> int:
    """The fewest samples that give `frames` frames."""
    for _, kernel, stride in reversed(conv_layers):
        frames = (frames - 1) * stride + kernel
    return frames


def windows_of(utterance: Utterance, conv_layers: list[tuple[int, int, int]], chunk_samples: int,
               context_samples: int) -> list[Window]:
    """An utterance longer than chunk_samples as chunks of about that length, each read with about context_samples
    more on either side (where there are any). A window starts on a multiple of the extractor's total stride, so
    its frames are the whole recording's frames, and the chunks' kept frames join into exactly the frames the whole
    recording gives, each computed with its context."""
    samples = utterance.audio.numel()
    if chunk_samples <= 0 or samples <= chunk_samples:
        return [Window(utterance, utterance.audio, None)]
    stride = math.prod(layer[2] for layer in conv_layers)
    total_frames = int(conv_output_lengths(samples, conv_layers))
    chunk_frames, context_frames = max(1, chunk_samples // stride), context_samples // stride
    windows = []
    for start in range(0, total_frames, chunk_frames):
        end = min(start + chunk_frames, total_frames)
        first, last = max(0, start - context_frames), min(total_frames, end + context_frames)
        audio = utterance.audio[first * stride:first * stride + samples_for(last - first, conv_layers)]
        windows.append(Window(utterance, audio, (start - first, end - first), len(windows) + 1))
    for window in windows:
        window.parts = len(windows)
    return windows


def batches_by_length(utterances: list[Utterance], batch_size: int) -> list[list[Utterance]]:
    ordered = sorted(utterances, key=lambda utterance: utterance.audio.numel(), reverse=True)
    return [ordered[start:start + batch_size] for start in range(0, len(ordered), batch_size)]


def pad(batch: list[Utterance], device: torch.device) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(the batch's audio padded to the longest (B, T), its padding mask (B, T), True = padding). The mask is None
    where no utterance is shorter (one utterance, windows of one length): the model's padding-aware path costs a
    Base forward a sixth more on the CPU (experiments/wav2vec2_padding_mask/) and changes nothing there."""
    lengths = torch.tensor([utterance.audio.numel() for utterance in batch])
    source = torch.zeros(len(batch), int(lengths.max()))
    for row, utterance in enumerate(batch):
        source[row, :utterance.audio.numel()] = utterance.audio
    if bool((lengths == lengths.max()).all()):
        return source.to(device), None
    padding_mask = torch.arange(source.shape[1])[None, :] >= lengths[:, None]
    return source.to(device), padding_mask.to(device)


@torch.no_grad()
def recognise(model, batch: list[Utterance], device, dtype) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(logits (B, frames, labels) in float32, the frames' padding mask or None) of one batch."""
    source, padding_mask = pad(batch, device)
    with autocast(device, dtype):
        output = model(source, padding_mask=padding_mask)
    return output["logits"].float(), output["padding_mask"]


def valid_frames(logits: torch.Tensor, frame_padding_mask: torch.Tensor | None, row: int) -> int:
    return logits.shape[1] if frame_padding_mask is None else int((~frame_padding_mask[row]).sum())


def audio_from_array(audio, sampling_rate: int, to_rate: int, source: str) -> np.ndarray:
    """A mono float32 array at to_rate from a 1-D array (float in [-1, 1], or integer PCM) or tensor."""
    if isinstance(audio, torch.Tensor):
        audio = audio.detach().cpu().numpy()
    audio = np.asarray(audio)
    if audio.ndim != 1:
        raise UserError(f"{source} has shape {audio.shape}: give each utterance as a 1-D (mono) array")
    if audio.size == 0:
        raise UserError(f"{source} holds no samples")
    if np.issubdtype(audio.dtype, np.integer):  # PCM: full scale is the integer type's range
        audio = audio / float(np.iinfo(audio.dtype).max + 1)
    elif not np.issubdtype(audio.dtype, np.floating):
        raise UserError(f"{source} is an array of {audio.dtype}: give float audio in [-1, 1] (or integer PCM)")
    audio = audio.astype(np.float32, copy=False)  # a long recording is not copied for nothing
    return resample_audio(audio, sampling_rate, to_rate) if sampling_rate != to_rate else audio


class Recognizer:
    """A fine-tuned wav2vec 2.0 CTC model and its dictionary, on one device, in one precision. A recording longer
    than chunk_seconds is read in chunks of that length with context_seconds more on either side (frames of the
    context dropped), and its frames decoded together, so memory stays flat with length and no word is cut at a
    chunk's edge (0: every recording whole)."""

    sampling_rate = SAMPLING_RATE

    def __init__(self, model: torch.nn.Module, dictionary: Dictionary, device: torch.device,
                 dtype: torch.dtype = torch.float32, batch_size: int = 8, chunk_seconds: float = CHUNK_SECONDS,
                 context_seconds: float = CONTEXT_SECONDS, quantize: str = "none"):
        if batch_size < 1:
            raise UserError(f"batch_size must be at least 1, got {batch_size}")
        if chunk_seconds < 0 or context_seconds < 0:
            raise UserError(f"chunk_seconds and context_seconds must be 0 or more, got {chunk_seconds} and "
                            f"{context_seconds}")
        self.model, self.dictionary = model, dictionary
        self.device, self.dtype, self.batch_size = device, dtype, batch_size
        self.chunk_seconds, self.context_seconds = chunk_seconds, context_seconds
        self.quantize = quantize  # what model's layers were quantized to ("none" or "int8"), for logs

    @classmethod
    def from_checkpoint(cls, path: str | Path, device: str | torch.device | None = None, precision: str = "auto",
                        batch_size: int = 8, labels_path: str | None = None, check_hash: bool = True,
                        flag: str | None = None, quantize: str = "auto", compile: bool = False,
                        chunk_seconds: float = CHUNK_SECONDS, context_seconds: float = CONTEXT_SECONDS
                        ) -> "Recognizer":
        """path: a fine-tuned checkpoint (ours, NVIDIA's, fairseq's), its exported folder, an HF Wav2Vec2ForCTC
        folder, or a URL whose file name carries its sha256 prefix. device: default the GPU if there is one.
        precision: fp32, fp16 or bf16 (autocast); auto (the default): bf16 on a CPU that computes it natively (unless
        quantize), else fp32 (common.cpu.default_dtype). labels_path: dict.ltr.txt for a file that carries no
        dictionary.
        flag: the command-line option that gave the path, for messages. quantize: "int8" for int8 linear layers and
        feature-extractor convolutions (CPU only, common/quantization.py), "none" for float; "auto" (the default):
        int8 on a CPU without native bf16 whose int8 products are vectorized, when precision is "auto"
        (default_quantize). compile: torch.compile the model (its
        first batch of each new length pays the compile time). chunk_seconds, context_seconds: how a long recording
        is read (the class's docstring)."""
        device = api_device(device)
        if quantize == "auto":
            quantize = default_quantize(device, precision_asked=not (isinstance(precision, str)
                                                                     and precision == "auto"))
        model, dictionary = load_ctc_model(local_checkpoint(path, check_hash), device, labels_path, flag)
        dtype = api_dtype(precision, device, bf16_by_default(quantize))
        if check_quantize(quantize, device, dtype):
            quantize_int8(model, {torch.nn.Linear, torch.nn.Conv1d})
        if compile:
            model.compile()
        return cls(model, dictionary, device, dtype, batch_size, chunk_seconds, context_seconds, quantize)

    @property
    def labels(self) -> list[str]:
        """What each column of the log-probabilities is: the dictionary's symbols in index order (blank first)."""
        return list(self.dictionary.symbols_with_specials)

    def utterances(self, audio, sampling_rate: int | None = None) -> list[Utterance]:
        """Each item (a path, or a 1-D array at sampling_rate, default the model's) as 16 kHz mono audio,
        normalised where the model was trained so."""
        one = isinstance(audio, (str, Path)) or (isinstance(audio, (np.ndarray, torch.Tensor)) and audio.ndim == 1)
        items = [audio] if one else list(audio)  # a 2-D array: one utterance per row
        normalize = self.model.config["normalize"]
        utterances = []
        for number, item in enumerate(items, 1):
            if isinstance(item, (str, Path)):
                waveform = load_wav(Path(item), self.sampling_rate, source=f"audio {number}", mix_to_mono=True,
                                    resample=True, normalize=normalize)
                utterances.append(Utterance(number, str(item), waveform))
                continue
            name = f"audio {number}"
            samples = audio_from_array(item, sampling_rate or self.sampling_rate, self.sampling_rate, name)
            waveform = torch.from_numpy(np.ascontiguousarray(samples))
            if normalize:  # as load_wav: zero mean, unit variance over the utterance (fairseq's --normalize)
                waveform = F.layer_norm(waveform, waveform.shape)
            utterances.append(Utterance(number, name, waveform))
        return utterances

    def logits(self, batch: list[Utterance] | list[Window]) -> tuple[torch.Tensor, torch.Tensor | None]:
        """One batch's logits (B, frames, labels) and the frames' padding mask (None: no padding)."""
        return recognise(self.model, batch, self.device, self.dtype)

    def windows(self, utterances: list[Utterance]) -> list[Window]:
        """What the model reads of the utterances: each whole, or a long one in chunks with context."""
        conv_layers = parse_conv_feature_layers(self.model.config["conv_feature_layers"])
        return [window for utterance in utterances
                for window in windows_of(utterance, conv_layers, round(self.chunk_seconds * self.sampling_rate),
                                         round(self.context_seconds * self.sampling_rate))]

    def window_batches(self, utterances: list[Utterance]) -> list[list[Window]]:
        return batches_by_length(self.windows(utterances), self.batch_size)

    def utterance_logits(self, utterances: list[Utterance], on_batch=None) -> Iterator[tuple[Utterance, torch.Tensor]]:
        """(utterance, its logits (frames, labels) in float32 on the CPU) as each utterance's last window is read,
        the windows batched by length. on_batch(batch of windows) runs the model on one batch (default:
        self.logits); a caller may time it. A progress bar shows on a terminal when a recording is chunked."""
        batches = self.window_batches(utterances)
        chunked = any(window.parts > 1 for batch in batches for window in batch)
        progress = None
        if chunked and sys.stderr.isatty():
            from tqdm import tqdm  # imported late: only long recordings on a terminal show it

            progress = tqdm(total=sum(map(len, batches)), desc="windows", unit="window", leave=False)
        parts: dict[int, dict[int, torch.Tensor]] = {}
        for batch in batches:
            logits, frame_padding_mask = (on_batch or self.logits)(batch)
            for row, window in enumerate(batch):
                first, last = window.keep or (0, valid_frames(logits, frame_padding_mask, row))
                kept = parts.setdefault(window.utterance.number, {})
                kept[window.part] = logits[row, first:last].float().cpu()
                if len(kept) == window.parts:
                    yield window.utterance, torch.cat([kept[part] for part in range(1, window.parts + 1)])
                    del parts[window.utterance.number]
            if progress is not None:
                progress.update(len(batch))
        if progress is not None:
            progress.close()

    def transcribe(self, audio, sampling_rate: int | None = None, return_log_probs: bool = False,
                   decoder: BeamSearchDecoder | None = None):
        """audio: paths of sound files (at any rate, channels mixed; sampling_rate is for arrays) or 1-D arrays at
        sampling_rate (default 16 kHz), one or a list (a 2-D array: one per row), of any length (a long recording is
        read in chunks). Returns the texts in input order; with return_log_probs, (texts, log-probabilities): per
        utterance a float32 array (frames, len(labels)), the CTC's log-softmax over self.labels per frame. decoder:
        None for greedy decoding, or a beam search, `BeamSearchDecoder(recognizer.dictionary, beam_size, lm_path,
        lm_weight, word_score)` (wav2vec2/decoding.py)."""
        utterances = self.utterances(audio, sampling_rate)
        texts: dict[int, str] = {}
        log_probs: dict[int, np.ndarray] = {}
        for utterance, logits in self.utterance_logits(utterances):
            texts[utterance.number] = transcripts(logits.unsqueeze(0), None, self.dictionary, decoder)[0]
            if return_log_probs:
                log_probs[utterance.number] = logits.log_softmax(-1).numpy()
        numbers = [utterance.number for utterance in utterances]
        if return_log_probs:
            return [texts[number] for number in numbers], [log_probs[number] for number in numbers]
        return [texts[number] for number in numbers]
