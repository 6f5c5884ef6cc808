"""State scores of a chain: the per-token gather-add over a sentence's attributes, with the
start and end weights folded into its first and last rows, so the inference kernels only ever
see (T, L) state scores and an (L, L) transition matrix (:mod:`tagger.chain.layout` describes
the weight vector).

Besides the plain kernel, a cached form for solvers that rescore one sentence again and again
while only its own weights move: :func:`sentence_param_table` copies the sentence's weights
into a small dense table, :func:`set_table_weight` keeps it in step with ``w``, and
:func:`sentence_state_scores_table` scores from it (the same sums in the same order).
"""

from __future__ import annotations

from tagger._config import NUMBA_OPTS, NUMBA_PARALLEL_OPTS
from tagger.features.hash_table import attribute_id
from tagger.jit import njit, prange


@njit(**NUMBA_OPTS)
def _add_start_end(layout, w, T, out):
    """The start weights onto the first of T tokens' scores, the end weights onto the last."""
    if T > 0:
        for lab in range(layout.n_labels):
            out[0, lab] += w[layout.start + lab]
            out[T - 1, lab] += w[layout.end + lab]


@njit(**NUMBA_OPTS)
def sentence_state_scores(layout, X, w, a, b, out):
    """State scores of tokens a..b-1 (one sentence) into out[0:b-a], start and end weights
    folded into the first and last rows."""
    attr_ptr = layout.attr_ptr
    param_label = layout.param_label
    indptr = X.indptr
    attrs = X.attrs
    vals = X.vals
    valued = vals.shape[0] > 0
    for i in range(a, b):
        r = i - a
        for lab in range(layout.n_labels):
            out[r, lab] = 0.0
        for j in range(indptr[i], indptr[i + 1]):
            at = attrs[j]
            if valued:
                v = vals[j]
                for p in range(attr_ptr[at], attr_ptr[at + 1]):
                    out[r, param_label[p]] += v * w[p]
            else:
                for p in range(attr_ptr[at], attr_ptr[at + 1]):
                    out[r, param_label[p]] += w[p]
    _add_start_end(layout, w, b - a, out)


@njit(**NUMBA_OPTS)
def sentence_param_table(layout, X, w, a, b, attr_row, row_attr, table):
    """Copy the state weights of the attributes of tokens a..b-1 into a small dense table:
    ``table[r, l]`` is the weight of (``row_attr[r]``, l) (0 where the pair has no parameter),
    ``attr_row[attr]`` its row (``attr_row`` must be -1 for the sentence's attributes on entry;
    :func:`release_param_table` resets it). Returns the number of rows.

    Scoring a sentence again and again while only its own weights move (a dual solver's
    minimal steps) then reads this table, which stays in cache, instead of gathering from
    the whole weight vector each time."""
    attr_ptr = layout.attr_ptr
    param_label = layout.param_label
    attrs = X.attrs
    L = table.shape[1]
    n = 0
    for j in range(X.indptr[a], X.indptr[b]):
        at = attrs[j]
        if attr_row[at] < 0:
            attr_row[at] = n
            row_attr[n] = at
            for lab in range(L):
                table[n, lab] = 0.0
            for p in range(attr_ptr[at], attr_ptr[at + 1]):
                table[n, param_label[p]] = w[p]
            n += 1
    return n


@njit(**NUMBA_OPTS)
def release_param_table(attr_row, row_attr, n):
    """Reset ``attr_row`` for the n rows of a :func:`sentence_param_table`."""
    for r in range(n):
        attr_row[row_attr[r]] = -1


@njit(**NUMBA_OPTS)
def set_table_weight(layout, param_attr, attr_row, table, w, p):
    """After ``w[p]`` moved, copy it into the table of :func:`sentence_param_table` when p is
    the state parameter of one of the table's attributes (``param_attr[p]``, each state
    parameter's attribute, finds its row); weights outside the state block have no row."""
    if p < layout.n_state:
        table[attr_row[param_attr[p]], layout.param_label[p]] = w[p]


@njit(**NUMBA_OPTS)
def sentence_state_scores_table(layout, X, w, a, b, attr_row, table, out):
    """:func:`sentence_state_scores` read from the table of :func:`sentence_param_table`:
    the same sums in the same order (a missing pair adds 0.0), so the same scores."""
    indptr = X.indptr
    attrs = X.attrs
    vals = X.vals
    valued = vals.shape[0] > 0
    n_labels = layout.n_labels
    for i in range(a, b):
        r = i - a
        for lab in range(n_labels):
            out[r, lab] = 0.0
        for j in range(indptr[i], indptr[i + 1]):
            row = attr_row[attrs[j]]
            if valued:
                v = vals[j]
                for lab in range(n_labels):
                    out[r, lab] += v * table[row, lab]
            else:
                for lab in range(n_labels):
                    out[r, lab] += table[row, lab]
    _add_start_end(layout, w, b - a, out)


@njit(**NUMBA_PARALLEL_OPTS)
def batch_state_scores(layout, X, w, out):
    """State scores of every sentence of the batch into out (N, L), in parallel over
    sentences: what :meth:`ChainModel.state_scores` runs."""
    offsets = X.offsets
    for s in prange(offsets.shape[0] - 1):
        a = offsets[s]
        b = offsets[s + 1]
        sentence_state_scores(layout, X, w, a, b, out[a:b])


@njit(**NUMBA_PARALLEL_OPTS)
def view_state_scores(
    view_ids, offsets, t_ptr, t_view, t_off, t_mult, table_keys, table_vals, layout, w, out
):
    """State scores straight from view ids: attribute lookup fused with the gather-add, so
    tagging never materialises the attribute lists."""
    attr_ptr = layout.attr_ptr
    param_label = layout.param_label
    n_labels = layout.n_labels
    n_sent = offsets.shape[0] - 1
    n_tmpl = t_ptr.shape[0] - 1
    mask = table_keys.shape[0] - 1
    for s in prange(n_sent):
        a = offsets[s]
        b = offsets[s + 1]
        for i in range(a, b):
            for lab in range(n_labels):
                out[i, lab] = 0.0
            for k in range(n_tmpl):
                at = attribute_id(
                    view_ids, a, b, i, k, t_ptr, t_view, t_off, t_mult, table_keys, table_vals, mask
                )
                if at >= 0:
                    for p in range(attr_ptr[at], attr_ptr[at + 1]):
                        out[i, param_label[p]] += w[p]
        _add_start_end(layout, w, b - a, out[a:b])
