"""What a model file's JSON header must hold before :meth:`tagger.api.Tagger.load` trusts it,
and what :meth:`tagger.api.Tagger.save` writes there (:func:`header_meta`).

The arrays are checked by :mod:`tagger.model.files` (dtype, shape, sha256); the header is plain
JSON that a person may edit, so every field the package reads is checked here, with its key
path, what was expected and what was found. Hand-written checks rather than a schema library:
the header has a dozen fields, and ``tagger tag`` should not import one more package to start.
"""

from __future__ import annotations

from typing import Any

from tagger.errors import ModelFileError
from tagger.model.inspect import jsonable

_INT = (int,)
_NUMBER = (int, float)

#: fields of ``meta.info`` the package reads, and the JSON types each may have
INFO_FIELDS: dict[str, tuple] = {
    "learner": (str,),
    "params": (dict,),
    "seed": _INT,
    "n_params": _INT,
    "n_nonzero": _INT,
    "n_train_sentences": _INT,
    "n_train_tokens": _INT,
    "n_unlabeled_sentences": _INT,
    "constraints": (str, type(None)),
    "featurize_seconds": _NUMBER,
    "train_seconds": _NUMBER,
    "final": (dict,),
    "path": (list,),
    "conllu_label": (str,),
    "selection": (dict,),
    "evidence": (dict,),
    "config": (dict,),
}

_NAMES = {
    str: "text",
    int: "a whole number",
    float: "a number",
    dict: "a table (JSON object)",
    list: "a list",
    type(None): "null",
    bool: "true or false",
}


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return f"{str(value).lower()}"
    return f"{type(value).__name__} {value!r}"[:60]


def _is(value: Any, types: tuple) -> bool:
    if isinstance(value, bool):
        return bool in types
    return isinstance(value, types)


def check_header(meta: Any, path: str) -> None:
    """Raise :class:`ModelFileError` naming the first field of ``meta`` (the header's ``meta``
    object) that is missing or of the wrong type."""

    def bad(key: str, expected: str, found: Any) -> ModelFileError:
        return ModelFileError(
            f"{path}: the model header's {key} must be {expected}, found {_kind(found)}; the file "
            f"was edited or damaged: restore it or train the model again"
        )

    if not isinstance(meta, dict):
        raise bad("meta", _NAMES[dict], meta)
    labels = meta.get("labels")
    if not isinstance(labels, list) or not labels:
        raise bad("meta.labels", "a non-empty list of label names", labels)
    for i, lab in enumerate(labels):
        if not isinstance(lab, str):
            raise bad(f"meta.labels[{i}]", _NAMES[str], lab)
    if len(set(labels)) != len(labels):
        raise bad("meta.labels", "a list of distinct label names", labels)
    if not isinstance(meta.get("features"), dict):
        raise bad("meta.features", _NAMES[dict], meta.get("features"))
    info = meta.get("info", {})
    if not isinstance(info, dict):
        raise bad("meta.info", _NAMES[dict], info)
    for key, types in INFO_FIELDS.items():
        if key in info and not _is(info[key], types):
            raise bad(f"meta.info.{key}", " or ".join(_NAMES[t] for t in types), info[key])
    if info.get("conllu_label", "upos") not in ("upos", "xpos"):
        raise bad("meta.info.conllu_label", '"upos" or "xpos"', info["conllu_label"])
    trace = meta.get("trace", [])
    if not isinstance(trace, list):
        raise bad("meta.trace", "a list of rows (JSON objects)", trace)
    for i, row in enumerate(trace):
        if not isinstance(row, dict):
            raise bad(f"meta.trace[{i}]", _NAMES[dict], row)


