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


def read_filelist(filelist: str | Path, dataset_path: str | Path, need_text: bool = True) -> list[FilelistEntry]:
    filelist = Path(filelist)
    if not filelist.is_file():
        raise UserFileNotFoundError(f"filelist not found: {filelist}; check the path (relative to the current folder; "
                                    "scripts/prepare_dataset.sh writes the filelists)")
    entries = []
    for number, line in enumerate(filelist.read_text(encoding="utf-8").splitlines(), start=1):
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
    return entries
