"""What an all-False padding mask costs wav2vec 2.0's forward, and what the Recognizer's path costs beside the bare
model's.

    python -m experiments.wav2vec2_padding_mask.measure [--seconds 6] [--repeats 6] [--tiny] [--profile]

wav2vec 2.0 Base with a CTC head (random weights: the time does not depend on them), batch 1, one utterance of
--seconds, eval mode, float32, torch's threads: the model called with padding_mask=None (the reference's batch-1
call), with a mask that marks nothing as padding, and through wav2vec2/api.py's Recognizer (what inference.py -m
wav2vec2 and Recognizer.transcribe run). Each path is timed in turn, --repeats rounds after a warm-up; the medians and
their ratio to the bare model are printed, with the largest logit difference from it. --profile then prints
torch.profiler's operations by self time for one call of the model with and without the mask.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from common.cpu import cpu_description
from wav2vec2.api import Recognizer
from wav2vec2.dictionary import Dictionary
from wav2vec2.model import Wav2Vec2CTC, model_config_from

TINY = dict(encoder_layers=2, encoder_embed_dim=32, encoder_ffn_embed_dim=64, encoder_attention_heads=2,
            conv_feature_layers="[(32, 10, 5)] + [(32, 3, 2)] * 4 + [(32, 2, 2)] * 2", conv_pos=16,
            conv_pos_groups=4, final_dim=16, latent_dim=0)


def build(tiny: bool) -> tuple[Wav2Vec2CTC, Dictionary]:
    torch.manual_seed(0)
    dictionary = Dictionary(list("abcdefghijklmnopqrstuvwxyz'|"))
    model = Wav2Vec2CTC(model_config_from(TINY if tiny else {}), len(dictionary), final_dropout=0.0,
                        freeze_finetune_updates=0)
    return model.eval(), dictionary


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--repeats", type=int, default=6)
    parser.add_argument("--tiny", action="store_true", help="a two-layer model: a check of the script, not a figure")
    parser.add_argument("--profile", action="store_true", help="where the time of one call of each goes")
    args = parser.parse_args(argv)
    model, dictionary = build(args.tiny)
    recognizer = Recognizer(model, dictionary, torch.device("cpu"))
    audio = np.random.default_rng(0).standard_normal(int(args.seconds * 16000)).astype(np.float32)
    utterances = recognizer.utterances(audio, 16000)
    source = utterances[0].audio[None, :]
    nothing_padded = torch.zeros_like(source, dtype=torch.bool)
    paths = {"model, padding_mask=None": lambda: model(source, padding_mask=None)["logits"],
             "model, a mask of no padding": lambda: model(source, padding_mask=nothing_padded)["logits"],
             "Recognizer": lambda: recognizer.logits(utterances)[0]}
    times: dict[str, list[float]] = {name: [] for name in paths}
    with torch.no_grad():
        outputs = {name: path() for name, path in paths.items()}  # the warm-up
        for _ in range(args.repeats):
            for name, path in paths.items():
                start = time.perf_counter()
                path()
                times[name].append(time.perf_counter() - start)
    bare = statistics.median(times["model, padding_mask=None"])
    print(f"{cpu_description()}; torch {torch.__version__}, {torch.get_num_threads()} threads; "
          f"{'tiny' if args.tiny else 'Base'} CTC, {args.seconds:g} s, medians of {args.repeats}")
    for name in paths:
        median = statistics.median(times[name])
        difference = (outputs[name] - outputs["model, padding_mask=None"]).abs().max().item()
        print(f"{name:30s} {median:8.4f} s  {median / bare:5.2f}x the bare model  largest logit difference "
              f"{difference:.1e}")
    if args.profile:
        for name in ("model, padding_mask=None", "model, a mask of no padding"):
            with torch.no_grad(), torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as run:
                paths[name]()
            print(f"== {name}: torch.profiler, self time")
            print(run.key_averages().table(sort_by="self_cpu_time_total", row_limit=8))


if __name__ == "__main__":
    main()
