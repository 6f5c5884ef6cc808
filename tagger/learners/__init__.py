"""Learners by CLI name. Each module holds one learner; each docstring gives its objective.

The learner modules are imported on first use of :data:`LEARNERS` or :func:`get_learner`, not
with this package: tagging never trains, and the learners bring scipy's optimizers and HiGHS,
which would double the start-up of ``tagger tag``.
"""

from __future__ import annotations

import importlib

from tagger.errors import ParameterError
from tagger.learners.base import Learner, Param, TrainingProblem

DEFAULT_LEARNER = "m3n-subgradient"

# (module, class) of every learner, in the order `tagger learners` lists them
_REGISTRY = (
    ("m3n_subgradient", "SubgradientM3N"),
    ("m3n_subgradient", "SubgradientL2M3N"),
    ("ssvm_dual", "SDML2M3N"),
    ("m3n_em", "EML1M3N"),
    ("lp", "CuttingPlaneM3N"),
    ("lp", "ExtragradientLP"),
    ("lp", "SimplexLP"),
    ("crf_lbfgs", "CRFL2"),
    ("crf_lbfgs", "CRFL1"),
    ("crf_grafting", "GraftingLight"),
    ("crf_grafting", "GreedyGrafting"),
    ("ssvm_annealing", "SSVMAnnealing"),
)
_learners: dict[str, type[Learner]] | None = None


def _load() -> dict[str, type[Learner]]:
    global _learners
    if _learners is None:
        classes = [getattr(importlib.import_module(f"tagger.learners.{module}"), name)
                   for module, name in _REGISTRY]
        _learners = {cls.name: cls for cls in classes}
    return _learners


def __getattr__(name: str):
    if name == "LEARNERS":
        return _load()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get_learner(name: str) -> type[Learner]:
    try:
        return _load()[name]
    except KeyError:
        raise ParameterError(f"unknown learner {name!r}; available: "
                             f"{', '.join(sorted(_load()))}") from None


__all__ = ["LEARNERS", "DEFAULT_LEARNER", "get_learner", "Learner", "Param", "TrainingProblem"]
