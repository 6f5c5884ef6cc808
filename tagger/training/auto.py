"""``learner="auto"`` (``tagger train --learner auto``): train each learner of
``AUTO_CANDIDATES`` with its own choice of strength (:mod:`tagger.training.selection`) and keep the one
whose chosen point scores best on the dev data (or, without dev data, on the held-out tenth
both paths were scored on); on a tie the one with fewer non-zero weights.

The comparison uses the same scores the paths chose on, so nothing is chosen on test data.
The table of candidates is kept in the model (``info["learner_choice"]``).
"""

from __future__ import annotations

import time

from tagger.errors import TaggerError
from tagger.learners import AUTO_CANDIDATES
from tagger.learners.base import main_score


def fit_auto(tagger, sentences, dev, progress, test):
    """Fit ``tagger`` (whose learner is "auto") by training every candidate; returns it."""
    from tagger.api import Tagger

    if tagger.params:
        raise TaggerError(f"learner 'auto' chooses each candidate's parameters itself; got "
                          f"{', '.join(sorted(tagger.params))} (name a learner to set them)")
    started = time.perf_counter()
    sentences = list(sentences)
    dev = None if dev is None else list(dev)
    best, best_key, table = None, None, []
    for name in AUTO_CANDIDATES:
        budget = 0.0
        if tagger.max_seconds:
            budget = max(tagger.max_seconds - (time.perf_counter() - started), 1e-9)
        sub = Tagger(features=tagger.features, learner=name, seed=tagger.seed, select=True,
                     max_seconds=budget)
        sub.fit(sentences, dev, progress, test=test)
        sel = sub.info_["selection"]
        chosen = sel["rows"][[r.get("selected", False) for r in sel["rows"]].index(True)]
        row = {"learner": name, "param": sel["param"], "value": sel["value"],
               **({"mix": sel["mix"]} if sel.get("mix") else {}),
               **{k: chosen[k] for k in ("dev_f1", "dev_acc") if k in chosen},
               "nonzero": sub.n_nonzero_}
        table.append(row)
        key = (main_score(row), -row["nonzero"])
        if best is None or key > best_key:
            best, best_key = sub, key
    for r in table:
        r["selected"] = r["learner"] == best.info_["learner"]
    tagger.featurizer_, tagger.labels_ = best.featurizer_, best.labels_
    tagger.model_, tagger.weights_, tagger.trace_ = best.model_, best.weights_, best.trace_
    tagger.info_ = dict(best.info_, learner_choice={"scored_on": best.info_["selection"][
        "scored_on"], "rows": table})
    # the time of every candidate, not only the kept one's
    tagger.info_["train_seconds"] = round(time.perf_counter() - started
                                          - best.info_["featurize_seconds"], 3)
    return tagger
