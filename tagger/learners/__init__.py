"""Learners by CLI name. Each module holds one learner; each docstring gives its objective."""

from __future__ import annotations

from tagger.errors import ParameterError
from tagger.learners.base import Learner, Param, TrainingProblem
from tagger.learners.lp import CuttingPlaneM3N, ExtragradientLP, SimplexLP
from tagger.learners.m3n_subgradient import SubgradientL2M3N, SubgradientM3N
from tagger.learners.crf_grafting import GraftingLight, GreedyGrafting
from tagger.learners.crf_lbfgs import CRFL1, CRFL2
from tagger.learners.m3n_em import EML1M3N
from tagger.learners.ssvm_annealing import SSVMAnnealing
from tagger.learners.ssvm_dual import SDML2M3N

LEARNERS: dict[str, type[Learner]] = {
    cls.name: cls for cls in (SubgradientM3N, SubgradientL2M3N, SDML2M3N, EML1M3N,
                              CuttingPlaneM3N, ExtragradientLP, SimplexLP,
                              CRFL2, CRFL1, GraftingLight, GreedyGrafting, SSVMAnnealing)
}
DEFAULT_LEARNER = "m3n-subgradient"


def get_learner(name: str) -> type[Learner]:
    try:
        return LEARNERS[name]
    except KeyError:
        raise ParameterError(f"unknown learner {name!r}; available: "
                             f"{', '.join(sorted(LEARNERS))}") from None


__all__ = ["LEARNERS", "DEFAULT_LEARNER", "get_learner", "Learner", "Param", "TrainingProblem"]
