"""``mira``: single-best MIRA (Crammer & Singer, JMLR 2003; McDonald, Crammer & Pereira, ACL
2005), the online large-margin row of Wang, Shawe-Taylor & Szedmak's POS table
(docs/algorithms.md section 2).

For each sentence in turn (a new random order every epoch), with y^ the Viterbi labeling:

    w <- argmin_w' ||w' - w||^2  s.t.  w'.(f(x_i, y_i) - f(x_i, y^)) >= Hamming(y_i, y^)

solved in closed form as w += tau d, d = f(x_i, y_i) - f(x_i, y^), tau = min(C, (Hamming - w.d)
/ ||d||^2) (the single constraint's passive-aggressive step, capped at C), and the model is the
average of the iterates, kept as the perceptron keeps it (:mod:`tagger.learners.perceptron`,
whose epoch kernel both share).
"""

from __future__ import annotations

from tagger.learners.base import Param
from tagger.learners.perceptron import Perceptron


class MIRA(Perceptron):
    """Single-best MIRA (Crammer & Singer 2003; McDonald, Crammer & Pereira 2005), averaged.

    Objective per visit: min ||w' - w||^2 s.t. w'.(f(x_i, y_i) - f(x_i, y^)) >= Hamming(y_i,
    y^) for the Viterbi labeling y^, the step capped at C; the model the average of the
    iterates. A row of Wang, Shawe-Taylor & Szedmak (AISTATS 2009), 46 passes in their table.
    """

    name = "mira"
    strength = ("C", -1)  # the cap on each step: larger fits the training data harder
    params = Perceptron.params + (
        Param(
            "C",
            1.0,
            float,
            "cap on each update's step size (the passive-aggressive C)",
            low=0.0,
            low_open=True,
        ),
    )

    def _clip(self, settings: dict) -> float:
        return settings["C"]
