"""Comparing model files: "the same model" whatever the training configuration that `tagger
train` keeps in it (its data paths differ when the same sentences come from another file)."""

from __future__ import annotations

import numpy as np

from tagger.model.files import load_model_file


def same_model(a, b) -> bool:
    """The files hold the same arrays and the same metadata but ``info.config``."""
    meta_a, arrays_a = load_model_file(a)
    meta_b, arrays_b = load_model_file(b)
    for meta in (meta_a, meta_b):
        meta.get("info", {}).pop("config", None)
    return (
        meta_a == meta_b
        and arrays_a.keys() == arrays_b.keys()
        and all(np.array_equal(arrays_a[k], arrays_b[k]) for k in arrays_a)
    )
