"""tagger: sparse sequence tagging with L1-regularized max-margin Markov networks and CRFs.

``import tagger`` stays light: the API objects are imported on first use.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "Tagger": ("tagger.api", "Tagger"),
    "train": ("tagger.api", "train"),
    "TrainingConfig": ("tagger.training.config", "TrainingConfig"),
    "Sentence": ("tagger.sentence", "Sentence"),
    "FeatureSpec": ("tagger.features", "FeatureSpec"),
    "read_corpus": ("tagger.io", "read_corpus"),
    "write_corpus": ("tagger.io", "write_corpus"),
    "evaluate": ("tagger.evaluation.metrics", "evaluate"),
    "LEARNERS": ("tagger.learners", "LEARNERS"),
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tagger' has no attribute {name!r}")
