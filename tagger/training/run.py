"""A training run as ``tagger train`` makes it, whoever asks: :func:`fit` applies every rule to
a :class:`~tagger.training.config.TrainingConfig` (and to the data or feature specification
given as objects rather than names), reads the data and fits the model;
:func:`tagger.api.train` turns the result into a :class:`~tagger.api.Tagger` and saves it.

The rules, in the order they are checked (all before any data is read, but the feature
preset, which is chosen from the data):

- training data must be given;
- the learner defaults to ``ssvm-annealing`` when unlabeled data are given, else to
  ``DEFAULT_LEARNER``; an unknown one is refused;
- ``params`` are checked against the learner's parameter table (``auto`` takes none);
- the output path must be writable and not one of the inputs;
- the constraint file is read and checked, and refused without unlabeled data;
- the kernels get their threads (:func:`use_threads`; not kept in the model, whose weights
  do not depend on them);
- the feature preset, when none is named, follows the training data
  (:func:`tagger.io.sources.default_preset`);
- the model keeps the resolved configuration (:func:`tagger.training.config.for_model`) when
  everything it names is a file or a preset, so that ``--config-from`` can train it again.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tagger import jit
from tagger.errors import ParameterError, TaggerError, TaggerWarning
from tagger.features import PRESETS, FeatureSpec
from tagger.io import gc_paused
from tagger.io.atomic import OutputPathError, check_output
from tagger.io.sources import (
    as_sentences,
    default_preset,
    open_labeled,
    open_many_labeled,
    open_unlabeled,
)
from tagger.learners import AUTO, AUTO_CANDIDATES, DEFAULT_LEARNER, get_learner
from tagger.sentence import Sentence
from tagger.training.auto import fit_auto
from tagger.training.config import (
    ParameterSettingError,
    SettingError,
    TrainingConfig,
    for_model,
    learner_params,
)
from tagger.training.data import constraint_set
from tagger.training.fit import FitSettings, Fitted, Progress, fit_learner

#: the learner trained when unlabeled data are given and no learner is named
SEMI_SUPERVISED = "ssvm-annealing"
#: the data settings that may be objects (sentences, a dataset, a ConstraintSet) not names
DATA_KEYS = ("train", "dev", "test", "unlabeled", "constraints")


@dataclass
class Trained:
    """What :func:`fit` ends with: the fitted model and the settings it was trained with,
    resolved (the learner and feature preset chosen, the parameters checked)."""

    fitted: Fitted
    features: str | FeatureSpec
    learner: str
    params: dict
    seed: int
    select: bool
    max_seconds: float
    choose: str
    #: the model file to write ("" for none)
    output: str


def configuration(
    config: TrainingConfig | Mapping[str, Any] | str | os.PathLike | None,
) -> TrainingConfig:
    """The configuration object of what :func:`tagger.train` takes: itself, its dict form or a
    TOML file (None: every default)."""
    if config is None:
        return TrainingConfig()
    if isinstance(config, TrainingConfig):
        return config
    if isinstance(config, Mapping):
        return TrainingConfig.from_dict(config)
    if isinstance(config, (str, os.PathLike)):
        return TrainingConfig.from_file(config)
    raise TypeError(
        f"expected a TrainingConfig, a dict or a TOML file name; got {type(config).__name__}"
    )


def split_settings(settings: Mapping[str, Any]) -> tuple[dict, dict]:
    """``(names, objects)``: the settings a configuration holds (file names, sources, presets,
    numbers), and those given as objects it cannot hold: data as sentences or datasets,
    constraints as a ConstraintSet, features as a FeatureSpec."""
    names, objects = {}, {}
    for key, value in settings.items():
        if (key in DATA_KEYS and value is not None and not _is_name(value, key == "train")) or (
            key == "features" and isinstance(value, FeatureSpec)
        ):
            objects[key] = value
        else:
            names[key] = value
    return names, objects


def _is_name(value: Any, many: bool) -> bool:
    if isinstance(value, (str, os.PathLike)):
        return True
    # an empty list is taken for sentences: "contains no sentences" says more than "no data"
    return (
        many
        and isinstance(value, (list, tuple))
        and len(value) > 0
        and all(isinstance(v, (str, os.PathLike)) for v in value)
    )


def fit(
    config: TrainingConfig,
    objects: Mapping[str, Any] | None = None,
    progress: Progress | None = None,
) -> Trained:
    """Apply every rule (see the module docstring) to ``config`` and the ``objects`` that stand
    for some of its settings (``train``, ``dev``, ``test``, ``unlabeled``, ``constraints``,
    ``features``), read the data and fit. Mistakes in the settings raise
    :class:`~tagger.training.config.SettingError` (or :class:`ConfigError` for parameters);
    mistakes in the data, the project's other errors."""
    objects = dict(objects or {})
    data, run = config.data, config.model

    def given(key: str) -> bool:
        return key in objects or bool(data[key])

    if not given("train"):
        raise SettingError(
            "no training data: give the training files or sentences (train), "
            "or [data] train in the configuration",
            "data.train",
        )
    learner = default_learner(run["learner"], given("unlabeled"))
    if learner != AUTO:
        try:
            get_learner(learner)
        except ParameterError as exc:
            raise ParameterSettingError(f"{exc}; see 'tagger learners'", "model.learner") from None
    params = learner_params(config.to_dict(), learner, config.source)
    try:
        check_output(
            run["output"] or None,
            [*data["train"], data["dev"], data["test"], data["unlabeled"], data["constraints"]],
        )
    except OutputPathError as exc:
        raise SettingError(str(exc), "model.output") from None
    cset = constraint_set(objects.get("constraints", data["constraints"] or None))
    if cset is not None and not given("unlabeled"):
        raise SettingError(
            "constraints in training need unlabeled data (--unlabeled FILE, or [data] "
            "unlabeled): they guide the labels imputed to unlabeled text",
            "data.unlabeled",
        )
    use_threads(config.threads)
    warn_about_scoring_training_data(config, objects)
    read = dict(
        format=data["format"],
        label_column=data["label_column"],
        fields=data["fields"] or None,
        conllu_label=data["conllu_label"],
    )
    with gc_paused():
        train = _labeled(objects.get("train"), data["train"], read)
        dev = _labeled(objects.get("dev"), data["dev"], read)
        test = _labeled(objects.get("test"), data["test"], read)
    features = objects.get("features") or check_features(run["features"])
    if not features:
        train = list(train)
        features = default_preset(train)
    spec = features if isinstance(features, FeatureSpec) else FeatureSpec.load(features)
    if run["order"] and run["order"] != spec.order:
        spec = spec.with_order(run["order"])
    settings = FitSettings(
        spec, learner, params, run["seed"], run["select"], run["max_seconds"], run["choose"]
    )
    if spec.has_pairs or spec.order == 2:
        check_pair_learner(learner, given("unlabeled"))
    unlabeled = objects.get("unlabeled")
    if unlabeled is None and data["unlabeled"]:
        unlabeled = open_unlabeled(data["unlabeled"], data["format"])
    if learner == AUTO:
        if unlabeled is not None or cset is not None:
            raise TaggerError(
                "learner 'auto' trains on labeled data only; name "
                "ssvm-annealing for unlabeled data and constraints"
            )
        fitted = fit_auto(settings, train, dev, progress, test)
    else:
        fitted = fit_learner(
            settings, train, dev, progress, unlabeled=unlabeled, constraints=cset, test=test
        )
    if not objects:
        # a rerun (--config-from) reads the same files with the same settings
        stored = dict(config.to_dict(), model=dict(run, features=features))
        fitted.info["config"] = for_model(stored, learner, params, run["select"])
    return Trained(
        fitted,
        features,
        learner,
        params,
        run["seed"],
        run["select"],
        run["max_seconds"],
        run["choose"],
        run["output"],
    )


