"""Settings shared by every layer: numba options, dtypes and where the real corpora live."""

from __future__ import annotations

import os
from pathlib import Path

# One place for numba options. ``fastmath`` is limited to contraction/reassociation-free
# flags: we must keep ``nnan``/``ninf`` off because ``-inf`` marks forbidden labels and
# transitions in the lattice.
NUMBA_OPTS = dict(nogil=True, cache=True)
NUMBA_PARALLEL_OPTS = dict(nogil=True, cache=True, parallel=True)

# dtypes of the arrays passed between layers
FLOAT = "float64"
INDEX = "int64"
LABEL = "int32"


def corpora_dir() -> Path:
    """Directory holding the real corpora (``TAGGER_CORPORA``, default ``../shared/corpora``
    relative to the repository root)."""
    env = os.environ.get("TAGGER_CORPORA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent.parent / "shared" / "corpora"
