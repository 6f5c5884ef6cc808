"""Where a training run keeps its large per-token arrays: in memory, or in memory-mapped files
on disk when the unlabeled text of semi-supervised training does not fit in memory.

A :class:`ScratchSpace` without a directory hands out ordinary arrays. With one (``tagger
train --set scratch_dir=DIR``), every array it hands out is a file in a fresh directory under
DIR, mapped into memory (``numpy.lib.format.open_memmap``): the operating system keeps the
pages in use and writes the others back to the file, so a run needs address space, not memory,
for them. The numba kernels read and write the mapped arrays as they do any other. The
directory is removed by :meth:`ScratchSpace.close` (also on an error or an interrupt).

Arrays whose length is known only at the end (text read in batches) grow through an
:class:`Appender`: batches are written to the end of a file and the whole mapped at the end.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np


class Appender:
    """An array built batch by batch along its first axis: in memory (a list joined at the
    end) or appended to a file mapped at the end."""

    def __init__(self, path: Path | None, dtype, tail: tuple = ()):
        self.path, self.dtype, self.tail = path, np.dtype(dtype), tuple(tail)
        self.n = 0
        self.parts: list[np.ndarray] = []
        self.file = None if path is None else open(path, "wb")

    def append(self, batch: np.ndarray) -> None:
        batch = np.ascontiguousarray(batch, dtype=self.dtype)
        if batch.shape[1:] != self.tail:
            raise ValueError(f"batch of shape {batch.shape} appended to rows of {self.tail}")
        self.n += batch.shape[0]
        if self.file is None:
            self.parts.append(batch)
        else:
            self.file.write(batch.tobytes())

    def finish(self) -> np.ndarray:
        """The whole array (read and write)."""
        if self.file is None:
            if not self.parts:
                return np.zeros((0, *self.tail), self.dtype)
            return np.concatenate(self.parts)
        self.file.close()
        if self.n == 0:
            return np.zeros((0, *self.tail), self.dtype)
        return np.memmap(self.path, dtype=self.dtype, mode="r+", shape=(self.n, *self.tail))


class ScratchSpace:
    """Arrays in memory (``directory`` None or empty) or memory-mapped in a fresh directory
    under ``directory``, an existing one (``ssvm-annealing`` checks its ``scratch_dir``
    before any data is read); see the module docstring."""

    def __init__(self, directory: str | Path | None = None):
        self.root: Path | None = None
        self.count = 0
        if directory:
            self.root = Path(tempfile.mkdtemp(prefix="tagger-scratch-", dir=directory))

    @property
    def on_disk(self) -> bool:
        return self.root is not None

    def _path(self, name: str, suffix: str) -> Path:
        self.count += 1
        return self.root / f"{self.count:04d}-{name}{suffix}"

    def zeros(self, name: str, shape, dtype=np.float64) -> np.ndarray:
        """A zeroed array (a file mapped with ``open_memmap`` on disk: zero until written)."""
        if self.root is None:
            return np.zeros(shape, dtype)
        return np.lib.format.open_memmap(
            self._path(name, ".npy"), mode="w+", dtype=dtype, shape=tuple(np.atleast_1d(shape))
        )

    def appender(self, name: str, dtype, tail: tuple = ()) -> Appender:
        return Appender(None if self.root is None else self._path(name, ".bin"), dtype, tail)

    def close(self) -> None:
        """Remove the directory and its files (the arrays must no longer be used)."""
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None


def available_memory(
    proc: Path = Path("/proc"), cgroups: Path = Path("/sys/fs/cgroup")
) -> int | None:
    """Bytes this process can still take: the system's available memory (``MemAvailable``),
    or less where its memory cgroup (v1 or v2) sets a lower limit; None where neither can be
    read. (``proc`` and ``cgroups`` are where those file systems are mounted.)"""
    found = []
    try:
        with open(proc / "meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    found.append(int(line.split()[1]) * 1024)
    except OSError:
        pass
    try:
        with open(proc / "self" / "cgroup") as fh:
            entries = [line.rstrip("\n").split(":", 2) for line in fh]
    except OSError:
        entries = []
    for _, controllers, path in entries:
        if controllers == "memory":  # cgroup v1
            base = cgroups / "memory" / path.lstrip("/")
            limit, used = base / "memory.limit_in_bytes", base / "memory.usage_in_bytes"
        elif controllers == "":  # cgroup v2
            base = cgroups / path.lstrip("/")
            limit, used = base / "memory.max", base / "memory.current"
        else:
            continue
        try:
            cap, now = limit.read_text().strip(), int(used.read_text())
        except (OSError, ValueError):
            continue
        if cap.isascii() and cap.isdigit() and int(cap) < 2**60:
            found.append(max(int(cap) - now, 0))
    return min(found) if found else None
