"""Text to wav and speech to text in onnxruntime alone, next to eager PyTorch on the same inputs.

    python -m scripts.onnx_pipeline --tacotron2 T.pt (--waveglow W.pt | --hifigan H.pt) --wav2vec2 R.pt -o FOLDER
        [-i phrases/phrase.txt] [--sigma-infer 0.6] [--seed 1] [--threads N] [--repeats N] [--torchscript]
    python -m scripts.onnx_pipeline --quick [waveglow|hifigan] -o FOLDER      # tiny random models, seconds

It exports the checkpoints into FOLDER (scripts/export_onnx.py's files, each checked against PyTorch), then:
- text to wav: the texts (-i, one per line; default two sentences) through the Tacotron 2 encoder, the decoder-step
  loop with its stop gate and the postnet (tacotron2/export.py: OnnxTacotron2), then the vocoder's file (WaveGlow with
  noise z = sigma * standard normal noise drawn by numpy; HiFi-GAN), all in onnxruntime with numpy between the files;
  writes FOLDER/onnx_<n>.wav;
- speech to text: that audio, resampled to 16 kHz, through the wav2vec 2.0 CTC file and greedy CTC decoding with the
  checkpoint's dictionary (wav2vec2/export.py), in numpy.
The same inputs run through eager PyTorch: Tacotron2.infer given the same prenet dropout masks, the vocoder given the
same noise (WaveGlow.infer(mel, sigma, noise)), the recognizer on the same padded batch. The script checks that
onnxruntime agrees with PyTorch: the same mel lengths and mels within MEL_TOLERANCE, audio within AUDIO_TOLERANCE,
logits within LOGITS_TOLERANCE and the same transcripts (else it exits with code 1 after the report). The denoiser is
off on both sides.

It prints the seconds and the real-time factor (compute seconds / seconds of audio: below 1 is faster than real time)
of each stage, onnxruntime next to eager PyTorch, both on --threads threads (default: torch's), the median over
--repeats runs after the checked one. --torchscript adds Tacotron 2 through TorchScript
(torch.jit.script(model).infer: tacotron2/api.py's CPU default), checked and timed the same way. The figures are
only as good as the machine is quiet.

--quick writes tiny random checkpoints (Tacotron 2, the vocoder named, default WaveGlow, and a recognizer) into
FOLDER/quick_checkpoints and runs on them: for tests, and to see the script work without trained models.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from common.audio import LOG_CLAMP_MIN, AudioParams, resample_audio, save_wav
from common.checkpoint import save_checkpoint
from common.trained_model import load_trained_model
from common.errors import ArgumentParser, UserError, exit_on_user_error
from common.onnx_export import largest_difference, require_onnx, session
from common.text import TextProcessor

MEL_TOLERANCE = 1e-3  # the decoder loop: ORT's fast step against eager's reference step, rounding fed back per step
AUDIO_TOLERANCE = 1e-3  # audio in [-1, 1]
LOGITS_TOLERANCE = 1e-3
DEFAULT_TEXTS = ["The quick brown fox jumps over the lazy dog.", "Speech synthesis in onnxruntime."]
ASR_SAMPLING_RATE = 16000

QUICK_TACOTRON2 = dict(n_mel_channels=80, symbols_embedding_dim=32, encoder_embedding_dim=32,
                       encoder_n_convolutions=1, attention_rnn_dim=32, decoder_rnn_dim=32, prenet_dim=16,
                       attention_dim=8, attention_location_n_filters=4, attention_location_kernel_size=5,
                       postnet_embedding_dim=16, postnet_n_convolutions=2, n_frames_per_step=2,
                       max_decoder_steps=24)
QUICK_WAVEGLOW = dict(n_mel_channels=80, flows=4, groups=8, early_every=2, early_size=2, wn_channels=16, wn_layers=2,
                      wn_kernel_size=3)
QUICK_HIFIGAN = {"resblock": "1", "upsample_rates": [8, 8, 4], "upsample_kernel_sizes": [16, 16, 8],
                 "upsample_initial_channel": 16, "resblock_kernel_sizes": [3], "resblock_dilation_sizes": [[1, 3]]}
QUICK_RECOGNIZER = dict(conv_feature_layers="[(32,10,5)]+[(32,3,2)]*2+[(32,2,2)]", encoder_layers=2,
                        encoder_embed_dim=32, encoder_ffn_embed_dim=64, encoder_attention_heads=2, conv_pos=8,
                        conv_pos_groups=4)
QUICK_LETTERS = ["|", "E", "T", "A", "O", "N", "I", "H", "S", "R"]


def write_quick_checkpoints(folder: Path, vocoder: str) -> dict[str, Path]:
    """Tiny random checkpoints in this project's layout: {"tacotron2": path, vocoder: path, "wav2vec2": path}."""
    from hifigan.model import Generator
    from tacotron2.model import Tacotron2
    from wav2vec2.dictionary import Dictionary
    from wav2vec2.model import Wav2Vec2CTC
    from waveglow.model import WaveGlow

    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    audio_params = AudioParams().to_dict()
    text = TextProcessor()
    paths = {name: folder / f"{name}.pt" for name in ("tacotron2", vocoder, "wav2vec2")}
    tacotron2_config = {**QUICK_TACOTRON2, "n_symbols": text.n_symbols}
    save_checkpoint({"model_name": "Tacotron2", "model_config": tacotron2_config,
                     "state_dict": Tacotron2(**tacotron2_config).state_dict(), "audio_params": audio_params,
                     "text": text.to_dict()}, paths["tacotron2"])
    if vocoder == "waveglow":
        model = WaveGlow(**QUICK_WAVEGLOW)
        with torch.no_grad():  # the untrained couplings are the identity: give them something to do
            for coupling in model.WN:
                coupling.end.weight.normal_(0, 0.05)
        save_checkpoint({"model_name": "WaveGlow", "model_config": QUICK_WAVEGLOW, "state_dict": model.state_dict(),
                         "audio_params": audio_params}, paths[vocoder])
    else:
        weights = {f"generator.{key}": value for key, value in Generator(**QUICK_HIFIGAN).state_dict().items()}
        save_checkpoint({"model_name": "HiFiGAN", "model_config": {"generator": QUICK_HIFIGAN},
                         "state_dict": weights, "audio_params": audio_params}, paths[vocoder])
    dictionary = Dictionary(QUICK_LETTERS)
    recognizer_config = {**QUICK_RECOGNIZER, "vocab_size": len(dictionary), "final_dropout": 0.0,
                         "freeze_finetune_updates": 0}
    save_checkpoint({"model_name": "wav2vec2", "model_config": recognizer_config,
                     "state_dict": Wav2Vec2CTC(QUICK_RECOGNIZER, len(dictionary)).state_dict(),
                     "audio_params": AudioParams(sampling_rate=ASR_SAMPLING_RATE).to_dict(),
                     "text": {"symbols": dictionary.symbols_with_specials}}, paths["wav2vec2"])
    return paths


