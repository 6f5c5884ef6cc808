"""The data a training run reads, checked and prepared for the learners: labeled sentences
(non-empty, labeled, with the columns the features read), unlabeled sentences read in batches,
constraint sets, the dev scorer, the warnings about data that scores training, and the
featurized TrainingProblem built from all of them (:func:`build_problem`)."""

from __future__ import annotations

import itertools
import logging
import warnings
from collections.abc import Iterable, Sequence

import numpy as np

from tagger.chain.layout import ChainModel
from tagger.errors import CorpusFormatError, FeatureSpecError, TaggerWarning
from tagger.evaluation.labels import LabelIndex, is_bio
from tagger.evaluation.metrics import evaluate as evaluate_labels
from tagger.features import FeatureSpec, Featurized, Featurizer
from tagger.inference.max_product import viterbi_batch_into
from tagger.io.scratch import ScratchSpace
from tagger.learners import TrainingProblem
from tagger.sentence import Sentence
from tagger.training.unlabeled import UnlabeledBatches


def conllu_label_info(train: Sequence[Sentence]) -> dict:
    """``{"conllu_label": field}`` when the training sentences were read from CoNLL-U, so that
    tagging and evaluating CoNLL-U files use the field the model learned (UPOS or XPOS)."""
    meta = train[0].meta if train else {}
    return {"conllu_label": meta["label"]} if meta.get("format") == "conllu" else {}


def labeled_list(sentences: Iterable[Sentence], what: str) -> list[Sentence]:
    out = [s for s in sentences if len(s)]
    if not out:
        raise CorpusFormatError(f"the {what} contains no sentences")
    for i, s in enumerate(out):
        if s.labels is None:
            raise CorpusFormatError(
                f"the {what} has no labels (sentence {i + 1}); give the "
                f"label column or a labeled format"
            )
    return out


HELD_OUT = "held-out tenth of the training data"
#: dev data with fewer sentences than this get a warning: a choice made on them is noise
FEW_DEV_SENTENCES = 10


def warn_about_scoring_data(data: list[Sentence], labels: LabelIndex, what: str) -> None:
    """Warnings (not errors: the model is still usable) about data that scores training: labels
    the training data lack, which no model can predict, and too few dev sentences."""
    verb = "has" if what == HELD_OUT else "have"
    unseen: dict[str, int] = {}
    for s in data:
        for lab in s.labels:
            if lab not in labels:
                unseen[lab] = unseen.get(lab, 0) + 1
    if unseen:
        shown = ", ".join(
            f"{lab} ({n} token{'s' if n > 1 else ''})"
            for lab, n in sorted(unseen.items(), key=lambda kv: -kv[1])[:5]
        )
        more = f" and {len(unseen) - 5} more" if len(unseen) > 5 else ""
        warnings.warn(
            f"the {what} {verb} labels the training data lack: {shown}{more}; no model "
            f"can predict them, so they count as errors in every score (check the "
            f"files' label spelling and columns)",
            TaggerWarning,
            stacklevel=4,
        )
    if what != "test data" and len(data) < FEW_DEV_SENTENCES:
        n_tok = sum(len(s) for s in data)
        fix = "give a larger --dev file" if what == "dev data" else "give --dev FILE"
        warnings.warn(
            f"the {what} {verb} {len(data)} sentence{'s' if len(data) > 1 else ''} "
            f"({n_tok} tokens): what is chosen on them (the regularization, the "
            f"epoch kept) is little better than a guess; {fix}",
            TaggerWarning,
            stacklevel=4,
        )


def constraint_set(constraints):
    """A ConstraintSet from a path, a ConstraintSet, or None."""
    if constraints is None:
        return None
    from tagger.constraints import ConstraintSet

    if isinstance(constraints, ConstraintSet):
        return constraints
    return ConstraintSet.load(constraints)


def check_columns(sentences: Sequence[Sentence], spec: FeatureSpec, what: str) -> None:
    need = spec.n_columns
    for i, s in enumerate(sentences):
        if len(s.columns) < need:
            raise CorpusFormatError(
                f"the {what} has {len(s.columns)} input column(s) in sentence {i + 1} but the "
                f"features '{spec.name}' read {need} ({', '.join(spec.columns)}); check --format "
                f"and the label column"
            )


def warn_about_cluster_coverage(spec, train: list) -> None:
    """A warning for each clusters file of the feature specification that knows fewer than
    half of the training tokens it is applied to: most tokens then get the same "no cluster"
    value, which says the file was made from other text (another corpus, language or
    tokenization) or is an older one."""
    from tagger.features.word_clusters import LOW_COVERAGE, coverage

    for name, table in spec.cluster_tables.items():
        columns = {v.column for v in spec.views if v.options.get("clusters") == name}
        share = coverage(table, (tok for s in train for c in columns for tok in s.columns[c]))
        if share < LOW_COVERAGE:
            warnings.warn(
                f"the clusters {name} know {100 * share:.0f} % of the training tokens their "
                f"views read: were they made from other text? (make them from this domain's "
                f"text with 'tagger clusters TEXT -o {name}')",
                TaggerWarning,
                stacklevel=3,
            )


