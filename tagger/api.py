"""The Python API: ``Tagger`` fits, predicts, evaluates, saves and loads sequence taggers.

    >>> from tagger import Tagger, read_corpus
    >>> tg = Tagger(features="chunk", learner="m3n-subgradient", params={"radius": 1500})
    >>> tg.fit(read_corpus("corpora/sample_chunk.txt"))            # doctest: +SKIP
    >>> tg.predict([sentence])                                        # doctest: +SKIP
    >>> tg.save("chunker.tgm"); Tagger.load("chunker.tgm")           # doctest: +SKIP
"""

from __future__ import annotations

import itertools
import time
import warnings
from pathlib import Path
from typing import Callable, Iterable, Iterator, NamedTuple, Sequence

import numpy as np

from tagger.errors import (ModelFileError, NotFittedError, TaggerError, TaggerWarning,
                           UnknownLabelError)
from tagger.features import Featurized, FeatureSpec, Featurizer
from tagger.inference import forward_backward_batch
from tagger.inference.max_product import viterbi_batch_into
from tagger.io.sources import as_sentences
from tagger.evaluation.labels import LabelIndex, is_bio
from tagger.learners import AUTO, DEFAULT_LEARNER, get_learner
from tagger.evaluation.metrics import by_vocabulary, evaluate as evaluate_labels, word_set
from tagger.chain.layout import ChainModel
from tagger.model.header import check_header
from tagger.training import selection
from tagger.model.inspect import inspect_report, jsonable
from tagger.io.scratch import ScratchSpace
from tagger.sentence import Sentence
from tagger.training.data import (HELD_OUT, build_problem, check_columns, conllu_label_info,
                                  constraint_set, labeled_list)
from tagger.model.files import load_model_file, save_model_file

#: sentences featurized and decoded together when tagging a stream
TAG_BATCH = 4096


class Predictions(NamedTuple):
    """One decoded batch (:meth:`Tagger.predict_batch`): label ids stacked over the batch's
    tokens, each sentence's offsets into them, and the (tokens, labels) node marginals when
    they were asked for."""

    ids: np.ndarray                 # int32[n_tokens]
    offsets: np.ndarray             # int64[n_sentences + 1]
    marginals: np.ndarray | None    # float64[n_tokens, n_labels] or None

    def labels(self, index: LabelIndex) -> list[list[str]]:
        """The predicted label sequences, one per sentence."""
        flat = np.array(index.labels, dtype=object)[self.ids].tolist()
        offs = self.offsets.tolist()
        return [flat[a:b] for a, b in zip(offs[:-1], offs[1:])]

    def marginal_list(self) -> list[np.ndarray]:
        """The node marginals as one (T, L) array per sentence."""
        offs = self.offsets.tolist()
        return [self.marginals[a:b] for a, b in zip(offs[:-1], offs[1:])]


