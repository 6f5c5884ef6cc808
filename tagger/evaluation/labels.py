"""Label index (label strings <-> integer ids) and BIO chunk spans.

Chunk boundaries follow conlleval.pl (the CoNLL-2000 evaluation script) exactly for IOB1 and
IOB2 data; for IOBES (``E-``/``S-``) they follow seqeval's default mode, which extends the
same rules. A label splits into a tag and a type at its first ``-``: ``B-NP`` is tag ``B``,
type ``NP``. ``O``, and any label that is not ``B-``/``I-``/``E-``/``S-`` plus a type (a
stray ``NP`` among predictions, say), is outside every chunk.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from tagger.errors import UnknownLabelError

__all__ = [
    "LabelIndex",
    "is_bio",
    "bio_spans",
    "split_label",
    "label_tag_type",
    "chunk_starts_ends",
]

_PREFIXES = ("B-", "I-", "E-", "S-")


class LabelIndex:
    """An ordered list of label strings and their integer ids (positions in the list)."""

    __slots__ = ("labels", "_ids")

    def __init__(self, labels: Iterable[str] = ()):
        self.labels: list[str] = []
        self._ids: dict[str, int] = {}
        for lab in labels:
            self.add(lab)

    @classmethod
    def from_sentences(cls, sentences) -> LabelIndex:
        """The sorted set of labels of ``sentences`` (``Sentence`` records or label lists);
        sorted so that the ids do not depend on the order of the corpus."""
        seen: set[str] = set()
        for s in sentences:
            labels = getattr(s, "labels", s)
            if labels is None:
                raise ValueError("a sentence has no labels: cannot build a label index from it")
            seen.update(labels)
        return cls(sorted(seen))

    @classmethod
    def from_list(cls, labels: Sequence[str]) -> LabelIndex:
        labels = list(labels)
        if len(set(labels)) != len(labels):
            dup = sorted({x for x in labels if labels.count(x) > 1})
            raise ValueError(f"label list has duplicates: {dup}")
        return cls(labels)

    def to_list(self) -> list[str]:
        return list(self.labels)

    def add(self, label: str) -> int:
        """Id of ``label``, appending it when new."""
        i = self._ids.get(label)
        if i is None:
            if not isinstance(label, str):
                raise TypeError(f"labels must be strings, got {type(label).__name__} {label!r}")
            i = self._ids[label] = len(self.labels)
            self.labels.append(label)
        return i

    def __len__(self) -> int:
        return len(self.labels)

    def __iter__(self):
        return iter(self.labels)

    def __contains__(self, label) -> bool:
        return label in self._ids

    def __eq__(self, other) -> bool:
        return isinstance(other, LabelIndex) and self.labels == other.labels

    def __repr__(self) -> str:
        shown = ", ".join(self.labels[:8]) + (", ..." if len(self.labels) > 8 else "")
        return f"LabelIndex({len(self.labels)} labels: {shown})"

    def id(self, label: str) -> int:
        try:
            return self._ids[label]
        except KeyError:
            raise self._unknown(label) from None

    def _unknown(self, label) -> UnknownLabelError:
        known = ", ".join(self.labels[:40]) + (" ..." if len(self.labels) > 40 else "")
        return UnknownLabelError(
            f"unknown label {label!r}: the model knows {len(self.labels)} labels ({known})"
        )

    def encode(self, labels: Iterable[str]) -> np.ndarray:
        """Ids of ``labels`` as an ``int32`` array; an unknown label raises
        :class:`~tagger.errors.UnknownLabelError` naming it and the known labels."""
        try:
            return np.fromiter(map(self._ids.__getitem__, labels), dtype=np.int32)
        except KeyError as e:
            raise self._unknown(e.args[0]) from None

    def encode_many(self, label_seqs: Iterable[Sequence[str]]) -> tuple[np.ndarray, np.ndarray]:
        """Concatenated ids of several sequences and their ``offsets`` (``int64``, length
        ``n + 1``): sequence ``i`` is ``ids[offsets[i]:offsets[i + 1]]``."""
        lengths = [0]
        flat: list[str] = []
        for seq in label_seqs:
            flat.extend(seq)
            lengths.append(len(seq))
        return self.encode(flat), np.cumsum(lengths, dtype=np.int64)

    def decode(self, ids) -> list[str]:
        """Label strings of ``ids`` (any integer sequence or array)."""
        if isinstance(ids, np.ndarray):
            ids = ids.tolist()
        labels = self.labels
        try:
            return [labels[i] for i in ids]
        except (IndexError, TypeError):
            bad = [i for i in ids if not isinstance(i, int) or not 0 <= i < len(labels)]
            raise ValueError(f"label ids out of range 0..{len(labels) - 1}: {bad[:5]}") from None


def is_bio(labels: Iterable[str]) -> bool:
    """True when every label is ``O`` or starts with ``B-``/``I-`` (IOB1 or IOB2; ``E-`` and
    ``S-`` of IOBES are accepted as well). An empty collection is not BIO."""
    labels = set(labels)
    if not labels:
        return False
    return all(lab == "O" or (lab[:2] in _PREFIXES and len(lab) > 2) for lab in labels)


def split_label(label: str) -> tuple[str, str]:
    """``(tag, type)`` of a label for chunking: ``B-NP`` -> ``("B", "NP")``, ``O`` ->
    ``("O", "")``. Labels that are not ``O`` or ``B-``/``I-``/``E-``/``S-`` followed by a type
    (a predicted ``NP``, say) count as ``O``: they can be no part of a chunk."""
    if label[:2] in _PREFIXES and len(label) > 2:
        return label[0], label[2:]
    return "O", ""


def _end_of_chunk(prev_tag, tag, prev_type, typ) -> bool:
    # conlleval.pl endOfChunk, with seqeval's additions for S-
    if prev_tag in ("E", "S"):
        return True
    if prev_tag in ("B", "I") and tag in ("B", "S", "O"):
        return True
    return prev_tag != "O" and prev_type != typ


def _start_of_chunk(prev_tag, tag, prev_type, typ) -> bool:
    # conlleval.pl startOfChunk, with seqeval's additions for S-
    if tag in ("B", "S"):
        return True
    if tag in ("I", "E") and prev_tag in ("E", "S", "O"):
        return True
    return tag != "O" and prev_type != typ


def bio_spans(labels: Sequence[str]) -> list[tuple[str, int, int]]:
    """Chunks of one sentence as ``(type, start, end_exclusive)``, by conlleval's rules.

    An ``I-X`` after ``O`` or after a chunk of another type starts a chunk (IOB1), a ``B-X``
    always starts one, and a change of type always ends one. The reference implementation,
    one token at a time; :func:`chunk_starts_ends` is the vectorized one.
    """
    spans = []
    prev_tag, prev_type = "O", ""
    start = 0
    for i, lab in enumerate(labels):
        tag, typ = split_label(lab)
        if _end_of_chunk(prev_tag, tag, prev_type, typ):
            spans.append((prev_type, start, i))
        if _start_of_chunk(prev_tag, tag, prev_type, typ):
            start = i
        prev_tag, prev_type = tag, typ
    if _end_of_chunk(prev_tag, "O", prev_type, ""):
        spans.append((prev_type, start, len(labels)))
    return spans


# tag codes for the vectorized version
_O, _B, _I, _E, _S = range(5)
_TAG_CODES = {"O": _O, "B": _B, "I": _I, "E": _E, "S": _S}


def label_tag_type(label_names: Sequence[str]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Per label id: tag code, type id, and the type names (for :func:`chunk_starts_ends`)."""
    types: dict[str, int] = {"": 0}
    tag = np.empty(len(label_names), dtype=np.int8)
    typ = np.empty(len(label_names), dtype=np.int64)
    for i, lab in enumerate(label_names):
        t, ty = split_label(lab)
        tag[i] = _TAG_CODES[t]
        typ[i] = types.setdefault(ty, len(types))
    return tag, typ, list(types)


