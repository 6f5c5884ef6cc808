"""A small synthetic field-segmentation task for the semi-supervised tests: an address is a
name, a street and a city (one or two words each, a comma after each field), and a rule file
that says what an expert would know about it."""

from __future__ import annotations

FIELDS = {
    "name": ["Ann", "Bob", "Eve", "Max"],
    "street": ["Main", "Oak", "Elm", "road"],
    "city": ["Paris", "Rome", "Oslo", "Bern"],
}

RULES = """
labels = ["name", "street", "city"]
[[instance]]
rule = "start"
labels = ["name"]
hard = true
[[instance]]
rule = "one-segment"
labels = "all"
hard = true
[[instance]]
rule = "tokens"
words = ["road"]
take = ["street"]
[[corpus]]
rule = "label-fraction"
labels = ["name"]
fraction = 0.3
tolerance = 0.1
"""


def addresses(rng, n: int) -> list[tuple[list[str], list[str]]]:
    """n addresses as (tokens, labels), drawn with the numpy Generator ``rng``."""
    out = []
    for _ in range(n):
        toks, labs = [], []
        for field, words in FIELDS.items():
            for _ in range(int(rng.integers(1, 3))):
                toks.append(words[int(rng.integers(0, 4))])
                labs.append(field)
            toks.append(",")
            labs.append(field)
        out.append((toks, labs))
    return out


def write_addresses(path, rng, n: int, labeled: bool = True) -> None:
    """n addresses as a token-TAB-label file at ``path`` (unlabeled: every label "name", a
    column the unlabeled reader drops)."""
    lines = []
    for toks, labs in addresses(rng, n):
        lines += [f"{t}\t{lab if labeled else 'name'}" for t, lab in zip(toks, labs)] + [""]
    path.write_text("\n".join(lines) + "\n")
