"""The same attributes under two featurizers of one feature specification.

A featurizer numbers attribute values by the order it met them in its training data, so two
featurizers fitted on different sentences (a held-out path's nine tenths and the whole
training set) give the same attribute different ids. :func:`attribute_map` decodes each of the
first featurizer's attribute keys into its template and its view values, and encodes them again
with the second one's vocabularies, so that weights learned under one can start training
under the other.
"""

from __future__ import annotations

import numpy as np

from tagger.features.featurizer import Featurizer
from tagger.features.spec import N_SPECIAL


def attribute_map(src: Featurizer, dst: Featurizer, attrs: np.ndarray) -> np.ndarray:
    """``dst``'s id of each of ``src``'s attributes ``attrs`` (-1 where ``dst`` has none).
    Both featurizers must be fitted with the same specification."""
    same = src.spec is dst.spec or (
        src.spec.templates == dst.spec.templates
        and src.spec.template_names == dst.spec.template_names
    )
    if not same:
        raise ValueError("attribute_map needs two featurizers of the same feature specification")
    n_tmpl = len(src.spec.templates)
    keys = np.asarray(src.attr_keys_, dtype=np.int64)[np.asarray(attrs, dtype=np.int64)]
    template = keys % n_tmpl
    rest = keys // n_tmpl
    value_map = [_value_map(s, d) for s, d in zip(src.vocabs_, dst.vocabs_)]
    new_keys = np.full(len(keys), -1, dtype=np.int64)
    for k, comps in enumerate(src.spec.templates):
        rows = np.flatnonzero(template == k)
        digits = rest[rows]
        key = np.full(len(rows), k, dtype=np.int64)
        ok = np.ones(len(rows), dtype=bool)
        mult = np.int64(n_tmpl)
        for view, _ in comps:
            value = value_map[view][digits % (len(src.vocabs_[view]) + N_SPECIAL)]
            digits = digits // (len(src.vocabs_[view]) + N_SPECIAL)
            ok &= value >= 0
            key += mult * np.maximum(value, 0)
            mult = mult * np.int64(len(dst.vocabs_[view]) + N_SPECIAL)
        new_keys[rows[ok]] = key[ok]
    dst_keys = np.asarray(dst.attr_keys_, dtype=np.int64)
    at = np.searchsorted(dst_keys, new_keys)
    at = np.minimum(at, len(dst_keys) - 1) if len(dst_keys) else at
    found = (new_keys >= 0) & (len(dst_keys) > 0)
    if len(dst_keys):
        found &= dst_keys[at] == new_keys
    return np.where(found, at, -1).astype(np.int64)


def _value_map(src_vocab: dict[str, int], dst_vocab: dict[str, int]) -> np.ndarray:
    """``dst``'s id of each of ``src``'s view ids (the special ids map to themselves; -1 for a
    value ``dst`` never saw)."""
    out = np.full(len(src_vocab) + N_SPECIAL, -1, dtype=np.int64)
    out[:N_SPECIAL] = np.arange(N_SPECIAL)
    for value, i in src_vocab.items():
        out[i] = dst_vocab.get(value, -1)
    return out
