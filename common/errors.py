"""User mistakes (a missing or corrupt file, a checkpoint of the wrong model, a bad flag value) as one line, not a
traceback.

Code that detects such a mistake raises `UserError` (or `UserFileNotFoundError` for a path the user gave) with a
message naming the file or flag and saying what to do. The entry points run their main through
`exit_on_user_error`, which prints `error: <message>` to stderr and exits with code 2 (argparse's code for a bad
command line); every other exception is a bug and keeps its traceback.

UserError subclasses ValueError (and UserFileNotFoundError also FileNotFoundError) so that callers and tests that
catch the built-in types keep working.
"""
from __future__ import annotations

import argparse
import sys
from typing import Callable, NoReturn

USER_ERROR_EXIT_CODE = 2


class UserError(ValueError):
    """Something the user gave is wrong; the message says which file or flag, and what to do about it."""


class UserFileNotFoundError(UserError, FileNotFoundError):
    """A path the user gave (a checkpoint, a filelist, an input file) does not exist."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser whose own errors (an unknown flag, a bad value) are one `error: ...` line with exit code 2,
    like every other user mistake, instead of the usage (hundreds of flags for train.py) followed by the message."""

    def error(self, message: str) -> NoReturn:
        self.exit(USER_ERROR_EXIT_CODE, f"error: {message} (--help lists the flags)\n")


_REMOTE_TRACEBACK = "Original Traceback (most recent call last):"


def error_line(message: str) -> str:
    """`error: <message>` on one line (a multi-line message from a library is joined, so it stays one line)."""
    return f"error: {one_line(message)}"


def one_line(message: str) -> str:
    """The message of a user error as one line, without a leading `error: ` (see error_line)."""
    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    if _REMOTE_TRACEBACK in lines:
        # Raised in a DataLoader worker: torch re-raises the same type in the main process with the worker's
        # traceback as the message; its last line is "module.ErrorType: <the message>".
        lines = [lines[-1].split(": ", 1)[-1]]
    message = " ".join(lines)
    return message[len("error: "):] if message.startswith("error: ") else message


def exit_on_user_error(main: Callable[[], object]) -> None:
    """Run an entry point's main(); a user mistake ends as one `error:` line on stderr and exit code 2."""
    try:
        main()
    except UserError as error:
        print(error_line(str(error)), file=sys.stderr)
        sys.exit(USER_ERROR_EXIT_CODE)
    except SystemExit as exit_request:
        # `raise SystemExit("error: ...")` (older code, common.arguments' --config-file checks) is a user mistake
        # too: Python would print it with exit code 1; give it the same code as every other user mistake.
        if isinstance(exit_request.code, str):
            print(error_line(exit_request.code), file=sys.stderr)
            sys.exit(USER_ERROR_EXIT_CODE)
        raise
