"""Results as people and programs read them: the text tables the command line prints
(learners, training summary, regularization path, constraint violations, model inspection)
from the result dicts of the API."""

from __future__ import annotations

from tagger.model.inspect import jsonable

__all__ = ["jsonable"]  # the command line's JSON output goes through it


def learner_table(name: str, cls) -> str:
    rows = [(p.name, repr(p.default), p.describe_range(), p.help) for p in cls.params]
    w0 = max([len("parameter")] + [len(r[0]) for r in rows])
    w1 = max([len("default")] + [len(r[1]) for r in rows])
    w2 = max([len("range")] + [len(r[2]) for r in rows])
    summary = first_sentence(cls.__doc__ or "")
    lines = [f"{name}" + (f": {summary}" if summary else "")]
    lines.append(f"  {'parameter':<{w0}}  {'default':<{w1}}  {'range':<{w2}}  help")
    for r in rows:
        lines.append(f"  {r[0]:<{w0}}  {r[1]:<{w1}}  {r[2]:<{w2}}  {r[3]}")
    return "\n".join(lines)


def first_sentence(doc: str) -> str:
    """The first sentence of a docstring's first paragraph, whole however many lines it takes:
    up to the first full stop outside parentheses that ends the text or is followed by a
    capital letter (so ``e.g. the`` or ``et al. 2009`` do not end it)."""
    paragraph = " ".join(doc.strip().split("\n\n", 1)[0].split())
    depth = 0
    for i, ch in enumerate(paragraph):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(depth - 1, 0)
        elif ch == "." and depth == 0:
            after = paragraph[i + 1 : i + 3]
            if not after or (after[0] == " " and after[1:2].isupper()):
                return paragraph[: i + 1]
    return paragraph


def learners_text(learners: dict, default: str) -> str:
    """Every learner's parameter table, the default first and marked."""
    blocks = []
    ordered = sorted(learners.items(), key=lambda item: item[0] != default)
    for name, cls in ordered:
        text = learner_table(name, cls)
        if name == default:
            first, rest = text.split("\n", 1)
            text = f"{first} [default]\n{rest}"
        blocks.append(text)
    return "\n\n".join(blocks)