def warn_about_label_case(labels: set[str]) -> None:
    """A warning for training labels that differ only in case (``B-NP`` and ``b-np``): the
    model learns them as different labels, and a label that is not ``O``/``B-``/``I-`` makes
    every score token accuracy instead of chunk F1 (:func:`chunk_scored`)."""
    groups: dict[str, list[str]] = {}
    for lab in sorted(labels):
        groups.setdefault(lab.casefold(), []).append(lab)
    clashes = [names for names in groups.values() if len(names) > 1]
    if clashes:
        shown = "; ".join(" and ".join(names) for names in clashes[:5])
        more = f" and {len(clashes) - 5} more" if len(clashes) > 5 else ""
        scored = "" if is_bio(labels) else ", and scores are token accuracy, not chunk F1"
        warnings.warn(
            f"the training data have labels that differ only in case: {shown}{more}; the "
            f"model learns them as different labels{scored} (check the files' label spelling)",
            TaggerWarning,
            stacklevel=4,
        )


def chunk_scored(labels: LabelIndex) -> bool:
    """Whether dev and test data are scored by chunk F1 (as well as token accuracy): when the
    training labels are BIO. Decided once from the training labels, so that the held-out part,
    a dev file and a test file are scored alike whatever labels each happens to hold."""
    return is_bio(labels.labels)


class DevScorer:
    """Scores weights on a labeled part (dev data, a held-out tenth, test data): called with
    ``w``, returns ``{"dev_f1": ..., "dev_acc": ...}`` (F1 only when the training labels are
    BIO), in percent rounded to 2 decimals; ``shares`` then holds each sentence's share of the
    main figure (numerator, denominator arrays: ``evaluate(per_sentence=True)``), from which
    a path tells a real difference between two points from noise."""

    def __init__(self, Xd: Featurized, model: ChainModel, labels: LabelIndex, gold):
        self.Xd, self.model, self.names = Xd, model, labels.labels
        self.gold = gold
        self.offsets = Xd.offsets.tolist()
        self.chunks = chunk_scored(labels)
        self.shares: tuple[np.ndarray, np.ndarray] | None = None

    def __call__(self, w: np.ndarray) -> dict:
        Xd, model, offsets = self.Xd, self.model, self.offsets
        if not model.plain:
            out = model.decode(Xd, w)[0]
        else:
            state = model.state_scores(Xd, w)
            out = np.empty(Xd.n_tokens, dtype=np.int32)
            viterbi_batch_into(
                state,
                Xd.offsets,
                np.ascontiguousarray(model.transitions(w)),
                out,
                np.empty(Xd.n_sentences),
            )
        flat = [self.names[i] for i in out.tolist()]
        pred = [flat[a:b] for a, b in zip(offsets[:-1], offsets[1:])]
        m = evaluate_labels(self.gold, pred, chunk_level=self.chunks, per_sentence=True)
        self.shares = m["sentence_shares"]
        if self.chunks:
            return {"dev_f1": round(100 * m["f1"], 2), "dev_acc": round(100 * m["accuracy"], 2)}
        return {"dev_acc": round(100 * m["accuracy"], 2)}


def dev_scorer(Xd: Featurized, model: ChainModel, labels: LabelIndex, gold: list[list[str]]):
    return DevScorer(Xd, model, labels, gold)


class FeaturizeProgress:
    """Featurization reported on the ``tagger.train`` logger as it goes: each pass over the data
    (the vocabulary, then each part turned into attributes) with the tokens done out of those
    known so far, which a progress bar (:mod:`tagger.training.progress`) shows with an ETA."""

    def __init__(self, *parts):
        self.total = sum(_tokens(p) for p in parts)
        self.done = 0
        self.log = logging.getLogger("tagger.train")

    def add(self, part) -> None:
        """Count a part that is featurized later (dev, test) into the total."""
        self.total += _tokens(part)

    def add_tokens(self, n: int) -> None:
        """Count tokens read as they come (the unlabeled text: its vocabulary pass, then its
        attributes) into the total."""
        self.total += 2 * n

    def step(self, phase: str, part, extra: int = 0) -> None:
        n = _tokens(part) + extra
        self.done += n
        self.log.info(
            "featurize: %s, %d tokens (%d of %d)",
            phase,
            n,
            self.done,
            max(self.total, self.done),
            extra={
                "featurize": {
                    "phase": phase,
                    "done": self.done,
                    "total": max(self.total, self.done),
                }
            },
        )


