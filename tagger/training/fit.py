"""Fitting one learner: the featurized problem, the learner's run (with the choice of the
regularization strength on a path when asked for, :mod:`tagger.training.selection`), and what
is kept of it, as a :class:`Fitted` record that :class:`tagger.api.Tagger` takes over.

:func:`fit_learner` trains what :func:`tagger.training.run.fit` asks for; :func:`fit_path`
trains the path of ``Tagger.path``. Neither checks the run's settings against each other nor
reads files: :mod:`tagger.training.run` does that first.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from tagger.chain.layout import ChainModel
from tagger.errors import TaggerError, TaggerWarning
from tagger.evaluation.labels import LabelIndex
from tagger.features import FeatureSpec, Featurizer
from tagger.features.translate import attribute_map
from tagger.io.scratch import ScratchSpace
from tagger.learners import get_learner
from tagger.sentence import Sentence
from tagger.training import selection
from tagger.training.data import HELD_OUT, build_problem, conllu_label_info, labeled_list

Progress = Callable[[dict], None]


@dataclass(frozen=True)
class FitSettings:
    """What a fit is asked for: the features, the learner and its parameters, the seed, and
    whether (and within how many seconds) the strength is chosen on a path."""

    features: FeatureSpec
    learner: str
    params: dict = field(default_factory=dict)
    seed: int = 0
    select: bool = True
    max_seconds: float = 0.0
    #: which point of the path is kept (tagger.training.selection.CHOICES)
    choose: str = "sparsest"


@dataclass
class Fitted:
    """A trained model as plain parts: the featurizer (without the attributes left without
    weights), the labels, the compacted chain model and its weights, the training info the
    model file keeps, and the learner's trace."""

    featurizer: Featurizer
    labels: LabelIndex
    model: ChainModel
    weights: np.ndarray
    info: dict
    trace: list[dict]


def fit_learner(
    settings: FitSettings,
    sentences: Iterable[Sentence],
    dev: Iterable[Sentence] | None,
    progress: Progress | None = None,
    *,
    unlabeled: Iterable[Sentence] | None = None,
    constraints=None,
    test: Iterable[Sentence] | None = None,
) -> Fitted:
    """Train ``settings.learner`` on the labeled ``sentences`` (``dev`` scored after every
    epoch; ``unlabeled`` sentences and a ``constraints`` set for semi-supervised learners;
    ``test`` scored for the trace only). With ``settings.select``, the strength is chosen on a
    path scored on ``dev``, or without dev data on a held-out tenth of ``sentences``."""
    learner_cls = get_learner(settings.learner)
    learner = learner_cls(**settings.params)
    learner.validated()  # fail on bad parameters before featurizing anything
    # what the user set wins over the polish a path gives its kept point (--set stages=4)
    learner.polish_settings = {
        k: v for k, v in learner_cls.polish_settings.items() if k not in settings.params
    }
    try:
        return _train(learner, settings, sentences, dev, progress, unlabeled, constraints, test)
    finally:
        learner.release()  # a cluster's connection, and the sentences sent there


