"""The spaCy pipeline component ``sparse_tagger``.

spaCy finds it through the ``spacy_factories`` entry point, so after ``pip install
sparse-m3n-tagger``::

    nlp = spacy.blank("en")
    nlp.add_pipe("sparse_tagger", config={"model": "pos.tgm"})                  # Token.tag_
    nlp.add_pipe("sparse_tagger", name="chunker",
                 config={"model": "chunker.tgm", "target": "spans", "spans_key": "chunks"})

Config:

``model``        path of a model file written by ``tagger train`` / ``Tagger.save``
``target``       where the labels go: ``tag`` (``Token.tag_``), ``pos`` (``Token.pos_``, the
                 labels must be Universal POS tags), ``ents`` (``doc.ents``) or ``spans``
                 (``doc.spans[spans_key]``); segments are decoded from B-/I- labels
``spans_key``    the span group for ``target = "spans"``
``inputs``       the Doc fields the model's columns after the words are read from (see
                 :mod:`tagger.io.docbin`); default: the column ``pos`` from ``Token.tag_``, any
                 other column from the token attribute of its name
``preannotated`` the Docs arrive with those fields set (``Doc(vocab, words, tags=...)``); when
                 false, some component before this one must set them, which is checked when the
                 component is added and when the pipeline is initialized
``scores``       name of a ``Token._`` extension that receives the marginal probability of
                 each token's label (forward-backward over the model's scores), or null; CRF
                 models only (max-margin scores are not probabilities)
``constraints``  a constraint file (TOML, see constraints/README.md): decode under its rules
``features``, ``learner``, ``params``, ``seed``, ``select``
                 training in spaCy: with ``model = null``, ``nlp.initialize`` (the start of
                 ``spacy train``) trains the component on the training Examples with these
                 (preset or TOML file, default chosen from the Docs; learner and its
                 parameters; seed; choose the strength on a held-out tenth), through
                 :func:`tagger.train` and with its defaults, so the same sentences and
                 settings give ``tagger train``'s model; see
                 :mod:`tagger.integrations.spacy_training`

``predict`` reads the Docs and decodes a whole batch with one kernel call; ``set_annotations``
writes the result. The model travels with the pipeline: ``nlp.to_disk`` stores a copy of the
model file and ``spacy.load`` reads that copy, so the original path may be gone by then.
"""

from __future__ import annotations

import os
import warnings
import weakref
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from spacy.language import Language
from spacy.pipeline import Pipe
from spacy.scorer import Scorer
from spacy.tokens import Doc, Span, Token
from spacy.training import Example
from spacy.util import minibatch

from tagger.api import Tagger
from tagger.errors import ComponentConfigError, TaggerWarning
from tagger.evaluation.labels import chunk_starts_ends, label_tag_type
from tagger.integrations import spacy_training
from tagger.integrations.spacy_training import input_fields
from tagger.io.docbin import ANNOTATION, StringCache, describe, doc_columns, has_field

FACTORY = "sparse_tagger"
TARGETS = ("tag", "pos", "ents", "spans")
MODEL_FILE = "model.tgm"


@Language.factory(
    FACTORY,
    default_config={
        "model": None,
        "target": "tag",
        "spans_key": "sc",
        "inputs": None,
        "preannotated": False,
        "scores": None,
        "constraints": None,
        "batch_size": 1024,
        "features": None,
        "learner": None,
        "params": {},
        "seed": 0,
        "select": True,
    },
    assigns=["token.tag", "token.pos", "doc.ents", "doc.spans"],
    # none here: initialize weighs the score of the instance's own target (spacy_training)
    default_score_weights={},
)
def make_sparse_tagger(
    nlp: Language,
    name: str,
    model: str | None,
    target: str,
    spans_key: str,
    inputs: list[str] | None,
    preannotated: bool,
    scores: str | None,
    constraints: str | None,
    batch_size: int,
    features: str | None,
    learner: str | None,
    params: dict[str, Any],
    seed: int,
    select: bool,
):
    return SparseTagger(
        nlp,
        name,
        model=model,
        target=target,
        spans_key=spans_key,
        inputs=inputs,
        preannotated=preannotated,
        scores=scores,
        constraints=constraints,
        batch_size=batch_size,
        features=features,
        learner=learner,
        params=params,
        seed=seed,
        select=select,
    )


