"""The numba side of featurization: an open-addressing hash table from exact 64-bit template
keys to attribute ids, and the instantiation of templates over per-view ids.

A template instance's key is mixed-radix over the view ids with the template index in the
lowest digit, so distinct instances never collide; the table only maps keys to ids.
"""

from __future__ import annotations

import numpy as np

from tagger._config import NUMBA_OPTS, NUMBA_PARALLEL_OPTS
from tagger.jit import njit, prange

# --------------------------------------------------------------------------------------
# numba kernels: hash table and template instantiation


@njit(**NUMBA_OPTS)
def _slot(key, mask):
    h = np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)
    return np.int64((h >> np.uint64(17)) & np.uint64(mask))


@njit(**NUMBA_OPTS)
def _lookup(key, table_keys, table_vals, mask):
    s = _slot(key, mask)
    while True:
        k = table_keys[s]
        if k == key:
            return table_vals[s]
        if k == -1:
            return -1
        s = (s + 1) & mask


@njit(**NUMBA_OPTS)
def _template_key(view_ids, a, b, i, k, t_ptr, t_view, t_off, t_mult):
    """Exact key of template k at token i of the sentence on tokens a..b-1; -1 if a component
    value is unknown (such an attribute cannot have been seen in training)."""
    key = np.int64(k)
    for c in range(t_ptr[k], t_ptr[k + 1]):
        p = i + t_off[c]
        if p < a:
            v = 1
        elif p >= b:
            v = 2
        else:
            v = view_ids[t_view[c], p]
            if v == 0:
                return np.int64(-1)
        key += t_mult[c] * v
    return key


@njit(**NUMBA_OPTS)
def attribute_id(view_ids, a, b, i, k, t_ptr, t_view, t_off, t_mult, table_keys, table_vals, mask):
    """Attribute id of template k at token i, or -1 when it is not a known attribute."""
    key = _template_key(view_ids, a, b, i, k, t_ptr, t_view, t_off, t_mult)
    if key < 0:
        return -1
    return _lookup(key, table_keys, table_vals, mask)


@njit(**NUMBA_PARALLEL_OPTS)
def template_keys(view_ids, offsets, t_ptr, t_view, t_off, t_mult, out):
    """out[i, k] = exact key of template k at token i, or -1 when a component is unknown."""
    n_sent = offsets.shape[0] - 1
    n_tmpl = t_ptr.shape[0] - 1
    for s in prange(n_sent):
        a = offsets[s]
        b = offsets[s + 1]
        for i in range(a, b):
            for k in range(n_tmpl):
                out[i, k] = _template_key(view_ids, a, b, i, k, t_ptr, t_view, t_off, t_mult)


@njit(**NUMBA_PARALLEL_OPTS)
def instantiate_attributes(
    view_ids, offsets, t_ptr, t_view, t_off, t_mult, table_keys, table_vals, slots
):
    """slots[i, k] = attribute id of template k at token i, or -1."""
    n_sent = offsets.shape[0] - 1
    n_tmpl = t_ptr.shape[0] - 1
    mask = table_keys.shape[0] - 1
    for s in prange(n_sent):
        a = offsets[s]
        b = offsets[s + 1]
        for i in range(a, b):
            for k in range(n_tmpl):
                slots[i, k] = attribute_id(
                    view_ids, a, b, i, k, t_ptr, t_view, t_off, t_mult, table_keys, table_vals, mask
                )


@njit(**NUMBA_OPTS)
def compact_slots(slots, indptr, attrs):
    n = slots.shape[0]
    k = slots.shape[1]
    pos = 0
    indptr[0] = 0
    for i in range(n):
        for j in range(k):
            a = slots[i, j]
            if a >= 0:
                attrs[pos] = a
                pos += 1
        indptr[i + 1] = pos
    return pos


def table_for(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The open-addressing table (keys, ids) of ``keys`` (distinct), at most half full.

    Built by NumPy, not by a kernel, so that loading a model does not start numba: in round r
    every key not yet placed tries slot home + r, and of the keys trying one free slot one
    takes it. A key moves on only past slots that are taken, so :func:`_lookup`'s linear
    probe from its home slot finds it, as after inserting the keys one by one."""
    keys = np.ascontiguousarray(keys, dtype=np.int64)
    cap = 1
    while cap < 2 * max(len(keys), 1):
        cap *= 2
    mask = np.uint64(cap - 1)
    table_keys = np.full(cap, -1, dtype=np.int64)
    table_vals = np.full(cap, -1, dtype=np.int32)
    with np.errstate(over="ignore"):
        home = (keys.view(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(17)
    slot = (home & mask).astype(np.int64)
    todo = np.arange(len(keys), dtype=np.int64)
    owner = np.empty(cap, dtype=np.int64)
    while todo.size:
        free = table_keys[slot] == -1
        owner[slot[free]] = todo[free]  # of several keys trying one slot, one is written
        take = np.zeros(todo.size, dtype=bool)
        take[free] = owner[slot[free]] == todo[free]
        table_keys[slot[take]] = keys[todo[take]]
        table_vals[slot[take]] = todo[take]
        todo, slot = todo[~take], (slot[~take] + 1) & np.int64(cap - 1)
    return table_keys, table_vals
