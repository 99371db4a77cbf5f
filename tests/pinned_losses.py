"""How far the CPU's kernels move the suite's pinned training losses (docs/testing.md, "Pinned figures across CPUs").

    .venv/bin/python -m tests.pinned_losses                  # every pinned run under each kernel setting; the spread
    .venv/bin/python -m tests.pinned_losses HiFiGAN WaveNet  # only these runs (names: PINS)
    .venv/bin/python -m tests.pinned_losses --here           # only under this process's kernel variables

Each pinned run (a conformance family of tests/families.py, and wav2vec 2.0's fine-tuning) trains its three tiny
epochs, as the pinned tests do, once per kernel setting: oneDNN limited to SSE4.1, to AVX2 or not limited, crossed
with ATen's vectorised kernels at their scalar `default` or at the CPU's own level (and at avx2 too on a CPU above
it). One process per setting, one after another, one thread each; about 2.5 minutes a setting on a 2-core AMD EPYC.
The table at the end gives, per run and epoch, the pin, the spread of the settings' losses and their largest
distance from the pin (both relative to the pin), the tolerance (tests/families.py) and how many times that distance
it is. A tolerance should be about ten times the spread of every CPU measured.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # run as `python -m tests.pinned_losses` from the repository root or not

import torch  # noqa: E402

from common.cpu import cpu_description  # noqa: E402
from tests.conftest import (SYNTHETIC_ASR_CORPUS_UTTERANCES, SYNTHETIC_CORPUS_SEED,  # noqa: E402
                            SYNTHETIC_CORPUS_UTTERANCES, SyntheticAsrCorpus, SyntheticCorpus)
from tests.families import FAMILIES, WAV2VEC2_FINETUNING_PINNED, run_args  # noqa: E402
from tests.wav2vec2.tiny_finetuning import finetune_args  # noqa: E402

UNSET = None  # the variable left out of the environment: the library's own choice for this CPU
ONEDNN_SETTINGS = ("SSE41", "AVX2", UNSET)
ATEN_SETTINGS = ("default", UNSET)
FINETUNING = "wav2vec2-finetuning"
PINS = {**{name: family.pinned for name, family in FAMILIES.items()}, FINETUNING: WAV2VEC2_FINETUNING_PINNED}


def build_corpora(folder: Path) -> tuple[SyntheticCorpus, SyntheticAsrCorpus]:
    """The corpora of tests/conftest.py's session fixtures, built the same way (seconds)."""
    from scripts.data.asr_corpus import build_asr_corpus
    from scripts.data.synthetic_corpus import build_corpus

    tts_dir, asr_dir = folder / "synthetic_corpus", folder / "synthetic_asr_corpus"
    tts = build_corpus(tts_dir, tts_dir / "filelists", num_utterances=SYNTHETIC_CORPUS_UTTERANCES,
                       seed=SYNTHETIC_CORPUS_SEED)
    asr = build_asr_corpus(asr_dir, num_utterances=SYNTHETIC_ASR_CORPUS_UTTERANCES, seed=1234)  # as the fixture
    return (SyntheticCorpus(dataset_dir=tts_dir, train_filelist=tts.filelists["audio_train"],
                            val_filelist=tts.filelists["audio_val"], test_filelist=tts.filelists["audio_test"],
                            num_utterances=tts.num_utterances),
            SyntheticAsrCorpus(directory=asr_dir, train=asr.manifests["train"], valid=asr.manifests["valid"],
                               test_sentences=asr.manifests["test_sentences"], test_voice=asr.manifests["test_voice"],
                               dictionary=asr.dictionary, sampling_rate=16000))


def run_arguments(name: str, output: Path, tts_corpus: SyntheticCorpus, asr_corpus: SyntheticAsrCorpus) -> list[str]:
    """train.py's arguments for the pinned run `name`'s three straight epochs, as its pinned test gives them."""
    if name == FINETUNING:
        return finetune_args(asr_corpus, output, "--epochs", "3")
    corpus = asr_corpus if FAMILIES[name].corpus == "synthetic_asr_corpus" else tts_corpus
    return run_args(name, corpus, output, "--epochs", "3")


def kernel_setting() -> str:
    """The kernel variables of this process, and the level ATen's vectorised kernels run at."""
    return (f"ONEDNN_MAX_CPU_ISA={os.environ.get('ONEDNN_MAX_CPU_ISA', '(unset)')} "
            f"ATEN_CPU_CAPABILITY={os.environ.get('ATEN_CPU_CAPABILITY', '(unset)')} "
            f"(ATen runs {torch.backends.cpu.get_cpu_capability()})")


