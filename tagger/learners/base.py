"""What every learner shares: a parameter table, validation, progress reporting.

A learner sees a :class:`TrainingProblem` (the model's parameter layout, featurized
sentences, gold label ids and an optional dev scorer) and returns a weight vector. It never
reads files, TOML, click or spaCy.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from tagger.chain import ChainModel, Featurized
from tagger.errors import ParameterError, bad_value

log = logging.getLogger("tagger.train")


@dataclass(frozen=True)
class Param:
    """One row of a learner's parameter table: used by validation, ``--help`` and
    ``tagger learners``."""

    name: str
    default: Any
    kind: type
    help: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False  # (low, ...) instead of [low, ...)
    choices: tuple | None = None

    def describe_range(self) -> str:
        if self.choices is not None:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        kind = {float: "a float", int: "an integer", bool: "a boolean", str: "a string"}[self.kind]
        if self.low is None and self.high is None:
            return kind
        lo = "-inf" if self.low is None else f"{self.low:g}"
        hi = "inf" if self.high is None else f"{self.high:g}"
        opening = "(" if self.low_open else "["
        closing = "]" if self.high is not None else ")"
        return f"{kind} in {opening}{lo}, {hi}{closing}"

    def parse(self, text: str) -> Any:
        """Convert a ``--set key=value`` string to this parameter's type."""
        try:
            if self.kind is bool:
                low = text.strip().lower()
                if low in ("1", "true", "yes", "on"):
                    return True
                if low in ("0", "false", "no", "off"):
                    return False
                raise ValueError
            return self.kind(text)
        except ValueError:
            raise bad_value(self.name, self.describe_range(), text) from None

    def validate(self, value: Any, owner: str) -> Any:
        bad = bad_value(self.name, self.describe_range(), value, owner)
        if self.choices is not None:
            if value not in self.choices:
                raise bad
            return value
        if self.kind is bool:
            if not isinstance(value, (bool, np.bool_)):
                raise bad
            return bool(value)
        if self.kind is int:
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise bad
            value = int(value)
        elif self.kind is float:
            if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
                raise bad
            value = float(value)
            if not math.isfinite(value):
                raise bad
        if self.low is not None and (value < self.low or (self.low_open and value == self.low)):
            raise bad
        if self.high is not None and value > self.high:
            raise bad
        return value


@dataclass
class TrainingProblem:
    """Everything a learner may use."""

    model: ChainModel
    X: Featurized
    y: np.ndarray  # int32[N] gold label ids
    dev_score: Callable[[np.ndarray], dict] | None = None  # weights -> {"score": ..., ...}
    progress: Callable[[dict], None] | None = None
    # semi-supervised learners: unlabeled sentences and the constraints compiled for them
    # (tagger.constraints.ConstraintData), and a held-out scorer whose results are only
    # recorded in the trace (never used to choose anything)
    unlabeled: Featurized | None = None
    constraints: Any = None
    report_score: Callable[[np.ndarray], dict] | None = None
    # where large per-token arrays go (tagger.io.scratch.ScratchSpace): memory, or memory-mapped
    # files with a scratch directory; None: memory
    scratch: Any = None

    @property
    def n_sentences(self) -> int:
        return self.X.n_sentences


