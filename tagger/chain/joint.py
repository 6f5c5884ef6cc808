"""The joint feature vector f(x, y) of a labeled sentence, and the sparse difference
f(x, y+) - f(x, y-) of two labelings: what perceptron, subgradient and dual updates add to
the weights (:mod:`tagger.chain.layout` describes where each feature sits in ``w``)."""

from __future__ import annotations

from tagger._config import NUMBA_OPTS
from tagger.jit import njit


@njit(**NUMBA_OPTS)
def param_index(layout, attr, label):
    """The index in w of the state parameter (attr, label), or -1 when the pair has none."""
    attr_ptr = layout.attr_ptr
    param_label = layout.param_label
    L = layout.n_labels
    # an attribute's parameters are in label order: when every attribute has every label
    # (``all_pairs``, the semi-supervised learners) the pair is attr * L + label, found
    # without reading the index (two cache misses per pair in a large model)
    if layout.n_state == (attr_ptr.shape[0] - 1) * L:
        return attr * L + label
    # when this attribute has every label, the pair sits at offset ``label``
    p = attr_ptr[attr] + label
    if p < attr_ptr[attr + 1] and param_label[p] == label:
        return p
    for p in range(attr_ptr[attr], attr_ptr[attr + 1]):
        if param_label[p] == label:
            return p
    return -1


@njit(**NUMBA_OPTS)
def add_joint_features(layout, X, a, b, y, scale, out):
    """out += scale * f(x, y) for the sentence on tokens a..b-1 (y indexed by token)."""
    indptr = X.indptr
    attrs = X.attrs
    vals = X.vals
    valued = vals.shape[0] > 0
    n_state = layout.n_state
    n_labels = layout.n_labels
    for i in range(a, b):
        for j in range(indptr[i], indptr[i + 1]):
            p = param_index(layout, attrs[j], y[i])
            if p >= 0:
                out[p] += scale * vals[j] if valued else scale
        if i > a:
            out[n_state + y[i - 1] * n_labels + y[i]] += scale
    if b > a:
        out[layout.start + y[a]] += scale
        out[layout.end + y[b - 1]] += scale


@njit(**NUMBA_OPTS)
def accumulate(acc, k, v, n):
    """acc.values[k] += v, recording k as touched number n the first time; returns the new
    number of touched coordinates."""
    if not acc.mark[k]:
        acc.mark[k] = True
        acc.touched[n] = k
        n += 1
    acc.values[k] += v
    return n


@njit(**NUMBA_OPTS)
def add_difference(layout, X, a, b, plus, minus, coef, acc, n):
    """acc += coef * (f(x, plus) - f(x, minus)) on tokens a..b-1, only where the labelings
    differ; ``n`` coordinates are touched on entry, the new count is returned.

    plus / minus are label arrays indexed by token (their rows a..b-1 are read)."""
    indptr = X.indptr
    attrs = X.attrs
    vals = X.vals
    valued = vals.shape[0] > 0
    n_state = layout.n_state
    L = layout.n_labels
    s0 = layout.start
    e0 = layout.end
    for i in range(a, b):
        yp = plus[i]
        ym = minus[i]
        if yp != ym:
            for j in range(indptr[i], indptr[i + 1]):
                at = attrs[j]
                v = coef * vals[j] if valued else coef
                p = param_index(layout, at, yp)
                if p >= 0:
                    n = accumulate(acc, p, v, n)
                p = param_index(layout, at, ym)
                if p >= 0:
                    n = accumulate(acc, p, -v, n)
        if i > a and (yp != ym or plus[i - 1] != minus[i - 1]):
            n = accumulate(acc, n_state + plus[i - 1] * L + yp, coef, n)
            n = accumulate(acc, n_state + minus[i - 1] * L + ym, -coef, n)
    if b > a:
        if plus[a] != minus[a]:
            n = accumulate(acc, s0 + plus[a], coef, n)
            n = accumulate(acc, s0 + minus[a], -coef, n)
        if plus[b - 1] != minus[b - 1]:
            n = accumulate(acc, e0 + plus[b - 1], coef, n)
            n = accumulate(acc, e0 + minus[b - 1], -coef, n)
    return n
