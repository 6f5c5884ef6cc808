"""Choosing the regularization strength for the user (what ``tagger train`` does unless the
strength is given with ``--set``).

A learner names the parameter that sets its strength and which way it goes (``strength =
("radius", -1)``: a smaller radius penalizes more; ``("c1", +1)``: a larger c1 does). The path
walks a geometric grid around the learner's default (factor 2, two steps to the strong side,
three to the weak side), strongest penalty first, so that each point starts from the sparser
weights of the point before (a warm start) and the first points, with few non-zero weights,
are the cheap ones. Each point is scored on dev; the walk stops once ``PATIENCE`` points in a
row fail to renew it, and goes on past the weak end of the grid while the last point renewed
it (up to ``MAX_POINTS``). A point renews the walk when it is the best so far and could change
the point kept (below): under ``"sparsest"``, only by beating that point by more than noise,
since a weaker penalty that scores within noise of it would not be kept anyway. When the
strongest point is the best, the walk then goes on to stronger penalties, from its weights,
while they score better: a small training set can want a penalty stronger than the grid's.

Which point is kept (``choose``): ``"sparsest"`` (the default) keeps the point with the fewest
non-zero weights among those whose dev score is within noise of the best one: its deficit is
at most one standard error of the paired difference, computed from the two points' per-sentence
scores on the same dev sentences (:func:`paired_difference`; glmnet's ``lambda.1se`` rule, with
the error of the difference rather than of one score, because both points are scored on the
same sentences). ``"best"`` keeps the best dev score; on a tie the earlier, sparser point.
The path table marks both.
A point whose penalty zeroed every weight is not a model: it never beats a point with weights,
does not use up the patience, and while every point so far is empty the walk goes on to
weaker penalties (an L1 LP on a small training set is empty at the default C and below).

A learner whose penalty can mix in an L2 term (``mix = "c2"``: the elastic net) then walks a
second, short path at the chosen strength: the L2 coefficient on ``MIX_VALUES``, smallest
first, warm-started, going on to the next value only while each scores better than the best
by more than noise; the mix is kept only where it scores better than the pure L1 point (an L2
term keeps weights that L1 would zero, so on a tie the sparser, pure L1 model wins).

The points are trained cheaply (the learner's ``path_settings``: on the default learner, at
most a few dozen warm-started quasi-Newton iterations, its curvature pairs carried from point
to point), since they only need to rank the strengths; the points stronger than the default
more cheaply still where the learner says so (``lead_in_settings``); the kept point alone is
then polished with the learner's ``polish_settings`` (:func:`_refit`), except after a held-out
path, where the training on all the sentences is that polish.

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
#: grid steps from the default towards a stronger and a weaker penalty (the walk goes on past
#: either end while the point at that end is the best)
STRONG_STEPS, WEAK_STEPS = 2, 3
#: points in a row without a better dev score before the path stops
PATIENCE = 2
#: most points on a path, extensions past the weak end included
MAX_POINTS = 12
#: every this many training sentences, one is held out when there is no dev data
HOLDOUT_EVERY = 10
#: the L2 coefficients of the mix path (on the summed loss, CRFsuite's scale of c2); 1.0 was
#: never kept on GUM (UPOS, XPOS), CoNLL-2000 chunking or POS, where it cost a point each
MIX_VALUES = (0.01, 0.1)
#: the rules that pick the kept point (module docstring)
CHOICES = ("sparsest", "best")
#: a point is within noise of the best when its paired deficit is at most this many standard
#: errors
NOISE_SE = 1.0


def paired_difference(
    a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]
) -> tuple[float, float]:
    """(score of a - score of b, its standard error), in percent, from two points' shares of
    their score on the same sentences (``numerator, denominator`` arrays, one entry per
    sentence: the score is sum(num) / sum(den)). The error is the delta method's for a
    difference of two ratio estimates over the same sentences, each sentence one draw: with
    z_i = (num_a_i - R_a den_a_i) / sum(den_a) - (num_b_i - R_b den_b_i) / sum(den_b),
    SE^2 = n / (n - 1) * sum z_i^2."""
    (na, da), (nb, db) = a, b
    sa, sb = float(da.sum()), float(db.sum())
    if sa <= 0.0 or sb <= 0.0 or len(na) < 2:
        return 0.0, 0.0
    ra, rb = float(na.sum()) / sa, float(nb.sum()) / sb
    z = (na - ra * da) / sa - (nb - rb * db) / sb
    n = len(z)
    return 100.0 * (ra - rb), 100.0 * float(np.sqrt(n / (n - 1) * float(z @ z)))


@dataclass
class Point:
    """What a path keeps of a point besides its row, to choose among the points at the end:
    the non-zero weights (index and value), the training trace and the per-sentence dev
    shares (:func:`paired_difference`)."""

    index: np.ndarray
    values: np.ndarray
    n_weights: int
    trace: list[dict]
    shares: tuple[np.ndarray, np.ndarray] | None

    @classmethod
    def of(cls, w: np.ndarray, trace: list[dict], scorer) -> Point:
        index = np.flatnonzero(w)
        return cls(index, w[index].copy(), len(w), list(trace), getattr(scorer, "shares", None))

    def weights(self) -> np.ndarray:
        w = np.zeros(self.n_weights)
        w[self.index] = self.values
        return w


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
    points: list[Point] = field(default_factory=list)
    best: int = -1
    #: standard errors within which two points are as good (0: ``choose="best"``)
    noise_se: float = NOISE_SE
    #: +1 when a larger value penalizes more (the learner's strength direction)
    direction: int = 1
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
    choose: str = "sparsest",
    refit: bool = True,
) -> Path:
    """Train ``learner`` along the path on ``problem`` (whose ``dev_score`` scores a point).

    ``started`` is the ``time.perf_counter()`` that ``max_seconds`` counts from (default:
    now). A learner whose ``path_settings`` train the points more cheaply (fewer iterations)
    trains the chosen point again with its ``polish_settings`` (else its own settings),
    warm-started (:func:`_refit`), and keeps whichever scores better; ``Path.recipe`` says
    which settings trained the kept weights. ``mix``: walk the learner's L2 mix too (not when
    the user set it). ``choose``: the rule that keeps a point (:data:`CHOICES`). ``refit=False``
    leaves the polish to the caller, which trains the kept point again on other data (the
    recipe is then the polish settings)."""
    if choose not in CHOICES:
        raise ValueError(f"choose must be one of {CHOICES}, got {choose!r}")
    started = time.perf_counter() if started is None else started
    param = learner.strength[0]
    values = grid(default, direction)
    path = Path(
        param, scored_on, noise_se=NOISE_SE if choose == "sparsest" else 0.0, direction=direction
    )
    # a learner may train the path's points more cheaply than its final model
    cheap = getattr(learner, "path_settings", {})
    lead_in = getattr(learner, "lead_in_settings", {})
    polish = getattr(learner, "polish_settings", {})
    full = {k: learner.settings[k] for k in {**cheap, **lead_in, **polish}}
    learner.settings.update(cheap)
    learner.warm_start = True  # learners with a dual state keep it from point to point
    w, since_best, i = None, 0, 0
    while i < len(values):
        learner.settings[param] = values[i]
        stronger = (values[i] - default) * direction > 0
        learner.settings.update({**cheap, **lead_in} if stronger else cheap)
        t0 = time.perf_counter()
        w = learner.fit(problem, seed=seed, w0=w)
        row = {
            "param": param,
            "value": values[i],
            **problem.dev_score(w),
            "nonzero": int(np.count_nonzero(w)),
            **_effort(learner),
            "seconds": round(time.perf_counter() - t0, 3),
        }
        kept = _kept(path) if path.rows else -1
        _add_point(path, row, w, learner, problem)
        # a point renews the patience when it is the best and could change the point kept:
        # under "sparsest", only by beating that point by more than noise
        renewed = path.best == i and (
            kept < 0 or not path.rows[kept]["nonzero"] or _clearly_better(path, i, kept)
        )
        if renewed:
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
        improving = renewed or not path.rows[path.best]["nonzero"]
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
    learner.settings.update(cheap)
    if path.best == 0 and path.rows[0]["nonzero"] and not _spent(max_seconds, started):
        _stronger(learner, problem, path, values[0], direction, seed, report, max_seconds, started)
    mix_param = getattr(learner, "mix", None)
    if mix and mix_param and not _spent(max_seconds, started):
        _mix_path(learner, problem, path, mix_param, seed, report, max_seconds, started)
    if len(path.rows) > 1 and len({main_score(r) for r in path.rows}) == 1:
        path.notes.append(
            f"every point of the path scored the same on the {scored_on} "
            f"({main_score(path.rows[0]):g}), so it cannot tell the values apart; kept the "
            f"strongest penalty, the sparsest model, {param}={path.value:g}"
        )
    _choose(path, choose)
    learner.settings.update(full)
    learner.settings.update(polish)
    learner.settings[param] = path.value
    learner.settings.update(path.mix)
    path.recipe = dict(cheap)  # unless the polish below does better
    if full and not refit:
        # the caller trains the kept point again itself (on all the training data, after a
        # held-out path): a polish here would be spent on weights that are then replaced
        path.recipe = dict(polish)
    elif full:
        if max_seconds and time.perf_counter() - started >= max_seconds:
            path.notes.append(
                f"--max-seconds {max_seconds:g} was spent before the chosen "
                f"point could be trained to the learner's own settings; the "
                f"path's weights are kept"
            )
        else:
            _refit(learner, problem, path, seed, polish)
    learner.warm_start = False
    learner.settings.update(full)
    learner.settings[param] = path.value
    learner.settings.update(path.mix)
    path.rows[path.best]["selected"] = True
    return path


def _effort(learner) -> dict:
    """What a point cost in the learner's own units, load-independent: its iterations (the
    rows of its trace) and, where the learner counts them, its gradient evaluations."""
    trace = learner.trace_
    out = {"iterations": len(trace)}
    if trace and "grad_evals" in trace[-1]:
        out["grad_evals"] = int(trace[-1]["grad_evals"])
    return out


def _stronger(learner, problem, path, value, direction, seed, report, max_seconds, started):
    """The strongest point of the grid was the best: stronger penalties, each from the weights
    of the best point so far, until :data:`PATIENCE` points in a row do not score better, one
    zeroes every weight, or the path has :data:`MAX_POINTS` points."""
    param, since_best = path.param, 0
    while len(path.rows) < MAX_POINTS and not _spent(max_seconds, started):
        value *= GRID_FACTOR**direction
        learner.settings[param] = value
        t0 = time.perf_counter()
        w = learner.fit(problem, seed=seed, w0=path.points[path.best].weights())
        row = {
            "param": param,
            "value": value,
            **problem.dev_score(w),
            "nonzero": int(np.count_nonzero(w)),
            **_effort(learner),
            "seconds": round(time.perf_counter() - t0, 3),
        }
        top = main_score(path.rows[path.best])
        _add_point(path, row, w, learner, problem)
        log.info(
            "selection: %s=%.6g %s nonzero=%d (stronger than the grid, best %s=%.6g)",
            param,
            value,
            _scores(row),
            row["nonzero"],
            param,
            path.value,
        )
        if report is not None:
            report(dict(row, selection=True))
        # a stronger point that only ties is kept (sparser) but does not renew the patience
        since_best = 0 if main_score(row) > top else since_best + 1
        if since_best >= PATIENCE or not row["nonzero"]:
            break


def _add_point(path: Path, row: dict, w: np.ndarray, learner, problem) -> None:
    """Record a point; it becomes the best when it ranks higher than the best so far, or as
    high with a stronger penalty (the sparser model: the walk past the strong end comes after
    weaker points)."""
    path.rows.append(row)
    path.points.append(Point.of(w, learner.trace_, problem.dev_score))
    if path.best < 0:
        path.best = 0
        return
    top = path.rows[path.best]
    stronger = "mix" not in row and "mix" not in top
    stronger = stronger and (row["value"] - top["value"]) * path.direction > 0
    if _rank(row) > _rank(top) or (_rank(row) == _rank(top) and stronger):
        path.best = len(path.rows) - 1


def _choose(path: Path, choose: str) -> None:
    """Keep a point by the rule ``choose`` (module docstring); marks the best-scoring row
    ``best`` and, under ``"sparsest"``, every row within noise of it ``within_noise`` with
    its paired deficit ``deficit`` and standard error ``se``."""
    top = path.best
    path.rows[top]["best"] = True
    kept = top
    if choose == "sparsest":
        near = _within_noise(path)
        for i, deficit, se in near:
            path.rows[i].update(within_noise=True, deficit=round(deficit, 3), se=round(se, 3))
        kept = _kept(path, near)
    path.best = kept
    path.weights = path.points[kept].weights()
    path.trace = path.points[kept].trace


def _within_noise(path: Path) -> list[tuple[int, float, float]]:
    """(index, paired deficit, its standard error) of every point with weights, other than
    the best, whose deficit to the best is at most ``path.noise_se`` standard errors."""
    top = path.best
    if not path.noise_se or path.points[top].shares is None:
        return []
    out = []
    for i, (row, point) in enumerate(zip(path.rows, path.points)):
        if i == top or not row["nonzero"] or point.shares is None:
            continue
        deficit, se = paired_difference(path.points[top].shares, point.shares)
        if deficit <= path.noise_se * se:
            out.append((i, deficit, se))
    return out


def _kept(path: Path, near: list | None = None) -> int:
    """The point the rule keeps so far: the sparsest of the best and the points within
    noise of it (``near``, :func:`_within_noise` when not given; the best itself under
    ``choose="best"``)."""
    kept = path.best
    for i, _, _ in _within_noise(path) if near is None else near:
        if (path.rows[i]["nonzero"], i) < (path.rows[kept]["nonzero"], kept):
            kept = i
    return kept


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
    """At the best strength, the L2 coefficient on :data:`MIX_VALUES`, smallest first,
    warm-started from the best weights, going on to the next only while each point scores
    better than the best before it by more than noise (:func:`_clearly_better`): a larger L2
    term costs more iterations and keeps more weights, which a gain within noise does not
    pay for."""
    param, value = path.param, path.value
    learner.settings[param] = value
    unmixed = learner.settings[mix_param]
    w = path.points[path.best].weights()
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
            **_effort(learner),
            "seconds": round(time.perf_counter() - t0, 3),
        }
        before = path.best
        _add_point(path, row, w, learner, problem)
        gained = _clearly_better(path, len(path.rows) - 1, before)
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
        if not gained or _spent(max_seconds, started):
            break
    learner.settings[mix_param] = unmixed


def _clearly_better(path: Path, i: int, j: int) -> bool:
    """Whether point ``i`` scores better than point ``j`` on dev by more than
    ``path.noise_se`` paired standard errors (by anything under ``choose="best"``, or when
    the per-sentence scores are unknown)."""
    a, b = path.points[i].shares, path.points[j].shares
    if not path.noise_se or a is None or b is None:
        return _rank(path.rows[i]) > _rank(path.rows[j])
    gain, se = paired_difference(a, b)
    return gain > path.noise_se * se


def _refit(learner, problem, path: Path, seed: int, polish: dict) -> None:
    """Train the chosen point again with the learner's polishing settings, from the path's
    weights, and keep it unless it scores lower on the dev data than the path's point by more
    than noise (one paired standard error; under ``choose="best"``, lower at all), in which
    case the path's row records that score as ``refit_score``. The polished weights are the
    objective's optimum at the chosen strength, and usually far sparser."""
    t0 = time.perf_counter()
    w = learner.fit(problem, seed=seed, w0=path.weights)
    row = dict(
        path.rows[path.best],
        **problem.dev_score(w),
        nonzero=int(np.count_nonzero(w)),
        **_effort(learner),
        seconds=round(time.perf_counter() - t0, 3),
        refit=True,
    )
    deficit, se = main_score(path.rows[path.best]) - main_score(row), 0.0
    before, after = path.points[path.best].shares, getattr(problem.dev_score, "shares", None)
    if path.noise_se and before is not None and after is not None:
        deficit, se = paired_difference(before, after)
    if deficit <= path.noise_se * se:
        path.weights, path.trace = w, list(learner.trace_)
        path.rows[path.best] = row
        path.recipe = dict(polish, **learner.chosen_)
    else:  # not a warning: the path's cheaper weights simply scored better
        path.rows[path.best]["refit_score"] = main_score(row)
        path.rows[path.best]["refit_nonzero"] = row["nonzero"]
        path.rows[path.best]["refit_iterations"] = row["iterations"]


def _scores(row: dict) -> str:
    return " ".join(f"{k}={row[k]}" for k in ("dev_f1", "dev_acc") if k in row)
