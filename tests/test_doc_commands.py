"""Every command the documents show still works as written: each shell block passes `bash -n`, each whole `train.py`
and `inference.py` command goes through its parser with `--dry-run`, and each flag of a partial one (with `...`) is
one of its model's, so a renamed or removed flag in the documents fails here instead of for a user."""
import re
import shlex
import subprocess
from pathlib import Path

import pytest

import inference
import train
from common.errors import UserFileNotFoundError

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = sorted({ROOT / "README.md", *ROOT.glob("docs/*.md"), *ROOT.glob("*/README.md"), *ROOT.glob("*/RESULTS.md"),
                    *ROOT.glob("experiments/*/README.md")})
DOCUMENTS = [path for path in DOCUMENTS if not path.parent.name.startswith(".")]
ENTRY_POINTS = {"train.py": train.main, "inference.py": inference.main}
BUILD_PARSER = {"train.py": train.build_parser, "inference.py": inference.build_parser}


def shell_blocks(document: Path) -> list[str]:
    return re.findall(r"```(?:bash|sh|shell)\n(.*?)```", document.read_text(), re.S)


def command_lines(document: Path) -> list[tuple[str, str]]:
    """(entry point, its arguments) of each `python train.py ...` / `python inference.py ...` the document shows."""
    found = []
    for block in shell_blocks(document):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #")[0]
            match = re.search(r"(?:^|\s)(?:python3?|\$PYTHON) (train\.py|inference\.py)\b(.*)", line)
            if match:
                found.append((match.group(1), match.group(2).strip()))
    return found


def filled_in(arguments: str) -> list[str] | None:
    """The arguments with the documents' placeholders filled in (an optional `[--a|--b]` taken as `--a`, a count `N`
    as 1); None for a line that shows a form rather than a whole command: `-m NAME --help`, or one with `...` (the
    flags a command needs besides those it shows)."""
    if "..." in arguments:
        return None
    words = ["1" if word == "N" else word  # shlex: a quoted argument (--text "Hello there.") is one word
             for word in shlex.split(re.sub(r"\[([^\]|]*)(?:\|[^\]]*)?\]", r"\1", arguments))]
    return None if "NAME" in words or "--help" in words or not words else words


def flags_of(arguments: str) -> list[str]:
    return [word.split("=")[0] for word in re.sub(r"[\[\]|]", " ", arguments).split()
            if word.startswith("-") and not re.fullmatch(r"-[0-9.e-]+", word)]


def model_of(entry_point: str, arguments: str) -> str | None:
    words = arguments.split()
    return words[words.index("-m") + 1] if "-m" in words else "Tacotron2" if entry_point == "inference.py" else None


CASES = [(document, entry_point, arguments) for document in DOCUMENTS
         for entry_point, arguments in command_lines(document) if filled_in(arguments) is not None]
FRAGMENTS = [(document, entry_point, arguments) for document in DOCUMENTS
             for entry_point, arguments in command_lines(document)
             if "..." in arguments and model_of(entry_point, arguments) not in (None, "NAME")]


def test_the_documents_show_commands_of_both_entry_points():
    assert {entry_point for _, entry_point, _ in CASES} == set(ENTRY_POINTS)
    assert len(CASES) >= 25 and len(FRAGMENTS) >= 5


@pytest.mark.parametrize("document", [path for path in DOCUMENTS if shell_blocks(path)],
                         ids=lambda path: str(path.relative_to(ROOT)))
def test_every_shell_block_parses(document):
    for block in shell_blocks(document):
        completed = subprocess.run(["bash", "-n"], input=block, capture_output=True, text=True, timeout=30)
        assert completed.returncode == 0, f"{document.relative_to(ROOT)}: bash -n: {completed.stderr}\n{block}"


@pytest.mark.parametrize("document, entry_point, arguments", CASES,
                         ids=[f"{document.relative_to(ROOT)}:{entry_point}:{index}"
                              for index, (document, entry_point, _) in enumerate(CASES)])
def test_every_train_and_inference_command_parses(document, entry_point, arguments, capsys):
    try:
        ENTRY_POINTS[entry_point]([*filled_in(arguments), "--dry-run"])
    except UserFileNotFoundError:
        return  # parsed: the model's settings read a file of the user's (a pre-trained model), not here
    assert '"model_name"' in capsys.readouterr().out, f"{document.relative_to(ROOT)}: {entry_point} {arguments}"


@pytest.mark.parametrize("document, entry_point, arguments", FRAGMENTS,
                         ids=[f"{document.relative_to(ROOT)}:{entry_point}:{index}"
                              for index, (document, entry_point, _) in enumerate(FRAGMENTS)])
def test_every_flag_of_a_partial_command_exists(document, entry_point, arguments):
    """A line with `...` leaves out flags a run needs; the flags it shows must be the model's."""
    parser = BUILD_PARSER[entry_point](model_of(entry_point, arguments))
    unknown = [flag for flag in flags_of(arguments) if flag not in parser._option_string_actions]
    assert not unknown, f"{document.relative_to(ROOT)}: {entry_point} {arguments}: no such flags {unknown}"
