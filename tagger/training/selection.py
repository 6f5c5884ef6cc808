"""Choosing the regularization strength for the user (what ``tagger train`` does unless the
strength is given with ``--set``).

A learner names the parameter that sets its strength and which way it goes (``strength =
("radius", -1)``: a smaller radius penalizes more; ``("c1", +1)``: a larger c1 does). The path
walks a geometric grid around the learner's default (factor 2, four steps to the strong side,
three to the weak side), strongest penalty first, so that each point starts from the sparser
weights of the point before (a warm start) and the first points, with few non-zero weights,
are the cheap ones. Each point is scored on dev; the walk stops once ``PATIENCE`` points in a
row fail to beat the best, and goes on past the weak end of the grid while the last point is
the best (up to ``MAX_POINTS``). The best point is kept; on a tie the earlier, sparser one.
A point whose penalty zeroed every weight is not a model: it never beats a point with weights,
does not use up the patience, and while every point so far is empty the walk goes on to
weaker penalties (an L1 LP on a small training set is empty at the default C and below).

A learner whose penalty can mix in an L2 term (``mix = "c2"``: the elastic net) then walks a
second, short path at the chosen strength: the L2 coefficient on ``MIX_VALUES``, smallest
first, warm-started, stopping after ``PATIENCE`` points without a better dev score; the mix is
kept only where it scores better than the pure L1 point (an L2 term keeps weights that L1
would zero, so on a tie the sparser, pure L1 model wins).

Without dev data, every tenth training sentence is held out to score the path, and the model is
then trained on all sentences at the chosen value. One held-out part rather than k folds: the
path already costs several trainings, and k folds would multiply that by k. The tenth is taken
evenly through the file rather than from its end, so that a corpus ordered by source or genre
still gives a held-out part that looks like the rest.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from tagger.learners.base import main_score

log = logging.getLogger("tagger.train")

#: ratio of neighbouring values on the path
GRID_FACTOR = 2.0
#: grid steps from the default towards a stronger and a weaker penalty
STRONG_STEPS, WEAK_STEPS = 4, 3
#: points in a row without a better dev score before the path stops
PATIENCE = 2
#: most points on a path, extensions past the weak end included
MAX_POINTS = 12
#: every this many training sentences, one is held out when there is no dev data
HOLDOUT_EVERY = 10
#: the L2 coefficients of the mix path (on the summed loss, CRFsuite's scale of c2)
MIX_VALUES = (0.01, 0.1, 1.0)


def strength_of(learner_cls) -> tuple[str, int] | None:
    """(parameter, direction) of a learner that can choose its strength, else None."""
    return getattr(learner_cls, "strength", None)


def grid(default: float, direction: int) -> list[float]:
    """The path's values, strongest penalty first."""
    steps = range(STRONG_STEPS, -WEAK_STEPS - 1, -1)
    return [default * GRID_FACTOR ** (k * direction) for k in steps]


