"""The Python API: :func:`train` fits a tagger as ``tagger train`` does; ``Tagger`` fits,
predicts, evaluates, saves and loads sequence taggers.

    >>> import tagger
    >>> tg = tagger.train(train="corpora/sample_chunk.txt", output="chunker.tgm")  # doctest: +SKIP
    >>> tg = tagger.train("train.toml", seed=3)                      # doctest: +SKIP
    >>> from tagger import Tagger, read_corpus
    >>> tg = Tagger(features="chunk", learner="m3n-subgradient", params={"radius": 1500})
    >>> tg.fit(read_corpus("corpora/sample_chunk.txt"))            # doctest: +SKIP
    >>> tg.predict([sentence])                                        # doctest: +SKIP
    >>> tg.save("chunker.tgm"); Tagger.load("chunker.tgm")           # doctest: +SKIP
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from tagger.chain.layout import ChainModel
from tagger.constraints.report import constraint_report
from tagger.errors import ModelFileError, NotFittedError, TaggerError
from tagger.evaluation.labels import LabelIndex
from tagger.evaluation.report import check_all_known, check_some_known, evaluation_report
from tagger.features import FeatureSpec, Featurized, Featurizer
from tagger.io.sources import as_sentences
from tagger.learners import DEFAULT_LEARNER
from tagger.model.files import load_model_file, save_model_file
from tagger.model.header import check_model_header, header_meta
from tagger.model.in_memory import from_model_bytes, model_bytes
from tagger.model.inspect import inspect_report
from tagger.model.predictions import Predictions, decode
from tagger.sentence import Sentence
from tagger.training.data import check_columns, constraint_set, labeled_list

if TYPE_CHECKING:
    from tagger.training.config import TrainingConfig

#: sentences featurized and decoded together when tagging a stream
TAG_BATCH = 4096


class Model(NamedTuple):
    """What a fitted :class:`Tagger` holds (:meth:`Tagger.fitted`)."""

    featurizer: Featurizer
    labels: LabelIndex
    model: ChainModel
    weights: np.ndarray


class Tagger:
    """A linear-chain sequence tagger with sparse weights.

    Parameters are stored as given and validated by :meth:`fit` (scikit-learn's habit); the
    defaults are ``tagger train``'s, and :meth:`fit` trains through :func:`train`, so the same
    data and settings give the same model as the command line:

    features
        a preset name (``chunk``, ``pos``, ``citation``), a TOML file, or a :class:`FeatureSpec`;
        None (default): the preset that follows the training data
        (:func:`tagger.io.sources.default_preset`)
    learner
        a learner name (see ``tagger.learners.LEARNERS``), or ``"auto"``: train each of
        ``AUTO_CANDIDATES`` with its own choice of strength and keep the best on dev
        (:mod:`tagger.training.auto`); None (default): ``ssvm-annealing`` with unlabeled data,
        else ``DEFAULT_LEARNER``
    params
        the learner's parameters (its table: ``tagger learners``)
    seed
        makes training deterministic
    select
        choose the regularization strength (:mod:`tagger.training.selection`; default True, as
        ``tagger train`` does): a warm-started path scored on the dev data, or on a held-out
        tenth of the training data without dev data. Only when ``params`` does not set the
        strength and the learner has one; False trains at the learner's default strength
        (``--no-select``)
    max_seconds
        a time budget for that path (0: none): no new point starts after that many seconds of
        training; the best point so far is kept and a :class:`TaggerWarning` says so
    choose
        which point of the path is kept: ``"sparsest"`` (default), the one with the fewest
        non-zero weights among those whose dev score is within one standard error of the best
        (paired over the dev sentences), or ``"best"``, the best dev score
    """

    def __init__(
        self,
        features: str | Path | FeatureSpec | None = None,
        learner: str | None = None,
        params: dict | None = None,
        seed: int = 0,
        select: bool = True,
        max_seconds: float = 0.0,
        choose: str = "sparsest",
    ):
        self.features = features
        self.learner = learner
        self.params = dict(params or {})
        self.seed = seed
        self.select = select
        self.max_seconds = max_seconds
        self.choose = choose
        # learned state
        self.featurizer_: Featurizer | None = None
        self.labels_: LabelIndex | None = None
        self.model_: ChainModel | None = None
        self.weights_: np.ndarray | None = None
        self.info_: dict = {}
        self.trace_: list[dict] = []

    # ------------------------------------------------------------------ training
    def fit(
        self,
        sentences: Iterable[Sentence],
        dev: Iterable[Sentence] | None = None,
        progress: Callable[[dict], None] | None = None,
        *,
        unlabeled: Iterable[Sentence] | None = None,
        constraints=None,
        test: Iterable[Sentence] | None = None,
    ) -> Tagger:
        """Train on labeled sentences (:func:`train` with this tagger's settings); ``dev``
        sentences are scored after every epoch and choose the strength.

        Either may also be a Hugging Face dataset or source string (``tagger.io.hf``).
        Semi-supervised learners (``ssvm-annealing``) also take ``unlabeled`` sentences (any
        iterable; read once, in batches) and ``constraints`` (a constraint file path or a
        :class:`~tagger.constraints.ConstraintSet`) that the learner's imputed labelings of
        the unlabeled sentences should meet. ``test`` sentences are scored along the way for
        the trace only (reporting; nothing is chosen on them).
        """
        fitted = train(
            train=sentences,
            dev=dev,
            test=test,
            unlabeled=unlabeled,
            constraints=constraints,
            features=self.features,
            learner=self.learner,
            params=self.params,
            seed=self.seed,
            select=self.select,
            max_seconds=self.max_seconds,
            choose=self.choose,
            progress=progress,
        )
        self._take(*fitted.fitted(), fitted.info_, fitted.trace_)
        return self

    def _take(
        self,
        featurizer: Featurizer,
        labels: LabelIndex,
        model: ChainModel,
        weights: np.ndarray,
        info: dict,
        trace: list[dict],
    ) -> None:
        """Hold a trained (or loaded) model."""
        self.featurizer_, self.labels_, self.model_, self.weights_ = (
            featurizer,
            labels,
            model,
            weights,
        )
        self.info_, self.trace_ = info, trace

    def path(
        self,
        sentences: Iterable[Sentence],
        dev: Iterable[Sentence],
        values: Sequence[float],
        param: str | None = None,
        progress: Callable[[dict], None] | None = None,
    ) -> list[dict]:
        """Regularization path: train once per value of ``param``, each fit warm-started.

        ``param`` defaults to the learner's regularization constant (its ``strength``: radius
        of m3n-subgradient, c1 of the L1 CRFs, lambda of m3n-em, C of m3n-l2, ...). The data
        are featurized once;
        each fit starts from the previous one (learners that keep a solver state continue from
        it, the others start from the previous weights). Returns one row per value:
        ``{param, value, dev_f1 (chunk labels), dev_acc, nonzero, seconds}``; the Tagger
        keeps the last model.
        """
        from tagger.training.config import checked_seed
        from tagger.training.fit import FitSettings, fit_path
        from tagger.training.run import feature_spec

        seed = checked_seed(self.seed, "Tagger.path()")
        spec, sentences = feature_spec(self.features, sentences)
        settings = FitSettings(spec, self.learner or DEFAULT_LEARNER, dict(self.params), seed)
        fitted, rows = fit_path(settings, sentences, dev, values, param, progress)
        self._take(
            fitted.featurizer,
            fitted.labels,
            fitted.model,
            fitted.weights,
            fitted.info,
            fitted.trace,
        )
        return rows

    def stored_path(self) -> dict | None:
        """The regularization path kept in the model: the one training chose the strength on
        (``info_["selection"]``) or the one :meth:`path` trained (as ``{"rows": [...]}``);
        None when it was trained at a set strength."""
        info = self.info_
        stored = info.get("selection") or ({"rows": info["path"]} if info.get("path") else None)
        return stored if stored and stored.get("rows") else None

    # ------------------------------------------------------------------ prediction
    def fitted(self) -> Model:
        """The model's parts; :class:`NotFittedError` before :meth:`fit` or :meth:`load`."""
        if (
            self.featurizer_ is None
            or self.labels_ is None
            or self.model_ is None
            or self.weights_ is None
        ):
            raise NotFittedError("this Tagger has no model yet: call fit() or Tagger.load()")
        return Model(self.featurizer_, self.labels_, self.model_, self.weights_)

    def featurize(self, sentences: Sequence[Sentence]) -> Featurized:
        featurizer = self.fitted().featurizer
        check_columns(sentences, featurizer.spec, "input")
        return featurizer.transform(sentences)

    def predict_batch(
        self, sentences: Sequence[Sentence], constraints=None, marginals: bool = False
    ) -> Predictions:
        """Decode one batch: every prediction of the package goes through here.

        The batch is featurized and scored once (attribute lookup fused with scoring) and
        decoded by one kernel call: Viterbi, or with ``constraints`` (a constraint file, a
        :class:`~tagger.constraints.ConstraintSet` or one compiled for this model's labels)
        the constrained decoder of :mod:`tagger.constraints.decoding`. With ``marginals`` the node
        marginals of the model's Gibbs distribution come from forward-backward over the same
        scores (meaningful as probabilities for CRF models only: see
        :attr:`probabilistic_`). Empty sentences take no rows."""
        featurizer, labels, model, w = self.fitted()
        sentences = list(sentences)
        offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
        np.cumsum([len(s) for s in sentences], out=offsets[1:])
        nonempty = [s for s in sentences if len(s)]
        if not nonempty:
            node = np.empty((0, len(labels))) if marginals else None
            return Predictions(np.empty(0, np.int32), offsets, node)
        check_columns(nonempty, featurizer.spec, "input")
        E = featurizer.encode(nonempty)
        compiled = None if constraints is None else self.compile_constraints(constraints)
        if not model.plain:  # transitions that vary by position: the attribute lists are needed
            X = featurizer.transform_views(E.view_ids, E.offsets)
            node = model.marginals(X, w) if marginals else None
            if compiled is None:
                return Predictions(model.decode(X, w)[0], offsets, node)
            # imported here, as model.predictions does: tagging without constraints never
            # loads their decoder
            from tagger.chain.constrained import constrained_decode_pairs

            pair_ids, _ = constrained_decode_pairs(
                model, X, w, compiled, compiled.indicators(nonempty)
            )
            return Predictions(pair_ids, offsets, node)
        state = model.state_scores_from_views(E, w)
        trans = np.ascontiguousarray(model.transitions(w))
        ids, node = decode(state, E.offsets, trans, compiled, nonempty, marginals)
        return Predictions(ids, offsets, node)

    def compile_constraints(self, constraints):
        """Constraints compiled for this model's labels (given compiled, as a
        :class:`~tagger.constraints.ConstraintSet` or as a file). Labels of the file that the
        model lacks are taken out of its rules and the rules left with none are dropped, with
        a :class:`~tagger.errors.TaggerWarning` naming them; a file with no rule left to decode
        with is an error (:mod:`tagger.constraints.model_labels`)."""
        if hasattr(constraints, "indicators"):
            return constraints
        return constraint_set(constraints).compile(self.fitted().labels.labels)

    def predict(self, sentences: Iterable[Sentence], constraints=None) -> list[list[str]]:
        """Predicted label sequences, one per sentence (under ``constraints``, a constraint
        file or :class:`~tagger.constraints.ConstraintSet`, when given: see
        :mod:`tagger.constraints.decoding`)."""
        out: list[list[str]] = []
        for _, labels in self.tag_stream(sentences, constraints=constraints):
            out.append(labels)
        return out

    def tag_stream(
        self, sentences: Iterable[Sentence], batch_size: int = TAG_BATCH, constraints=None
    ) -> Iterator[tuple[Sentence, list[str]]]:
        """Yield ``(sentence, predicted labels)`` in input order, decoding in batches;
        with ``constraints``, hard rules are enforced (exactly where the expanded-state
        Viterbi can) and soft ones weigh in by label switching."""
        labels = self.fitted().labels
        compiled = None if constraints is None else self.compile_constraints(constraints)
        it = iter(sentences)
        while True:
            batch = list(itertools.islice(it, batch_size))
            if not batch:
                return
            yield from zip(batch, self.predict_batch(batch, compiled).labels(labels))

    @property
    def conllu_label_(self) -> str:
        """The CoNLL-U field (``upos`` or ``xpos``) the model was trained on; ``upos`` for a
        model trained on other formats."""
        return self.info_.get("conllu_label", "upos")

    # ------------------------------------------------------------------ marginals (CRF models)
    @property
    def probabilistic_(self) -> bool:
        """True when the model's scores define p(y | x) (a CRF learner trained it)."""
        from tagger.learners import LEARNERS

        cls = LEARNERS.get(self.info_.get("learner", ""))
        return bool(getattr(cls, "probabilistic", False))

    def check_probabilistic(self, what: str = "marginals") -> None:
        """Refuse a max-margin model where probabilities are asked for."""
        if not self.probabilistic_:
            raise TaggerError(
                f"{what} need a CRF model (crf-l2, crf-l1, crf-grafting, ...); this model was "
                f"trained by {self.info_.get('learner', 'an unknown learner')}, a max-margin "
                f"learner whose scores are not probabilities"
            )

    def predict_marginals(self, sentences: Iterable[Sentence]) -> list[np.ndarray]:
        """Per-token label probabilities ``P(y_t = l | x)`` of a CRF model: one float64 array
        (T, L) per sentence, columns in the order of ``labels_.labels``, rows summing to 1.

        Max-margin models are refused: their scores rank labelings but are not probabilities.
        """
        self.fitted()
        self.check_probabilistic()
        return self.predict_batch(list(sentences), marginals=True).marginal_list()

    def constraint_report(
        self,
        sentences: Iterable[Sentence],
        constraints,
        predictions: Sequence[Sequence[str]] | None = None,
    ) -> list[dict]:
        """How often each constraint is violated by the gold labels and by the predictions
        (this tagger's, or the ``predictions`` given) of labeled ``sentences``."""
        gold_sents = self.fitted().featurizer.spec.relabel(
            labeled_list(as_sentences(sentences), "evaluation data")
        )
        return self._violations(gold_sents, constraints, predictions)

    def _violations(
        self, gold_sents: list[Sentence], constraints, predictions: Sequence[Sequence[str]] | None
    ) -> list[dict]:
        index = self.fitted().labels
        cset = constraint_set(constraints)
        # every rule as written: labels of the file the model lacks take ids after its own,
        # which neither labeling uses
        extra = [lab for lab in cset.labels if lab not in set(index.labels)]
        compiled = cset.compile(list(index.labels) + extra)
        ti = compiled.indicators(gold_sents)
        gold = [lab for s in gold_sents for lab in s.labels or ()]
        check_all_known(gold, index.labels)
        if predictions is None:
            predictions = self.predict(gold_sents)
        pred = [lab for labs in predictions for lab in labs]
        return constraint_report(compiled, ti, index.encode(gold), index.encode(pred))

    def evaluate(
        self, sentences: Iterable[Sentence], constraints=None, vocabulary=None, violations=None
    ) -> dict:
        """Token accuracy and conlleval chunk P/R/F1 against the sentences' gold labels
        (predictions under ``constraints`` when given). With ``vocabulary`` (the words of the
        training data, or its sentences), also the accuracy on tokens whose word is in it and
        on the others (``by_vocabulary``: the error on seen words is the LP paper's Err_voc).
        With ``violations`` (a constraint file or set), also how often each of its constraints
        is violated by the gold labels and by the same predictions (``constraints``: see
        :meth:`constraint_report`)."""
        featurizer, index = self.fitted()[:2]
        gold_sents = featurizer.spec.relabel(
            labeled_list(as_sentences(sentences), "evaluation data")
        )
        gold = [list(s.labels or ()) for s in gold_sents]
        # before decoding: a wrong model or label column is reported without tagging first
        check_some_known(gold, index.labels)
        pred = self.predict(gold_sents, constraints=constraints)
        tokens = [s.tokens for s in gold_sents]
        result = evaluation_report(gold, pred, index.labels, tokens, vocabulary)
        if violations is not None:
            result["constraints"] = self._violations(gold_sents, violations, pred)
        return result

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | Path) -> int:
        """Write the model atomically (no pickle); returns the file size in bytes."""
        featurizer, labels, model, w = self.fitted()
        feat_meta, arrays = featurizer.to_arrays()
        arrays.update(model.to_arrays())
        arrays["weights"] = w
        meta = header_meta(labels.labels, feat_meta, self.info_, self.trace_)
        return save_model_file(path, meta, arrays)

    def __reduce__(self):
        """Pickling (joblib, multiprocessing, Dask, Ray) goes through the model file's bytes,
        the same format as :meth:`save`; an unfitted tagger is its parameters."""
        params = {
            "features": self.features,
            "learner": self.learner,
            "params": self.params,
            "seed": self.seed,
            "select": self.select,
            "max_seconds": self.max_seconds,
            "choose": self.choose,
        }
        if self.model_ is None:
            return (_tagger_from_params, (params,))
        return (_tagger_from_pickle, (self.to_bytes(), params))

    def to_bytes(self) -> bytes:
        """The model file's bytes (what :meth:`save` writes)."""
        return model_bytes(self.save)

    @classmethod
    def from_bytes(cls, data: bytes) -> Tagger:
        """A tagger from a model file's bytes (what :meth:`to_bytes` returns)."""
        return from_model_bytes(data, cls.load)

    def tag_dataset(
        self,
        ds,
        fields=None,
        output: str = "predicted",
        num_proc: int | None = None,
        batch_size: int = 1000,
    ):
        """``ds`` (a Hugging Face Dataset) with a column of predictions: ``Dataset.map``, batched,
        in ``num_proc`` processes; see :func:`tagger.io.hf.tag_dataset`."""
        from tagger.io import hf

        return hf.tag_dataset(self, ds, fields, output, num_proc, batch_size)

    @classmethod
    def load(cls, path: str | Path) -> Tagger:
        # the header and the arrays' sizes are checked before any array is read
        meta, arrays = load_model_file(
            path, check=lambda meta, shapes: check_model_header(meta, shapes, str(path))
        )
        try:
            featurizer = Featurizer.from_arrays(meta["features"], arrays)
            labels = LabelIndex(meta["labels"])
            model = ChainModel.from_arrays(len(labels), arrays)
            w = np.ascontiguousarray(arrays["weights"], dtype=np.float64)
            if w.shape != (model.n_weights,) or model.n_attrs != featurizer.n_attributes:
                raise ValueError("array sizes disagree")
            if not np.all(np.isfinite(w)):
                raise ValueError("weights that are not finite numbers")
        except (KeyError, ValueError, TypeError, TaggerError) as exc:
            raise ModelFileError(
                f"{path}: the model file is damaged or inconsistent ({exc})"
            ) from None
        info = meta.get("info", {})
        self = cls(
            features=featurizer.spec,
            learner=info.get("learner", DEFAULT_LEARNER),
            params=info.get("params", {}),
            seed=info.get("seed", 0),
        )
        self._take(featurizer, labels, model, w, info, meta.get("trace", []))
        return self

    # ------------------------------------------------------------------ inspection
    @property
    def n_nonzero_(self) -> int:
        return int(np.count_nonzero(self.fitted().weights))

    def inspect(self, top: int = 10) -> dict:
        """Parameter counts, the strongest state features per label, and transitions
        (:func:`tagger.model.inspect.inspect_report`)."""
        self.fitted()
        return inspect_report(self, top)


