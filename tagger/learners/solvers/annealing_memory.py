"""What ``ssvm-annealing`` checks before it starts: whether the arrays that grow with the
unlabeled text fit in the memory left (the machine's or the cgroup's, whichever is tighter:
:func:`tagger.io.scratch.available_memory`), said in one warning that names the way out
(``scratch_dir``)."""

from __future__ import annotations

import warnings

from tagger.chain import Featurized
from tagger.errors import TaggerWarning
from tagger.io.scratch import available_memory


def warn_if_short_of_memory(
    U: Featurized, n_labels: int, max_working_set: int, plain: bool = True
) -> None:
    """A warning, before the run starts, when the arrays that grow with the unlabeled text
    (working sets, lattices, state scores, the joined features; with label-pair templates
    each token's (L, L) transitions) will not fit in the memory left: ``scratch_dir`` keeps
    them in files."""
    per_token_edges = 0 if plain else 8 * n_labels * n_labels
    need = (
        U.n_tokens * (4 * max_working_set + 5 * 8 * n_labels + 16 + per_token_edges)
        + U.n_sentences * 16 * max_working_set
        + 4 * int(U.indptr[-1])
    )
    free = available_memory()
    if free is not None and need > free:
        warnings.warn(
            TaggerWarning(
                f"training on {U.n_sentences:,} unlabeled sentences needs about "
                f"{need / 2**20:,.0f} "
                f"MB more for their working sets and lattices, and about {free / 2**20:,.0f} MB "
                f"are left: give --set scratch_dir=DIR (a directory on a disk with room) to keep "
                f"them in memory-mapped files there"
            ),
            stacklevel=2,
        )
