"""Training traces saved with a model: a text table and, where matplotlib is installed, a
picture of dev (and test) scores along training (the annealing schedule of ``ssvm-annealing``)."""

from __future__ import annotations

from collections.abc import Sequence

SCORE_KEYS = ("dev_acc", "dev_f1", "test_acc", "test_f1")


def format_trace(rows: Sequence[dict]) -> str:
    """The trace as an aligned table; the row whose weights were kept is marked with ``*``."""
    if not rows:
        return "this model has no training trace"
    keys: list[str] = []
    for r in rows:
        for k in r:
            if k not in keys and k != "selected":
                keys.append(k)
    cells = [[_cell(r.get(k)) for k in keys] for r in rows]
    widths = [max(len(k), *(len(c[i]) for c in cells)) for i, k in enumerate(keys)]
    lines = ["  " + "  ".join(k.rjust(w) for k, w in zip(keys, widths))]
    last_selected = max((i for i, r in enumerate(rows) if r.get("selected")), default=None)
    for i, c in enumerate(cells):
        mark = "* " if i == last_selected else "  "
        lines.append(mark + "  ".join(v.rjust(w) for v, w in zip(c, widths)))
    if last_selected is not None:
        lines.append("* the weights saved in the model (best dev score along training)")
    return "\n".join(lines)


def _cell(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)
