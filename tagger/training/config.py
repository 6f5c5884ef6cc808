"""The training configuration: every setting of ``tagger train`` in one TOML file.

``tagger init-config`` writes one with every setting and its default; ``tagger train --config
FILE`` trains from it, options given on the command line winning over the file; the model keeps
the resolved configuration (``tagger inspect --json``, key ``config``) and ``tagger train
--config-from MODEL -o NEW`` trains again from it.

Paths in a file are relative to the file's directory, so that a configuration travels with its
data; the model keeps them absolute, so that a rerun works from any directory (``hf:`` names
are kept as written). The model's configuration leaves out the output path and, when training
chooses the strength, the strength itself and the L2 mix chosen with it (the choice is in the
model's ``selection``): what was asked for, so that a rerun asks for the same and, with the
same data and seed, writes the same bytes.

In Python the same settings are a :class:`TrainingConfig` (or its dict form, ``to_dict``), which
:func:`tagger.train` takes with keyword arguments that override it as the options do.

This module reads, checks and merges settings and keeps a model's configuration; the table of
settings is :mod:`tagger.training.schema` and the file ``tagger init-config`` writes is
:mod:`tagger.training.config_writing`. Their public names are importable from here too, the
one place the command line, the tests and users look for the configuration.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tagger.errors import ConfigError, ParameterError
from tagger.features import PRESETS
from tagger.io import toml_file
from tagger.io.hf import BUILDERS as HF_BUILDERS
from tagger.io.hf import PREFIX as HF_PREFIX
from tagger.model.files import load_model_file
from tagger.model.header import check_header
from tagger.training.config_writing import TASKS as TASKS
from tagger.training.config_writing import for_task as for_task
from tagger.training.config_writing import to_toml as to_toml
from tagger.training.schema import FORMATS as FORMATS
from tagger.training.schema import OPTION_KEYS as OPTION_KEYS
from tagger.training.schema import SCHEMA as SCHEMA
from tagger.training.schema import SECTION_OF as SECTION_OF
from tagger.training.schema import TOP_LEVEL as TOP_LEVEL
from tagger.training.schema import Key as Key
from tagger.training.schema import defaults as defaults


class SettingError(ConfigError):
    """A setting of a training run that cannot be used as given: an unknown learner or feature
    preset, an output that would replace an input, constraints without unlabeled data...
    ``key`` names the setting as the file does (``model.learner``, ``data.unlabeled``,
    ``params``), so that the command line can name the option that set it."""

    def __init__(self, message: str, key: str):
        super().__init__(message)
        self.key = key


class ParameterSettingError(SettingError, ParameterError):
    """The learner or one of its parameters as given: unknown, or out of its range. Both a
    :class:`SettingError` (its ``key``: ``model.learner``, ``params.NAME``) and the
    :class:`~tagger.errors.ParameterError` that ``Tagger.fit`` has always raised for them."""


# ---------------------------------------------------------------------- reading


def read(path: str | os.PathLike) -> dict:
    """The file's settings over the defaults, checked; paths made relative to the file's
    directory. Any mistake raises :class:`ConfigError` naming the file and the key path."""
    path = Path(path)
    data = toml_file.read(path, ConfigError, "configuration file")
    return check(data, str(path), base=path.resolve().parent)


def check(data: dict, source: str, base: Path | None = None) -> dict:
    """``data`` (a parsed file or a model's stored configuration) over the defaults, each key
    checked; relative paths joined to ``base`` when given."""
    cfg = defaults()
    for section, table in data.items():
        if section in TOP_LEVEL:
            if table is not None:
                cfg[section] = _value(TOP_LEVEL[section], table, source, section, base)
            continue
        if section == "params":
            if not isinstance(table, dict):
                raise _error(
                    source,
                    "params",
                    "a table of the learner's parameters",
                    table,
                    "write [params] and one 'name = value' line per parameter",
                )
            cfg["params"] = dict(table)
            continue
        if section not in SCHEMA:
            raise _error(
                source,
                section,
                f"one of the tables {_names(list(SCHEMA) + ['params'])} or the "
                f"settings {_names(TOP_LEVEL)}",
                f"[{section}]",
                "remove it or correct its name",
            )
        if not isinstance(table, dict):
            raise _error(source, section, "a table", table, f"write it as [{section}]")
        for name, value in table.items():
            key = SCHEMA[section].get(name)
            if key is None:
                raise _error(
                    source,
                    f"{section}.{name}",
                    f"one of {_names(SCHEMA[section])}",
                    f"'{name}'",
                    "remove the line or correct the key",
                )
            if value is None and key.default is None:
                continue  # decided from the data, as the default is
            cfg[section][name] = _value(key, value, source, f"{section}.{name}", base)
    return cfg


def _value(key: Key, value: Any, source: str, where: str, base: Path | None) -> Any:
    if key.kind is list:
        if isinstance(value, str):
            value = [value]
        if not (isinstance(value, list) and all(isinstance(v, str) and v for v in value)):
            raise _error(
                source,
                where,
                "a list of file names",
                value,
                f'e.g. {where.split(".")[-1]} = ["train.txt"]',
            )
        return [_path(v, base) for v in value]
    # numpy's numbers too (a grid search hands them out), as Python's
    if key.kind is int and isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value = int(value)
    if key.kind is float and isinstance(value, numbers.Real) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, key.kind) or (key.kind is int and isinstance(value, bool)):
        kind = {str: "a string", int: "an integer", float: "a number", bool: "true or false"}
        raise _error(source, where, kind[key.kind], value, "correct the value")
    if isinstance(value, float) and (not math.isfinite(value) or value < 0):
        raise _error(source, where, "a number >= 0", value, "correct the value")
    low, high = key.minimum, key.maximum
    number: Any = value
    if (low is not None and number < low) or (high is not None and number > high):
        within = f"from {low} to {high}" if high is not None else f">= {low}"
        raise _error(source, where, f"an integer {within}", value, "correct the value")
    if key.choices is not None and value not in key.choices:
        raise _error(source, where, f"one of {_names(key.choices)}", value, "correct the value")
    if key.is_path == "preset" and value in PRESETS:
        return value
    if key.is_path:
        return _path(str(value), base)
    return value


def checked_seed(seed: Any, source: str) -> int:
    """``seed`` if it is a seed the learners take (a whole number from 0 to ``SEED_MAX``),
    else a :class:`ConfigError` naming ``source``: the one check of a seed, however training
    is asked for (``tagger train``, ``tagger.train``, ``Tagger.fit`` and ``Tagger.path``, the
    estimator, the spaCy component)."""
    return _value(SCHEMA["model"]["seed"], seed, source, "seed", None)


def _path(value: str, base: Path | None) -> str:
    """A file name joined to ``base`` (and normalized), also the file of a source read by
    one of datasets' builders (``hf:conll:FILE?split=...``); hub names (``hf:NAME``) and
    ``-`` (standard input) as they are."""
    if not value or base is None or value == "-":
        return value
    if value.startswith(HF_PREFIX):
        builder, sep, rest = value[len(HF_PREFIX) :].partition(":")
        if not sep or builder not in HF_BUILDERS:
            return value  # a dataset on the hub
        name, query, options = rest.partition("?")
        return f"{HF_PREFIX}{builder}:{_path(name, base)}{query}{options}" if name else value
    return os.path.normpath(os.path.join(base, os.path.expanduser(value)))


def _error(source: str, where: str, expected: str, found, fix: str) -> ConfigError:
    shown = found if isinstance(found, str) and found.startswith(("'", "[")) else repr(found)
    return ConfigError(f"{source}: {where}: expected {expected}, found {shown}; {fix}")


def _names(names) -> str:
    return ", ".join(str(n) for n in names)


# ---------------------------------------------------------------------- resolving


def merge(cfg: dict, options: dict, settings: dict) -> dict:
    """``cfg`` with the command-line ``options`` that were given (by the option's parameter
    name, see :data:`OPTION_KEYS`; ``no_select`` too) and the ``--set`` ``settings`` over it."""
    out = {
        section: dict(table) if isinstance(table, dict) else table for section, table in cfg.items()
    }
    for name, value in options.items():
        if name in TOP_LEVEL:
            out[name] = value
        elif name == "no_select":
            out["model"]["select"] = not value
        elif name in OPTION_KEYS:
            section, key = OPTION_KEYS[name]
            out[section][key] = list(value) if key == "train" else value
    out["params"].update(settings)
    return out


def learner_params(cfg: dict, learner: str, source: str) -> dict:
    """The ``params`` table checked against ``learner``'s parameter table (typed values);
    a mistake raises :class:`ParameterSettingError` naming ``source`` and the key."""
    from tagger.learners import AUTO, get_learner

    params = cfg["params"]
    if learner == AUTO:
        if params:
            raise ParameterSettingError(
                f"{source}: params: learner auto chooses each candidate's "
                f"parameters itself; name a learner in model.learner or remove "
                f"the [params] table",
                "params",
            )
        return {}
    cls = get_learner(learner)
    table = {p.name: p for p in cls.params}
    out = {}
    for name, value in params.items():
        if name not in table:
            raise ParameterSettingError(
                f"{source}: params.{name}: expected a parameter of {learner} "
                f"({_names(table)}), found '{name}'; correct or remove it",
                f"params.{name}",
            )
        try:
            out[name] = table[name].validate(value, cls.__name__)
        except ParameterError as exc:
            raise ParameterSettingError(
                f"{source}: params.{name}: {exc}", f"params.{name}"
            ) from None
    try:
        cls(**out).validated()
    except ParameterError as exc:
        raise ParameterSettingError(f"{source}: params: {exc}", "params") from None
    return out


def for_model(cfg: dict, learner: str, params: dict, select: bool) -> dict:
    """The configuration the model keeps: absolute paths, no output, the learner named, every
    parameter of the learner (but the strength when training chooses it, and where the work
    ran: a Dask scheduler is no more kept than the thread count)."""
    from tagger.learners import AUTO, get_learner
    from tagger.learners.params import WHERE_IT_RUNS

    out = {section: dict(cfg[section]) for section in SCHEMA}
    del out["model"]["output"]
    cwd = Path.cwd()
    for section, keys in SCHEMA.items():
        for name, key in keys.items():
            value: Any = out[section].get(name)
            if key.is_path == "preset" and value in PRESETS:
                continue
            if key.is_path and name in out[section]:
                out[section][name] = (
                    [_path(v, cwd) for v in value] if isinstance(value, list) else _path(value, cwd)
                )
            if out[section].get(name, 0) is None:
                del out[section][name]  # decided from the data: TOML has no null
    out["model"]["learner"] = learner
    full = {}
    if learner != AUTO:
        cls = get_learner(learner)
        strength = getattr(cls, "strength", None)
        # what the path chooses or sets (the strength and the L2 mix with it; the settings
        # of its points and of the kept point's polish) stays unset, so that a rerun chooses
        # and sets them again rather than taking the defaults as the user's settings
        chosen = set()
        if select and strength is not None and strength[0] not in params:
            mix = getattr(cls, "mix", None)
            chosen = {strength[0]} | ({mix} if mix else set())
            chosen |= set(cls.path_settings) | set(cls.polish_settings)
        full = {
            p.name: params.get(p.name, p.default)
            for p in cls.params
            if (p.name in params or p.name not in chosen) and p.name not in WHERE_IT_RUNS
        }
    out["params"] = full
    return out


def from_model(path: str | os.PathLike) -> dict:
    """The configuration a model was trained from (training keeps it when its data were
    files)."""
    meta, _ = load_model_file(path)
    check_header(meta, str(path))
    stored = meta.get("info", {}).get("config")
    if not isinstance(stored, dict):
        raise ConfigError(
            f"{path}: the model keeps no training configuration (it was trained "
            f"on sentences in memory or by an earlier version); write one with "
            f"'tagger init-config' and train with --config"
        )
    return check(stored, f"{path} (its stored configuration)")


# ---------------------------------------------------------------------- the object


@dataclass
class TrainingConfig:
    """The settings of a training run, in the sections and keys of the TOML file: ``data``
    (train, dev, test, unlabeled, constraints, format, label_column, conllu_label, fields),
    ``model`` (output, features, learner, seed, select, max_seconds) and ``params`` (the
    learner's parameters), and ``threads`` above them (the kernels' threads, not kept in the
    model). Keys left out take their defaults; every value is checked when the
    object is made (:class:`ConfigError` naming ``source`` and the key).

        >>> cfg = TrainingConfig.from_file("train.toml")               # doctest: +SKIP
        >>> cfg.model["seed"] = 3; tagger.train(cfg, output="m.tgm")   # doctest: +SKIP
    """

    data: dict[str, Any] = field(default_factory=dict)
    model: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    #: threads of the numba kernels (None: the environment's or every usable core; see
    #: :func:`tagger.jit.resolve_threads`); not kept in the model
    threads: int | None = None
    #: where the settings come from, as error messages name it
    source: str = "the configuration"

    def __post_init__(self) -> None:
        checked = check(
            {
                "data": self.data,
                "model": self.model,
                "params": self.params,
                "threads": self.threads,
            },
            self.source,
        )
        self.data, self.model, self.params = checked["data"], checked["model"], checked["params"]
        self.threads = checked["threads"]

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> TrainingConfig:
        """A TOML file (``tagger init-config`` writes one); its paths are relative to it."""
        return cls(**read(path), source=str(path))

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], source: str = "the configuration"
    ) -> TrainingConfig:
        """The dict form (``{"data": {...}, "model": {...}, "params": {...}}``, any section
        left out); a section or key the file does not have is an error."""
        return cls(**check(dict(data), source), source=source)

    @classmethod
    def from_model(cls, path: str | os.PathLike) -> TrainingConfig:
        """The configuration a model file keeps (see :func:`from_model`)."""
        return cls(**from_model(path), source=str(path))

    def to_dict(self) -> dict[str, Any]:
        """The dict form: a copy of the three sections, and the top-level settings."""
        return {
            "data": {k: list(v) if isinstance(v, list) else v for k, v in self.data.items()},
            "model": dict(self.model),
            "params": dict(self.params),
            "threads": self.threads,
        }

    def to_toml(self) -> str:
        """The settings as a commented TOML file (what ``tagger init-config`` writes)."""
        return to_toml(self.to_dict(), self.model["learner"])

    def merged(self, settings: Mapping[str, Any], source: str = "tagger.train()") -> TrainingConfig:
        """A copy with ``settings`` over it, each named by its key alone (``seed=3``,
        ``train=["a.txt"]``, ``dev="d.txt"``; a key given as None is left as it is), and
        ``params`` merged over the learner's parameters, as ``tagger train``'s options and
        ``--set`` go over a ``--config`` file."""
        out = self.to_dict()
        for name, value in settings.items():
            if name == "params":
                if not isinstance(value, Mapping):
                    raise _error(
                        source,
                        "params",
                        "a dict of the learner's parameters",
                        value,
                        "give params={'name': value, ...}",
                    )
                out["params"].update(value)
            elif name in TOP_LEVEL:
                if value is not None:
                    out[name] = _value(TOP_LEVEL[name], value, source, name, None)
            elif name not in SECTION_OF:
                raise _error(
                    source,
                    name,
                    f"one of the settings {_names([*SECTION_OF, *TOP_LEVEL])} or params",
                    f"'{name}'",
                    "correct its name",
                )
            elif value is not None:
                section = SECTION_OF[name]
                if isinstance(value, os.PathLike):
                    value = os.fspath(value)
                elif isinstance(value, (list, tuple)):
                    value = [os.fspath(v) if isinstance(v, os.PathLike) else v for v in value]
                out[section][name] = _value(
                    SCHEMA[section][name], value, source, f"{section}.{name}", None
                )
        return TrainingConfig(**out, source=self.source)