def _train(learner, settings, sentences, dev, progress, unlabeled, constraints, test) -> Fitted:
    """:func:`fit_learner` once its learner is made and checked."""
    learner_cls = type(learner)
    t0 = time.perf_counter()
    cset_source = None if constraints is None else constraints.source
    selecting = _selects(settings, learner_cls, unlabeled)
    t_held = 0.0
    held_out = None
    if selecting and dev is None:
        sentences = labeled_list(sentences, "training data")
        path, held_out = _held_out_path(settings, learner, sentences, progress)
        t_held = time.perf_counter() - t0
    # the unlabeled text's arrays: memory, or memory-mapped files under scratch_dir
    scratch = ScratchSpace(learner.settings.get("scratch_dir"))
    try:
        train, featurizer, labels, problem = build_problem(
            settings.features,
            sentences,
            dev,
            progress,
            unlabeled,
            constraints,
            test,
            scratch=scratch,
        )
        X, model = problem.X, problem.model
        n_unlabeled = 0 if problem.unlabeled is None else int(problem.unlabeled.n_sentences)
        t_feat = time.perf_counter() - t0 - t_held
        if selecting and dev is not None:
            path = selection.run_path(
                learner,
                problem,
                _strength_default(learner_cls),
                learner_cls.strength[1],
                settings.seed,
                "dev data",
                progress,
                settings.max_seconds,
                t0,
                mix=_mixes(settings, learner_cls),
                choose=settings.choose,
            )
            w = path.weights
            learner.trace_ = path.trace
        else:
            w0 = None
            if held_out is not None and getattr(learner_cls, "polish_settings", None):
                w0 = _carried(path, held_out, featurizer, labels, model)
            w = learner.fit(problem, seed=settings.seed, w0=w0)
    finally:
        scratch.close()
    del problem
    n_params = model.n_weights
    fitted = _keep(learner, featurizer, labels, model, w)
    w = fitted.weights
    # the row of the weights kept: learners that choose along training (best dev score)
    # mark it "selected"; otherwise the weights are those of the last row
    kept = [r for r in learner.trace_ if r.get("selected")]
    last = kept[-1] if kept else (learner.trace_[-1] if learner.trace_ else {})
    fitted.info = {
        "learner": learner.name,
        "params": learner.validated(),
        "seed": settings.seed,
        "n_params": int(n_params),
        "n_nonzero": int(np.count_nonzero(w)),
        "n_train_sentences": len(train),
        "n_train_tokens": int(X.n_tokens),
        "n_unlabeled_sentences": n_unlabeled,
        "constraints": cset_source,
        "featurize_seconds": round(t_feat, 3),
        "train_seconds": round(time.perf_counter() - t0 - t_feat, 3),
        "final": {k: v for k, v in last.items() if isinstance(v, (int, float, str))},
        **conllu_label_info(train),
    }
    evidence = getattr(learner, "evidence_", None)
    if evidence is not None:
        fitted.info["evidence"] = {
            name: {"labeled": evidence["labeled"][i], "imputed": evidence["imputed"][i]}
            for i, name in enumerate(labels.labels)
        }
    if selecting:
        fitted.info["selection"] = path.as_info()
        for note in path.notes:
            warnings.warn(note, TaggerWarning, stacklevel=2)
    return fitted


def fit_path(
    settings: FitSettings,
    sentences: Iterable[Sentence],
    dev: Iterable[Sentence],
    values: Sequence[float],
    param: str | None = None,
    progress: Progress | None = None,
) -> tuple[Fitted, list[dict]]:
    """Train once per value of ``param`` (the learner's strength by default), each fit
    warm-started from the previous one, on data featurized once; returns the model of the
    last value and one row per value: ``{param, value, dev scores, nonzero, seconds}``."""
    learner_cls = get_learner(settings.learner)
    param = param or (learner_cls.strength[0] if learner_cls.strength else None)
    if param is None:
        raise TaggerError(f"learner {settings.learner!r} has no default path parameter; name one")
    learner_cls.param(param)  # an unknown name fails here
    values = [float(v) for v in values]
    if not values:
        raise TaggerError("the path needs at least one value")
    learner = learner_cls(**settings.params)
    learner.validated()
    for v in values:
        learner_cls(**dict(settings.params, **{param: v})).validated()
    train, featurizer, labels, problem = build_problem(settings.features, sentences, dev, progress)
    if problem.dev_score is None:
        raise TaggerError("the path needs dev data")
    learner.warm_start = True
    try:
        rows, w = _path_rows(learner, problem, param, values, settings.seed)
    finally:
        learner.release()
    fitted = _keep(learner, featurizer, labels, problem.model, w)
    fitted.info = {
        "learner": learner.name,
        "params": learner.validated(),
        "seed": settings.seed,
        "n_nonzero": int(np.count_nonzero(fitted.weights)),
        "path": rows,
        **conllu_label_info(train),
    }
    return fitted, rows


