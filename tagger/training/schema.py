"""The training configuration's schema: every setting of ``tagger train`` by the section and key
the TOML file names it with (:data:`SCHEMA`: its type, default, meaning, choices, and whether
it is a path), the command-line option that stands for each (:data:`OPTION_KEYS`), and every
setting at its default (:func:`defaults`).

One table rather than one per consumer: :mod:`tagger.training.config` checks files and
settings against it, ``tagger init-config`` writes its help lines as the file's comments
(:mod:`tagger.training.config_writing`), and the command line maps its options through it, so
that a new setting is declared once.
"""

from __future__ import annotations

from dataclasses import dataclass

from tagger.io.formats import FORMATS as READ_FORMATS


@dataclass(frozen=True)
class Key:
    """One setting of the file: its type, default (None: decided from the data, written as a
    comment) and what it means."""

    kind: type
    default: object
    help: str
    choices: tuple | None = None
    #: a file name (relative to the configuration file); "preset": a feature preset's name
    #: or else a file name
    is_path: bool | str = False
    #: the smallest and largest value allowed (numbers; None: no bound but a number's >= 0)
    minimum: int | None = None
    maximum: int | None = None


FORMATS = ("auto", *READ_FORMATS)
#: the largest seed: the learners' random generators take seeds of 32 bits, none negative
SEED_MAX = 2**32 - 1
#: the settings written before any section of the file (they belong to no section)
TOP_LEVEL: dict[str, Key] = {
    "threads": Key(
        int,
        None,
        "threads of the numba kernels; default: NUMBA_NUM_THREADS, else OMP_NUM_THREADS, else "
        "every core this process may use (not kept in the model: the weights do not depend "
        "on it)",
        minimum=1,
    ),
}
SCHEMA: dict[str, dict[str, Key]] = {
    "data": {
        "train": Key(
            list,
            [],
            "labeled training files (also hf:NAME, *.parquet, *.jsonl, *.spacy), concatenated",
            is_path=True,
        ),
        "dev": Key(
            str,
            "",
            'labeled dev file that scores the strength\'s path; "": a held-out tenth of train does',
            is_path=True,
        ),
        "test": Key(str, "", "labeled file scored along training for the trace only", is_path=True),
        "unlabeled": Key(
            str,
            "",
            "unlabeled sentences for semi-supervised training (learner ssvm-annealing)",
            is_path=True,
        ),
        "constraints": Key(
            str,
            "",
            "constraint file the labels imputed to the unlabeled "
            "sentences should meet (constraints/README.md)",
            is_path=True,
        ),
        "format": Key(
            str,
            "auto",
            "corpus format; auto guesses it from each file's first lines",
            choices=FORMATS,
        ),
        "label_column": Key(
            int, None, "label column of CoNLL files, negative from the end (default -1)"
        ),
        "conllu_label": Key(
            str, None, "CoNLL-U field holding the labels (default upos)", choices=("upos", "xpos")
        ),
        "fields": Key(
            str,
            "",
            "for datasets and DocBin input: the columns the features read, "
            'then the label column, e.g. "tokens,pos_tags,chunk_tags"',
        ),
    },
    "model": {
        "output": Key(str, "", "model file to write (atomically)", is_path=True),
        "features": Key(
            str,
            "",
            "feature preset (chunk, pos, citation) or a TOML template "
            'file; "": chosen from the training data',
            is_path="preset",
        ),
        "learner": Key(str, "", "learner ('tagger learners'), or auto; \"\": the default"),
        "order": Key(
            int,
            0,
            "the chain's order: 1, or 2 for labels that depend on the two previous labels "
            "(0: the feature file's order, 1 for the presets)",
            minimum=0,
            maximum=2,
        ),
        "seed": Key(int, 0, "random seed", minimum=0, maximum=SEED_MAX),
        "select": Key(
            bool,
            True,
            "choose the regularization strength on a path scored on "
            "dev (false: the learner's default, or params' value)",
        ),
        "choose": Key(
            str,
            "sparsest",
            "which point of that path is kept: sparsest (the fewest non-zero weights among the "
            "points whose dev score is within one standard error of the best) or best (the "
            "best dev score)",
            choices=("sparsest", "best"),
        ),
        "max_seconds": Key(float, 0.0, "time budget of that choice in seconds (0: no limit)"),
    },
}
#: the setting a command-line option stands for: (section, key)
OPTION_KEYS = {
    "train_files": ("data", "train"),
    "dev_file": ("data", "dev"),
    "test_file": ("data", "test"),
    "unlabeled_file": ("data", "unlabeled"),
    "constraints_file": ("data", "constraints"),
    "fmt": ("data", "format"),
    "label_column": ("data", "label_column"),
    "conllu_label": ("data", "conllu_label"),
    "fields": ("data", "fields"),
    "model_path": ("model", "output"),
    "features": ("model", "features"),
    "learner": ("model", "learner"),
    "order": ("model", "order"),
    "seed": ("model", "seed"),
    "max_seconds": ("model", "max_seconds"),
    "choose": ("model", "choose"),
}


#: the section of each key, for settings named without their section (keyword arguments)
SECTION_OF = {name: section for section, keys in SCHEMA.items() for name in keys}


def defaults() -> dict:
    """Every setting at its default (``params`` empty: the learner's own; the top-level
    settings, :data:`TOP_LEVEL`, by their names)."""
    cfg: dict = {
        section: {
            k: (list(key.default) if isinstance(key.default, list) else key.default)
            for k, key in keys.items()
        }
        for section, keys in SCHEMA.items()
    }
    cfg["params"] = {}
    cfg.update({name: key.default for name, key in TOP_LEVEL.items()})
    return cfg