def check_model_header(meta: Any, shapes: dict[str, tuple[int, ...]], path: str) -> None:
    """:func:`check_header`, then whether the arrays the manifest lists fit together, from
    their shapes alone (before any is read): a file that declares a weight vector or an
    attribute table larger than its other arrays and labels allow is refused before that
    array is allocated. What is absent or not one-dimensional is left to the model's own
    checks after loading."""
    check_header(meta, path)

    def bad(what: str) -> ModelFileError:
        return ModelFileError(
            f"{path}: the model file is damaged or inconsistent ({what}); restore it or train "
            f"the model again"
        )

    def size(name: str) -> int | None:
        shape = shapes.get(name)
        return shape[0] if shape is not None and len(shape) == 1 else None

    n_labels = len(meta["labels"])
    n_attrs, ptr = size("feat.attr_keys"), size("model.attr_ptr")
    n_state, n_weights = size("model.param_label"), size("weights")
    if n_attrs is not None and ptr is not None and ptr != n_attrs + 1:
        raise bad(f"model.attr_ptr has {ptr} entries for {n_attrs} attributes, not {n_attrs + 1}")
    if n_attrs is not None and n_state is not None and n_state > n_attrs * n_labels:
        raise bad(
            f"model.param_label has {n_state} entries, more than {n_attrs} attributes times "
            f"{n_labels} labels"
        )
    n_pair = size("model.pair_code") or 0
    if n_attrs is not None and n_pair > n_attrs * n_labels * n_labels:
        raise bad(
            f"model.pair_code has {n_pair} entries, more than {n_attrs} attributes times "
            f"{n_labels * n_labels} label pairs"
        )
    n_trip = size("model.trip_code") or 0
    if n_trip > n_labels**3:
        raise bad(f"model.trip_code has {n_trip} entries, more than {n_labels**3} label triples")
    if n_state is not None and n_weights is not None:
        expected = n_state + n_labels * n_labels + 2 * n_labels + n_pair + n_trip
        if n_weights != expected:
            pairs = f", {n_pair} label-pair parameters" if n_pair else ""
            pairs += f", {n_trip} label-triple weights" if n_trip else ""
            raise bad(
                f"weights has {n_weights} entries but {n_state} state parameters{pairs} and "
                f"{n_labels} labels make {expected}"
            )
    sizes = meta["features"].get("vocab_sizes")
    if isinstance(sizes, list):
        for vi, n in enumerate(sizes):
            offsets = size(f"feat.vocab{vi}.offsets")
            if _is(n, _INT) and offsets is not None and offsets != n + 1:
                raise bad(
                    f"feat.vocab{vi}.offsets has {offsets} entries for {n} strings, not {n + 1}"
                )


# ---------------------------------------------------------------------- writing

#: wall-clock times, left out of the file: same data, options and seed give the same bytes
CLOCK_KEYS = ("time", "featurize_seconds", "train_seconds", "match_time", "solve_time", "seconds")


def header_meta(labels: list[str], features: dict, info: dict, trace: list[dict]) -> dict:
    """The header's ``meta`` for a model: its labels, the featurizer's description, the
    training info and trace, without wall-clock times (the trace's rows without their lists
    and tables either)."""
    info = _without_clock(info)
    if isinstance(info.get("final"), dict):
        info["final"] = _without_clock(info["final"])
    if isinstance(info.get("selection"), dict):
        info["selection"] = dict(
            info["selection"], rows=[_without_clock(r) for r in info["selection"]["rows"]]
        )
    if isinstance(info.get("path"), list):
        info["path"] = [_without_clock(r) for r in info["path"]]
    return {
        "labels": labels,
        "features": features,
        "info": info,
        "trace": [_without_clock(_scalars(r)) for r in trace],
    }


def _without_clock(row: dict) -> dict:
    return {k: v for k, v in row.items() if k not in CLOCK_KEYS}


def _scalars(row: dict) -> dict:
    """The row's numbers, strings and None, as JSON takes them (lists and tables left out)."""
    return {
        k: v
        for k, v in jsonable(row).items()
        if isinstance(v, (int, float, str, bool)) or v is None
    }
