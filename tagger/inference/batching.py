"""How the batched kernels cut a stack of sentences into chunks run in parallel: each chunk
allocates its work buffers once, sized for its longest sentence.
"""

from __future__ import annotations

from tagger._config import NUMBA_OPTS
from tagger.jit import njit

_njit = njit(**NUMBA_OPTS)

# Sentences per parallel chunk: at most this many, and about this many chunks in all.
_CHUNK_MAX = 64
_CHUNKS = 64


@_njit
def chunking(n):
    """(sentences per chunk, number of chunks) for ``n`` sentences."""
    per = (n + _CHUNKS - 1) // _CHUNKS
    if per > _CHUNK_MAX:
        per = _CHUNK_MAX
    if per < 1:
        per = 1
    return per, (n + per - 1) // per


@_njit
def max_length(offsets, s0, s1):
    """Length of the longest sentence among s0..s1-1, at least 1."""
    m = 1
    for s in range(s0, s1):
        d = offsets[s + 1] - offsets[s]
        if d > m:
            m = d
    return m