# ---------------------------------------------------------------------- training


def train(
    config: TrainingConfig | Mapping[str, Any] | str | os.PathLike | None = None,
    /,
    *,
    progress: Callable[[dict], None] | None = None,
    **settings: Any,
) -> Tagger:
    """Train a tagger as ``tagger train`` does, with every rule it applies, and return it
    fitted (saved atomically to ``output`` when one is given).

    ``config`` is a :class:`~tagger.training.config.TrainingConfig`, its dict form or a TOML
    file; ``settings`` win over it as ``tagger train``'s options do, each named by its key
    (``train``, ``dev``, ``test``, ``unlabeled``, ``constraints``, ``format``,
    ``label_column``, ``conllu_label``, ``fields``, ``output``, ``features``, ``learner``,
    ``order``, ``seed``, ``select``, ``choose``, ``max_seconds``, ``threads``; None leaves a
    setting as it is),
    ``params`` merged over the learner's parameters. ``threads`` (the numba kernels' threads;
    default ``NUMBA_NUM_THREADS``, else ``OMP_NUM_THREADS``, else every core the process may
    use) does not change the weights and is not kept in the model. Data are file names and
    sources (read as the command line reads them) or sentences and datasets; the constraints
    may be a
    :class:`~tagger.constraints.ConstraintSet`, the features a :class:`FeatureSpec`.
    ``progress`` receives the learner's progress rows.

    The rules are :mod:`tagger.training.run`'s: the learner defaults to ``ssvm-annealing`` with
    unlabeled data; the parameters are checked against its table; the output and the
    constraints are checked before any data is read; without ``features`` the preset follows
    the data; the strength is chosen unless ``select`` is False or ``params`` sets it. When
    everything is named by files, the model keeps the resolved configuration
    (``info_["config"]``, what ``--config-from`` trains again). Mistakes in the settings raise
    :class:`~tagger.training.config.SettingError`.
    """
    from tagger.training import run

    names, objects = run.split_settings(settings)
    cfg = run.configuration(config).merged(names)
    trained = run.fit(cfg, objects, progress)
    tagger = Tagger(
        features=trained.features,
        learner=trained.learner,
        params=trained.params,
        seed=trained.seed,
        select=trained.select,
        max_seconds=trained.max_seconds,
        choose=trained.choose,
    )
    fitted = trained.fitted
    tagger._take(
        fitted.featurizer, fitted.labels, fitted.model, fitted.weights, fitted.info, fitted.trace
    )
    if trained.output:
        tagger.save(trained.output)
    return tagger


# ---------------------------------------------------------------------- helpers


def _tagger_from_params(params: dict) -> Tagger:
    return Tagger(**params)


def _tagger_from_pickle(data: bytes, params: dict) -> Tagger:
    tagger = Tagger.from_bytes(data)
    for key, value in params.items():
        setattr(tagger, key, value)
    return tagger