def _check_model_path(model, name: str) -> None:
    """An empty ``model`` is a mistake of its own (``os.path.abspath("")`` would name the
    current directory as the missing model)."""
    if isinstance(model, (str, os.PathLike)) and not os.fspath(model).strip():
        raise ComponentConfigError(
            f"[{name}] the model path is empty; give the path of a model file "
            f"(config={{'model': 'path/to/model.tgm'}}), or model = null to train the "
            f"component in nlp.initialize"
        )


class SparseTagger(Pipe):
    """A :class:`tagger.Tagger` model as a spaCy pipeline component."""

    def __init__(
        self,
        nlp: Language,
        name: str = FACTORY,
        *,
        model=None,
        target: str = "tag",
        spans_key: str = "sc",
        inputs=None,
        preannotated: bool = False,
        scores: str | None = None,
        constraints: str | None = None,
        batch_size: int = 1024,
        features: str | None = None,
        learner: str | None = None,
        params: dict | None = None,
        seed: int = 0,
        select: bool = True,
    ):
        if target not in TARGETS:
            raise ComponentConfigError(
                f"[{name}] target must be one of {', '.join(TARGETS)}; got {target!r}"
            )
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ComponentConfigError(
                f"[{name}] batch_size must be a positive integer; got {batch_size!r}"
            )
        _check_model_path(model, name)
        self.vocab = nlp.vocab
        self.name = name
        # an absolute path: the config a saved pipeline keeps must not name a file relative
        # to whatever directory spacy.load later runs in
        self.cfg = {
            "model": None if model is None else os.path.abspath(model),
            "target": target,
            "spans_key": spans_key,
            "inputs": None if inputs is None else list(inputs),
            "preannotated": bool(preannotated),
            "scores": scores,
            "constraints": constraints,
            "batch_size": batch_size,
            "features": features,
            "learner": learner,
            "params": dict(params or {}),
            "seed": seed,
            "select": bool(select),
        }
        self._update_warned = False
        self._nlp = weakref.ref(nlp)
        self.tagger: Tagger | None = None
        self.fields: list[str] = []
        self._constraints = None
        self._missing_model: str | None = None
        if scores and not Token.has_extension(scores):
            Token.set_extension(scores, default=None)
        if model is not None:
            # A pipeline saved by nlp.to_disk carries its own copy of the model, which
            # from_disk loads after this constructor: a path that is gone by then is not an
            # error yet, only using the component without a model is.
            if os.path.exists(model):
                self._set_model(Tagger.load(model))
                self._check_upstream(nlp, list(nlp.pipe_names))
            else:
                self._missing_model = self.cfg["model"]

    # ------------------------------------------------------------------ model and inputs
    def _set_model(self, tagger: Tagger) -> None:
        inputs = input_fields(tagger.featurizer_.spec, self.cfg["inputs"], self.name)
        if self.cfg["target"] == "pos":
            from spacy.parts_of_speech import IDS

            bad = [lab for lab in tagger.labels_.labels if lab not in IDS]
            if bad:
                raise ComponentConfigError(
                    f"[{self.name}] target 'pos' takes Universal POS tags, and the model's "
                    f"labels {', '.join(bad[:5])} are not; use target 'tag'"
                )
        self.tagger = tagger
        self.fields = ["words"] + inputs
        self._missing_model = None
        self._constraints = self._load_constraints(self.cfg["constraints"])
        if self.cfg["scores"] and not tagger.probabilistic_:
            # the same rule as `tagger tag --marginals`: scores are probabilities or nothing
            raise ComponentConfigError(
                f"[{self.name}] 'scores' needs a CRF model; this model was trained by "
                f"{tagger.info_.get('learner', 'an unknown learner')}, a max-margin learner "
                f"whose scores are not probabilities; drop 'scores' or train a CRF learner"
            )

    def _load_constraints(self, path):
        if not path:
            return None
        from tagger.constraints import ConstraintSet

        if self.cfg["scores"]:
            raise ComponentConfigError(
                f"[{self.name}] 'scores' and 'constraints' cannot be combined: the marginals are "
                f"those of the unconstrained model; drop one of them from the config"
            )
        # every mistake of the file is reported here, before any Doc is processed
        return ConstraintSet.load(path).compile(self.tagger.labels_.labels)

    def _require_model(self) -> Tagger:
        if self.tagger is None:
            if self._missing_model is not None:
                raise ComponentConfigError(
                    f"[{self.name}] model file {self._missing_model} does not exist; give "
                    f"config={{'model': 'path/to/model.tgm'}} (a model written by 'tagger train')"
                )
            raise ComponentConfigError(
                f"[{self.name}] no model: give config={{'model': 'path/to/model.tgm'}}, or "
                f"train one with nlp.initialize(get_examples) (spacy train does)"
            )
        return self.tagger

    def assigned_field(self) -> str:
        """The Doc field this component writes (in :mod:`tagger.io.docbin` names)."""
        t = self.cfg["target"]
        return f"spans:{self.cfg['spans_key']}" if t == "spans" else t

    def _check_upstream(self, nlp: Language, before: list[str]) -> None:
        """Every input field must be set by a component in ``before`` (or come with the Docs)."""
        if self.cfg["preannotated"] or self.tagger is None:
            return
        for i, field in enumerate(self.fields[1:], start=2):
            if field in ("norm",) or field.startswith("_."):
                continue  # always present, or set by user code we cannot see
            if any(_sets(nlp, name, field) for name in before):
                continue
            col = self.tagger.featurizer_.spec.columns[i - 1]
            raise ComponentConfigError(
                f"[{self.name}] the model {self.cfg['model']} reads its column {i} ({col!r}) "
                f"from {describe(field)}, and no component before '{self.name}' sets it "
                f"(pipeline: {', '.join(before) or 'empty'}). Add one first, e.g. "
                f"nlp.add_pipe('{FACTORY}', name='pos', config={{'model': 'pos.tgm'}}) before "
                f"this one, or pass Docs that already carry it (Doc(nlp.vocab, words=..., "
                f"tags=...)) with config {{'preannotated': true}}"
            )

    def initialize(self, get_examples=None, *, nlp: Language | None = None, model=None):
        """Load ``model`` if given, else keep the configured one, else (``model = null``)
        train on ``get_examples()`` with the configured features, learner, parameters and
        seed (:mod:`tagger.integrations.spacy_training`); then check the pipeline order."""
        if spacy_training.is_placeholder(get_examples):
            get_examples = None
        if model is not None:
            _check_model_path(model, self.name)
            self._set_model(Tagger.load(model))
            self.cfg["model"] = os.path.abspath(model)
        elif self.cfg["model"] is None and get_examples is None:
            raise ComponentConfigError(
                f"[{self.name}] has no model and nlp.initialize() was given no training "
                f"examples to train one: call nlp.initialize(lambda: examples) with Examples "
                f"that carry the labels, or give config={{'model': 'path/to/model.tgm'}}"
            )
        elif self.cfg["model"] is None:
            self._set_model(spacy_training.train(self, get_examples))
        elif (
            self.tagger is not None
            and get_examples is not None
            and next(iter(get_examples()), None) is not None
        ):
            warnings.warn(
                TaggerWarning(
                    f"[{self.name}] uses the model file {self.cfg['model']} as it is and does not "
                    f"train on the Examples; set model = null in its config to train it here"
                ),
                stacklevel=2,
            )
        self._require_model()
        self._pin_model_path()
        if nlp is not None:
            names = list(nlp.pipe_names)
            before = names[: names.index(self.name)] if self.name in names else names
            self._check_upstream(nlp, before)
            spacy_training.weigh_target(nlp, self.name, self.cfg["target"], self.cfg["spans_key"])

    def update(self, examples, *, drop: float = 0.0, sgd=None, losses=None) -> dict:
        """Leaves the model as it is: the component trains on all the Examples at once in
        :meth:`initialize` (its learners are not mini-batch learners). Said once."""
        if not self._update_warned:
            self._update_warned = True
            warnings.warn(
                TaggerWarning(
                    f"[{self.name}] was trained in initialize on all the training Examples at "
                    f"once; spaCy's update steps leave it as it is"
                ),
                stacklevel=2,
            )
        losses = {} if losses is None else losses
        losses.setdefault(self.name, 0.0)
        return losses

    @property
    def labels(self) -> tuple:
        """The model's labels; empty until a model is loaded (spaCy asks while loading, and
        while saving, before it writes the config)."""
        self._pin_model_path()
        return () if self.tagger is None else tuple(self.tagger.labels_.labels)

    def _pin_model_path(self) -> None:
        """Write the model's absolute path into the pipeline's config, so that a pipeline
        saved with nlp.to_disk names no file relative to the directory spacy.load later runs
        in (spaCy stores the config as given, and only after this component was made)."""
        nlp = self._nlp() if getattr(self, "_nlp", None) is not None else None
        if nlp is None or self.cfg["model"] is None:
            return
        try:
            config = nlp.get_pipe_config(self.name)
        except ValueError:  # not (or no longer) in that pipeline
            return
        if config.get("model") != self.cfg["model"]:
            config["model"] = self.cfg["model"]

    # ------------------------------------------------------------------ prediction
    def _sentences(self, docs: list[Doc]):
        from tagger.sentence import Sentence

        strings = StringCache(self.vocab.strings)
        out = []
        for k, doc in enumerate(docs):
            for i, field in enumerate(self.fields):
                if i and not has_field(doc, field):
                    col = self.tagger.featurizer_.spec.columns[i]
                    raise ComponentConfigError(
                        f"[{self.name}] Doc {k + 1} of the batch has no {describe(field)}, "
                        f"which the model reads as its column {i + 1} ({col!r}); put a "
                        f"component that sets it before '{self.name}', or give Docs that "
                        f"carry it"
                    )
            out.append(Sentence(doc_columns(doc, self.fields, strings)))
        return out

    def predict(self, docs: Iterable[Doc]):
        """Decode a batch of Docs without changing them: ``(label ids, offsets, marginals)``;
        the Docs' tokens are stacked (empty Docs take no rows)."""
        tagger = self._require_model()
        docs = list(docs)
        nonempty = [d for d in docs if len(d)]
        if not nonempty:
            return np.empty(0, np.int32), np.zeros(1, np.int64), None
        scores = bool(self.cfg["scores"]) and self._constraints is None
        p = tagger.predict_batch(self._sentences(nonempty), self._constraints, marginals=scores)
        # each token's score: the marginal probability of the label it was given
        probs = p.marginals[np.arange(len(p.ids)), p.ids] if scores else None
        return p.ids, p.offsets, probs

    def set_annotations(self, docs: Iterable[Doc], predictions) -> None:
        ids, offsets, probs = predictions
        names = self.tagger.labels_.labels
        target, ext = self.cfg["target"], self.cfg["scores"]
        probs = None if probs is None else probs.tolist()
        offs = offsets.tolist()
        if target in ("tag", "pos"):
            labels = [names[i] for i in ids.tolist()]
        else:  # every chunk of the batch at once, by conlleval's rules
            tag_of, type_of, type_names = self._chunk_tables()
            starts, ends, types = chunk_starts_ends(ids, offsets, tag_of, type_of)
            starts, ends, types = starts.tolist(), ends.tolist(), types.tolist()
            c = 0
        s = 0
        for doc in docs:
            if not len(doc):
                continue
            a, b = offs[s], offs[s + 1]
            s += 1
            if target == "tag":
                for tok, lab in zip(doc, labels[a:b]):
                    tok.tag_ = lab
            elif target == "pos":
                for tok, lab in zip(doc, labels[a:b]):
                    tok.pos_ = lab
            else:
                spans = []
                while c < len(starts) and starts[c] < b:
                    spans.append(Span(doc, starts[c] - a, ends[c] - a, label=type_names[types[c]]))
                    c += 1
                if target == "ents":
                    doc.ents = spans
                else:
                    doc.spans[self.cfg["spans_key"]] = spans
            if ext:
                for tok, p in zip(doc, probs[a:b]):
                    tok._.set(ext, p)

    def _chunk_tables(self):
        if getattr(self, "_tables", None) is None or self._tables[0] is not self.tagger:
            self._tables = (self.tagger, *label_tag_type(self.tagger.labels_.labels))
        return self._tables[1:]

    def __call__(self, doc: Doc) -> Doc:
        self.set_annotations([doc], self.predict([doc]))
        return doc

    def pipe(self, stream: Iterable[Doc], *, batch_size: int | None = None) -> Iterator[Doc]:
        for batch in minibatch(stream, size=batch_size or self.cfg["batch_size"]):
            self.set_annotations(batch, self.predict(batch))
            yield from batch

    # ------------------------------------------------------------------ scoring
    def score(self, examples: Iterable[Example], **kwargs) -> dict:
        """spaCy's own scores for the target: ``tag_acc`` / ``pos_acc`` (token accuracy),
        ``ents_p/r/f`` with per type, or ``spans_<key>_p/r/f``."""
        target = self.cfg["target"]
        if target in ("tag", "pos"):
            return Scorer.score_token_attr(examples, target, **kwargs)
        if target == "ents":
            return Scorer.score_spans(examples, "ents", **kwargs)
        key = self.cfg["spans_key"]
        kwargs.setdefault("getter", lambda doc, attr: doc.spans.get(key, []))
        kwargs.setdefault("has_annotation", lambda doc: key in doc.spans)
        return Scorer.score_spans(examples, f"spans_{key}", allow_overlap=False, **kwargs)

    # ------------------------------------------------------------------ serialization
    def to_bytes(self, *, exclude=tuple()) -> bytes:
        return self._require_model().to_bytes()

    def from_bytes(self, bytes_data: bytes, *, exclude=tuple()) -> SparseTagger:
        self._set_model(Tagger.from_bytes(bytes_data))
        return self

    def to_disk(self, path, *, exclude=tuple()) -> None:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self._require_model().save(path / MODEL_FILE)

    def from_disk(self, path, *, exclude=tuple()) -> SparseTagger:
        self._set_model(Tagger.load(Path(path) / MODEL_FILE))
        return self

    # pickled (nlp.pipe(n_process=...) with the spawn start method) as the model file's bytes
    def __reduce__(self):
        return (
            _rebuild,
            (
                self.vocab,
                self.name,
                dict(self.cfg),
                None if self.tagger is None else self.tagger.to_bytes(),
            ),
        )


def _rebuild(vocab, name, cfg, model_bytes):
    self = SparseTagger.__new__(SparseTagger)
    self.vocab, self.name, self.cfg = vocab, name, cfg
    self.tagger, self.fields, self._constraints = None, [], None
    self._missing_model, self._update_warned = cfg.get("model"), False
    self._nlp = None
    if cfg.get("scores") and not Token.has_extension(cfg["scores"]):
        Token.set_extension(cfg["scores"], default=None)
    if model_bytes is not None:
        self._set_model(Tagger.from_bytes(model_bytes))
    return self


def _sets(nlp: Language, name: str, field: str) -> bool:
    """Whether the pipe ``name`` of ``nlp`` writes ``field``."""
    pipe = nlp.get_pipe(name)
    if isinstance(pipe, SparseTagger):
        return pipe.assigned_field() == field
    assigns = nlp.get_pipe_meta(name).assigns
    if field in ANNOTATION:
        return f"token.{field}" in assigns
    if field == "ents":
        return "doc.ents" in assigns
    if field.startswith("spans:"):
        return "doc.spans" in assigns or any(a.startswith("doc.spans") for a in assigns)
    return False
