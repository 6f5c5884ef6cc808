"""Evaluation: token accuracy, and conlleval's chunk precision, recall and F1.

When the gold labels are B-/I-/O (IOB1 or IOB2; E-/S- accepted too), precision, recall and
F1 are those of conlleval.pl: a chunk is correct when a predicted chunk has exactly the span
and the type of a gold chunk, chunks never cross sentences, and the overall figures are
micro-averages over chunks (``correct / found``, ``correct / gold``,
``2 P R / (P + R)``, each 0 when its denominator is 0). Otherwise (POS tags, citation fields
without prefixes) the figures are per token: per label precision/recall/F1, and overall the
micro-average over tokens, which equals the accuracy.

All percentages are fractions in [0, 1].
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tagger.evaluation.labels import chunk_starts_ends, is_bio, label_tag_type

__all__ = ["evaluate", "evaluate_ids", "format_report", "by_vocabulary", "word_set"]


def _prf(correct: int, found: int, gold: int) -> tuple[float, float, float]:
    p = correct / found if found else 0.0
    r = correct / gold if gold else 0.0
    # written as seqeval/scikit-learn write it, so that the floats agree to the last bit
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


def evaluate(
    gold: Sequence[Sequence[str]],
    pred: Sequence[Sequence[str]],
    chunk_level: bool | None = None,
    per_sentence: bool = False,
) -> dict:
    """Compare predicted label sequences with gold ones, sentence by sentence.

    Returns a dict with ``accuracy``, ``precision``, ``recall``, ``f1``, ``n_tokens``,
    ``n_sentences``, ``n_gold_chunks``, ``n_pred_chunks``, ``n_correct_chunks`` (the chunk
    counts are ``None`` at token level), ``per_label`` (``{name: {precision, recall, f1,
    support}}``, by chunk type at chunk level, by label otherwise; support counts gold chunks
    or gold tokens) and ``chunk_level``: chunks are scored when ``chunk_level`` is True, or,
    when it is None, when the gold labels are BIO (a caller that knows the label set, such as a
    trained model, decides instead: one odd gold label must not change what is reported).
    ``per_sentence`` adds each sentence's share of the main figure (:func:`evaluate_ids`).
    Raises ``ValueError`` when the numbers of sentences or of labels in a sentence differ.
    """
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold sentences but {len(pred)} predicted ones")
    index: dict[str, int] = {}
    lengths = [0]
    g_flat: list[str] = []
    p_flat: list[str] = []
    for i, (g, p) in enumerate(zip(gold, pred)):
        if len(g) != len(p):
            raise ValueError(f"sentence {i}: {len(g)} gold labels but {len(p)} predicted labels")
        g_flat.extend(g)
        p_flat.extend(p)
        lengths.append(len(g))
    for lab in g_flat:
        if lab not in index:
            index[lab] = len(index)
    if chunk_level is None:
        chunk_level = is_bio(index)
    for lab in p_flat:
        if lab not in index:
            index[lab] = len(index)
    get = index.__getitem__
    g_ids = np.fromiter(map(get, g_flat), dtype=np.int64, count=len(g_flat))
    p_ids = np.fromiter(map(get, p_flat), dtype=np.int64, count=len(p_flat))
    offsets = np.cumsum(lengths, dtype=np.int64)
    return evaluate_ids(
        g_ids, p_ids, offsets, list(index), chunk_level=chunk_level, per_sentence=per_sentence
    )


def evaluate_ids(
    gold_ids,
    pred_ids,
    offsets,
    label_names: Sequence[str],
    chunk_level: bool | None = None,
    per_sentence: bool = False,
) -> dict:
    """:func:`evaluate` on label ids: ``gold_ids``/``pred_ids`` hold the ids of all tokens,
    sentence ``i`` spanning ``offsets[i]:offsets[i + 1]`` (``len(offsets) = n_sentences + 1``),
    and ``label_names[id]`` is the label of an id. ``chunk_level=None`` decides by whether the
    gold labels are BIO.

    ``per_sentence`` adds ``sentence_shares = (numerator, denominator)``, two float arrays with
    one entry per sentence whose sums give the main figure as their ratio: correct tokens over
    tokens (accuracy), or twice the correct chunks over found plus gold chunks (F1 = 2 TP /
    (found + gold), the same number as 2 P R / (P + R)). A path compares two models on the same
    sentences with them (:mod:`tagger.training.selection`)."""
    g = np.asarray(gold_ids, dtype=np.int64)
    p = np.asarray(pred_ids, dtype=np.int64)
    offsets = np.asarray(offsets, dtype=np.int64)
    if g.shape != p.shape or g.ndim != 1:
        raise ValueError(
            f"gold_ids and pred_ids must be 1-D of the same length, got {g.shape} and {p.shape}"
        )
    if (
        len(offsets) == 0
        or offsets[0] != 0
        or offsets[-1] != len(g)
        or np.any(np.diff(offsets) < 0)
    ):
        raise ValueError("offsets must rise from 0 to the number of tokens")
    n_labels = len(label_names)
    if len(g) and (min(g.min(), p.min()) < 0 or max(g.max(), p.max()) >= n_labels):
        raise ValueError(f"label ids must lie in 0..{n_labels - 1}")
    n_tokens = len(g)
    correct_tokens = int(np.count_nonzero(g == p))
    accuracy = correct_tokens / n_tokens if n_tokens else 0.0
    if chunk_level is None:
        chunk_level = is_bio(label_names[i] for i in np.unique(g))
    result = {
        "accuracy": accuracy,
        "n_tokens": n_tokens,
        "n_sentences": len(offsets) - 1,
        "chunk_level": bool(chunk_level),
    }
    per_label: dict[str, dict] = {}
    if chunk_level:
        tag_of, type_of, type_names = label_tag_type(label_names)
        gs, ge, gt = chunk_starts_ends(g, offsets, tag_of, type_of)
        ps, pe, pt = chunk_starts_ends(p, offsets, tag_of, type_of)
        n_types = len(type_names)
        # chunks are disjoint, so (start, end, type) keys are unique within each side
        g_key = (gs * (n_tokens + 1) + ge) * n_types + gt
        p_key = (ps * (n_tokens + 1) + pe) * n_types + pt
        hit_keys = np.intersect1d(g_key, p_key, assume_unique=True)
        hit = hit_keys % n_types
        n_gold, n_found, n_correct = len(gs), len(ps), len(hit)
        precision, recall, f1 = _prf(n_correct, n_found, n_gold)
        gold_by = np.bincount(gt, minlength=n_types)
        found_by = np.bincount(pt, minlength=n_types)
        correct_by = np.bincount(hit, minlength=n_types)
        for t in sorted(range(n_types), key=type_names.__getitem__):
            if gold_by[t] or found_by[t]:
                pr, rc, f = _prf(int(correct_by[t]), int(found_by[t]), int(gold_by[t]))
                per_label[type_names[t]] = {
                    "precision": pr,
                    "recall": rc,
                    "f1": f,
                    "support": int(gold_by[t]),
                }
        result.update(
            precision=precision,
            recall=recall,
            f1=f1,
            n_gold_chunks=n_gold,
            n_pred_chunks=n_found,
            n_correct_chunks=n_correct,
        )
        if per_sentence:
            sent = _sentence_of_token(offsets)
            n_sent = len(offsets) - 1
            hit_start = (hit_keys // n_types) // (n_tokens + 1)
            result["sentence_shares"] = (
                2.0 * np.bincount(sent[hit_start], minlength=n_sent),
                (
                    np.bincount(sent[gs], minlength=n_sent)
                    + np.bincount(sent[ps], minlength=n_sent)
                ).astype(np.float64),
            )
    else:
        tp = np.bincount(g[g == p], minlength=n_labels)
        gold_by = np.bincount(g, minlength=n_labels)
        found_by = np.bincount(p, minlength=n_labels)
        for i in sorted(range(n_labels), key=lambda i: label_names[i]):
            if gold_by[i] or found_by[i]:
                pr, rc, f = _prf(int(tp[i]), int(found_by[i]), int(gold_by[i]))
                per_label[label_names[i]] = {
                    "precision": pr,
                    "recall": rc,
                    "f1": f,
                    "support": int(gold_by[i]),
                }
        # micro-average over tokens: every token is one prediction and one gold item
        result.update(
            precision=accuracy,
            recall=accuracy,
            f1=accuracy,
            n_gold_chunks=None,
            n_pred_chunks=None,
            n_correct_chunks=None,
        )
        if per_sentence:
            n_sent = len(offsets) - 1
            result["sentence_shares"] = (
                np.bincount(_sentence_of_token(offsets), weights=g == p, minlength=n_sent),
                np.diff(offsets).astype(np.float64),
            )
    result["per_label"] = per_label
    return result


def _sentence_of_token(offsets: np.ndarray) -> np.ndarray:
    """The sentence index of every token."""
    return np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))


def word_set(vocabulary) -> set:
    """Words from a set of words, or from sentences (their tokens) or token lists."""
    if isinstance(vocabulary, (set, frozenset)):
        return set(vocabulary)
    words: set = set()
    for item in vocabulary:
        if isinstance(item, str):
            words.add(item)
        else:
            words.update(getattr(item, "tokens", item))
    return words


def by_vocabulary(
    words: Sequence[Sequence[str]],
    gold: Sequence[Sequence[str]],
    pred: Sequence[Sequence[str]],
    vocabulary,
) -> dict:
    """Token accuracy split by whether the word is in ``vocabulary`` (the words of the training
    data): ``{"seen": {"tokens", "accuracy", "error"}, "unseen": {...}}``. The error on seen
    words is the ``Err_voc`` of Wang, Shawe-Taylor & Szedmak beside ``Err_all`` = 1 - accuracy.
    A part with no tokens has accuracy and error ``None``."""
    counts = {"seen": [0, 0], "unseen": [0, 0]}
    for ws, g, p in zip(words, gold, pred):
        for w, a, b in zip(ws, g, p):
            c = counts["seen" if w in vocabulary else "unseen"]
            c[0] += 1
            c[1] += a == b
    out = {}
    for part, (n, right) in counts.items():
        acc = right / n if n else None
        out[part] = {"tokens": n, "accuracy": acc, "error": None if acc is None else 1 - acc}
    return out


def format_vocabulary(parts: dict) -> str:
    """One line of a :func:`by_vocabulary` result."""

    def one(part):
        m = parts[part]
        if not m["tokens"]:
            return f"{part} 0 tokens"
        return (
            f"{part} {m['tokens']} tokens, accuracy {100 * m['accuracy']:.2f}% "
            f"(error {100 * m['error']:.2f}%)"
        )

    return "words seen in training: " + one("seen") + "; " + one("unseen")


def format_report(result: dict) -> str:
    """A conlleval-style text report of an :func:`evaluate` result (percentages)."""
    lines = []
    if result["chunk_level"]:
        lines.append(
            f"processed {result['n_tokens']} tokens with {result['n_gold_chunks']} phrases; "
            f"found: {result['n_pred_chunks']} phrases; correct: {result['n_correct_chunks']}."
        )
    else:
        lines.append(f"processed {result['n_tokens']} tokens in {result['n_sentences']} sentences.")
    lines.append(
        f"accuracy: {100 * result['accuracy']:6.2f}%; "
        f"precision: {100 * result['precision']:6.2f}%; "
        f"recall: {100 * result['recall']:6.2f}%; FB1: {100 * result['f1']:6.2f}"
    )
    width = max((len(k) for k in result["per_label"]), default=0)
    for name, m in result["per_label"].items():
        lines.append(
            f"{name:>{width}}: precision: {100 * m['precision']:6.2f}%; recall: "
            f"{100 * m['recall']:6.2f}%; FB1: {100 * m['f1']:6.2f}  {m['support']}"
        )
    return "\n".join(lines)