class Tagger:
    """A linear-chain sequence tagger with sparse weights.

    Parameters are stored as given and validated by :meth:`fit` (scikit-learn's habit):

    features
        a preset name (``chunk``, ``pos``, ``citation``), a TOML file, or a :class:`FeatureSpec`
    learner
        a learner name (see ``tagger.learners.LEARNERS``), or ``"auto"``: train each of
        ``AUTO_CANDIDATES`` with its own choice of strength and keep the best on dev
        (:mod:`tagger.training.auto`)
    params
        the learner's parameters (its table: ``tagger learners``)
    seed
        makes training deterministic
    select
        choose the regularization strength (:mod:`tagger.training.selection`): a warm-started path
        scored on the dev data, or on a held-out tenth of the training data without dev data.
        Only when ``params`` does not set the strength and the learner has one (``tagger
        train`` selects by default; ``--no-select`` turns it off)
    max_seconds
        a time budget for that path (0: none): no new point starts after that many seconds of
        training; the best point so far is kept and a :class:`TaggerWarning` says so
    """

    def __init__(self, features: str | Path | FeatureSpec = "chunk",
                 learner: str = DEFAULT_LEARNER, params: dict | None = None, seed: int = 0,
                 select: bool = False, max_seconds: float = 0.0):
        self.features = features
        self.learner = learner
        self.params = dict(params or {})
        self.seed = seed
        self.select = select
        self.max_seconds = max_seconds
        # learned state
        self.featurizer_: Featurizer | None = None
        self.labels_: LabelIndex | None = None
        self.model_: ChainModel | None = None
        self.weights_: np.ndarray | None = None
        self.info_: dict = {}

    # ------------------------------------------------------------------ training
    def fit(self, sentences: Iterable[Sentence], dev: Iterable[Sentence] | None = None,
            progress: Callable[[dict], None] | None = None, *,
            unlabeled: Iterable[Sentence] | None = None, constraints=None,
            test: Iterable[Sentence] | None = None) -> "Tagger":
        """Train on labeled sentences; ``dev`` sentences are scored after every epoch.

        Either may also be a Hugging Face dataset or source string (``tagger.io.hf``).
        Semi-supervised learners (``ssvm-annealing``) also take ``unlabeled`` sentences (any
        iterable; read once, in batches) and ``constraints`` (a constraint file path or a
        :class:`~tagger.constraints.ConstraintSet`) that the learner's imputed labelings of
        the unlabeled sentences should meet. ``test`` sentences are scored along the way for
        the trace only (reporting; nothing is chosen on them).
        """
        sentences = as_sentences(sentences)
        dev = None if dev is None else as_sentences(dev)
        if self.learner == AUTO:
            if unlabeled is not None or constraints is not None:
                raise TaggerError("learner 'auto' trains on labeled data only; name "
                                  "ssvm-annealing for unlabeled data and constraints")
            from tagger.training.auto import fit_auto

            return fit_auto(self, sentences, dev, progress, test)
        learner_cls = get_learner(self.learner)
        learner = learner_cls(**self.params)
        learner.validated()  # fail on bad parameters before featurizing anything
        if not isinstance(self.seed, (int, np.integer)) or isinstance(self.seed, bool):
            raise TaggerError(f"seed must be an integer; got {self.seed!r}")
        if (isinstance(self.max_seconds, bool) or not isinstance(self.max_seconds, (int, float))
                or not self.max_seconds >= 0):
            raise TaggerError(f"max_seconds must be a number >= 0 (0: no limit); got "
                              f"{self.max_seconds!r}")
        t0 = time.perf_counter()
        cset = constraint_set(constraints)
        cset_source = None if cset is None else cset.source
        selecting = self._selects(learner_cls, unlabeled)
        t_held = 0.0
        if selecting and dev is None:
            sentences = labeled_list(sentences, "training data")
            path = self._held_out_path(learner, sentences, progress)
            t_held = time.perf_counter() - t0
        # the unlabeled text's arrays: memory, or memory-mapped files under scratch_dir
        scratch = ScratchSpace(learner.settings.get("scratch_dir"))
        try:
            train, featurizer, labels, problem = self._problem(
                sentences, dev, progress, unlabeled=unlabeled, constraints=cset, test=test,
                scratch=scratch)
            X, model = problem.X, problem.model
            n_unlabeled = 0 if problem.unlabeled is None else int(problem.unlabeled.n_sentences)
            t_feat = time.perf_counter() - t0 - t_held
            if selecting and dev is not None:
                path = selection.run_path(learner, problem, self._strength_default(learner_cls),
                                          learner_cls.strength[1], int(self.seed), "dev data",
                                          progress, float(self.max_seconds), t0,
                                          mix=self._mixes(learner_cls))
                w = path.weights
                learner.trace_ = path.trace
            else:
                w = learner.fit(problem, seed=int(self.seed))
        finally:
            scratch.close()
        del problem
        n_params = model.n_weights
        w = self._keep(learner, featurizer, labels, model, w)
        # the row of the weights kept: learners that choose along training (best dev score)
        # mark it "selected"; otherwise the weights are those of the last row
        kept = [r for r in learner.trace_ if r.get("selected")]
        last = kept[-1] if kept else (learner.trace_[-1] if learner.trace_ else {})
        self.info_ = {
            "learner": learner.name, "params": learner.validated(), "seed": int(self.seed),
            "n_params": int(n_params), "n_nonzero": int(np.count_nonzero(w)),
            "n_train_sentences": len(train), "n_train_tokens": int(X.n_tokens),
            "n_unlabeled_sentences": n_unlabeled,
            "constraints": cset_source,
            "featurize_seconds": round(t_feat, 3),
            "train_seconds": round(time.perf_counter() - t0 - t_feat, 3),
            "final": {k: v for k, v in last.items() if isinstance(v, (int, float, str))},
            **conllu_label_info(train),
        }
        evidence = getattr(learner, "evidence_", None)
        if evidence is not None:
            self.info_["evidence"] = {
                name: {"labeled": evidence["labeled"][i], "imputed": evidence["imputed"][i]}
                for i, name in enumerate(labels.labels)}
        if selecting:
            self.info_["selection"] = path.as_info()
            for note in path.notes:
                warnings.warn(note, TaggerWarning, stacklevel=2)
        return self

    def _selects(self, learner_cls, unlabeled) -> bool:
        strength = learner_cls.strength
        return bool(self.select and strength is not None and strength[0] not in self.params
                    and unlabeled is None)

    def _mixes(self, learner_cls) -> bool:
        """Whether the path also chooses the learner's L2 mix (not when it was set)."""
        mix = getattr(learner_cls, "mix", None)
        return bool(mix) and mix not in self.params

    def _strength_default(self, learner_cls) -> float:
        return float(learner_cls.param(learner_cls.strength[0]).default)

    def _held_out_path(self, learner, sentences: list[Sentence], progress):
        """The path scored on a held-out tenth of ``sentences``; ``learner`` is left set to the
        chosen value, to be trained on all of them."""
        kept, held = selection.holdout_split(len(sentences))
        if not held or not kept:
            raise TaggerError(f"choosing the regularization needs dev data or at least "
                              f"{selection.HOLDOUT_EVERY} training sentences to hold some out; "
                              f"give --dev FILE, or set the strength with --set")
        _, _, _, problem = self._problem([sentences[i] for i in kept],
                                         [sentences[i] for i in held], progress,
                                         dev_what=HELD_OUT)
        cls = type(learner)
        path = selection.run_path(learner, problem, self._strength_default(cls),
                                  cls.strength[1], int(self.seed), HELD_OUT, progress,
                                  float(self.max_seconds), mix=self._mixes(cls))
        # all the sentences are trained as the kept weights were (e.g. the stages that scored
        # best on the held-out part), but what the user set stays
        learner.settings.update({k: v for k, v in path.recipe.items() if k not in self.params})
        return path

    def _keep(self, learner, featurizer: Featurizer, labels: LabelIndex, model: ChainModel,
              w: np.ndarray) -> np.ndarray:
        """Keep what training ended with (:meth:`fit` and :meth:`path`): the model without its
        zero weights, the featurizer without the attributes left without parameters, and the
        learner's trace. Returns the kept weights."""
        model, w, keep_attr = model.compact(w)
        featurizer.prune(keep_attr)
        self.featurizer_, self.labels_, self.model_, self.weights_ = featurizer, labels, model, w
        self.trace_ = list(learner.trace_)
        return w

    def _problem(self, sentences, dev, progress, unlabeled=None, constraints=None, test=None,
                 dev_what="dev data", scratch=None):
        """(train list, featurizer, labels, problem): see
        :func:`tagger.training.data.build_problem`."""
        spec = self.features if isinstance(self.features, FeatureSpec) else FeatureSpec.load(self.features)
        return build_problem(spec, sentences, dev, progress, unlabeled, constraints, test,
                             dev_what, scratch)

    def path(self, sentences: Iterable[Sentence], dev: Iterable[Sentence], values: Sequence[float],
             param: str | None = None, progress: Callable[[dict], None] | None = None
             ) -> list[dict]:
        """Regularization path: train once per value of ``param``, each fit warm-started.

        ``param`` defaults to the learner's regularization constant (its ``strength``: radius
        of m3n-subgradient, c1 of the L1 CRFs, lambda of m3n-em, C of m3n-l2, ...). The data are featurized once;
        each fit starts from the previous one (learners that keep a solver state continue from
        it, the others start from the previous weights). Returns one row per value:
        ``{param, value, dev_f1 (chunk labels), dev_acc, nonzero, seconds}``; the Tagger
        keeps the last model.
        """
        learner_cls = get_learner(self.learner)
        param = param or (learner_cls.strength[0] if learner_cls.strength else None)
        if param is None:
            raise TaggerError(f"learner {self.learner!r} has no default path parameter; name one")
        learner_cls.param(param)  # an unknown name fails here
        values = [float(v) for v in values]
        if not values:
            raise TaggerError("the path needs at least one value")
        learner = learner_cls(**self.params)
        learner.validated()
        for v in values:
            learner_cls(**dict(self.params, **{param: v})).validated()
        train, featurizer, labels, problem = self._problem(sentences, dev, progress)
        if problem.dev_score is None:
            raise TaggerError("the path needs dev data")
        rows, w = [], None
        learner.warm_start = True
        for v in values:
            learner.settings[param] = v
            t0 = time.perf_counter()
            w = learner.fit(problem, seed=int(self.seed), w0=w)
            row = {"param": param, "value": v, **problem.dev_score(w),
                   "nonzero": int(np.count_nonzero(w)),
                   "seconds": round(time.perf_counter() - t0, 3)}
            rows.append(row)
        w = self._keep(learner, featurizer, labels, problem.model, w)
        self.info_ = {"learner": learner.name, "params": learner.validated(),
                      "seed": int(self.seed), "n_nonzero": int(np.count_nonzero(w)),
                      "path": rows, **conllu_label_info(train)}
        return rows

    # ------------------------------------------------------------------ prediction
    def _check_fitted(self) -> None:
        if self.model_ is None:
            raise NotFittedError("this Tagger has no model yet: call fit() or Tagger.load()")

    def featurize(self, sentences: Sequence[Sentence]) -> Featurized:
        self._check_fitted()
        check_columns(sentences, self.featurizer_.spec, "input")
        return self.featurizer_.transform(sentences)

    def predict_batch(self, sentences: Sequence[Sentence], constraints=None,
                      marginals: bool = False) -> Predictions:
        """Decode one batch: every prediction of the package goes through here.

        The batch is featurized and scored once (attribute lookup fused with scoring) and
        decoded by one kernel call: Viterbi, or with ``constraints`` (a constraint file, a
        :class:`~tagger.constraints.ConstraintSet` or one compiled for this model's labels)
        the constrained decoder of :mod:`tagger.constraints.decoding`. With ``marginals`` the node
        marginals of the model's Gibbs distribution come from forward-backward over the same
        scores (meaningful as probabilities for CRF models only: see
        :attr:`probabilistic_`). Empty sentences take no rows."""
        self._check_fitted()
        sentences = list(sentences)
        offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
        np.cumsum([len(s) for s in sentences], out=offsets[1:])
        nonempty = [s for s in sentences if len(s)]
        if not nonempty:
            node = np.empty((0, len(self.labels_))) if marginals else None
            return Predictions(np.empty(0, np.int32), offsets, node)
        check_columns(nonempty, self.featurizer_.spec, "input")
        E = self.featurizer_.encode(nonempty)
        state = self.model_.state_scores_from_views(E, self.weights_)
        trans = np.ascontiguousarray(self.model_.transitions(self.weights_))
        if constraints is None:
            ids = np.empty(int(E.offsets[-1]), dtype=np.int32)
            viterbi_batch_into(state, E.offsets, trans, ids, np.empty(len(nonempty)))
        else:
            from tagger.constraints.decoding import constrained_decode

            compiled = self.compile_constraints(constraints)
            ids, _ = constrained_decode(state, E.offsets, trans, compiled,
                                        compiled.indicators(nonempty))
        node = forward_backward_batch(state, E.offsets, trans)[1] if marginals else None
        return Predictions(ids, offsets, node)

    def compile_constraints(self, constraints):
        """Constraints compiled for this model's labels (given compiled, as a
        :class:`~tagger.constraints.ConstraintSet` or as a file); a label of the file that the
        model lacks is an error."""
        if hasattr(constraints, "indicators"):
            return constraints
        return constraint_set(constraints).compile(self.labels_.labels)

    def predict(self, sentences: Iterable[Sentence], constraints=None) -> list[list[str]]:
        """Predicted label sequences, one per sentence (under ``constraints``, a constraint
        file or :class:`~tagger.constraints.ConstraintSet`, when given: see
        :mod:`tagger.constraints.decoding`)."""
        out: list[list[str]] = []
        for _, labels in self.tag_stream(sentences, constraints=constraints):
            out.append(labels)
        return out

    def tag_stream(self, sentences: Iterable[Sentence], batch_size: int = TAG_BATCH,
                   constraints=None) -> Iterator[tuple[Sentence, list[str]]]:
        """Yield ``(sentence, predicted labels)`` in input order, decoding in batches;
        with ``constraints``, hard rules are enforced (exactly where the expanded-state
        Viterbi can) and soft ones weigh in by label switching."""
        self._check_fitted()
        compiled = None if constraints is None else self.compile_constraints(constraints)
        it = iter(sentences)
        while True:
            batch = list(itertools.islice(it, batch_size))
            if not batch:
                return
            yield from zip(batch, self.predict_batch(batch, compiled).labels(self.labels_))

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
                f"learner whose scores are not probabilities")

    def predict_marginals(self, sentences: Iterable[Sentence]) -> list[np.ndarray]:
        """Per-token label probabilities ``P(y_t = l | x)`` of a CRF model: one float64 array
        (T, L) per sentence, columns in the order of ``labels_.labels``, rows summing to 1.

        Max-margin models are refused: their scores rank labelings but are not probabilities.
        """
        self._check_fitted()
        self.check_probabilistic()
        return self.predict_batch(list(sentences), marginals=True).marginal_list()

    def constraint_report(self, sentences: Iterable[Sentence], constraints,
                          predictions: Sequence[Sequence[str]] | None = None) -> list[dict]:
        """How often each constraint is violated by the gold labels and by the predictions
        (this tagger's, or the ``predictions`` given) of labeled ``sentences``."""
        from tagger.constraints import violation_report

        self._check_fitted()
        gold_sents = self.featurizer_.spec.relabel(
            labeled_list(as_sentences(sentences), "evaluation data"))
        compiled = constraint_set(constraints).compile(self.labels_.labels)
        ti = compiled.indicators(gold_sents)
        gold = [lab for s in gold_sents for lab in s.labels]
        known = set(self.labels_.labels)
        unknown = sorted({lab for lab in gold if lab not in known})
        if unknown:
            raise UnknownLabelError(f"gold labels {', '.join(unknown)} are not labels of the "
                                    f"model; the constraint report cannot count them")
        if predictions is None:
            predictions = self.predict(gold_sents)
        g = violation_report(compiled, ti, self.labels_.encode(gold))
        p = violation_report(compiled, ti, self.labels_.encode(
            [lab for labs in predictions for lab in labs]))
        rows = []
        for rg, rp in zip(g, p):
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

    def evaluate(self, sentences: Iterable[Sentence], constraints=None,
                 vocabulary=None) -> dict:
        """Token accuracy and conlleval chunk P/R/F1 against the sentences' gold labels
        (predictions under ``constraints`` when given). With ``vocabulary`` (the words of the
        training data, or its sentences), also the accuracy on tokens whose word is in it and
        on the others (``by_vocabulary``: the error on seen words is the LP paper's Err_voc)."""
        gold_sents = self.featurizer_.spec.relabel(
            labeled_list(as_sentences(sentences), "evaluation data"))
        gold_labels = {lab for s in gold_sents for lab in s.labels}
        known = set(self.labels_.labels)
        if not gold_labels & known:
            raise UnknownLabelError(
                f"none of the evaluation data's labels ({', '.join(sorted(gold_labels)[:8])}"
                f"{', ...' if len(gold_labels) > 8 else ''}) is a label of this model "
                f"({', '.join(self.labels_.labels[:8])}{', ...' if len(known) > 8 else ''}); "
                f"is it the right model, format and label column?")
        pred = self.predict(gold_sents, constraints=constraints)
        # the model's labels decide chunk or token scoring: a stray gold label cannot switch it
        result = evaluate_labels([s.labels for s in gold_sents], pred,
                                 chunk_level=is_bio(self.labels_.labels))
        # gold labels the model never saw in training: always counted as errors
        result["unknown_labels"] = sorted(gold_labels - known)
        if vocabulary is not None:
            result["by_vocabulary"] = by_vocabulary(
                [s.tokens for s in gold_sents], [s.labels for s in gold_sents], pred,
                word_set(vocabulary))
        return result

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | Path) -> int:
        """Write the model atomically (no pickle); returns the file size in bytes."""
        self._check_fitted()
        feat_meta, arrays = self.featurizer_.to_arrays()
        arrays.update(self.model_.to_arrays())
        arrays["weights"] = self.weights_
        # wall-clock times stay out of the file: same data, options and seed give the same bytes
        info = _without_clock(self.info_)
        if isinstance(info.get("final"), dict):
            info["final"] = _without_clock(info["final"])
        if isinstance(info.get("selection"), dict):
            info["selection"] = dict(info["selection"], rows=[
                _without_clock(r) for r in info["selection"]["rows"]])
        if isinstance(info.get("path"), list):
            info["path"] = [_without_clock(r) for r in info["path"]]
        meta = {"labels": self.labels_.labels, "features": feat_meta, "info": info,
                "trace": [_without_clock(_scalars(r)) for r in getattr(self, "trace_", [])]}
        return save_model_file(path, meta, arrays)

    def __reduce__(self):
        """Pickling (joblib, multiprocessing, Dask, Ray) goes through the model file's bytes,
        the same format as :meth:`save`; an unfitted tagger is its parameters."""
        params = {"features": self.features, "learner": self.learner, "params": self.params,
                  "seed": self.seed, "select": self.select, "max_seconds": self.max_seconds}
        if self.model_ is None:
            return (_tagger_from_params, (params,))
        return (_tagger_from_pickle, (self.to_bytes(), params))

    def to_bytes(self) -> bytes:
        """The model file's bytes (what :meth:`save` writes)."""
        import tempfile

        with tempfile.TemporaryDirectory(prefix="tagger-") as tmp:
            path = Path(tmp) / "model.tgm"
            self.save(path)
            return path.read_bytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> "Tagger":
        import tempfile

        with tempfile.TemporaryDirectory(prefix="tagger-") as tmp:
            path = Path(tmp) / "model.tgm"
            path.write_bytes(data)
            return cls.load(path)

    def tag_dataset(self, ds, fields=None, output: str = "predicted", num_proc: int | None = None,
                    batch_size: int = 1000):
        """``ds`` (a Hugging Face Dataset) with a column of predictions: ``Dataset.map``, batched,
        in ``num_proc`` processes; see :func:`tagger.io.hf.tag_dataset`."""
        from tagger.io import hf

        return hf.tag_dataset(self, ds, fields, output, num_proc, batch_size)

    @classmethod
    def load(cls, path: str | Path) -> "Tagger":
        meta, arrays = load_model_file(path)
        check_header(meta, str(path))
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
            raise ModelFileError(f"{path}: the model file is damaged or inconsistent ({exc})") from None
        info = meta.get("info", {})
        self = cls(features=featurizer.spec, learner=info.get("learner", DEFAULT_LEARNER),
                   params=info.get("params", {}), seed=info.get("seed", 0))
        self.featurizer_, self.labels_, self.model_, self.weights_ = featurizer, labels, model, w
        self.info_ = info
        self.trace_ = meta.get("trace", [])
        return self

    # ------------------------------------------------------------------ inspection
    @property
    def n_nonzero_(self) -> int:
        self._check_fitted()
        return int(np.count_nonzero(self.weights_))

    def inspect(self, top: int = 10) -> dict:
        """Parameter counts, the strongest state features per label, and transitions
        (:func:`tagger.model.inspect.inspect_report`)."""
        self._check_fitted()
        return inspect_report(self, top)


# ---------------------------------------------------------------------- helpers


def _tagger_from_params(params: dict) -> Tagger:
    return Tagger(**params)


def _tagger_from_pickle(data: bytes, params: dict) -> Tagger:
    tagger = Tagger.from_bytes(data)
    for key, value in params.items():
        setattr(tagger, key, value)
    return tagger


_CLOCK_KEYS = ("time", "featurize_seconds", "train_seconds", "match_time", "solve_time",
               "seconds")


def _without_clock(row: dict) -> dict:
    return {k: v for k, v in row.items() if k not in _CLOCK_KEYS}


def _scalars(row: dict) -> dict:
    """The row's numbers, strings and None, as JSON takes them (lists and tables left out)."""
    return {k: v for k, v in jsonable(row).items()
            if isinstance(v, (int, float, str, bool)) or v is None}