def measure_here(names: list[str], results: Path) -> None:
    """Train each named run's three straight epochs under this process's kernels; append a JSON line per run."""
    import train
    from tests.training_runs import train_losses

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="pinned_losses_") as scratch:
        corpora = build_corpora(Path(scratch))
        for name in names:
            output = Path(scratch) / name
            train.main(run_arguments(name, output, *corpora))
            record = {"run": name, "cpu": cpu_description(), "setting": kernel_setting(),
                      "losses": train_losses(output / "nvlog.json", 1)}
            with open(results, "a", encoding="utf-8") as file:
                file.write(json.dumps(record) + "\n")
            print(json.dumps(record), flush=True)


def settings_to_measure() -> list[dict[str, str | None]]:
    aten = list(ATEN_SETTINGS)
    if torch.backends.cpu.get_cpu_capability() not in ("DEFAULT", "AVX2"):  # a CPU above AVX2: its AVX2 kernels too
        aten.insert(1, "avx2")
    return [{"ONEDNN_MAX_CPU_ISA": isa, "ATEN_CPU_CAPABILITY": capability}
            for isa in ONEDNN_SETTINGS for capability in aten]


def measure_every_setting(names: list[str], results: Path) -> None:
    """measure_here in a child process per kernel setting (the variables are read as the libraries load)."""
    for setting in settings_to_measure():
        environment = {key: value for key, value in os.environ.items() if key not in setting}
        environment.update({key: value for key, value in setting.items() if value is not UNSET})
        environment.update(OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
        print("--", " ".join(f"{key}={'(unset)' if value is UNSET else value}" for key, value in setting.items()),
              flush=True)
        completed = subprocess.run([sys.executable, "-m", "tests.pinned_losses", "--here", "--child", "--results",
                                    str(results), *names], cwd=ROOT, env=environment, capture_output=True, text=True)
        for line in completed.stdout.splitlines():
            if line.startswith('{"run"'):
                print(line, flush=True)
        if completed.returncode != 0:
            sys.exit(f"error: the runs under {setting} failed:\n{completed.stderr[-3000:]}")


def spread_table(results: Path) -> str:
    """Per run and epoch: the pin, the settings' spread and largest distance from the pin (relative to the pin), the
    tolerance and its margin over that distance."""
    records = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines() if line.strip()]
    lines = ["| run | epoch | pinned | settings | spread | largest distance from the pin | tolerance | margin |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name in PINS:
        losses = [r["losses"] for r in records if r["run"] == name]
        if not losses:
            continue
        pinned = PINS[name]
        for epoch, (pin, tolerance) in enumerate(zip(pinned.epoch_losses, pinned.rel_tolerances)):
            values = [run[epoch] for run in losses]
            spread = (max(values) - min(values)) / abs(pin)
            distance = max(abs(value - pin) for value in values) / abs(pin)
            margin = f"{tolerance / distance:.0f}x" if distance > 0 else "exact"
            lines.append(f"| {name} | {epoch + 1} | {pin:.6g} | {len(values)} | {spread:.1e} | {distance:.1e} | "
                         f"{tolerance:.0e} | {margin} |")
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.pinned_losses", description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="*", metavar="RUN", help=f"which pinned runs (default: all): {', '.join(PINS)}")
    parser.add_argument("--here", action="store_true", help="only under this process's kernel settings")
    parser.add_argument("--results", type=Path, default=None, help="append each run's losses here as a JSON line "
                        "(default: a temporary file); the spread table covers every line of it, so runs on several "
                        "machines can be pooled")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)  # measure_every_setting's: no table
    args = parser.parse_args(argv)
    unknown = [name for name in args.runs if name not in PINS]
    if unknown:
        parser.error(f"no pinned run {', '.join(unknown)}: choose from {', '.join(PINS)}")
    names = args.runs or list(PINS)
    with tempfile.TemporaryDirectory(prefix="pinned_losses_") as scratch:
        results = args.results or Path(scratch) / "results.jsonl"
        if not args.child:
            print(f"CPU: {cpu_description()}; torch {torch.__version__}", flush=True)
        if args.here:
            measure_here(names, results)
        else:
            measure_every_setting(names, results)
        if not args.child:
            print(spread_table(results))


if __name__ == "__main__":
    main(sys.argv[1:])
