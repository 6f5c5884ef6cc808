"""A model file as bytes rather than a file: what pickling a fitted tagger carries (joblib,
multiprocessing, Dask, Ray) and what ``Tagger.to_bytes`` / ``Tagger.from_bytes`` exchange.

The bytes are those of the model file itself, written and read through a temporary file by the
same functions as ``save`` and ``load``: one format and one set of checks, never pickle's own
encoding of the arrays.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def model_bytes(save: Callable[[Path], object]) -> bytes:
    """The bytes ``save`` writes to a model file (in a temporary directory, removed after)."""
    with tempfile.TemporaryDirectory(prefix="tagger-") as tmp:
        path = Path(tmp) / "model.tgm"
        save(path)
        return path.read_bytes()


def from_model_bytes(data: bytes, load: Callable[[Path], T]) -> T:
    """What ``load`` reads from a model file holding ``data``."""
    with tempfile.TemporaryDirectory(prefix="tagger-") as tmp:
        path = Path(tmp) / "model.tgm"
        path.write_bytes(data)
        return load(path)
