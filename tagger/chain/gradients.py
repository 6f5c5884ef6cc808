"""Gradients scattered into the weight vector from marginals: the expected minus the gold
feature counts of a sentence (:func:`scatter_expectations`, the likelihood and smoothed-hinge
gradients), and the state block's gradient from node marginals over the transposed token CSR
(:func:`state_grad_from_marginals`, the full-gradient pass of Grafting). The layout of ``w``
is :mod:`tagger.chain.layout`'s."""

from __future__ import annotations

from tagger._config import NUMBA_OPTS, NUMBA_PARALLEL_OPTS
from tagger.jit import njit, prange


@njit(**NUMBA_OPTS)
def scatter_expectations(layout, X, a, b, gold, node, edge, k, g):
    """g += k (E[f] - f(gold)) for the sentence of tokens a..b-1, from its node marginals
    (one row per token) and its summed edge marginals."""
    L = layout.n_labels
    indptr, attrs, vals = X.indptr, X.attrs, X.vals
    attr_ptr, param_label = layout.attr_ptr, layout.param_label
    t_off, s_off, e_off = layout.n_state, layout.start, layout.end
    has_vals = vals.shape[0] > 0
    T = b - a
    for i in range(a, b):
        nt = node[i - a]
        yi = gold[i]
        for j in range(indptr[i], indptr[i + 1]):
            v = k * (vals[j] if has_vals else 1.0)
            at = attrs[j]
            for p in range(attr_ptr[at], attr_ptr[at + 1]):
                lab = param_label[p]
                if lab == yi:
                    g[p] += v * (nt[lab] - 1.0)
                else:
                    g[p] += v * nt[lab]
        if i > a:
            g[t_off + gold[i - 1] * L + yi] -= k
    for i in range(L):
        for j in range(L):
            g[t_off + i * L + j] += k * edge[i, j]
        g[s_off + i] += k * node[0, i]
        g[e_off + i] += k * node[T - 1, i]
    g[s_off + gold[a]] -= k
    g[e_off + gold[b - 1]] -= k


@njit(**NUMBA_PARALLEL_OPTS)
def state_grad_from_marginals(layout, t_ptr, t_tok, t_val, marg, gold, g):
    """g[p] = dL/dw_p for every state weight p, from the node marginals ``marg`` of a
    forward-backward pass: sum over the tokens i carrying p's attribute (value v) of
    v * (P(y_i = label_p) - [gold_i = label_p]). ``t_ptr, t_tok, t_val`` is the token CSR
    transposed (the tokens of each attribute), so each attribute's weights are written by one
    thread: no per-thread gradient copies to clear and add up."""
    attr_ptr, param_label = layout.attr_ptr, layout.param_label
    has_vals = t_val.shape[0] > 0
    for at in prange(t_ptr.shape[0] - 1):
        p0 = attr_ptr[at]
        p1 = attr_ptr[at + 1]
        for p in range(p0, p1):
            g[p] = 0.0
        for j in range(t_ptr[at], t_ptr[at + 1]):
            i = t_tok[j]
            v = t_val[j] if has_vals else 1.0
            yi = gold[i]
            for p in range(p0, p1):
                lab = param_label[p]
                if lab == yi:
                    g[p] += v * (marg[i, lab] - 1.0)
                else:
                    g[p] += v * marg[i, lab]