class Learner:
    """Base class. Subclasses set ``name``, ``params`` and implement ``_fit``."""

    name: ClassVar[str] = ""
    params: ClassVar[tuple[Param, ...]] = ()
    #: (parameter, direction) of the regularization strength, direction +1 when a larger
    #: value penalizes more: what a regularization path varies and training can choose
    #: (tagger.training.selection); None for a learner that does not choose its strength this way
    strength: ClassVar[tuple[str, int] | None] = None
    #: settings for the points of a regularization path, when they can be trained more
    #: cheaply than the final model and still rank the strengths (tagger.training.selection)
    path_settings: ClassVar[dict] = {}
    #: settings, over ``path_settings``, for the points stronger than the default: a lead-in
    #: that can be cheaper where those points mostly carry sparse weights to the default
    lead_in_settings: ClassVar[dict] = {}
    #: settings that train the point a path kept once more, from its weights (the learner's
    #: own settings when empty)
    polish_settings: ClassVar[dict] = {}
    #: True for a learner computed in one closed-form step (no ``epochs``, one progress row)
    closed_form: ClassVar[bool] = False
    #: True for a learner that trains label-pair templates (``pair_templates``: transitions
    #: that vary by position, :mod:`tagger.chain.pairs`) and second-order chains
    #: (:mod:`tagger.chain.second_order`)
    label_pairs: ClassVar[bool] = False

    def __init__(self, **kwargs: Any):
        known = {p.name for p in self.params}
        for key in kwargs:
            if key not in known:
                raise ParameterError(
                    f"{type(self).__name__} ({self.name}) has no parameter "
                    f"{key!r}; its parameters are: {', '.join(sorted(known))}"
                )
        # __init__ stores, fit validates
        self.settings = {p.name: kwargs.get(p.name, p.default) for p in self.params}
        self.trace_: list[dict] = []
        #: settings a learner chose on the dev data while training (e.g. how many stages),
        #: which train the same model on other data: see tagger.training.selection
        self.chosen_: dict = {}
        #: set by a regularization path while it trains its points one after another: a
        #: learner may then carry state from the point before (a dual, quasi-Newton pairs)
        #: and score only each point's end on the dev data
        self.warm_start = False

    @classmethod
    def param(cls, name: str) -> Param:
        for p in cls.params:
            if p.name == name:
                return p
        known = ", ".join(p.name for p in cls.params)
        raise ParameterError(
            f"learner {cls.name!r} has no parameter {name!r}; its parameters are: {known}"
        )

    @classmethod
    def parse_settings(cls, pairs: Sequence[str]) -> dict:
        """``["radius=200", "epochs=10"]`` -> typed dict (for ``--set key=value``)."""
        out = {}
        for item in pairs:
            if "=" not in item:
                raise ParameterError(f"--set expects key=value, got {item!r}")
            key, value = item.split("=", 1)
            out[key.strip()] = cls.param(key.strip()).parse(value.strip())
        return out

    def validated(self) -> dict:
        owner = type(self).__name__
        return {p.name: p.validate(self.settings[p.name], owner) for p in self.params}

    def get_params(self) -> dict:
        return dict(self.settings)

    def fit(
        self, problem: TrainingProblem, seed: int = 0, w0: np.ndarray | None = None
    ) -> np.ndarray:
        settings = self.validated()
        self.trace_, self.chosen_ = [], {}
        return self._fit(problem, settings, seed, w0)

    def _fit(
        self, problem: TrainingProblem, settings: dict, seed: int, w0: np.ndarray | None
    ) -> np.ndarray:
        raise NotImplementedError

    def release(self) -> None:
        """Let go of what training held between fits (a learner that trains on a cluster
        closes its connection); training calls it once done, and a later fit starts anew."""

    # ---- progress
    #: the row key that counts the learner's iterations, and the setting that bounds it
    progress_counter = ("epoch", "epochs")

    def report(self, problem: TrainingProblem, row: dict) -> None:
        """Record one progress row in ``trace_``, log it and pass it to ``problem.progress``."""
        self.trace_.append(row)
        parts = [f"{k}={_fmt(v)}" for k, v in row.items()]
        eta = _eta(row, self.settings.get("epochs"))
        if eta:
            parts.append(f"eta<={eta}")
        key, bound = self.progress_counter
        # the record carries the row itself, for progress bars (tagger.cli.console)
        log.info(
            "%s: %s",
            self.name,
            " ".join(parts),
            extra={
                "row": row,
                "learner": self.name,
                "counter": key,
                "total": self.settings.get(bound),
                "first": len(self.trace_) == 1,
            },
        )
        if problem.progress is not None:
            problem.progress(dict(row, learner=self.name))


def duration_text(seconds: float) -> str:
    """``45s`` under two minutes, else ``3min``: how an ETA is written."""
    return f"{seconds:.0f}s" if seconds < 120 else f"{seconds / 60:.0f}min"


def main_score(row: dict) -> float:
    """The dev score that decides: chunk F1 for B-/I- labels, else accuracy."""
    return row["dev_f1"] if "dev_f1" in row else row["dev_acc"]


def _eta(row: dict, epochs) -> str:
    """An upper bound on the time left, from the mean time per epoch so far and the epochs
    still allowed (a stopping rule may end training sooner); '' when the row cannot say."""
    done, spent = row.get("epoch"), row.get("time")
    if not isinstance(epochs, int) or not isinstance(done, int) or not spent or done <= 0:
        return ""
    return duration_text(spent / done * max(epochs - done, 0))


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


class Stopwatch:
    def __init__(self):
        self.t0 = time.perf_counter()

    def __call__(self) -> float:
        return time.perf_counter() - self.t0