def _tokens(part) -> int:
    """Tokens of a list of sentences (0 for anything not yet read)."""
    if isinstance(part, (list, tuple)):
        return sum(len(s) for s in part)
    return 0


def build_problem(
    spec: FeatureSpec,
    sentences,
    dev,
    progress,
    unlabeled=None,
    constraints=None,
    test=None,
    dev_what: str = "dev data",
    scratch: ScratchSpace | None = None,
):
    """The learners' view of a training run: the training (and dev, test, unlabeled) data
    checked and featurized with ``spec``, the label index (the data's labels and the
    constraint file's), the model layout and the dev / test scorers. The unlabeled text is
    read once in batches and not kept (:mod:`tagger.training.unlabeled`); its arrays live in
    ``scratch`` (memory by default). Returns ``(train list, featurizer, labels,
    TrainingProblem)``."""
    scratch = ScratchSpace() if scratch is None else scratch
    train = spec.relabel(labeled_list(sentences, "training data"))
    featurizer = Featurizer(spec)
    check_columns(train, spec, "training data")
    cset = constraint_set(constraints)
    label_names = {lab for s in train for lab in s.labels}
    if dev_what != HELD_OUT:  # the held-out part's training set is most of the same data
        warn_about_label_case(label_names)
    if cset is not None:  # a label no labeled sentence shows may still be imputed
        from tagger.constraints.check import check_training_labels

        check_training_labels(cset, sorted(label_names))  # before reading unlabeled text
        label_names |= set(cset.labels)
    labels = LabelIndex(sorted(label_names))
    work = FeaturizeProgress(train, train, dev, test)
    featurizer.begin_fit()
    parts = [featurizer.grow_views(train)]
    unl = compiled = None
    if unlabeled is not None:
        if cset is not None:
            compiled = cset.compile(labels.labels)
        unl = UnlabeledBatches(
            unlabeled,
            spec,
            featurizer,
            scratch,
            compiled,
            check=lambda batch: check_columns(batch, spec, "unlabeled data"),
            progress=progress,
            on_batch=work.add_tokens,
        )
        parts = itertools.chain(parts, unl.batches())
    featurizer.end_fit(parts)
    warn_about_cluster_coverage(spec, train)
    work.step("vocabulary", train, 0 if unl is None else unl.n_tokens)
    X = featurizer.transform(train)
    work.step("training data", train)
    y = labels.encode([lab for s in train for lab in s.labels])
    # with unlabeled data every (attribute, label) pair may be learned from imputed labels,
    # and so may every label pair of a pair attribute (the imputed labelings can put any pair
    # next to any token): L * L parameters per pair attribute of the vocabulary (labeled and
    # unlabeled text), L times what the state block gives those attributes. That stays
    # bounded because pair templates are few and coarse (tags, shapes, a bias: attributes
    # with few values, e.g. 50 tags and 23 labels: 26,450 weights); a word-level pair template
    # over much text would not be (vocabulary * L * L weights, 8 bytes each in w and in each
    # of the solver's per-weight arrays). Only the (attribute, previous label, label) triples
    # of the labeled data would leave the imputed labelings' new pairs without a weight.
    # A second-order model likewise allows every label pair and triple (L^3 triple weights)
    model = ChainModel.from_data(
        X,
        y,
        len(labels),
        featurizer.n_attributes,
        spec.all_pairs or unl is not None,
        featurizer.pair_attributes() if spec.has_pairs else None,
        spec.order,
        all_label_pairs=unl is not None,
    )
    if model.second is not None:
        try:
            model.second.check_size()
        except ValueError as exc:
            raise FeatureSpecError(str(exc)) from None

    def scorer(data, what):
        if data is None:
            return None
        read_now = not isinstance(data, (list, tuple))
        data = labeled_list(data, what)
        if read_now:  # its tokens join the featurization's total only now
            work.add(data)
        data = spec.relabel(data)
        check_columns(data, spec, what)
        warn_about_scoring_data(data, labels, what)
        scorer_data = featurizer.transform(data)
        work.step(what, data)
        return dev_scorer(scorer_data, model, labels, [s.labels for s in data])

    dev_score = scorer(dev, dev_what)
    report_score = scorer(test, "test data")
    XU = cdata = None
    if unl is not None:
        XU = unl.featurize()
        work.step("unlabeled data", None, XU.n_tokens)
        if compiled is not None:
            from tagger.constraints import ConstraintData
            from tagger.constraints.feasibility import check_feasible

            cdata = ConstraintData(compiled, unl.indicators())
            # before any training: rules that contradict each other on the text
            check_feasible(compiled, cdata.indicators, cset.source, "unlabeled data")
        del unl
    problem = TrainingProblem(
        model,
        X,
        y,
        dev_score=dev_score,
        progress=progress,
        unlabeled=XU,
        constraints=cdata,
        report_score=report_score,
        scratch=scratch,
    )
    return train, featurizer, labels, problem
