"""What sharded tagging checks before any work starts, so that a mistake costs one line and
leaves nothing behind: the input shards (each pattern matches something, and each match is a
file), the output directory (writable, and not the home of an input whose output would
replace it) and the scheduler's address (well formed, and something listening there)."""

from __future__ import annotations

import glob
import os
import shlex
import socket
from pathlib import Path

from tagger.errors import TaggerError
from tagger.io.atomic import OutputPathError
from tagger.learners.solvers.dask_client import TCP_PROTOCOLS, check_scheduler_address
from tagger.learners.solvers.dask_client import SchedulerAddressError as SchedulerAddressError

#: seconds a scheduler's port may take to accept a connection before it is reported as absent
PROBE_SECONDS = 5.0


def shown(pattern: str) -> str:
    """A pattern as it would be typed in a shell (quoted when it has spaces or wildcards)."""
    return shlex.quote(pattern)


def expand_inputs(patterns) -> list[str]:
    """Input shards: each pattern a file, a directory (its entries that are not directories)
    or a glob, sorted, unique. A pattern that matches nothing, a match that is a directory or
    a broken link, and two shards of one file name are refused."""
    found: list[str] = []
    given = [patterns] if isinstance(patterns, (str, os.PathLike)) else list(patterns)
    for pattern in map(os.fspath, given):
        if os.path.isdir(pattern):
            matches = sorted(str(p) for p in Path(pattern).iterdir() if not p.is_dir())
        elif os.path.lexists(pattern):
            matches = [pattern]
        else:
            matches = sorted(glob.glob(pattern))
        if not matches:
            what = "the directory" if os.path.isdir(pattern) else "no input file matches"
            raise TaggerError(
                f"{what} {shown(pattern)}"
                + (" holds no file" if os.path.isdir(pattern) else "")
                + "; give files, a directory or a quoted glob such as 'shards/*.txt'"
            )
        for match in matches:
            _check_shard(match, pattern)
        found += matches
    shards = list(dict.fromkeys(found))
    names = [os.path.basename(s) for s in shards]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})[:3]
        raise TaggerError(
            f"input shards share file names ({', '.join(dup)}), so their outputs "
            f"would collide in one output directory; rename them"
        )
    return shards


def _check_shard(path: str, pattern: str) -> None:
    """A shard must be a file that can be read; named with the pattern that matched it."""
    via = "" if path == pattern else f" (matched by {shown(pattern)})"
    if os.path.isdir(path):
        raise TaggerError(
            f"{path}{via} is a directory, not a file; match files only, such as "
            f"'{os.path.join(os.path.dirname(path) or '.', '*.txt')}'"
        )
    if not os.path.exists(path):
        target = os.readlink(path) if os.path.islink(path) else "?"
        raise TaggerError(
            f"{path}{via} is a broken symbolic link (to {target}); remove it or restore its target"
        )
    if not os.access(path, os.R_OK):
        raise TaggerError(f"{path}{via}: permission denied; make it readable")


def check_output_dir(output_dir, shards: list[str]) -> None:
    """The output directory can be written (or created) and no shard's output would be the
    shard itself; :class:`~tagger.io.atomic.OutputPathError` before anything is created."""
    out = os.fspath(output_dir)
    if not out:
        raise OutputPathError("the output directory is empty; give a directory name")
    if os.path.exists(out) and not os.path.isdir(out):
        raise OutputPathError(f"the output directory {out} is a file; give a directory")
    existing = out
    while not os.path.exists(existing):  # the nearest existing ancestor is where it is made
        parent = os.path.dirname(os.path.abspath(existing))
        if parent == os.path.abspath(existing):
            break
        existing = parent
    if not os.path.isdir(existing):
        raise OutputPathError(
            f"cannot create the output directory {out}: {existing} is a file, not a directory"
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        verb = "write in" if existing == out else f"create {out} in"
        raise OutputPathError(
            f"cannot {verb} the directory {existing} (permission denied); choose an output "
            f"directory you can write"
        )
    if not os.path.isdir(out):
        return
    for shard in shards:
        target = os.path.join(out, os.path.basename(shard))
        if os.path.exists(target) and os.path.samefile(target, shard):
            raise OutputPathError(
                f"the output directory {out} holds the input {shard}: its output would "
                f"replace it; choose another output directory"
            )


def probe_scheduler(
    address: str,
    timeout: float = PROBE_SECONDS,
    instead: str = "tag on local worker processes (no --scheduler)",
) -> None:
    """Fail at once, naming why, when nothing accepts connections at ``address`` (Dask itself
    would retry for 30 s and then raise its own traceback); the message offers ``instead``."""
    protocol, host, port = check_scheduler_address(address)
    if protocol not in TCP_PROTOCOLS or port is None:
        return
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        why = exc.strerror or f"no answer within {timeout:g} s"
        raise TaggerError(
            f"no Dask scheduler answers at {address} ({why.lower()}); start one (dask "
            f"scheduler), or {instead}"
        ) from None
