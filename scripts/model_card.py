"""A Hugging Face model card (README.md) for a checkpoint or an exported folder (scripts/export_weights.py).

    python -m scripts.model_card CKPT [-o README.md] [-m NAME]

The card holds YAML front matter (library_name, tags, language, licence, datasets where the checkpoint
records its data), then the model, its training data, how long it trained (from the checkpoint), where the family's
measured results are (linked, not copied: they were measured on the project's demo runs, not on this file), and how
to load it with the Python API. -m names the family of a file that does not say (NVIDIA's).
"""
from __future__ import annotations

from pathlib import Path

from common.errors import ArgumentParser, UserError, exit_on_user_error
from common.exported_weights import read_checkpoint, read_exported
from common.registry import FAMILIES, VOCODER_FAMILIES, get_recipe

LANGUAGE_OF_CLEANERS = {"english": "en", "german": "de"}  # the first word of a cleaner's name
KNOWN_DATASETS = {"ljspeech": "keithito/lj_speech", "librispeech": "openslr/librispeech_asr"}
# The terms of each known corpus, which weights learned from it carry beside the code's licence.
DATASET_TERMS = {"keithito/lj_speech": "LJSpeech is in the public domain",
                 "openslr/librispeech_asr": "LibriSpeech is under CC BY 4.0 (attribution)"}
CODE_LICENSE = "bsd-3-clause"  # the project's LICENSE, by its Hugging Face identifier


def language_of(metadata: dict) -> str | None:
    text = metadata.get("text") or {}
    for cleaner in text.get("cleaners", []):
        for word, language in LANGUAGE_OF_CLEANERS.items():
            if cleaner.startswith(word):
                return language
    return None


def dataset_of(metadata: dict) -> str | None:
    recorded = (metadata.get("training") or {}).get("dataset") or ""
    return next((name for key, name in KNOWN_DATASETS.items() if key in recorded.lower()), None)


def front_matter(metadata: dict) -> str:
    name = metadata["model_name"]
    lines = ["---", "library_name: pytorch", "tags:", f"- {get_recipe(name).task}", f"- {name.lower()}",
             "- speech"]
    language = language_of(metadata)
    if language:
        lines.append(f"language: {language}")
    # A published reference file (NVIDIA's or jik876's generator) comes under its publisher's terms, not ours.
    lines.append("license: other" if metadata.get("generator_only") else f"license: {CODE_LICENSE}")
    dataset = dataset_of(metadata)
    if dataset:
        lines += ["datasets:", f"- {dataset}"]
    return "\n".join([*lines, "---"])


def license_text(metadata: dict) -> str:
    if metadata.get("generator_only"):
        return (f"The weights are those of a published file (`{metadata.get('source')}`); its publisher's terms "
                "apply.")
    dataset = dataset_of(metadata)
    data_terms = (f" {DATASET_TERMS[dataset]}." if dataset in DATASET_TERMS else
                  " Their training data's own terms apply to them too.")
    return ("The code that trained these weights is under the BSD 3-Clause licence (the project's LICENSE)."
            + data_terms)


def training_length(metadata: dict) -> str:
    training = metadata.get("training") or {}
    epoch, iteration = training.get("epoch"), training.get("iteration")
    if epoch is None and iteration is None:
        return "The checkpoint does not record how long it trained."
    parts = [f"{epoch} epochs" if epoch is not None else None, f"{iteration} steps" if iteration is not None else None]
    return f"Trained for {' and '.join(part for part in parts if part)} (optimizer steps, as the checkpoint records)."


def load_snippet(metadata: dict, checkpoint: str, exported: bool) -> str:
    name = metadata["model_name"]
    if exported:
        return (f"from common.exported_weights import load_exported\n\n"
                f"model, metadata = load_exported({checkpoint!r}, expected_model={name!r})")
    if name == "Tacotron2":
        return ("from tacotron2.api import Synthesizer\n\n"
                f"synthesizer = Synthesizer.from_checkpoints({checkpoint!r}, vocoder=\"griffin-lim\")  "
                "# or a vocoder checkpoint")
    if name in VOCODER_FAMILIES:
        return ("from tacotron2.api import Synthesizer\n\n"
                f"synthesizer = Synthesizer.from_checkpoints(\"tacotron2.pt\", vocoder={checkpoint!r})  "
                "# with a Tacotron 2 checkpoint")
    if "vocab_size" in metadata["model_config"]:
        return f"from wav2vec2.api import Recognizer\n\nrecognizer = Recognizer.from_checkpoint({checkpoint!r})"
    return ("import torch\nfrom common.trained_model import load_trained_model\nfrom common.registry import get_recipe\n\n"
            f"model, checkpoint = load_trained_model(get_recipe({name!r}), {checkpoint!r}, torch.device(\"cpu\"))  "
            "# a pre-trained encoder (no CTC head)")


def model_card(metadata: dict, checkpoint: str, exported: bool = False) -> str:
    name = metadata["model_name"]
    folder = FAMILIES[name]
    audio = metadata.get("audio_params") or {}
    text = metadata.get("text") or {}
    data = (metadata.get("training") or {}).get("dataset")
    sections = [
        front_matter(metadata),
        f"# {name}: {Path(checkpoint).name}",
        "## Model description",
        get_recipe(name).description + (
            f" The generator alone of a published reference file (`{metadata.get('source')}`, NVIDIA's or jik876's),"
            f" trained on {metadata.get('mel_convention')} mels; that file holds no discriminators."
            if metadata.get("generator_only") else
            f" Trained with this project's `train.py -m {name}` (a rebuild of NVIDIA DeepLearningExamples' speech "
            "models)."),
        f"Sampling rate: {audio.get('sampling_rate', 'not recorded')} Hz."
        + (f" Symbols: {len(text['symbols'])}." if text.get("symbols") else "")
        + (f" Text cleaners: {', '.join(text['cleaners'])}." if text.get("cleaners") else ""),
        "## Training data",
        f"The checkpoint records its training data as `{data}`." if data else
        "The checkpoint does not record its training data.",
        "## Training length",
        training_length(metadata),
        "## Results",
        f"The figures measured for {name} models (the demo runs and the speed benchmarks, with the commands that made "
        f"them) are in the project's [{folder}/RESULTS.md]({folder}/RESULTS.md). They were not measured on this "
        "checkpoint unless it is the one a row there names.",
        "## How to load it",
        f"```python\n{load_snippet(metadata, checkpoint, exported)}\n```",
        "## Licence",
        license_text(metadata),
    ]
    return "\n\n".join(sections) + "\n"


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(description="Write a Hugging Face model card for a checkpoint or an exported folder.")
    parser.add_argument("checkpoint", help="a training checkpoint, or a folder written by scripts.export_weights")
    parser.add_argument("-o", "--output", default="README.md", help="the card to write (default: README.md)")
    parser.add_argument("-m", "--model-name", choices=list(FAMILIES), default=None,
                        help="the family, for a file that does not name it (NVIDIA's)")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    exported = Path(args.checkpoint).is_dir()
    metadata = read_exported(args.checkpoint)[0] if exported else read_checkpoint(args.checkpoint, args.model_name)[0]
    try:
        Path(args.output).write_text(model_card(metadata, args.checkpoint, exported), encoding="utf-8")
    except OSError as error:
        raise UserError(f"-o {args.output}: cannot write the card: {error.strerror or error}") from error
    print(f"wrote {args.output}")


if __name__ == "__main__":
    exit_on_user_error(main)
