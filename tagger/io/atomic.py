"""Writing a text output atomically: readers of the destination see the old file or the whole
new one, never a half-written one, and an interrupted run leaves nothing behind."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile


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
