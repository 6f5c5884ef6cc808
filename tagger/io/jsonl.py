"""JSON lines output (``tagger tag --output-format jsonl``): one object per sentence with its
input columns by name (``names``, else the fields a dataset or DocBin was read with), the
predicted labels under ``predicted`` and, when asked for, each token's label probabilities
under ``marginals`` (a list of ``{label: probability}``)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from tagger.io.streams import WRITE_BATCH, open_text_out, paired
from tagger.sentence import Sentence


def column_names(names: Sequence[str] | None, n_columns: int) -> list[str]:
    """``names`` for the first columns, ``column_K`` for any column past them."""
    names = list(names or ["tokens"])
    return names[:n_columns] + [f"column_{k}" for k in range(len(names), n_columns)]


def write_jsonl(
    fh,
    sentences: Iterable[Sentence],
    labels_seq=None,
    names: Sequence[str] | None = None,
    marginals=None,
    label_names: Sequence[str] | None = None,
) -> None:
    """Write one JSON object per sentence; ``marginals`` (one (T, L) array per sentence, in the
    order of ``label_names``) adds the probabilities."""
    probs = iter(marginals) if marginals is not None else None
    with open_text_out(fh) as out:
        buf: list[str] = []
        for s, labs in paired(sentences, labels_seq):
            keys = column_names(names or s.meta.get("fields"), len(s.columns))
            record = dict(zip(keys, s.columns))
            if labs is not None:
                record["predicted"] = list(labs)
            if probs is not None:
                m = next(probs).tolist()
                record["marginals"] = [
                    {lab: round(p, 6) for lab, p in zip(label_names, row)} for row in m
                ]
            buf.append(json.dumps(record, ensure_ascii=False))
            buf.append("\n")
            if len(buf) >= WRITE_BATCH:
                out.write("".join(buf))
                buf.clear()
        out.write("".join(buf))
