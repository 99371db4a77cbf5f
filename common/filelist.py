"""Filelists: one `relative/path|transcript` per line (LJSpeech style), paths relative to the dataset directory."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from common.errors import UserError, UserFileNotFoundError


@dataclass
class FilelistEntry:
    path: Path  # absolute (dataset directory joined)
    text: str
    source: str  # "filelist.txt:12", for error messages


def read_text_file(path: Path, flag: str = "") -> str:
    """A text file the user gave, as UTF-8; one in another encoding is a UserError naming the file and its line."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        line = path.read_bytes()[:error.start].count(b"\n") + 1
        raise UserError(f"{flag + ' ' if flag else ''}{path}:{line}: not UTF-8 text ({error.reason} at byte "
                        f"{error.start}); save the file as UTF-8") from error


def read_filelist(filelist: str | Path, dataset_path: str | Path, need_text: bool = True) -> list[FilelistEntry]:
    """The entries of a filelist. Every file it names must exist: checked here, at start-up, not hours into a run
    (whether each is whole and at the right rate is found as it is read; the error names its filelist line)."""
    filelist = Path(filelist)
    if not filelist.is_file():
        raise UserFileNotFoundError(f"filelist not found: {filelist}; check the path (relative to the current folder; "
                                    "scripts/prepare_dataset.sh writes the filelists)")
    entries = []
    for number, line in enumerate(read_text_file(filelist).splitlines(), start=1):
        if not line.strip():
            continue
        source = f"{filelist}:{number}"
        fields = line.split("|")
        if len(fields) != 2 or not fields[0].strip():
            raise UserError(f"{source}: malformed line {line!r}; expected 'relative/path.wav|transcript'")
        path, text = fields[0].strip(), fields[1].strip()
        if need_text and not text:
            raise UserError(f"{source}: empty transcript for {path}")
        entries.append(FilelistEntry(Path(dataset_path) / path, text, source))
    if not entries:
        raise UserError(f"filelist {filelist} has no entries")
    for entry in entries:
        if not entry.path.is_file():
            kind = "mel" if entry.path.suffix in (".pt", ".npy") else "audio"
            raise UserFileNotFoundError(f"{entry.source}: {kind} file not found: {entry.path}")
    return entries