def size_text(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"  # pragma: no cover


def train_summary(tagger, model_path: str, size: int) -> str:
    """What ``tagger train`` says when it is done."""
    info = tagger.info_
    final = info.get("final", {})
    dev_txt = ", ".join(f"{k} {final[k]}" for k in ("dev_f1", "dev_acc") if k in final)
    # a learner that kept one of its stages by the dev score says which
    kept = (
        f" (stage {final['stage']}, iteration {final['epoch']}: the best stage on dev)"
        if final.get("selected") and "stage" in final
        else ""
    )
    seconds = info.get("featurize_seconds", 0) + info.get("train_seconds", 0)
    return (
        f"trained {info['learner']} (features {tagger.featurizer_.spec.name}) on "
        f"{info['n_train_sentences']} sentences, {info['n_train_tokens']} tokens in "
        f"{seconds:.1f} s (featurize {info.get('featurize_seconds', 0):.1f} s)\n"
        f"parameters {info['n_params']}, non-zero weights {info['n_nonzero']}, "
        f"labels {len(tagger.labels_)}\n"
        + (f"dev of the saved weights{kept}: {dev_txt}\n" if dev_txt else "")
        + selection_text(info.get("selection"))
        + evidence_text(info.get("evidence"))
        + learner_choice_text(info.get("learner_choice"))
        + f"saved {model_path} ({size_text(size)})"
    )


def train_record(tagger, model_path: str, size: int) -> dict:
    """What ``tagger train --json`` prints: the same facts as :func:`train_summary`."""
    info = tagger.info_
    return {
        "model": model_path,
        "model_bytes": size,
        "learner": info["learner"],
        "features": tagger.featurizer_.spec.name,
        "params": info.get("params", {}),
        "n_train_sentences": info["n_train_sentences"],
        "n_train_tokens": info["n_train_tokens"],
        "n_params": info["n_params"],
        "n_nonzero": info["n_nonzero"],
        "labels": list(tagger.labels_.labels),
        "final": info.get("final", {}),
        "seconds": round(info.get("featurize_seconds", 0) + info.get("train_seconds", 0), 3),
        "selection": info.get("selection"),
        "learner_choice": info.get("learner_choice"),
    }


def evidence_text(evidence: dict | None) -> str:
    """Per label, the labeled tokens and the unlabeled tokens imputed with it that the kept
    model was trained on ('' without unlabeled training); labels learned from the rules
    alone are marked."""
    if not evidence:
        return ""
    width = max(len("label"), *(len(k) for k in evidence))
    lines = [
        "where each label was learned from (tokens):",
        f"{'label':<{width}}  {'labeled':>8}  {'imputed':>8}",
    ]
    for name, e in evidence.items():
        note = (
            "  from the rules alone"
            if e["labeled"] == 0 and e["imputed"] > 0
            else ("  never seen" if e["labeled"] == 0 else "")
        )
        lines.append(f"{name:<{width}}  {e['labeled']:>8d}  {e['imputed']:>8d}{note}")
    return "\n".join(lines) + "\n"


def selection_text(sel: dict | None) -> str:
    """The path training chose the regularization on, and the choice ('' without one)."""
    if not sel:
        return ""
    return (
        f"regularization chosen on the {sel['scored_on']} (--set {sel['param']}=VALUE "
        f"fixes it):\n{path_table(sel['rows'], sel['param'])}\n{path_legend(sel['rows'])}"
        f"chose {sel['param']}={sel['value']:g}"
        + "".join(f", {k}={v:g}" for k, v in sel.get("mix", {}).items())
        + (
            "; trained with " + ", ".join(f"{k}={v:g}" for k, v in sel["recipe"].items())
            if sel.get("recipe")
            else ""
        )
        + "\n"
        + "".join(
            f"(trained on, the kept point scored {r['refit_score']:g} with "
            f"{r['refit_nonzero']} non-zero weights, lower than its path weights beyond "
            f"noise: those are kept)\n"
            for r in sel["rows"]
            if r.get("selected") and "refit_nonzero" in r
        )
    )


def learner_choice_text(choice: dict | None) -> str:
    """The learners ``--learner auto`` compared, each at its chosen strength ('' without)."""
    if not choice:
        return ""
    rows = choice["rows"]
    score = "dev_f1" if "dev_f1" in rows[0] else "dev_acc"
    lines = [
        f"learner chosen on the {choice['scored_on']}:",
        f"{'learner':<18}  {'chosen':<16}  {score:>7}  {'nonzero':>9}",
    ]
    for r in rows:
        settings = {r["param"]: r["value"], **r.get("mix", {})}
        chosen = ", ".join(f"{k}={v:g}" for k, v in settings.items())
        lines.append(
            f"{r['learner']:<18}  {chosen:<16}  "
            f"{r[score]:>7.2f}  {r['nonzero']:>9d}" + ("  *" if r["selected"] else "")
        )
    return "\n".join(lines) + "\n"


def path_table(rows: list[dict], param: str) -> str:
    """The regularization path, one line per value: the deciding dev score (chunk F1 for
    chunks, else accuracy), token accuracy beside chunk F1, non-zeros and seconds."""
    score = "dev_f1" if "dev_f1" in rows[0] else "dev_acc"
    cols = [score] + (["dev_acc"] if score != "dev_acc" else [])
    lines = [
        f"{param:>12}  " + "".join(f"{c:>7}  " for c in cols) + f"{'nonzero':>9}  {'seconds':>8}"
    ]
    for r in rows:
        seconds = f"{r['seconds']:>8.1f}" if "seconds" in r else f"{'-':>8}"  # not saved
        mix = "".join(f"  (+ {k}={v:g})" for k, v in r.get("mix", {}).items())
        lines.append(
            f"{r['value']:>12g}  "
            + "".join(f"{r[c]:>7.2f}  " for c in cols)
            + f"{r['nonzero']:>9d}  {seconds}"
            + _marks(r)
            + mix
        )
    return "\n".join(lines)


def path_legend(rows: list[dict]) -> str:
    """What the marks of :func:`path_table` mean, when another point than the best-scoring one
    was kept ('' otherwise)."""
    if not any(r.get("best") and not r.get("selected") for r in rows):
        return ""
    return (
        "*: kept; best: the best dev score; ~: within one standard error of the best "
        "(paired over the dev sentences)\n"
    )


def _marks(row: dict) -> str:
    """The points within noise of the best (~), the best-scoring one when another was kept
    (best), and the kept point, last (*)."""
    if row.get("selected") and row.get("best"):
        return "  *"
    keys = (("best", "best"), ("within_noise", "~"), ("selected", "*"))
    marks = [m for key, m in keys if row.get(key)]
    return "  " + " ".join(marks) if marks else ""


def constraint_table(rows: list[dict]) -> str:
    """Violation rates by gold labels and by predictions, one line per constraint."""
    width = max([len("constraint")] + [len(r["constraint"]) for r in rows])
    out = ["", f"{'constraint':<{width}}  {'kind':<13}  {'gold':>8}  {'predicted':>9}"]
    for r in rows:
        kind = f"{r['level']}{' hard' if r['hard'] else ''}"
        if r["level"] == "instance":
            g, p = f"{100 * r['gold_rate']:.1f}%", f"{100 * r['pred_rate']:.1f}%"
        else:
            g, p = f"{r['gold_value']:.3f}", f"{r['pred_value']:.3f}"
        out.append(f"{r['constraint']:<{width}}  {kind:<13}  {g:>8}  {p:>9}")
    out.append(
        "instance rows: share of sentences violating the rule; corpus rows: the "
        "measured fraction (target +- tolerance in the file)"
    )
    return "\n".join(out)


def inspect_text(r: dict, top: int) -> str:
    labels = r["labels"]
    lines = [
        f"learner: {r.get('learner')}",
        f"parameters: {r['n_params']}   non-zero weights: {r['n_nonzero']}   "
        f"attributes: {r.get('n_attributes')}   labels: {len(labels)}",
        "labels: " + " ".join(labels),
    ]
    if r.get("order", 1) == 2 or r.get("n_pair_weights"):
        lines.append(
            f"order: {r.get('order', 1)}   non-zero label-pair weights: "
            f"{r.get('n_pair_weights', 0)}   non-zero label-triple weights: "
            f"{r.get('n_triple_weights', 0)}"
        )
    if r.get("selection"):
        lines.append(selection_text(r["selection"]).rstrip("\n"))
    if r.get("learner_choice"):
        lines.append(learner_choice_text(r["learner_choice"]).rstrip("\n"))
    lines += ["", f"top {top} features per label (by |weight|):"]
    for lab, feats in r["top_features"].items():
        lines.append(f"  {lab}:")
        if not feats:
            lines.append("    (none)")
        for name, w in feats:
            lines.append(f"    {w:+10.4f}  {name}")
    lines.append("")
    lines.extend(_transition_matrix(r))
    return "\n".join(lines)


def _transition_matrix(r: dict) -> list[str]:
    """Rows: previous label (and start/end weights); columns: next label, by number."""
    labels = r["labels"]
    rows = [(f"{i:>2} {a}", [r["transitions"][a][b] for b in labels]) for i, a in enumerate(labels)]
    for key in ("start", "end"):
        if key in r:
            rows.append((f"   {key}", [r[key][b] for b in labels]))
    cells = [[_cell(v) for v in vals] for _, vals in rows]
    width = max([len(str(len(labels) - 1))] + [len(c) for row in cells for c in row])
    head = max(len(name) for name, _ in rows)
    out = [
        "transitions (row: previous label; column: next label, by number; '.' = 0):",
        " " * head + " " + " ".join(f"{j:>{width}}" for j in range(len(labels))),
    ]
    for (name, _), row in zip(rows, cells):
        out.append(f"{name:<{head}} " + " ".join(f"{c:>{width}}" for c in row))
    return out


def _cell(v: float) -> str:
    return "." if v == 0 else f"{v:.2f}"
