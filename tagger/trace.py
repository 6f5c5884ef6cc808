"""Training traces saved with a model: a text table and, where matplotlib is installed, a
picture of dev (and test) scores along training (the annealing schedule of ``ssvm-annealing``)."""

from __future__ import annotations

from typing import Sequence

from tagger.errors import TaggerError

_SCORE_KEYS = ("dev_acc", "dev_f1", "test_acc", "test_f1")


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


def plot_trace(rows: Sequence[dict], path: str) -> None:
    """Draw the dev / test scores of the trace against its rows into a PNG."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise TaggerError("drawing the trace needs matplotlib (pip install matplotlib); "
                          "'tagger trace MODEL' prints it as a table") from None
    keys = [k for k in _SCORE_KEYS if any(k in r for r in rows)]
    if not keys:
        raise TaggerError("the trace has no dev or test scores to draw")
    fig, ax = plt.subplots(figsize=(6, 3.5))
    x = list(range(len(rows)))
    for k in keys:
        ax.plot(x, [r.get(k) for r in rows], marker="o", label=k)
    sel = max((i for i, r in enumerate(rows) if r.get("selected")), default=None)
    if sel is not None:
        ax.axvline(sel, color="grey", linestyle=":", label="kept")
    labels = [f"{r.get('C_u', r.get('epoch', i)):.3g}" if isinstance(r.get("C_u", r.get("epoch")), float)
              else str(r.get("C_u", r.get("epoch", i))) for i, r in enumerate(rows)]
    ax.set_xticks(x)
    ax.set_xticklabels(labels, rotation=45, fontsize=7)
    ax.set_xlabel("C_u" if any("C_u" in r for r in rows) else "epoch")
    ax.set_ylabel("score")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