def warn_about_scoring_training_data(config: TrainingConfig, objects: Mapping[str, Any]) -> None:
    """A warning when the dev (or test) data are the training data, as a file name or as the
    same object: a score on them measures how well the model fits what it learned, not how it
    tags new text, so the strength chosen on them tends to the weakest and the scores are high."""
    train = objects.get("train")
    names = [n for n in config.data["train"] if os.path.isfile(n)] if train is None else []
    for key in ("dev", "test"):
        value = objects.get(key)
        if value is not None:
            same = value is train
        else:
            name = config.data[key]
            same = bool(name) and any(_same_file(name, n) for n in names)
        if not same:
            continue
        what = config.data[key] if value is None else "the same sentences"
        chosen = ", and the strength chosen on them tends to the weakest" if key == "dev" else ""
        warnings.warn(
            f"the {key} data are the training data ({what}): their scores measure how well "
            f"the model fits what it learned, not how it tags new text{chosen}; give {key} "
            f"data apart from the training data",
            TaggerWarning,
            stacklevel=4,
        )


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def use_threads(requested: int | None) -> int:
    """Let the kernels use ``requested`` threads, or without a request those the environment
    names or every usable core (:func:`tagger.jit.resolve_threads`); a request above the
    usable cores is cut to them with a warning. Returns the count."""
    n, note = jit.resolve_threads(requested)
    if note:
        warnings.warn(note, TaggerWarning, stacklevel=3)
    jit.set_threads(n)
    return n


