"""Ground-truth-aligned (GTA) mels for training a vocoder (HiFi-GAN's fine-tuning, the mel inverter) on what
Tacotron 2 really outputs.

    python -m scripts.extract_gta_mels --tacotron2 T.pt -d data/LJSpeech-1.1 \
        --filelists filelists/ljs_audio_text_train_filelist.txt filelists/ljs_audio_text_val_filelist.txt \
        --output-dir data/LJSpeech-1.1/mels-gta [-bs 16] [--seed 1234] [--cpu] [--overwrite]

For each `wavs/<ID>.wav|text` line, Tacotron 2 runs teacher-forced: the decoder reads the ground-truth mel of the wav
(common/audio.py's, as in training) and predicts each next frame, so the output (after the postnet) has exactly the
audio's frame count and is frame-aligned with it, while carrying the model's own smoothing and errors, which is what
the vocoder must learn to undo. This is how NVIDIA's FastPitch extraction for HiFi-GAN works (teacher-forced) and
how the HiFi-GAN paper fine-tuned on Tacotron 2. The prenet's dropout stays on, as it is in Tacotron 2's training and
inference (the model never runs without it); its masks are drawn per utterance from --seed and the file name, so a
file's mel does not depend on the batch it was in or the order of the filelists.

Writes <output-dir>/<ID>.pt, (n_mel_channels, frames) float32 (the input of `train.py -m HiFiGAN --input-mels-dir`
and of `inference.py -m HiFiGAN -i`), and <output-dir>/audio_params.json. Existing files are kept unless --overwrite.
"""
from __future__ import annotations

import argparse
import json
import zlib
from pathlib import Path

import torch

from common.audio import AudioParams, MelSpectrogram, load_wav
from common.trained_model import load_trained_model
from common.errors import UserError, exit_on_user_error
from common.filelist import read_filelist
from common.inference_args import inference_device
from common.text import TextProcessor
from tacotron2.api import pad_token_ids
from tacotron2.recipe import RECIPE

PARAMS_FILE = "audio_params.json"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="Teacher-forced Tacotron 2 mels, frame-aligned with the audio",
                                     allow_abbrev=False)
    parser.add_argument("--tacotron2", required=True, help="Tacotron 2 checkpoint (ours or NVIDIA's)")
    parser.add_argument("-d", "--dataset-path", default="./", help="root that filelist paths are relative to")
    parser.add_argument("--filelists", required=True, nargs="+", help="wav|text filelists")
    parser.add_argument("--output-dir", required=True, help="where <ID>.pt mels go (created)")
    parser.add_argument("-bs", "--batch-size", type=int, default=16)
    parser.add_argument("--seed", type=int, default=1234, help="seeds the prenet's dropout (with each file name)")
    parser.add_argument("--cpu", action="store_true", help="run on the CPU even if a GPU is present")
    parser.add_argument("--overwrite", action="store_true", help="recompute mels already in --output-dir")
    parser.add_argument("--quiet", action="store_true")
    return parser


def prenet_masks(model, steps: list[int], seed: int, stems: list[str], device: torch.device) -> torch.Tensor:
    """(n_layers, B, max steps, prenet_dim) keep-masks, each utterance's drawn from (seed, its file name) alone."""
    prenet = model.decoder.prenet
    masks = torch.ones(len(prenet.layers), len(steps), max(steps), prenet.size, dtype=torch.bool, device=device)
    for row, (n_steps, stem) in enumerate(zip(steps, stems)):
        generator = torch.Generator(device=device).manual_seed(seed ^ zlib.crc32(stem.encode()))
        masks[:, row, :n_steps] = prenet.draw_keep_masks([n_steps], device, generator)
    return masks


@torch.no_grad()
def teacher_forced_mels(model, text: TextProcessor, mel_spectrogram: MelSpectrogram, audio: AudioParams,
                        entries, seed: int, device: torch.device) -> list[torch.Tensor]:
    """Tacotron 2's postnet mels for a batch of filelist entries, each cut to its audio's frame count."""
    token_ids = []
    for entry in entries:
        try:
            token_ids.append(text.encode(entry.text, source=entry.source))
        except ValueError as error:
            raise UserError(str(error)) from error
    targets = [mel_spectrogram(load_wav(entry.path, audio.sampling_rate, min_samples=audio.hop_length))[0]
               for entry in entries]
    text_ids, text_lengths = pad_token_ids(token_ids, device)
    mel_lengths = torch.tensor([target.size(1) for target in targets], device=device)
    mel = torch.zeros(len(targets), audio.n_mel_channels, int(mel_lengths.max()), device=device)
    for row, target in enumerate(targets):
        mel[row, :, :target.size(1)] = target
    r = model.n_frames_per_step
    steps = [-(-target.size(1) // r) for target in targets]
    masks = prenet_masks(model, steps, seed, [entry.path.stem for entry in entries], device)
    output = model(text_ids, text_lengths, mel, mel_lengths, prenet_masks=masks)
    return [output.mel_postnet[row, :, :length].float().cpu().clone()
            for row, length in enumerate(mel_lengths.tolist())]


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.batch_size < 1:
        raise UserError(f"--batch-size must be at least 1, got {args.batch_size}")
    device = inference_device(args)
    model, checkpoint = load_trained_model(RECIPE, args.tacotron2, device, published_config={},
                                           flag="--tacotron2")
    text = TextProcessor.from_dict(checkpoint["text"]) if checkpoint.get("text") else TextProcessor()
    audio = AudioParams.from_dict(checkpoint["audio_params"]) if checkpoint.get("audio_params") else AudioParams()
    mel_spectrogram = MelSpectrogram(audio)

    output = Path(args.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    params_file = output / PARAMS_FILE
    if params_file.is_file() and not args.overwrite:
        AudioParams.from_dict(json.loads(params_file.read_text())).check_matches(
            audio, str(params_file), f"the Tacotron 2 checkpoint {args.tacotron2} (or pass --overwrite)")
    params_file.write_text(json.dumps(audio.to_dict(), indent=1) + "\n")

    entries, stems = [], set()
    for filelist in args.filelists:
        for entry in read_filelist(filelist, args.dataset_path):
            if entry.path.stem not in stems:  # a file in two lists is extracted once
                stems.add(entry.path.stem)
                entries.append(entry)
    todo = [entry for entry in entries if args.overwrite or not (output / f"{entry.path.stem}.pt").is_file()]
    for start in range(0, len(todo), args.batch_size):
        batch = todo[start:start + args.batch_size]
        for entry, mel in zip(batch, teacher_forced_mels(model, text, mel_spectrogram, audio, batch, args.seed,
                                                         device)):
            path = output / f"{entry.path.stem}.pt"
            temporary = path.with_name(path.name + ".tmp")  # a rerun after Ctrl-C never sees half a file
            torch.save(mel, temporary)
            temporary.replace(path)
        if not args.quiet:
            print(f"{min(start + args.batch_size, len(todo))}/{len(todo)} mels written to {output}")
    if not args.quiet:
        print(f"{len(entries)} GTA mels in {output} ({len(entries) - len(todo)} kept from before)")
    return len(todo)


if __name__ == "__main__":
    exit_on_user_error(main)
