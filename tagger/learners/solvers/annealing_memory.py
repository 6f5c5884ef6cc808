"""What ``ssvm-annealing`` checks before it starts: whether the arrays that grow with the
unlabeled text fit in the memory left (the machine's or the cgroup's, whichever is tighter:
:func:`tagger.io.scratch.available_memory`), said in one warning that names the way out
(``scratch_dir``)."""

from __future__ import annotations

import warnings

from tagger.chain import ChainModel, Featurized
from tagger.errors import TaggerWarning
from tagger.io.scratch import available_memory


def warn_if_short_of_memory(U: Featurized, model: ChainModel, max_working_set: int) -> None:
    """A warning, before the run starts, when the arrays that grow with the unlabeled text
    (working sets, lattices, state scores, the joined features; with label-pair templates
    each token's (L, L) transitions; at order 2 switching's forward and backward rows over
    the allowed label pairs) will not fit in the memory left: ``scratch_dir`` keeps them in
    files."""
    n_labels = model.n_labels
    per_token_edges = 8 * n_labels * n_labels if model.n_pair else 0
    # switching's forward and backward rows: a column per label, or per allowed pair
    width = n_labels if model.second is None else len(model.second.allowed)
    need = (
        U.n_tokens * (4 * max_working_set + 3 * 8 * n_labels + 2 * 8 * width + 16 + per_token_edges)
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