def check_pair_learner(learner: str, unlabeled: bool) -> None:
    """Label-pair templates (``pair_templates``) and second-order chains (``order = 2``) train
    with the learners whose objective takes them; with unlabeled data, with
    ``ssvm-annealing`` alone: said before any data is read further or featurized."""
    names = AUTO_CANDIDATES if learner == AUTO else (learner,)
    from tagger.learners import LEARNERS  # every learner's module: only on this path

    able = [name for name, cls in LEARNERS.items() if cls.label_pairs]
    for name in names:
        if not get_learner(name).label_pairs:
            raise SettingError(
                f"learner {name!r} does not train label-pair templates or second-order chains "
                f"(pair_templates, order = 2 in the feature file); use one of "
                f"{', '.join(able)}, or drop them",
                "model.learner",
            )
    for name in names if unlabeled else ():
        if not getattr(get_learner(name), "needs_unlabeled", False):
            raise SettingError(
                f"learner {name!r} trains label-pair templates and second-order chains on "
                f"labeled data only; ssvm-annealing trains them with unlabeled data: name "
                f"it, or drop the unlabeled data",
                "data.unlabeled",
            )


def default_learner(learner: str, unlabeled: bool) -> str:
    """The learner named, or without one ``ssvm-annealing`` when unlabeled data are given and
    ``DEFAULT_LEARNER`` otherwise."""
    return learner or (SEMI_SUPERVISED if unlabeled else DEFAULT_LEARNER)


def feature_spec(
    features: str | Path | FeatureSpec | None, sentences: Iterable[Sentence]
) -> tuple[FeatureSpec, Iterable[Sentence]]:
    """The feature specification named (a preset, a file, or itself), or without one the
    preset that follows ``sentences``; with the sentences, listed when they were looked at."""
    if features is None or features == "":
        sentences = list(as_sentences(sentences))
        features = default_preset(sentences)
    if isinstance(features, FeatureSpec):
        return features, sentences
    return FeatureSpec.load(features), sentences


def check_features(value: str) -> str:
    """A preset name or an existing TOML file ("" passes: chosen from the data); anything else
    is a :class:`SettingError` of ``model.features`` (``tagger path`` applies it too)."""
    if not value or value in PRESETS or os.path.isfile(value):
        return value
    raise SettingError(
        f"{value!r} is neither a preset ({', '.join(PRESETS)}) nor an existing TOML file",
        "model.features",
    )


def _labeled(obj: Any, names: list[str] | str, read: dict) -> Iterable[Sentence] | None:
    """Labeled sentences given as an object (sentences, a dataset, a source) or by name."""
    if obj is not None:
        return as_sentences(obj)
    if isinstance(names, list):
        return open_many_labeled(names, **read) if names else None
    return open_labeled(names, **read) if names else None