def chunk_starts_ends(ids, offsets, tag_of: np.ndarray, type_of: np.ndarray):
    """Vectorized :func:`bio_spans` over many sentences.

    ``ids`` are label ids of all tokens, sentence ``i`` spanning ``offsets[i]:offsets[i+1]``;
    ``tag_of``/``type_of`` map label ids to tag codes and type ids (:func:`label_tag_type`).
    Returns ``(starts, ends, types)``: global token positions of each chunk (end exclusive)
    and its type id, in order; chunks never cross sentences.
    """
    ids = np.asarray(ids)
    offsets = np.asarray(offsets, dtype=np.int64)
    n = len(ids)
    tag = tag_of[ids]
    typ = type_of[ids]
    nonempty = offsets[:-1] < offsets[1:]
    first = offsets[:-1][nonempty]  # first token of every non-empty sentence
    last = offsets[1:][nonempty] - 1  # last token
    # previous token's tag and type, with an 'O' before every sentence start
    prev_tag = np.empty(n, dtype=tag.dtype)
    prev_typ = np.empty(n, dtype=typ.dtype)
    prev_tag[1:] = tag[:-1]
    prev_typ[1:] = typ[:-1]
    prev_tag[first] = _O
    prev_typ[first] = 0

    end_before = (
        (prev_tag == _E)
        | (prev_tag == _S)
        | (((prev_tag == _B) | (prev_tag == _I)) & ((tag == _B) | (tag == _S) | (tag == _O)))
        | ((prev_tag != _O) & (prev_typ != typ))
    )
    start = (
        (tag == _B)
        | (tag == _S)
        | (((tag == _I) | (tag == _E)) & ((prev_tag == _E) | (prev_tag == _S) | (prev_tag == _O)))
        | ((tag != _O) & (prev_typ != typ))
    )
    # a chunk still open at the last token of a sentence ends with the sentence
    ends = np.concatenate([np.flatnonzero(end_before), last[tag[last] != _O] + 1])
    ends.sort()
    starts = np.flatnonzero(start)
    if len(starts) != len(ends):  # cannot happen by the rules above
        raise AssertionError("chunk starts and ends do not pair up")
    return starts, ends, typ[starts]
