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
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np

import tagger
from tagger.errors import (CorpusFormatError, ModelFileError, NotFittedError, TaggerError,
                           UnknownLabelError)
from tagger.features import Featurized, FeatureSpec, Featurizer
from tagger.inference._chain import _viterbi_batch
from tagger.labels import LabelIndex
from tagger.learners import DEFAULT_LEARNER, TrainingProblem, get_learner
from tagger.metrics import evaluate as evaluate_labels
from tagger.model import ChainModel
from tagger.sentence import Sentence
from tagger.serialize import load_model_file, save_model_file

#: sentences featurized and decoded together when tagging a stream
TAG_BATCH = 4096


class Tagger:
    """A linear-chain sequence tagger with sparse weights.

    Parameters are stored as given and validated by :meth:`fit` (scikit-learn's habit):

    features
        a preset name (``chunk``, ``pos``, ``citation``), a TOML file, or a :class:`FeatureSpec`
    learner
        a learner name (see ``tagger.learners.LEARNERS``)
    params
        the learner's parameters (its table: ``tagger learners``)
    seed
        makes training deterministic
    """

    def __init__(self, features: str | Path | FeatureSpec = "chunk",
                 learner: str = DEFAULT_LEARNER, params: dict | None = None, seed: int = 0):
        self.features = features
        self.learner = learner
        self.params = dict(params or {})
        self.seed = seed
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

        Semi-supervised learners (``ssvm-annealing``) also take ``unlabeled`` sentences (any
        iterable; read once, in batches) and ``constraints`` (a constraint file path or a
        :class:`~tagger.constraints.ConstraintSet`) that the learner's imputed labelings of
        the unlabeled sentences should meet. ``test`` sentences are scored along the way for
        the trace only (reporting; nothing is chosen on them).
        """
        learner_cls = get_learner(self.learner)
        learner = learner_cls(**self.params)
        learner.validated()  # fail on bad parameters before featurizing anything
        if not isinstance(self.seed, (int, np.integer)) or isinstance(self.seed, bool):
            raise TaggerError(f"seed must be an integer; got {self.seed!r}")
        spec = self.features if isinstance(self.features, FeatureSpec) else FeatureSpec.load(self.features)
        train = _labeled_list(sentences, "training data")
        t0 = time.perf_counter()
        featurizer = Featurizer(spec)
        _check_columns(train, spec, "training data")
        cset = _constraint_set(constraints)
        unl = None
        if unlabeled is not None:
            unl = _unlabeled_list(unlabeled, spec, progress)
        featurizer.fit(train if unl is None else train + unl)
        X = featurizer.transform(train)
        label_names = {lab for s in train for lab in s.labels}
        if cset is not None:  # a label no labeled sentence shows may still be imputed
            label_names |= set(cset.labels)
        labels = LabelIndex(sorted(label_names))
        y = labels.encode([lab for s in train for lab in s.labels])
        # with unlabeled data every (attribute, label) pair may be learned from imputed labels
        model = ChainModel.from_data(X, y, len(labels), featurizer.n_attributes,
                                     spec.all_pairs or unl is not None)
        dev_score = None
        if dev is not None:
            dev_list = _labeled_list(dev, "dev data")
            _check_columns(dev_list, spec, "dev data")
            dev_score = _dev_scorer(featurizer.transform(dev_list), model, labels,
                                    [s.labels for s in dev_list])
        report_score = None
        if test is not None:
            test_list = _labeled_list(test, "test data")
            _check_columns(test_list, spec, "test data")
            report_score = _dev_scorer(featurizer.transform(test_list), model, labels,
                                       [s.labels for s in test_list])
        XU = cdata = None
        if unl is not None:
            XU = _transform_batches(featurizer, unl)
            if cset is not None:
                from tagger.constraints import ConstraintData

                compiled = cset.compile(labels.labels)
                cdata = ConstraintData(compiled, compiled.indicators(unl))
            del unl
        t_feat = time.perf_counter() - t0
        problem = TrainingProblem(model, X, y, dev_score=dev_score, progress=progress,
                                  unlabeled=XU, constraints=cdata, report_score=report_score)
        w = learner.fit(problem, seed=int(self.seed))
        n_params = model.n_weights
        model, w, keep_attr = model.compact(w)
        featurizer.prune(keep_attr)
        self.featurizer_, self.labels_, self.model_, self.weights_ = featurizer, labels, model, w
        last = learner.trace_[-1] if learner.trace_ else {}
        self.info_ = {
            "learner": learner.name, "params": learner.validated(), "seed": int(self.seed),
            "n_params": int(n_params), "n_nonzero": int(np.count_nonzero(w)),
            "n_train_sentences": len(train), "n_train_tokens": int(X.n_tokens),
            "n_unlabeled_sentences": 0 if XU is None else int(XU.n_sentences),
            "constraints": None if cset is None else cset.source,
            "featurize_seconds": round(t_feat, 3),
            "train_seconds": round(time.perf_counter() - t0 - t_feat, 3),
            "final": {k: v for k, v in last.items() if isinstance(v, (int, float, str))},
        }
        self.trace_ = list(learner.trace_)
        return self

    # ------------------------------------------------------------------ prediction
    def _check_fitted(self) -> None:
        if self.model_ is None:
            raise NotFittedError("this Tagger has no model yet: call fit() or Tagger.load()")

    def featurize(self, sentences: Sequence[Sentence]) -> Featurized:
        self._check_fitted()
        _check_columns(sentences, self.featurizer_.spec, "input")
        return self.featurizer_.transform(sentences)

    def decode(self, X: Featurized) -> np.ndarray:
        """Label ids of featurized sentences (stacked), by Viterbi."""
        return self._viterbi(self.model_.state_scores(X, self.weights_), X.offsets)

    def _decode_sentences(self, sentences: Sequence[Sentence]) -> np.ndarray:
        """Label ids of sentences (stacked): attribute lookup fused with scoring, then Viterbi."""
        _check_columns(sentences, self.featurizer_.spec, "input")
        E = self.featurizer_.encode(sentences)
        return self._viterbi(self.model_.state_scores_from_views(E, self.weights_), E.offsets)

    def _viterbi(self, state: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        out = np.empty(int(offsets[-1]), dtype=np.int32)
        scores = np.empty(len(offsets) - 1, dtype=np.float64)
        trans = np.ascontiguousarray(self.model_.transitions(self.weights_))
        _viterbi_batch(state, offsets, trans, out, scores)
        return out

    def predict(self, sentences: Iterable[Sentence], constraints=None) -> list[list[str]]:
        """Predicted label sequences, one per sentence (under ``constraints``, a constraint
        file or :class:`~tagger.constraints.ConstraintSet`, when given: see
        :mod:`tagger.constrained`)."""
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
        names_arr = np.array(self.labels_.labels, dtype=object)
        compiled = None
        if constraints is not None:
            compiled = _constraint_set(constraints).compile(self.labels_.labels)
        it = iter(sentences)
        while True:
            batch = [s for s in itertools.islice(it, batch_size)]
            if not batch:
                return
            nonempty = [s for s in batch if len(s)]
            if not nonempty:
                ids = np.empty(0, np.int32)
            elif compiled is None:
                ids = self._decode_sentences(nonempty)
            else:
                ids = self._decode_constrained(nonempty, compiled)
            flat = names_arr[ids].tolist()
            pos = 0
            for s in batch:
                n = len(s)
                yield s, flat[pos:pos + n]
                pos += n

    def _decode_constrained(self, sentences: Sequence[Sentence], compiled) -> np.ndarray:
        from tagger.constrained import constrained_decode

        _check_columns(sentences, self.featurizer_.spec, "input")
        E = self.featurizer_.encode(sentences)
        state = self.model_.state_scores_from_views(E, self.weights_)
        trans = np.ascontiguousarray(self.model_.transitions(self.weights_))
        ids, _ = constrained_decode(state, E.offsets, trans, compiled,
                                    compiled.indicators(sentences))
        return ids

    def constraint_report(self, sentences: Iterable[Sentence], constraints,
                          predictions: Sequence[Sequence[str]] | None = None) -> list[dict]:
        """How often each constraint is violated by the gold labels and by the predictions
        (this tagger's, or the ``predictions`` given) of labeled ``sentences``."""
        from tagger.constraints import violation_report

        self._check_fitted()
        gold_sents = _labeled_list(sentences, "evaluation data")
        compiled = _constraint_set(constraints).compile(self.labels_.labels)
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

    def evaluate(self, sentences: Iterable[Sentence], constraints=None) -> dict:
        """Token accuracy and conlleval chunk P/R/F1 against the sentences' gold labels
        (predictions under ``constraints`` when given)."""
        gold_sents = _labeled_list(sentences, "evaluation data")
        gold_labels = {lab for s in gold_sents for lab in s.labels}
        known = set(self.labels_.labels)
        if not gold_labels & known:
            raise UnknownLabelError(
                f"none of the evaluation data's labels ({', '.join(sorted(gold_labels)[:8])}"
                f"{', ...' if len(gold_labels) > 8 else ''}) is a label of this model "
                f"({', '.join(self.labels_.labels[:8])}{', ...' if len(known) > 8 else ''}); "
                f"is it the right model, format and label column?")
        pred = self.predict(gold_sents, constraints=constraints)
        result = evaluate_labels([s.labels for s in gold_sents], pred)
        # gold labels the model never saw in training: always counted as errors
        result["unknown_labels"] = sorted(gold_labels - known)
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
        meta = {"labels": self.labels_.labels, "features": feat_meta, "info": info,
                "trace": [_without_clock(_jsonable(r)) for r in getattr(self, "trace_", [])]}
        return save_model_file(path, meta, arrays)

    @classmethod
    def load(cls, path: str | Path) -> "Tagger":
        meta, arrays = load_model_file(path)
        try:
            featurizer = Featurizer.from_arrays(meta["features"], arrays)
            labels = LabelIndex(meta["labels"])
            model = ChainModel.from_arrays(len(labels), arrays)
            w = np.ascontiguousarray(arrays["weights"], dtype=np.float64)
            if w.shape != (model.n_weights,) or model.n_attrs != featurizer.n_attributes:
                raise ValueError("array sizes disagree")
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
        """Parameter counts, the strongest state features per label, and transitions."""
        self._check_fitted()
        model, w, names = self.model_, self.weights_, self.labels_.labels
        ws = w[:model.n_state]
        pattr = model.state_param_attr()
        per_label = {}
        for li, lab in enumerate(names):
            idx = np.flatnonzero((model.param_label == li) & (ws != 0))
            order = idx[np.argsort(-np.abs(ws[idx]), kind="stable")[:top]]
            per_label[lab] = [(self.featurizer_.attribute_name(int(pattr[p])), float(ws[p]))
                              for p in order]
        trans = model.transitions(w)
        start, end = model.start_end(w)
        return {
            "n_params": int(self.info_.get("n_params", model.n_weights)),
            "n_nonzero": self.n_nonzero_,
            "n_attributes": int(model.n_attrs),
            "labels": list(names),
            "learner": self.info_.get("learner"),
            "top_features": per_label,
            "transitions": {a: {b: float(trans[i, j]) for j, b in enumerate(names)}
                            for i, a in enumerate(names)},
            "start": {a: float(start[i]) for i, a in enumerate(names)},
            "end": {a: float(end[i]) for i, a in enumerate(names)},
        }


# ---------------------------------------------------------------------- helpers


def _labeled_list(sentences: Iterable[Sentence], what: str) -> list[Sentence]:
    out = [s for s in sentences if len(s)]
    if not out:
        raise CorpusFormatError(f"the {what} contains no sentences")
    for i, s in enumerate(out):
        if s.labels is None:
            raise CorpusFormatError(f"the {what} has no labels (sentence {i + 1}); give the "
                                    f"label column or a labeled format")
    return out


def _constraint_set(constraints):
    """A ConstraintSet from a path, a ConstraintSet, or None."""
    if constraints is None:
        return None
    from tagger.constraints import ConstraintSet

    if isinstance(constraints, ConstraintSet):
        return constraints
    return ConstraintSet.load(constraints)


#: unlabeled sentences read (and reported) per batch
UNLABELED_BATCH = 4096


def _unlabeled_list(sentences: Iterable[Sentence], spec: FeatureSpec, progress) -> list[Sentence]:
    """Unlabeled sentences read in batches (a large file is never held as text), keeping only
    the input columns the features read; progress is reported per batch."""
    out: list[Sentence] = []
    it = iter(sentences)
    need = spec.n_columns
    while True:
        batch = [s for s in itertools.islice(it, UNLABELED_BATCH) if len(s)]
        if not batch:
            break
        _check_columns(batch, spec, "unlabeled data")
        out.extend(Sentence(s.columns[:need]) for s in batch)
        if progress is not None:
            progress({"unlabeled_read": len(out)})
    if not out:
        raise CorpusFormatError("the unlabeled data contains no sentences")
    return out


def _transform_batches(featurizer: Featurizer, sentences: list[Sentence]) -> Featurized:
    parts = [featurizer.transform(sentences[i:i + UNLABELED_BATCH])
             for i in range(0, len(sentences), UNLABELED_BATCH)]
    indptr = [parts[0].indptr]
    offsets = [parts[0].offsets]
    for p in parts[1:]:
        indptr.append(p.indptr[1:] + indptr[-1][-1])
        offsets.append(p.offsets[1:] + offsets[-1][-1])
    return Featurized(np.concatenate(indptr), np.concatenate([p.attrs for p in parts]),
                      np.concatenate(offsets))


def _check_columns(sentences: Sequence[Sentence], spec: FeatureSpec, what: str) -> None:
    need = spec.n_columns
    for i, s in enumerate(sentences):
        if len(s.columns) < need:
            raise CorpusFormatError(
                f"the {what} has {len(s.columns)} input column(s) in sentence {i + 1} but the "
                f"features '{spec.name}' read {need} ({', '.join(spec.columns)}); check --format "
                f"and the label column")


def _dev_scorer(Xd: Featurized, model: ChainModel, labels: LabelIndex, gold: list[list[str]]):
    names = labels.labels
    offsets = Xd.offsets.tolist()

    def score(w: np.ndarray) -> dict:
        state = model.state_scores(Xd, w)
        out = np.empty(Xd.n_tokens, dtype=np.int32)
        _viterbi_batch(state, Xd.offsets, np.ascontiguousarray(model.transitions(w)), out,
                       np.empty(Xd.n_sentences))
        flat = [names[i] for i in out.tolist()]
        pred = [flat[a:b] for a, b in zip(offsets[:-1], offsets[1:])]
        m = evaluate_labels(gold, pred)
        if m.get("chunk_level"):
            return {"dev_f1": round(100 * m["f1"], 2), "dev_acc": round(100 * m["accuracy"], 2)}
        return {"dev_acc": round(100 * m["accuracy"], 2)}

    return score


_CLOCK_KEYS = ("time", "featurize_seconds", "train_seconds", "match_time", "solve_time")


def _without_clock(row: dict) -> dict:
    return {k: v for k, v in row.items() if k not in _CLOCK_KEYS}


def _jsonable(row: dict) -> dict:
    out = {}
    for k, v in row.items():
        if isinstance(v, (np.integer,)):
            v = int(v)
        elif isinstance(v, (np.floating,)):
            v = float(v)
        if isinstance(v, (int, float, str, bool)) or v is None:
            out[k] = v
    return out
