"""How often each constraint is violated by gold labels and by predictions of the same
sentences, side by side: the rows of ``tagger eval --violations`` and
:meth:`tagger.api.Tagger.constraint_report`.

A constraint that the gold labels violate about as often as the predictions is no fault of
the model; one the predictions violate far more often is what the constraint file is for. Both
labelings are counted by :func:`~tagger.constraints.violations.violation_report` on the same
compiled constraints and token indicators, so the two columns differ only by the labels.
"""

from __future__ import annotations

import numpy as np

from tagger.constraints.compiled import CompiledConstraints, TokenIndicators
from tagger.constraints.violations import violation_report


def constraint_report(
    compiled: CompiledConstraints,
    indicators: TokenIndicators,
    gold: np.ndarray,
    predicted: np.ndarray,
) -> list[dict]:
    """One row per constraint: its name, level and hardness, then each count of
    :func:`violation_report` as ``gold_*`` and ``pred_*`` (instance constraints: the rate and
    sum of violations; corpus constraints: the ratio and whether it is violated, with the
    target and tolerance). ``gold`` and ``predicted`` are label ids stacked over the sentences
    ``indicators`` were computed for."""
    rows = []
    for rg, rp in zip(
        violation_report(compiled, indicators, gold),
        violation_report(compiled, indicators, predicted),
    ):
        row = {"constraint": rg["constraint"], "level": rg["level"], "hard": rg["hard"]}
        for key in ("rate", "violations", "value", "violated"):
            if key in rg:
                row[f"gold_{key}"] = rg[key]
                row[f"pred_{key}"] = rp[key]
        if rg["level"] == "corpus":
            row["target"] = rg["target"]
            row["tolerance"] = rg["tolerance"]
        rows.append(row)
    return rows
