"""Declarative domain constraints: a TOML language, its validation, and compiled numba kernels.

A domain expert writes what they know about the fields of their sequences in a TOML file
(``constraints/README.md`` explains the format for non-programmers; ``constraints/citations.toml``
is the citation list of docs/algorithms.md section 4). This package

1. parses and checks a file, reporting every mistake at once with its key path
   (:meth:`ConstraintSet.load`, :class:`tagger.errors.ConstraintError`);
2. compiles it against a label list into arrays (:class:`CompiledConstraints`): per constraint a
   kind, a label mask, bounds and a penalty weight / shape; per corpus the token indicators that
   word lists, patterns and token properties turn into (:meth:`CompiledConstraints.indicators`);
   for a model that lacks labels the file names, the rules narrowed to its labels
   (:mod:`.model_labels`);
3. counts violations per sequence and per corpus, and the change of the penalty when one label
   is switched (numba; :class:`ViolationState`), which the semi-supervised learner's constraint
   matching and constrained decoding both use.

Penalties (docs/algorithms.md section 4). An instance constraint c counts phi_c(x, y) and is
violated by d = max(0, phi_c - hi_c) + max(0, lo_c - phi_c); a corpus constraint compares the ratio
r_c = sum_j num_c(x_j, y_j) / sum_j den_c(x_j, y_j) with its target p_c and is violated by
d = max(0, |r_c - p_c| - tolerance_c). The penalty is rho_c * d (``shape = "linear"``) or
rho_c * d^2 (``"squared"``); a corpus penalty is further multiplied by the number of sequences,
so that a weight means the same for a corpus term as for one instance term per sequence. Hard
constraints get a very large rho (chosen by the caller: ``hard_weight``) and, at tag time, are
enforced exactly where the expanded-state Viterbi of :mod:`tagger.constraints.decoding` can.
"""

from tagger.constraints.compiled import CompiledConstraints, ConstraintData, TokenIndicators
from tagger.constraints.language import CORPUS_RULES, INSTANCE_RULES, ConstraintSet
from tagger.constraints.rules import (
    CHANGES,
    CONTAINS,
    COUNT_SEGMENTS,
    COUNT_TOKENS,
    FRACTION_CHANGE,
    FRACTION_LABEL,
    ORDER,
    PROPERTIES,
    SEGMENTS,
    UNARY,
    Rule,
    boundary_on_punctuation,
    normalize_word,
)
from tagger.constraints.violations import (
    Counts,
    Proposal,
    ViolationState,
    apply_switch,
    switch_penalty_delta,
    violation_report,
)

__all__ = [
    "ConstraintSet",
    "Rule",
    "ConstraintData",
    "CompiledConstraints",
    "TokenIndicators",
    "ViolationState",
    "Counts",
    "Proposal",
    "violation_report",
    "apply_switch",
    "switch_penalty_delta",
    "UNARY",
    "SEGMENTS",
    "CHANGES",
    "COUNT_TOKENS",
    "COUNT_SEGMENTS",
    "CONTAINS",
    "ORDER",
    "FRACTION_LABEL",
    "FRACTION_CHANGE",
    "PROPERTIES",
    "INSTANCE_RULES",
    "CORPUS_RULES",
    "boundary_on_punctuation",
    "normalize_word",
]
