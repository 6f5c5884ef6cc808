"""Learners by CLI name. Each module holds one learner; each docstring gives its objective.

The learner modules are imported on first use of :data:`LEARNERS` or :func:`get_learner`, not
with this package: tagging never trains, and the learners bring scipy's optimizers and HiGHS,
which would double the start-up of ``tagger tag``. :func:`get_learner` imports only the named
learner's module (its name with ``-`` as ``_``): training one learner does not pay for the
imports of all sixteen.
"""

from __future__ import annotations

import importlib

from tagger.errors import ParameterError
from tagger.learners.base import Learner, Param, TrainingProblem

#: the L1-M3N in penalized form by OWL-QN: exact zeros, a certified gap, and across the
#: tasks measured (bench/defaults.py) the most accurate of our learners where they differ
DEFAULT_LEARNER = "m3n-owlqn"
#: the name that asks training to choose between learners (tagger.training.auto), and the
#: learners it chooses between: the max-margin and the likelihood objective, both L1 with
#: exact zeros and a strength the path can choose
AUTO = "auto"
AUTO_CANDIDATES = ("m3n-owlqn", "crf-l1")

# (module, class) of every learner, in the order `tagger learners` lists them
_REGISTRY = (
    ("m3n_subgradient", "M3NSubgradient"),
    ("m3n_l2_subgradient", "M3NL2Subgradient"),
    ("m3n_l2", "M3NL2"),
    ("m3n_em", "M3NEM"),
    ("m3n_owlqn", "M3NOWLQN"),
    ("m3n_cutting_plane", "M3NCuttingPlane"),
    ("lp_extragradient", "LPExtragradient"),
    ("lp_simplex", "LPSimplex"),
    ("crf_l2", "CRFL2"),
    ("crf_l1", "CRFL1"),
    ("crf_grafting", "CRFGrafting"),
    ("crf_grafting_greedy", "CRFGraftingGreedy"),
    ("ssvm_annealing", "SSVMAnnealing"),
    ("perceptron", "Perceptron"),
    ("mira", "MIRA"),
    ("hmm", "HMM"),
)
_MODULES = {module.replace("_", "-"): (module, name) for module, name in _REGISTRY}
_learners: dict[str, type[Learner]] | None = None


def _load() -> dict[str, type[Learner]]:
    global _learners
    if _learners is None:
        _learners = {name: get_learner(name) for name in _MODULES}
    return _learners


def __getattr__(name: str):
    if name == "LEARNERS":
        return _load()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get_learner(name: str) -> type[Learner]:
    if name not in _MODULES:
        raise ParameterError(f"unknown learner {name!r}; available: {', '.join(sorted(_MODULES))}")
    module, cls = _MODULES[name]
    return getattr(importlib.import_module(f"tagger.learners.{module}"), cls)


def parse_settings(name: str, pairs) -> dict:
    """``key=value`` settings of learner ``name`` parsed with its parameter table and checked
    (ranges and choices) before any data is read. A mistake raises :class:`ParameterError`
    whose message lists the learner's parameters."""
    cls = get_learner(name)
    try:
        settings = cls.parse_settings(list(pairs))
        cls(**settings).validated()
    except ParameterError as exc:
        message = str(exc).split("; its parameters are")[0].rstrip(".")
        names = ", ".join(p.name for p in cls.params)
        raise ParameterError(
            f"{message}. Parameters of {name}: {names} ('tagger learners' "
            f"gives their ranges and defaults)."
        ) from None
    return settings


__all__ = [
    "LEARNERS",
    "DEFAULT_LEARNER",
    "get_learner",
    "parse_settings",
    "Learner",
    "Param",
    "TrainingProblem",
]
