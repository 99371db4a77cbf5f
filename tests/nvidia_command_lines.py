"""NVIDIA's recorded command lines, for the tests that run them: every flag that NVIDIA's launch scripts pass to
train.py (tests/data/nvidia_command_lines.json) and to inference.py (tests/data/nvidia_inference_command_lines.json),
each script's entry with its argv and what each flag means there (or the one error line it must end in). The
entries' {placeholders} (a checkpoint, a data folder, an output folder) are filled in by `filled` from a dict that
each test makes: tests/test_nvidia_command_lines.py's dry runs put stand-in paths, and
tests/wav2vec2/test_inference.py's real run a tiny model and corpus."""
import json
from pathlib import Path


def read_command_lines(file_name: str) -> dict:
    return {script: entry for script, entry in json.loads((Path(__file__).parent / "data" / file_name).read_text())
            .items() if not script.startswith("_")}  # "_about" describes the file


COMMAND_LINES = read_command_lines("nvidia_command_lines.json")
INFERENCE_COMMAND_LINES = read_command_lines("nvidia_inference_command_lines.json")


def filled(value, placeholders: dict):
    """`value` (an argv, a string or a list of them) with each placeholder replaced by its text in `placeholders`."""
    if isinstance(value, list):
        return [filled(item, placeholders) for item in value]
    if isinstance(value, str):
        for placeholder, text in placeholders.items():
            value = value.replace(placeholder, text)
    return value