def _path_rows(learner, problem, param: str, values: list, seed: int) -> tuple[list, np.ndarray]:
    """One row per value of ``param``, each fit warm-started from the one before; and the last
    weights."""
    rows, w = [], None
    for v in values:
        learner.settings[param] = v
        t0 = time.perf_counter()
        w = learner.fit(problem, seed=seed, w0=w)
        row = {
            "param": param,
            "value": v,
            **problem.dev_score(w),
            "nonzero": int(np.count_nonzero(w)),
            "seconds": round(time.perf_counter() - t0, 3),
        }
        rows.append(row)
    return rows, w


def _selects(settings: FitSettings, learner_cls, unlabeled) -> bool:
    strength = learner_cls.strength
    return bool(
        settings.select
        and strength is not None
        and strength[0] not in settings.params
        and unlabeled is None
    )


def _mixes(settings: FitSettings, learner_cls) -> bool:
    """Whether the path also chooses the learner's L2 mix (not when it was set)."""
    mix = getattr(learner_cls, "mix", None)
    return bool(mix) and mix not in settings.params


def _strength_default(learner_cls) -> float:
    return float(learner_cls.param(learner_cls.strength[0]).default)


def _held_out_path(
    settings: FitSettings, learner, sentences: list[Sentence], progress: Progress | None
):
    """The path scored on a held-out tenth of ``sentences`` and the held-out problem's
    featurizer, labels and model (to carry the kept weights over, :func:`_carried`);
    ``learner`` is left set to the chosen value, to be trained on all of them."""
    kept, held = selection.holdout_split(len(sentences))
    if not held or not kept:
        raise TaggerError(
            f"choosing the regularization needs dev data or at least "
            f"{selection.HOLDOUT_EVERY} training sentences to hold some out; "
            f"give --dev FILE, or set the strength with --set"
        )
    _, featurizer, labels, problem = build_problem(
        settings.features,
        [sentences[i] for i in kept],
        [sentences[i] for i in held],
        progress,
        dev_what=HELD_OUT,
    )
    cls = type(learner)
    path = selection.run_path(
        learner,
        problem,
        _strength_default(cls),
        cls.strength[1],
        settings.seed,
        HELD_OUT,
        progress,
        settings.max_seconds,
        mix=_mixes(settings, cls),
        choose=settings.choose,
        refit=False,
    )
    # all the sentences are trained as the kept weights were (e.g. the stages that scored
    # best on the held-out part), but what the user set stays
    learner.settings.update({k: v for k, v in path.recipe.items() if k not in settings.params})
    return path, (featurizer, labels, problem.model)


def _carried(path, held_out, featurizer: Featurizer, labels: LabelIndex, model: ChainModel):
    """The weights the held-out path kept, laid out for the model of all the sentences: its
    training starts there rather than from zero (a learner with ``polish_settings`` trains
    them as it polishes a path's point), each weight on the same attribute and labels."""
    held_featurizer, held_labels, held_model = held_out
    attr_map = attribute_map(
        held_featurizer, featurizer, np.arange(held_featurizer.n_attributes, dtype=np.int64)
    )
    index = {name: i for i, name in enumerate(labels.labels)}
    label_map = np.array([index.get(name, -1) for name in held_labels.labels], dtype=np.int64)
    return held_model.carry_weights(path.weights, model, attr_map, label_map)


def _keep(
    learner, featurizer: Featurizer, labels: LabelIndex, model: ChainModel, w: np.ndarray
) -> Fitted:
    """What training ended with: the model without its zero weights, the featurizer without
    the attributes left without parameters, and the learner's trace (the info is the
    caller's to fill in)."""
    model, w, keep_attr = model.compact(w)
    featurizer.prune(keep_attr)
    return Fitted(featurizer, labels, model, w, {}, list(learner.trace_))
