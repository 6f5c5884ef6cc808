"""Writing a text output atomically: readers of the destination see the old file or the whole
new one, never a half-written one, and an interrupted run leaves nothing behind; and the check,
before any work, that an output can be written where it is asked for."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterable

from tagger.errors import TaggerError


@contextlib.contextmanager
def atomic_text_output(path: str):
    """Standard output for ``-``; otherwise a temporary file in the destination's directory
    that replaces ``path`` only once everything was written (no half-tagged files)."""
    if path == "-":
        yield sys.stdout
        return
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tagger-", suffix=".part", dir=directory)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would outlive the rename
        with open(fd, "w", encoding="utf-8", newline="\n", buffering=1 << 20) as out:
            yield out
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


class OutputPathError(TaggerError, ValueError):
    """An output path that would replace an input or cannot be written where it is asked for."""


def check_output(path: str | None, inputs: Iterable[str | None]) -> None:
    """Refuse, before any work, an output that would replace one of the ``inputs`` or that
    cannot be written where it is asked for (:class:`OutputPathError` naming the path);
    ``None`` and ``-`` (standard output) pass."""
    if path is None or path == "-":
        return
    for other in inputs:
        if (
            other
            and other != "-"
            and os.path.exists(other)
            and os.path.exists(path)
            and os.path.samefile(path, other)
        ):
            raise OutputPathError(
                f"{path} is also an input ({other}); writing it would "
                f"replace that file: choose another output path"
            )
    if os.path.isdir(path):
        raise OutputPathError(f"{path} is a directory; give a file name inside it")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise OutputPathError(
            f"the directory {directory} of {path} does not exist; create it first"
        )
    if not os.access(directory, os.W_OK | os.X_OK):
        raise OutputPathError(
            f"cannot write in the directory {directory} of {path} (permission denied)"
        )
