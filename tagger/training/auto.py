"""``learner="auto"`` (``tagger train --learner auto``): train each learner of
``AUTO_CANDIDATES`` with its own choice of strength (:mod:`tagger.training.selection`) and keep
the one whose chosen point scores best on the dev data (or, without dev data, on the held-out
tenth both paths were scored on); on a tie the one with fewer non-zero weights.

The comparison uses the same scores the paths chose on, so nothing is chosen on test data.
The table of candidates is kept in the model (``info["learner_choice"]``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import replace

import numpy as np

from tagger.errors import TaggerError
from tagger.learners import AUTO_CANDIDATES
from tagger.learners.base import main_score
from tagger.sentence import Sentence
from tagger.training.fit import FitSettings, Fitted, Progress, fit_learner


def fit_auto(
    settings: FitSettings,
    sentences: Iterable[Sentence],
    dev: Iterable[Sentence] | None,
    progress: Progress | None = None,
    test: Iterable[Sentence] | None = None,
) -> Fitted:
    """Train every candidate (``settings.learner`` is "auto"); returns the one kept, its
    info extended with the table of candidates."""
    if settings.params:
        raise TaggerError(
            f"learner 'auto' chooses each candidate's parameters itself; got "
            f"{', '.join(sorted(settings.params))} (name a learner to set them)"
        )
    started = time.perf_counter()
    sentences = list(sentences)
    dev = None if dev is None else list(dev)
    best, best_key, table = None, None, []
    for name in AUTO_CANDIDATES:
        budget = 0.0
        if settings.max_seconds:
            budget = max(settings.max_seconds - (time.perf_counter() - started), 1e-9)
        sub = fit_learner(
            replace(settings, learner=name, params={}, select=True, max_seconds=budget),
            sentences,
            dev,
            progress,
            test=test,
        )
        sel = sub.info["selection"]
        chosen = sel["rows"][[r.get("selected", False) for r in sel["rows"]].index(True)]
        row = {
            "learner": name,
            "param": sel["param"],
            "value": sel["value"],
            **({"mix": sel["mix"]} if sel.get("mix") else {}),
            **{k: chosen[k] for k in ("dev_f1", "dev_acc") if k in chosen},
            "nonzero": int(np.count_nonzero(sub.weights)),
        }
        table.append(row)
        key = (main_score(row), -row["nonzero"])
        if best is None or key > best_key:
            best, best_key = sub, key
    for r in table:
        r["selected"] = r["learner"] == best.info["learner"]
    best.info = dict(
        best.info, learner_choice={"scored_on": best.info["selection"]["scored_on"], "rows": table}
    )
    # the time of every candidate, not only the kept one's
    best.info["train_seconds"] = round(
        time.perf_counter() - started - best.info["featurize_seconds"], 3
    )
    return best
