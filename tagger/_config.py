"""Settings shared by every layer: numba options, dtypes and where the real corpora live."""

from __future__ import annotations

import os
import sys
from pathlib import Path

# Processes forked after a parallel kernel ran (spaCy's nlp.pipe(n_process=N), datasets'
# Dataset.map(num_proc=N), `tagger tag --jobs N`) abort under GNU OpenMP ("fork() called from a
# process already using GNU OpenMP"); numba's own workqueue layer survives fork. A threading
# layer the user chose (NUMBA_THREADING_LAYER) still wins.
if "NUMBA_THREADING_LAYER" not in os.environ:
    os.environ["NUMBA_THREADING_LAYER"] = "workqueue"
    if "numba" in sys.modules:  # imported before us: its config was read already
        sys.modules["numba"].config.THREADING_LAYER = "workqueue"

# One place for numba options. No ``fastmath``: ``-inf`` marks forbidden labels and transitions
# in the lattice (so ``nnan``/``ninf`` would be wrong), and reassociation would make scores
# depend on the compiler, not only on the weights.
NUMBA_OPTS = dict(nogil=True, cache=True)
NUMBA_PARALLEL_OPTS = dict(nogil=True, cache=True, parallel=True)
# Constrained decoding runs the expanded-state Viterbi and up to 20 label-switching passes per
# sentence: decoding the 1,000 unlabeled citations under constraints/citations.toml (4.2 MB of
# arguments) takes 0.41 s, about 100 ms per MB, against 0.5 ms per MB for an objective
# evaluation on the shipped chunking sample. Its bytes count 16 times towards the size from
# which a kernel runs in parallel (tagger.jit), so that a few thousand sentences use every
# thread where the byte count alone would keep them on one.
CONSTRAINED_WORK_PER_BYTE = 16


def corpora_dir() -> Path:
    """Directory holding the real corpora (``TAGGER_CORPORA``, default ``../shared/corpora``
    relative to the repository root)."""
    env = os.environ.get("TAGGER_CORPORA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent.parent / "shared" / "corpora"
