"""Filelists: one `relative/path|transcript` per line (LJSpeech style), paths relative to the dataset directory."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass
class FilelistEntry:
    path: Path  # absolute (dataset directory joined)
    text: str
    source: str  # "filelist.txt:12", for error messages


def read_filelist(filelist: str | Path, dataset_path: str | Path, need_text: bool = True) -> list[FilelistEntry]:
    filelist = Path(filelist)
    if not filelist.is_file():
        raise FileNotFoundError(f"filelist not found: {filelist}")
    entries = []
    for number, line in enumerate(filelist.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        source = f"{filelist}:{number}"
        fields = line.split("|")
        if len(fields) != 2 or not fields[0].strip():
            raise ValueError(f"{source}: malformed line {line!r}; expected 'relative/path.wav|transcript'")
        path, text = fields[0].strip(), fields[1].strip()
        if need_text and not text:
            raise ValueError(f"{source}: empty transcript for {path}")
        entries.append(FilelistEntry(Path(dataset_path) / path, text, source))
    if not entries:
        raise ValueError(f"filelist {filelist} has no entries")
    return entries
