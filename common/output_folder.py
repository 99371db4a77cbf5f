"""-o/--output of train.py and inference.py: made and checked at start-up, before a model is built or data read."""
from __future__ import annotations

import tempfile
from pathlib import Path

from common.errors import UserError


def make_output_folder(output: str, holds: str) -> None:
    """Create -o/--output and check that files can be written in it now, not when the first checkpoint or wav is
    written. `holds` says what the folder is for, in the message about a file given in its place."""
    if Path(output).exists() and not Path(output).is_dir():
        raise UserError(f"-o/--output {output} is a file; give a folder for {holds}")
    try:
        Path(output).mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=output):
            pass
    except OSError as error:
        raise UserError(f"-o/--output {output}: cannot create the folder or write in it: "
                        f"{error.strerror or error}") from error