def median_seconds(run: Callable[[], object], repeats: int) -> float:
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


class Report:
    """Agreement checks and timings, printed at the end."""

    def __init__(self):
        self.checks: list[tuple[str, str, bool]] = []
        self.rows: list[tuple[str, float, dict[str, float]]] = []

    def check(self, what: str, difference: float, tolerance: float) -> None:
        self.checks.append((what, f"{difference:.2e} (tolerance {tolerance:g})", difference <= tolerance))

    def check_equal(self, what: str, onnx_value, torch_value) -> None:
        same = onnx_value == torch_value
        self.checks.append((what, "equal" if same else f"onnxruntime {onnx_value!r}, PyTorch {torch_value!r}", same))

    def time(self, stage: str, audio_seconds: float, seconds: dict[str, float]) -> None:
        self.rows.append((stage, audio_seconds, seconds))

    def show(self) -> bool:
        print("onnxruntime against eager PyTorch on the same inputs:")
        for what, result, passed in self.checks:
            print(f"  {'ok' if passed else 'MISMATCH'}  {what}: {result}")
        runtimes = list(dict.fromkeys(name for _, _, seconds in self.rows for name in seconds))
        print(f"\n{'stage':<38} {'audio s':>8} " + " ".join(f"{name + ' s':>16} {'RTF':>7}" for name in runtimes))
        for stage, audio_seconds, seconds in self.rows:
            cells = " ".join(f"{seconds[name]:>16.4f} {seconds[name] / audio_seconds:>7.4f}" if name in seconds
                             else f"{'':>16} {'':>7}" for name in runtimes)
            print(f"{stage:<38} {audio_seconds:>8.2f} {cells}")
        return all(passed for _, _, passed in self.checks)


