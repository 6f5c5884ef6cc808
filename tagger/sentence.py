"""The unit of data passed from corpus readers to the featurizer and back to writers."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class Sentence:
    """One sequence of tokens.

    ``columns[c][t]`` is input column ``c`` of token ``t``; ``columns[0]`` are the tokens
    themselves (CoNLL-2000: ``[words, pos_tags]``). ``labels`` holds the gold labels when the
    source has them (``None`` for unlabeled text). ``meta`` carries what a writer needs to
    reproduce the input's layout (for instance the original label column position or the
    extra columns of a tab file); the featurizer never reads it.
    """

    columns: list[list[str]]
    labels: list[str] | None = None
    meta: dict = field(default_factory=dict)

    @property
    def tokens(self) -> list[str]:
        return self.columns[0]

    def __len__(self) -> int:
        return len(self.columns[0]) if self.columns else 0