def holdout_split(n: int) -> tuple[list[int], list[int]]:
    """Indices of the sentences trained on and held out (every HOLDOUT_EVERY-th, from the
    middle of each block of ten)."""
    held = set(range(HOLDOUT_EVERY // 2, n, HOLDOUT_EVERY))
    return [i for i in range(n) if i not in held], sorted(held)


@dataclass
class Path:
    """A regularization path and its choice."""

    param: str
    scored_on: str  # "dev" or "held-out tenth of the training data"
    rows: list[dict] = field(default_factory=list)
    best: int = -1
    weights: np.ndarray | None = None  # of the best point
    trace: list[dict] = field(default_factory=list)  # the best point's training trace
    notes: list[str] = field(default_factory=list)
    #: the learner settings, beside the strength and mix, that trained the kept weights (a
    #: path's cheaper ones, or what the refit chose on dev): they train the model on all the
    #: data after a held-out path
    recipe: dict = field(default_factory=dict)

    @property
    def value(self) -> float:
        return self.rows[self.best]["value"]

    @property
    def mix(self) -> dict:
        """The L2 mix chosen with the strength ({} for none): ``{"c2": value}``."""
        return dict(self.rows[self.best].get("mix", {}))

    def as_info(self) -> dict:
        info = {
            "param": self.param,
            "value": self.value,
            "scored_on": self.scored_on,
            "rows": self.rows,
        }
        if self.mix:
            info["mix"] = self.mix
        if self.notes:
            info["notes"] = list(self.notes)
        if self.recipe:
            info["recipe"] = dict(self.recipe)
        return info


def run_path(
    learner,
    problem,
    default: float,
    direction: int,
    seed: int,
    scored_on: str,
    report: Callable[[dict], None] | None = None,
    max_seconds: float = 0.0,
    started: float | None = None,
    mix: bool = True,
) -> Path:
    """Train ``learner`` along the path on ``problem`` (whose ``dev_score`` scores a point).

    ``started`` is the ``time.perf_counter()`` that ``max_seconds`` counts from (default:
    now). A learner whose ``path_settings`` train the points more cheaply (fewer iterations)
    trains the chosen point again with its own settings, warm-started (:func:`_refit`), and
    keeps whichever scores better; ``Path.recipe`` says which settings trained the kept
    weights. ``mix``: walk the learner's L2 mix too (not when the user set it)."""
    started = time.perf_counter() if started is None else started
    param = learner.strength[0]
    values = grid(default, direction)
    path = Path(param, scored_on)
    # a learner may train the path's points more cheaply than its final model
    cheap = getattr(learner, "path_settings", {})
    full = {k: learner.settings[k] for k in cheap}
    learner.settings.update(cheap)
    learner.warm_start = True  # learners with a dual state keep it from point to point
    w, since_best, i = None, 0, 0
    while i < len(values):
        learner.settings[param] = values[i]
        t0 = time.perf_counter()
        w = learner.fit(problem, seed=seed, w0=w)
        row = {
            "param": param,
            "value": values[i],
            **problem.dev_score(w),
            "nonzero": int(np.count_nonzero(w)),
            "seconds": round(time.perf_counter() - t0, 3),
        }
        path.rows.append(row)
        if path.best < 0 or _rank(row) > _rank(path.rows[path.best]):
            path.best, path.weights, path.trace = i, w.copy(), list(learner.trace_)
            since_best = 0
        elif row["nonzero"]:
            since_best += 1
        log.info(
            "selection: %s=%.6g %s nonzero=%d (point %d of at most %d, best %s=%.6g)",
            param,
            values[i],
            _scores(row),
            row["nonzero"],
            i + 1,
            len(values),
            param,
            path.value,
        )
        if report is not None:
            report(dict(row, selection=True))
        if since_best >= PATIENCE:
            break
        i += 1
        improving = path.best == i - 1 or not path.rows[path.best]["nonzero"]
        if i == len(values) and improving and len(values) < MAX_POINTS:
            values.append(values[-1] / GRID_FACTOR**direction)  # still improving: weaker
        elapsed = time.perf_counter() - started
        if max_seconds and elapsed >= max_seconds and i < len(values):
            path.notes.append(
                f"the path stopped after {i} point{'s' if i > 1 else ''} because "
                f"--max-seconds {max_seconds:g} was reached ({elapsed:.1f} s); the best of "
                f"those is kept, {param}={path.value:g}"
            )
            break
    mix_param = getattr(learner, "mix", None)
    if mix and mix_param and not _spent(max_seconds, started):
        _mix_path(learner, problem, path, mix_param, seed, report, max_seconds, started)
    if len(path.rows) > 1 and len({main_score(r) for r in path.rows}) == 1:
        path.notes.append(
            f"every point of the path scored the same on the {scored_on} "
            f"({main_score(path.rows[0]):g}), so it cannot tell the values apart; kept the "
            f"strongest penalty, the sparsest model, {param}={path.value:g}"
        )
    learner.warm_start = False
    learner.settings.update(full)
    learner.settings[param] = path.value
    learner.settings.update(path.mix)
    path.recipe = dict(cheap)  # unless the refit below does better
    if full:
        if max_seconds and time.perf_counter() - started >= max_seconds:
            path.notes.append(
                f"--max-seconds {max_seconds:g} was spent before the chosen "
                f"point could be trained to the learner's own settings; the "
                f"path's weights are kept"
            )
        else:
            _refit(learner, problem, path, seed)
    path.rows[path.best]["selected"] = True
    return path


def _rank(row: dict) -> tuple[bool, float]:
    """What makes a point better: having any non-zero weight at all (an empty model tags every
    token alike; a penalty strong enough to zero every weight says nothing of the data), then
    its dev score."""
    return bool(row["nonzero"]), main_score(row)


def _spent(max_seconds: float, started: float) -> bool:
    return bool(max_seconds) and time.perf_counter() - started >= max_seconds


def _mix_path(
    learner,
    problem,
    path: Path,
    mix_param: str,
    seed: int,
    report,
    max_seconds: float,
    started: float,
) -> None:
    """At the chosen strength, the L2 coefficient on :data:`MIX_VALUES`, warm-started from the
    best weights; a mix is kept only where it scores better (see the module docstring)."""
    param, value = path.param, path.value
    learner.settings[param] = value
    w, since_best = path.weights, 0
    for v in MIX_VALUES:
        learner.settings[mix_param] = v
        t0 = time.perf_counter()
        w = learner.fit(problem, seed=seed, w0=w)
        row = {
            "param": param,
            "value": value,
            "mix": {mix_param: v},
            **problem.dev_score(w),
            "nonzero": int(np.count_nonzero(w)),
            "seconds": round(time.perf_counter() - t0, 3),
        }
        path.rows.append(row)
        if main_score(row) > main_score(path.rows[path.best]):
            path.best, path.weights, path.trace = len(path.rows) - 1, w.copy(), list(learner.trace_)
            since_best = 0
        else:
            since_best += 1
        log.info(
            "selection: %s=%.6g %s=%.6g %s nonzero=%d (L2 mix, best %s)",
            param,
            value,
            mix_param,
            v,
            _scores(row),
            row["nonzero"],
            " ".join(f"{k}={x:g}" for k, x in {param: value, **path.mix}.items()),
        )
        if report is not None:
            report(dict(row, selection=True))
        if since_best >= PATIENCE or _spent(max_seconds, started):
            break
    learner.settings[mix_param] = path.mix.get(mix_param, 0.0)


def _refit(learner, problem, path: Path, seed: int) -> None:
    """Train the chosen point again with the learner's own settings, from the path's weights,
    and keep it unless it scores lower on the dev data than the path's point (whose row then
    records that score as ``refit_score``)."""
    t0 = time.perf_counter()
    w = learner.fit(problem, seed=seed, w0=path.weights)
    row = dict(
        path.rows[path.best],
        **problem.dev_score(w),
        nonzero=int(np.count_nonzero(w)),
        seconds=round(time.perf_counter() - t0, 3),
        refit=True,
    )
    if main_score(row) >= main_score(path.rows[path.best]):
        path.weights, path.trace = w, list(learner.trace_)
        path.rows[path.best] = row
        path.recipe = dict(learner.chosen_)
    else:  # not a warning: the path's cheaper weights simply scored better
        path.rows[path.best]["refit_score"] = main_score(row)


def _scores(row: dict) -> str:
    return " ".join(f"{k}={row[k]}" for k in ("dev_f1", "dev_acc") if k in row)
