"""bf16 (and int8) against fp32 on a CPU with native bf16: synthesis.py, vocoder.py and recognition.py (README.md)."""
from __future__ import annotations

import json
from pathlib import Path


def write_report(path: Path | None, report: dict) -> None:
    """--json's file (its folder made), when one was given."""
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(report, indent=2))
