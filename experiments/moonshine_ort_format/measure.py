"""Moonshine base as the moonshine-cpp wheel stores it (ORT format, int8 weights turned into float32 on every call)
against the same files read back into ONNX (scripts/ort_format.py), which ONNX Runtime folds once at load.

    python -m experiments.moonshine_ort_format.measure [--texts scripts/data/everyday_sentences.txt] [--count 50]

eSpeak NG speaks the first --count lines of --texts (en-us, 175 words a minute, as `--espeak-ceiling` does); both
ways of loading the model hear every recording, greedily, in turn. Printed: the load time, one decoder step's median
time (a step with 5 cached tokens), the time to transcribe all the recordings, and how many transcripts differ.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from common.audio import load_wav
from common.cpu import cpu_description
from scripts.intelligibility import render_with_espeak
from scripts.moonshine_judge import SAMPLING_RATE, MoonshineJudge


class MoonshineAsStored(MoonshineJudge):
    """The judge with the wheel's ORT-format files loaded as they are (how the judge ran before)."""

    @staticmethod
    def session(path: Path, options):
        import onnxruntime

        return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def decoder_step_seconds(judge: MoonshineJudge, repeats: int = 20) -> float:
    rng = np.random.default_rng(0)
    feed = {"input_ids": np.array([[5]], np.int64), "use_cache_branch": np.array([True]),
            "encoder_hidden_states": rng.standard_normal((1, 93, 416)).astype(np.float32)}
    for node in judge.cache_inputs:
        cached = 93 if ".encoder." in node.name else 5
        feed[node.name] = rng.standard_normal((1, node.shape[1], cached, node.shape[3])).astype(np.float32)
    judge.decoder.run(None, feed)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        judge.decoder.run(None, feed)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=Path, default=Path("scripts/data/everyday_sentences.txt"))
    parser.add_argument("--count", type=int, default=50)
    args = parser.parse_args(argv)
    lines = [line.strip() for line in args.texts.read_text().splitlines() if line.strip()][:args.count]
    with tempfile.TemporaryDirectory() as folder:
        rendered = render_with_espeak([(number, text, None) for number, text in enumerate(lines, 1)], Path(folder),
                                      "en-us", 175)
        audios = [load_wav(path, SAMPLING_RATE, source=str(path), mix_to_mono=True, resample=True).numpy()
                  for _, _, path in rendered]
    print(f"{cpu_description()}; {len(audios)} eSpeak NG recordings, {sum(map(len, audios)) / SAMPLING_RATE:.1f} s")
    transcripts = {}
    for name, load in (("ORT format as stored", MoonshineAsStored), ("read back as ONNX (the judge)", MoonshineJudge)):
        start = time.perf_counter()
        judge = load()
        loaded = time.perf_counter() - start
        step = decoder_step_seconds(judge)
        start = time.perf_counter()
        transcripts[name] = [judge.transcribe_audio(audio) for audio in audios]
        heard = time.perf_counter() - start
        print(f"{name:30} load {loaded:5.2f} s, decoder step {step * 1000:6.1f} ms, all recordings {heard:6.1f} s")
    stored, read_back = transcripts.values()
    differ = [number for number, (a, b) in enumerate(zip(stored, read_back), 1) if a != b]
    print(f"transcripts that differ: {len(differ)} of {len(audios)}" + (f": lines {differ}" if differ else ""))


if __name__ == "__main__":
    main()
