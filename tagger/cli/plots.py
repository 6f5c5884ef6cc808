"""Pictures of training: the regularization path and the training trace (matplotlib, an
optional dependency imported only when a picture is asked for)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tagger.cli.trace import SCORE_KEYS
from tagger.errors import TaggerError

#: the formats `--plot FILE` writes, chosen by the file name's extension (the same for
#: `tagger path` and `tagger trace`)
PICTURE_FORMATS = ("png", "svg", "pdf")


def save_picture(fig, out: str | Path) -> None:
    """Write ``fig`` to ``out`` in the format of its extension, through a temporary file
    renamed over it (a failure leaves no half-written picture), and close it."""
    import matplotlib.pyplot as plt

    out = Path(out)
    tmp = out.with_name(out.name + ".tmp" + out.suffix)
    try:
        fig.savefig(tmp, dpi=120)
        tmp.replace(out)
    finally:
        plt.close(fig)
        tmp.unlink(missing_ok=True)


def plot_available() -> bool:
    """Whether :func:`plot_path` can draw (matplotlib is an optional dependency)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def plot_path(rows: list[dict], out: str | Path, title: str = "") -> None:
    """Dev score and non-zero weights against the path parameter (log scale), to ``out``."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise TaggerError("drawing the path needs matplotlib (pip install matplotlib)") from None
    mixed = [r for r in rows if r.get("mix")]  # the L2 mix at the chosen strength
    rows = [r for r in rows if not r.get("mix")]
    score = "dev_f1" if "dev_f1" in rows[0] else "dev_acc"
    x = [r["value"] for r in rows]
    fig, ax = plt.subplots(figsize=(6, 4))
    for r in mixed:
        label = ", ".join(f"{k}={v:g}" for k, v in r["mix"].items())
        ax.annotate(
            f"+{label}: {r[score]:.2f}", (r["value"], r[score]), fontsize=7, color="tab:green"
        )
        ax.plot([r["value"]], [r[score]], "^", color="tab:green")
    ax.plot(x, [r[score] for r in rows], "o-", color="tab:blue")
    ax.set_xscale("log")
    ax.set_xlabel(rows[0]["param"])
    ax.set_ylabel({"dev_f1": "dev chunk F1", "dev_acc": "dev accuracy"}[score], color="tab:blue")
    ax2 = ax.twinx()
    ax2.plot(x, [r["nonzero"] for r in rows], "s--", color="tab:red")
    ax2.set_yscale("log")
    ax2.set_ylabel("non-zero weights", color="tab:red")
    if title:
        ax.set_title(title)
    fig.tight_layout()
    save_picture(fig, out)


def plot_trace(rows: Sequence[dict], path: str) -> None:
    """Draw the dev / test scores of the trace against its rows (PNG, SVG or PDF, by the
    name's extension)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise TaggerError(
            "drawing the trace needs matplotlib (pip install matplotlib); "
            "'tagger trace MODEL' prints it as a table"
        ) from None
    keys = [k for k in SCORE_KEYS if any(k in r for r in rows)]
    if not keys:
        raise TaggerError("the trace has no dev or test scores to draw")
    fig, ax = plt.subplots(figsize=(6, 3.5))
    x = list(range(len(rows)))
    for k in keys:
        ax.plot(x, [r.get(k) for r in rows], marker="o", label=k)
    sel = max((i for i, r in enumerate(rows) if r.get("selected")), default=None)
    if sel is not None:
        ax.axvline(sel, color="grey", linestyle=":", label="kept")
    labels = [
        f"{r.get('C_u', r.get('epoch', i)):.3g}"
        if isinstance(r.get("C_u", r.get("epoch")), float)
        else str(r.get("C_u", r.get("epoch", i)))
        for i, r in enumerate(rows)
    ]
    ax.set_xticks(x)
    ax.set_xticklabels(labels, rotation=45, fontsize=7)
    ax.set_xlabel("C_u" if any("C_u" in r for r in rows) else "epoch")
    ax.set_ylabel("score")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_picture(fig, path)
