"""Tagging a file: a model applied to an input file or standard input and written in the input's
own format (or as marginals), in this process or, for inputs that can be cut into blocks, in
worker processes (:mod:`tagger.parallel`). This is ``tagger tag`` without the command line."""

from __future__ import annotations

import contextlib
import itertools

from tagger.api import TAG_BATCH, Tagger
from tagger.errors import TaggerError
from tagger.io import gc_paused, read_corpus, sniff_format, write_corpus
from tagger.io.atomic import atomic_text_output
from tagger.io.marginals import write_marginals
from tagger.io.sources import conll_separator, display_name, peek, without_gold


def use_threads(jobs: int) -> None:
    """Decode on at most ``jobs`` threads, so that ``--jobs 1`` keeps to one core as the option
    promises (the kernels otherwise use every core numba sees)."""
    import numba

    numba.set_num_threads(max(1, min(jobs, numba.config.NUMBA_NUM_THREADS)))


def tag_file(model_path: str, input_path: str = "-", output_path: str = "-",
             format: str = "auto", label_column: int | None = None, jobs: int = 1,
             marginals: bool = False, constraints=None, conllu_label: str | None = None) -> None:
    """Tag ``input_path`` (``-``: standard input) with the model file ``model_path`` into
    ``output_path`` (``-``: standard output; a file is replaced atomically).

    CoNLL input may carry a label column (one field more than the model reads, or the one
    ``label_column`` names): it is replaced by the prediction; otherwise the prediction is
    appended as the last field. ``marginals`` writes every label's probability after the
    prediction (CRF models only); ``constraints`` (a :class:`~tagger.constraints.ConstraintSet`)
    decodes under its rules. CoNLL-U predictions go to ``conllu_label`` (``upos`` or ``xpos``;
    by default the field the model was trained on). With ``jobs`` > 1 the input is tagged by worker processes in
    blocks where it can be cut into blocks, else on ``jobs`` threads."""
    tagger = Tagger.load(model_path)
    if constraints is not None:
        constraints = tagger.compile_constraints(constraints)  # labels checked before input is read
    if marginals and not tagger.probabilistic_:
        raise TaggerError(f"--marginals needs a CRF model; {model_path} was trained by "
                          f"{tagger.info_.get('learner', 'an unknown learner')}, a max-margin "
                          "learner whose scores are not probabilities")
    read = {"label": conllu_label or tagger.conllu_label_}
    source, head = peek(input_path)
    sep = conll_separator(head)
    spec = tagger.featurizer_.spec
    if format == "auto" and spec.n_columns > 1:
        # text holds one column: input for a model that reads more is a CoNLL file, and
        # reading it as one reports its bad line instead of a missing column
        found = sniff_format(head.decode("utf-8", errors="replace"), display_name(input_path))
        format = "conll" if found in ("text", "raw") else found
    use_threads(jobs)
    if jobs > 1 and not marginals and constraints is None and _tag_in_parallel(
            tagger, model_path, input_path, source, head, output_path, format, label_column,
            jobs, sep, read):
        return
    if label_column is None:
        sentences = without_gold(read_corpus(source, format, labeled=False, **read),
                                 spec.n_columns, ", ".join(spec.columns), display_name(input_path))
    else:
        sentences = read_corpus(source, format, label_column=label_column, **read)
    it = iter(sentences)
    with atomic_text_output(output_path) as out, gc_paused():
        for batch in iter(lambda: list(itertools.islice(it, TAG_BATCH)), []):
            p = tagger.predict_batch(batch, constraints, marginals=marginals)
            if marginals:
                write_marginals(out, batch, p.labels(tagger.labels_), p.marginal_list(),
                                tagger.labels_.labels, sep)
            else:
                write_corpus(out, batch, p.labels(tagger.labels_), sep=sep)
        out.flush()


def _tag_in_parallel(tagger, model_path, input_path, source, head, output_path, fmt,
                     label_column, jobs, sep, read) -> bool:
    """Tag with worker processes; False for a format that cannot be cut into blocks."""
    from tagger.parallel import PARALLEL_FORMATS, tag_parallel

    name = display_name(input_path)
    if fmt == "auto":
        fmt = sniff_format(head.decode("utf-8", errors="replace"), name)
    if fmt not in PARALLEL_FORMATS:
        return False
    with atomic_text_output(output_path) as out, contextlib.ExitStack() as stack:
        stream = source if input_path == "-" else stack.enter_context(open(input_path, "rb"))
        tag_parallel(model_path, stream, out, fmt, jobs, name, label_column, {"sep": sep},
                     tagger=tagger, read_options=read)
        out.flush()
    return True