def pad_ids(sequences: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    lengths = np.array([len(ids) for ids in sequences], dtype=np.int64)
    text = np.zeros((len(sequences), lengths.max()), dtype=np.int64)
    for row, ids in enumerate(sequences):
        text[row, :len(ids)] = ids
    return text, lengths


def silence_past_lengths(mel: np.ndarray, mel_lengths: np.ndarray) -> np.ndarray:
    """What the vocoder reads past each utterance's end: silence (a zero log mel would be loud), as tacotron2/api.py
    gives it."""
    valid = np.arange(mel.shape[2])[None, None, :] < mel_lengths[:, None, None]
    return np.where(valid, mel, np.float32(math.log(LOG_CLAMP_MIN))).astype(np.float32)


def text_to_wav(args, folder: Path, threads: int, report: Report) -> tuple[list[np.ndarray], int]:
    """Returns the onnxruntime audio of each text (trimmed, clamped to [-1, 1]) and its sampling rate."""
    from tacotron2 import export as tacotron2_export
    from tacotron2.api import text_processor_of
    from tacotron2.model import max_steps_warnings_silenced
    from tacotron2.recipe import RECIPE

    model, checkpoint = load_trained_model(RECIPE, args.tacotron2, torch.device("cpu"), published_config={},
                                           flag="--tacotron2")
    text_processor = text_processor_of(checkpoint)
    audio_params = (AudioParams.from_dict(checkpoint["audio_params"]) if checkpoint.get("audio_params")
                    else AudioParams())
    texts = read_texts(args.input)
    try:
        text, text_lengths = pad_ids([text_processor.encode(line, source=f"text {n}") for n, line in
                                      enumerate(texts, 1)])
    except ValueError as error:
        raise UserError(str(error)) from error

    tacotron2_export.export(model, folder, what="scripts.onnx_pipeline")
    vocoder, vocoder_name = export_vocoder(args, folder)
    onnx_tacotron2 = tacotron2_export.OnnxTacotron2(folder, threads)
    vocoder_session = session(folder / vocoder.file, threads)

    rng = np.random.default_rng(args.seed)
    max_steps, threshold = model.max_decoder_steps, model.gate_threshold
    prenet_masks = onnx_tacotron2.draw_prenet_masks(rng, max_steps)

    def onnx_tacotron2_run():
        return onnx_tacotron2.infer(text, text_lengths, prenet_masks, max_steps, threshold, model.early_stopping,
                                    model.max_frames_after_text_end)

    def torch_tacotron2_run(infer=model.infer):
        with torch.no_grad(), max_steps_warnings_silenced():  # reported once below, from onnxruntime's run
            return infer(torch.from_numpy(text), torch.from_numpy(text_lengths), max_steps, threshold, None,
                         torch.from_numpy(prenet_masks))

    onnx_result, torch_result = onnx_tacotron2_run(), torch_tacotron2_run()
    report.check_equal("Tacotron 2 mel lengths", onnx_result.mel_lengths.tolist(), torch_result.mel_lengths.tolist())
    for number in np.flatnonzero(onnx_result.hit_max_decoder_steps) + 1:
        print(f"note: text {number} reached max_decoder_steps={max_steps} before it stopped")
    if onnx_result.mel.shape == tuple(torch_result.mel.shape):
        report.check("Tacotron 2 mel (encoder, decoder-step loop, postnet)",
                     largest_difference(onnx_result.mel, torch_result.mel.numpy()), MEL_TOLERANCE)
    mel = silence_past_lengths(onnx_result.mel, onnx_result.mel_lengths)
    noise = vocoder.draw_noise(rng, mel)
    onnx_audio = vocoder.run_onnx(vocoder_session, mel, noise)
    torch_audio = vocoder.run_torch(mel, noise)
    report.check(f"{vocoder_name} audio (the same mel)", largest_difference(onnx_audio, torch_audio), AUDIO_TOLERANCE)

    audio_lengths = onnx_result.mel_lengths * audio_params.hop_length
    audio_seconds = float(audio_lengths.sum()) / audio_params.sampling_rate
    repeats = args.repeats
    tacotron2_seconds = {"onnxruntime": median_seconds(onnx_tacotron2_run, repeats),
                         "PyTorch": median_seconds(torch_tacotron2_run, repeats)}
    if args.torchscript:
        scripted = torch.jit.script(model).infer
        scripted_result = torch_tacotron2_run(scripted)
        report.check_equal("TorchScript mel lengths", scripted_result.mel_lengths.tolist(),
                           torch_result.mel_lengths.tolist())
        report.check("TorchScript mel against eager", largest_difference(scripted_result.mel.numpy(),
                                                                         torch_result.mel.numpy()), MEL_TOLERANCE)
        tacotron2_seconds["TorchScript"] = median_seconds(lambda: torch_tacotron2_run(scripted), repeats)
    vocoder_seconds = {"onnxruntime": median_seconds(lambda: vocoder.run_onnx(vocoder_session, mel, noise), repeats),
                       "PyTorch": median_seconds(lambda: vocoder.run_torch(mel, noise), repeats)}
    report.time(f"Tacotron 2 ({len(texts)} texts, batch)", audio_seconds, tacotron2_seconds)
    report.time(f"{vocoder_name}", audio_seconds, vocoder_seconds)
    report.time("text to wav", audio_seconds, {name: tacotron2_seconds[name] + vocoder_seconds[name]
                                               for name in ("onnxruntime", "PyTorch")})

    audio = [np.clip(onnx_audio[row, :length], -1.0, 1.0) for row, length in enumerate(audio_lengths)]
    for number, samples in enumerate(audio, 1):
        save_wav(folder / f"onnx_{number}.wav", samples, audio_params.sampling_rate)
    return audio, audio_params.sampling_rate


def read_texts(path: str | None) -> list[str]:
    if path is None:
        return DEFAULT_TEXTS
    try:
        lines = [line.strip() for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    except OSError as error:
        raise UserError(f"-i {path}: cannot read it: {error.strerror}") from error
    if not lines:
        raise UserError(f"-i {path}: holds no text")
    return lines


class WaveGlowRun:
    file = "waveglow.onnx"

    def __init__(self, model, sigma: float):
        self.model, self.sigma = model, sigma

    def draw_noise(self, rng: np.random.Generator, mel: np.ndarray) -> np.ndarray:
        """Standard normal noise in WaveGlow.forward's z layout."""
        groups = self.model.groups
        return rng.standard_normal((mel.shape[0], groups, mel.shape[2] * self.model.hop_length // groups),
                                   dtype=np.float32)

    def run_onnx(self, onnx_session, mel: np.ndarray, noise: np.ndarray) -> np.ndarray:
        return onnx_session.run(None, {"mel": mel, "z": np.float32(self.sigma) * noise})[0]

    def run_torch(self, mel: np.ndarray, noise: np.ndarray) -> np.ndarray:
        return self.model.infer(torch.from_numpy(mel), self.sigma, torch.from_numpy(noise)).numpy()


class HiFiGANRun:
    file = "hifigan.onnx"

    def __init__(self, generator):
        self.generator = generator

    def draw_noise(self, rng: np.random.Generator, mel: np.ndarray) -> None:
        return None

    def run_onnx(self, onnx_session, mel: np.ndarray, noise: None) -> np.ndarray:
        return onnx_session.run(None, {"mel": mel})[0][:, 0]

    def run_torch(self, mel: np.ndarray, noise: None) -> np.ndarray:
        with torch.no_grad():
            return self.generator(torch.from_numpy(mel))[:, 0].numpy()


def export_vocoder(args, folder: Path):
    if args.waveglow:
        from waveglow import export
        from waveglow.vocoder import load_waveglow

        model, _ = load_waveglow(args.waveglow, torch.device("cpu"), flag="--waveglow")
        export.export(model, folder, what="scripts.onnx_pipeline")
        return WaveGlowRun(model.float().eval(), args.sigma_infer), "WaveGlow"
    from hifigan import export
    from hifigan.vocoder import load_generator

    generator, audio_params, _ = load_generator(args.hifigan, torch.device("cpu"), flag="--hifigan")
    generator = generator.float().eval()
    export.export_onnx(generator, folder / HiFiGANRun.file, audio_params.n_mel_channels)
    return HiFiGANRun(generator), "HiFi-GAN"


def speech_to_text(args, folder: Path, audio: list[np.ndarray], sampling_rate: int, threads: int,
                   report: Report) -> None:
    from wav2vec2 import export
    from wav2vec2.api import load_ctc_model
    from wav2vec2.decoding import transcripts

    model, dictionary = load_ctc_model(args.wav2vec2, torch.device("cpu"), flag="--wav2vec2")
    export.export(model, folder, what="scripts.onnx_pipeline")
    onnx_session = session(folder / export.WAV2VEC2_FILE, threads)

    utterances = [resample_audio(samples, sampling_rate, ASR_SAMPLING_RATE) for samples in audio]
    if model.config["normalize"]:  # zero mean, unit variance per utterance, as the data side does
        utterances = [(samples - samples.mean()) / np.sqrt(samples.var() + 1e-5) for samples in utterances]
    lengths = np.array([len(samples) for samples in utterances])
    source = np.zeros((len(utterances), lengths.max()), dtype=np.float32)
    for row, samples in enumerate(utterances):
        source[row, :len(samples)] = samples
    padding_mask = np.arange(source.shape[1])[None, :] >= lengths[:, None]

    def onnx_run():
        logits, frame_padding_mask = onnx_session.run(export.OUTPUTS, {"source": source, "padding_mask": padding_mask})
        return logits, frame_padding_mask, export.greedy_transcripts(logits, frame_padding_mask, dictionary)

    def torch_run():
        with torch.no_grad():
            output = model(torch.from_numpy(source), torch.from_numpy(padding_mask))
        return output["logits"], transcripts(output["logits"], output["padding_mask"], dictionary)

    onnx_logits, _, onnx_texts = onnx_run()
    torch_logits, torch_texts = torch_run()
    report.check("wav2vec 2.0 logits", largest_difference(onnx_logits, torch_logits.numpy()), LOGITS_TOLERANCE)
    report.check_equal("transcripts", onnx_texts, torch_texts)
    for number, text in enumerate(onnx_texts, 1):
        print(f"onnx_{number}.wav -> {text!r}")
    audio_seconds = float(lengths.sum()) / ASR_SAMPLING_RATE
    report.time(f"speech to text ({len(utterances)} utterances, batch)", audio_seconds,
                {"onnxruntime": median_seconds(onnx_run, args.repeats),
                 "PyTorch": median_seconds(torch_run, args.repeats)})


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(description="Text to wav and speech to text in onnxruntime, against eager PyTorch",
                            allow_abbrev=False)
    parser.add_argument("--tacotron2", help="Tacotron 2 checkpoint")
    vocoders = parser.add_mutually_exclusive_group()
    vocoders.add_argument("--waveglow", help="WaveGlow checkpoint")
    vocoders.add_argument("--hifigan", help="HiFi-GAN checkpoint (ours, NVIDIA's)")
    parser.add_argument("--wav2vec2", help="fine-tuned (CTC) wav2vec 2.0 checkpoint, with its dictionary")
    parser.add_argument("--quick", nargs="?", const="waveglow", choices=("waveglow", "hifigan"), default=None,
                        help="tiny random models (with this vocoder, default waveglow) instead of checkpoints")
    parser.add_argument("-o", "--output", required=True, metavar="FOLDER", help="ONNX files and wavs go here")
    parser.add_argument("-i", "--input", default=None, help="texts, one per line (default: two sentences)")
    parser.add_argument("-s", "--sigma-infer", type=float, default=0.6, help="WaveGlow's noise scale")
    parser.add_argument("--seed", type=int, default=1, help="seeds the prenet masks and WaveGlow's noise")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads of both onnxruntime and PyTorch (default: torch.get_num_threads())")
    parser.add_argument("--repeats", type=int, default=1, help="timed runs per stage after the checked one (median)")
    parser.add_argument("--torchscript", action="store_true",
                        help="also run Tacotron 2 through TorchScript (tacotron2/api.py's CPU default)")
    return parser


def main(argv: list[str] | None = None) -> bool:
    args = build_parser().parse_args(argv)
    folder = Path(args.output)
    if args.repeats < 1:
        raise UserError(f"--repeats must be at least 1, got {args.repeats}")
    if args.threads is not None and args.threads < 1:
        raise UserError(f"--threads must be at least 1, got {args.threads}")
    if args.quick:
        if args.tacotron2 or args.waveglow or args.hifigan or args.wav2vec2:
            raise UserError("--quick makes its own tiny models: drop the checkpoints (or --quick)")
        paths = write_quick_checkpoints(folder / "quick_checkpoints", args.quick)
        args.tacotron2, args.wav2vec2 = str(paths["tacotron2"]), str(paths["wav2vec2"])
        setattr(args, args.quick, str(paths[args.quick]))
    elif not (args.tacotron2 and (args.waveglow or args.hifigan) and args.wav2vec2):
        raise UserError("give --tacotron2, --waveglow or --hifigan, and --wav2vec2 checkpoints (or --quick)")
    require_onnx("scripts.onnx_pipeline")
    threads = args.threads or torch.get_num_threads()
    torch.set_num_threads(threads)
    folder.mkdir(parents=True, exist_ok=True)

    report = Report()
    audio, sampling_rate = text_to_wav(args, folder, threads, report)
    speech_to_text(args, folder, audio, sampling_rate, threads, report)
    print()
    agreed = report.show()
    if not agreed:
        print("error: onnxruntime and PyTorch disagree (MISMATCH above)", file=sys.stderr)
        sys.exit(1)
    return agreed


if __name__ == "__main__":
    exit_on_user_error(main)
