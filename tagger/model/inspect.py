"""What a fitted model holds, as plain data: the report ``tagger inspect --json`` prints
(:func:`inspect_report`) and JSON-ready copies of result dicts (:func:`jsonable`)."""

from __future__ import annotations

import math

import numpy as np


def jsonable(obj):
    """``obj`` with numpy scalars and arrays as Python numbers and lists, tuples as lists, keys
    as strings, and non-finite floats as None (JSON has no NaN or infinity)."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        return f if math.isfinite(f) else None
    return obj


def inspect_report(tagger, top: int = 10) -> dict:
    """What ``tagger inspect --json`` prints for a fitted tagger: parameter counts, the
    learner and its settings, the ``top`` strongest state features per label, transitions."""
    model, w, names = tagger.model_, tagger.weights_, tagger.labels_.labels
    info = tagger.info_
    ws = model.state_weights(w)
    pattr = model.state_param_attr()
    per_label = {}
    for li, lab in enumerate(names):
        idx = np.flatnonzero((model.param_label == li) & (ws != 0))
        order = idx[np.argsort(-np.abs(ws[idx]), kind="stable")[:top]]
        per_label[lab] = [
            (tagger.featurizer_.attribute_name(int(pattr[p])), float(ws[p])) for p in order
        ]
    trans = model.transitions(w)
    start, end = model.start_end(w)
    return {
        "n_params": int(info.get("n_params", model.n_weights)),
        "n_nonzero": int(np.count_nonzero(w)),
        "n_attributes": int(model.n_attrs),
        "order": int(model.order),
        "n_pair_weights": int(np.count_nonzero(model.pair_weights(w))),
        "n_triple_weights": int(np.count_nonzero(model.trip_weights(w))),
        "labels": list(names),
        "learner": info.get("learner"),
        "params": info.get("params", {}),
        "selection": info.get("selection"),
        "learner_choice": info.get("learner_choice"),
        "config": info.get("config"),
        "evidence": info.get("evidence"),
        "top_features": per_label,
        "transitions": {
            a: {b: float(trans[i, j]) for j, b in enumerate(names)} for i, a in enumerate(names)
        },
        "start": {a: float(start[i]) for i, a in enumerate(names)},
        "end": {a: float(end[i]) for i, a in enumerate(names)},
    }
