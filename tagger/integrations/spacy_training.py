"""Training the spaCy component ``sparse_tagger`` inside spaCy: ``nlp.initialize`` (and so the
start of ``spacy train``) hands the component its training Examples, and the component trains
one :class:`tagger.Tagger` on all of them at once with its configured features, learner,
parameters and seed, by :func:`tagger.train`: the same sentences and settings give the model
``tagger train`` gives (the default preset follows the Docs, the strength is chosen).

The learners see the whole training set (the path over the regularization strength, OWL-QN,
the SDM dual), not spaCy's mini-batches, so the work happens in ``initialize`` and
``update`` leaves the model as it is (saying so once). spaCy gives ``initialize`` no dev
data, so the strength is chosen on a held-out tenth of the training Examples, as ``tagger
train`` does without ``--dev``; spaCy's own dev corpus then scores the pipeline.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from tagger.errors import ComponentConfigError
from tagger.io.docbin import StringCache, check_field, doc_sentences

#: spaCy's score of each target (what Scorer.score_token_attr / score_spans name)
SCORE_KEYS = {"tag": "tag_acc", "pos": "pos_acc", "ents": "ents_f"}


def score_key(target: str, spans_key: str) -> str:
    """The score ``spacy train`` should weigh for a component writing ``target``."""
    return SCORE_KEYS.get(target, f"spans_{spans_key}_f")


def input_fields(spec, inputs, name: str) -> list[str]:
    """The Doc fields the model's columns after the words are read from: ``inputs`` as
    configured, else a column ``pos`` from ``Token.tag_`` and any other from the token
    attribute of its name."""
    extra = list(spec.columns[1 : spec.n_columns])
    if inputs is None:
        inputs = ["tag" if col == "pos" else col for col in extra]
    inputs = [check_field(f) for f in inputs]
    if len(inputs) != len(extra):
        raise ComponentConfigError(
            f"[{name}] the model reads {spec.n_columns} column(s) "
            f"({', '.join(spec.columns[: spec.n_columns])}) but 'inputs' gives "
            f"{len(inputs)} field(s) for the {len(extra)} after the words"
        )
    return inputs


def default_features(target: str, docs) -> str:
    """The preset when the config names none: ``chunk`` (words and POS tags) for segments
    when the Docs carry tags, else ``pos`` (words alone), as ``tagger train`` picks for a
    CoNLL file with two input columns or one."""
    if target in ("ents", "spans") and docs and docs[0].has_annotation("TAG"):
        return "chunk"
    return "pos"


def sentences_of(examples: Iterable, fields: list[str], vocab) -> list:
    """The labeled sentences of the Examples' reference Docs (split at their sentence
    boundaries, as DocBin training input is)."""
    strings = StringCache(vocab.strings)
    out = []
    for i, eg in enumerate(examples):
        out.extend(doc_sentences(eg.reference, fields, strings, True, f"training Example {i + 1}"))
    return out


def is_placeholder(get_examples) -> bool:
    """Whether ``get_examples`` is what ``nlp.initialize()`` hands the components when it was
    given none: a function of its own returning one Example of three unannotated words,
    which is no training data."""
    return getattr(get_examples, "__qualname__", "").startswith("Language.initialize.")


def train(component, get_examples: Callable) -> object:
    """A Tagger trained on ``get_examples()`` with ``component``'s configuration, by
    :func:`tagger.train` (so with ``tagger train``'s rules and defaults)."""
    from tagger.api import train as train_tagger
    from tagger.features import FeatureSpec
    from tagger.training.config import TrainingConfig
    from tagger.training.progress import TrainProgress

    cfg, name = component.cfg, component.name
    examples = list(get_examples())
    if not examples:
        raise ComponentConfigError(f"[{name}] initialize got no training Examples to train on")
    # the features decide which Doc fields are read, so the preset is chosen from the Docs
    features = cfg["features"] or default_features(
        cfg["target"], [eg.reference for eg in examples[:1]]
    )
    spec = FeatureSpec.load(features)
    fields = ["words"] + input_fields(spec, cfg["inputs"], name) + [component.assigned_field()]
    sentences = sentences_of(examples, fields, component.vocab)
    with TrainProgress(quiet=False):
        return train_tagger(
            TrainingConfig(source=f"[{name}]"),
            train=sentences,
            features=features,
            learner=cfg["learner"] or None,
            params=dict(cfg["params"] or {}),
            seed=cfg["seed"],
            select=cfg["select"],
        )


def weigh_target(nlp, name: str, target: str, spans_key: str) -> None:
    """Make the pipe's score weights those of its target, so that ``spacy train`` ranks its
    checkpoints by the score this component produces (a factory declares one set of weights
    for every instance; a spans target's key is known only from the instance's config)."""
    from dataclasses import replace

    metas = getattr(nlp, "_pipe_meta", None)
    if not isinstance(metas, dict) or name not in metas:
        return
    # only its own score: a None for the others would blank those of the pipeline's other
    # components when spaCy combines the pipes' weights
    metas[name] = replace(metas[name], default_score_weights={score_key(target, spans_key): 1.0})


#: the Doc fields :func:`gold_inputs` can copy, and the Doc() argument that sets each
GOLD_FIELDS = {"tag": "tags", "pos": "pos", "lemma": "lemmas", "morph": "morphs"}


def gold_inputs(fields: list[str] = ["tag"]) -> Callable:  # noqa: B006 (spaCy's config)
    """A spaCy augmenter (``sparse_tagger.gold_inputs.v1``, registered by entry point) whose
    Examples' predicted Docs carry the reference's tokens and ``fields``: a dev corpus read
    through it lets a component with ``preannotated = true`` (a chunker reading POS tags)
    be scored by ``spacy train`` on the gold inputs, as ``tagger eval`` scores it on a
    CoNLL file's own POS column."""
    bad = [f for f in fields if f not in GOLD_FIELDS]
    if bad:
        raise ComponentConfigError(
            f"gold_inputs: cannot copy {', '.join(bad)}; fields are {', '.join(GOLD_FIELDS)}"
        )

    def augment(nlp, example):
        from spacy.tokens import Doc
        from spacy.training import Example

        ref = example.reference
        values = {
            GOLD_FIELDS[f]: [getattr(t, f + "_") if f != "morph" else str(t.morph) for t in ref]
            for f in fields
        }
        doc = Doc(
            nlp.vocab,
            words=[t.text for t in ref],
            spaces=[bool(t.whitespace_) for t in ref],
            **values,
        )
        yield Example(doc, ref)

    return augment
