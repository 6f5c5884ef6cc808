"""The marginals output of ``tagger tag --marginals``: CRFsuite's ``tag -l`` layout in columns."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tagger.sentence import Sentence


def write_marginals(
    out,
    sentences: Sequence[Sentence],
    predictions: Sequence[Sequence[str]],
    marginals: Sequence[np.ndarray],
    label_names: Sequence[str],
    sep: str = " ",
) -> None:
    """Token lines ``columns... predicted LABEL:P ...`` (every label, in the model's order),
    a blank line after each sentence."""
    lines = []
    for s, pred, m in zip(sentences, predictions, marginals):
        for t in range(len(s)):
            probs = sep.join(f"{lab}:{p:.6f}" for lab, p in zip(label_names, m[t].tolist()))
            lines.append(sep.join([col[t] for col in s.columns] + [pred[t], probs]))
        lines.append("")
    if lines:
        out.write("\n".join(lines) + "\n")
