"""Tagging a file: a model applied to an input file or standard input and written in the input's
own format (or as marginals), in this process or, for inputs that can be cut into blocks, in
worker processes (:mod:`tagger.tagging.parallel`). This is ``tagger tag`` without the command
line."""

from __future__ import annotations

import contextlib
import itertools

from tagger import jit
from tagger.api import TAG_BATCH, Tagger
from tagger.errors import CorpusFormatError, TaggerError
from tagger.io import gc_paused, read_corpus, sniff_format, write_corpus
from tagger.io.atomic import atomic_text_output
from tagger.io.jsonl import write_jsonl
from tagger.io.marginals import write_marginals
from tagger.io.sources import (
    HEAD_BYTES,
    conll_separator,
    display_name,
    is_record_source,
    open_unlabeled,
    peek,
    without_gold,
)
from tagger.signals import raise_if_arrived
from tagger.tagging.nbest import check_nbest, predict_nbest, write_nbest

#: with --jobs N, inputs shorter than this are tagged in this process: they fit in the bytes
#: peeked at, one block, and worker processes would only add their start (and numba's)
PARALLEL_MIN_BYTES = HEAD_BYTES


def use_threads(jobs: int) -> None:
    """Decode on at most ``jobs`` threads, so that ``--jobs 1`` keeps to one core as the option
    promises (the kernels otherwise use every core numba sees)."""
    jit.set_threads(jobs)


def tag_file(
    model_path,
    input_path: str = "-",
    output_path: str = "-",
    format: str = "auto",
    label_column: int | None = None,
    jobs: int = 1,
    marginals: bool = False,
    constraints=None,
    conllu_label: str | None = None,
    fields=None,
    output_format: str = "auto",
    nbest: int = 0,
) -> None:
    """Tag ``input_path`` (``-``: standard input) with the model file ``model_path`` (or a
    loaded :class:`~tagger.api.Tagger`) into ``output_path`` (``-``: standard output; a file is
    replaced atomically).

    CoNLL input may carry a label column (one field more than the model reads, or the one
    ``label_column`` names): it is replaced by the prediction; otherwise the prediction is
    appended as the last field. ``marginals`` writes every label's probability after the
    prediction (CRF models only); ``constraints`` (a :class:`~tagger.constraints.ConstraintSet`)
    decodes under its rules. CoNLL-U predictions go to ``conllu_label`` (``upos`` or ``xpos``;
    by default the field the model was trained on). With ``jobs`` > 1 the input is tagged by
    worker processes in blocks where it can be cut into blocks, else on ``jobs`` threads.

    Datasets (``hf:NAME``, parquet, JSON lines, arrow) and spaCy DocBins are read through the
    same sources as training (``fields``: the model's input columns; default: the first
    columns of the source's default fields) and streamed; their output is JSON lines.
    ``output_format`` (``auto``: the input's format) may ask for ``jsonl``, ``conll``, ``tab``
    or ``text`` instead. ``nbest`` > 0 writes each sentence's ``nbest`` best labelings
    (:mod:`tagger.tagging.nbest`)."""
    if isinstance(model_path, Tagger):
        tagger, model_path = model_path, "the model"
    else:
        tagger = Tagger.load(model_path)
    if nbest:
        check_nbest(nbest)
        if marginals or constraints is not None:
            raise TaggerError(
                "--nbest lists whole labelings with their scores; it does not take "
                f"{'--marginals' if marginals else '--constraints'}: tag with one or the other"
            )
    if constraints is not None:
        constraints = tagger.compile_constraints(constraints)  # labels checked before input is read
    if marginals and not tagger.probabilistic_:
        raise TaggerError(
            f"--marginals needs a CRF model; {model_path} was trained by "
            f"{tagger.info_.get('learner', 'an unknown learner')}, a max-margin "
            "learner whose scores are not probabilities"
        )
    spec = tagger.featurizer_.spec
    write = {"format": output_format, "names": _names(fields, spec)}
    if is_record_source(input_path):
        write["names"] = _names(fields, None)  # else the fields the source was read with
        use_threads(jobs)
        sentences = _first_columns(
            open_unlabeled(input_path, fields=fields), spec, display_name(input_path)
        )
        write["format"] = "jsonl" if output_format == "auto" else output_format
        _write_predictions(
            tagger, sentences, output_path, constraints, marginals, write, " ", nbest
        )
        return
    read = {"label": conllu_label or tagger.conllu_label_}
    source, head = peek(input_path)
    sep = conll_separator(head)
    if format == "auto" and spec.n_columns > 1:
        # text holds one column: input for a model that reads more is a CoNLL file, and
        # reading it as one reports its bad line instead of a missing column
        found = sniff_format(head.decode("utf-8", errors="replace"), display_name(input_path))
        format = "conll" if found in ("text", "raw") else found
        if found in ("text", "raw"):
            _refuse_text(head, spec, display_name(input_path), found == "raw")
    if format == "conll" and label_column is None:
        _check_token_fields(head, spec, display_name(input_path))
    use_threads(jobs)
    small = len(head) < PARALLEL_MIN_BYTES
    if (
        jobs > 1
        and not small
        and not marginals
        and not nbest
        and constraints is None
        and _tag_in_parallel(
            tagger,
            model_path,
            input_path,
            source,
            head,
            output_path,
            format,
            label_column,
            jobs,
            sep,
            read,
            write,
        )
    ):
        return
    if label_column is None:
        sentences = without_gold(
            read_corpus(source, format, labeled=False, **read),
            spec.n_columns,
            ", ".join(spec.columns),
            display_name(input_path),
        )
    else:
        sentences = read_corpus(source, format, label_column=label_column, **read)
    _write_predictions(tagger, sentences, output_path, constraints, marginals, write, sep, nbest)


def _first_token_line(head: bytes) -> tuple[int, str] | None:
    """``(line number, line)`` of the first token line among the bytes peeked at; None when
    there is none, or when the bytes up to it are not clean text (not UTF-8, a NUL byte, a
    carriage return alone): the reader reports those with their own line."""
    whole = head[: head.rfind(b"\n") + 1] or head  # no character cut at the end
    try:
        text = whole.decode("utf-8")
    except UnicodeDecodeError:
        return None
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if "\x00" in line or "\r" in line:
            return None
        if line.strip() and line.split()[0] != "-DOCSTART-":
            return number, line
    return None


def _reads(spec) -> str:
    """The columns a model reads, in words: ``word and pos``."""
    names = list(spec.columns[: spec.n_columns])
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _check_token_fields(head: bytes, spec, name: str) -> None:
    """A CoNLL input whose first token line has fewer fields than the model reads columns is
    refused before any tagging, naming the columns (not only their number)."""
    first = _first_token_line(head)
    if first is None:
        return
    number, line = first
    found = len(line.split())
    if found >= spec.n_columns:
        return
    shown = line if len(line) <= 40 else line[:37] + "..."
    raise CorpusFormatError(
        f"this model reads {_reads(spec)} on each token line, and this line has {found} "
        f"field(s) ({shown!r}); add the missing column(s) (the POS tags of a POS model's "
        f"output, say) or tag the file with a model that reads words alone",
        name,
        number,
    )


def _refuse_text(head: bytes, spec, name: str, prose: bool) -> None:
    """Text, one sentence per line, holds words alone: a model that reads more columns needs
    a CoNLL file. Refused when the input surely is text (prose, or a first line with more
    fields than a token line of the model's could have); otherwise it is read as a CoNLL file
    with a bad line, which reports that line."""
    first = _first_token_line(head)
    if first is None:
        return
    number, line = first
    if not prose and len(line.split()) <= spec.n_columns + 1:
        return
    what = "untokenized text" if prose else "text, one sentence per line"
    raise CorpusFormatError(
        f"this model reads {_reads(spec)}, one token per line (CoNLL columns), and this "
        f"looks like {what}; give a CoNLL file with the {_reads(spec)} columns, or tag the "
        f"text with a model that reads words alone",
        name,
        number,
    )


def _write_predictions(
    tagger, sentences, output_path, constraints, marginals, write: dict, sep: str, nbest: int = 0
) -> None:
    """Decode ``sentences`` in batches into ``output_path``: in ``write["format"]``
    (``auto``: the format they were read from), marginals as their own layout or in JSON.
    An input whose tokens times squared labels stay within
    :data:`~tagger.jit.INTERPRETED_WORK`, decoded without constraints, is tagged by the
    interpreted kernels unless numba runs already: starting it would take longer than the
    tagging."""
    it = iter(sentences)
    names = tagger.labels_.labels
    most = jit.INTERPRETED_WORK // max(1, len(names)) ** 2  # tokens
    head, n_tokens = [], 0
    most //= max(1, nbest)  # a list Viterbi does nbest times Viterbi's work
    for s in it:
        head.append(s)
        n_tokens += len(s)
        if n_tokens > most:
            break
    it = itertools.chain(head, it)
    small = n_tokens <= most and constraints is None
    with atomic_text_output(output_path) as out, gc_paused(), jit.interpreted(small):
        for batch in iter(lambda: list(itertools.islice(it, TAG_BATCH)), []):
            if nbest:
                write_nbest(out, batch, predict_nbest(tagger, batch, nbest), write, sep)
                raise_if_arrived()
                continue
            p = tagger.predict_batch(batch, constraints, marginals=marginals)
            raise_if_arrived()  # a Ctrl-C lost while the kernels loaded stops here
            labels = p.labels(tagger.labels_)
            if marginals and write["format"] == "jsonl":
                write_jsonl(out, batch, labels, write["names"], p.marginal_list(), names)
            elif marginals:
                write_marginals(out, batch, labels, p.marginal_list(), names, sep)
            else:
                write_corpus(out, batch, labels, sep=sep, **write)
        out.flush()


def _names(fields, spec) -> list[str] | None:
    """The names of the input columns in JSON output: ``fields`` as given, else the
    feature specification's column names (None without one)."""
    if isinstance(fields, str):
        fields = [f.strip() for f in fields.split(",") if f.strip()]
    return list(fields or (spec.columns if spec is not None else [])) or None


def _first_columns(sentences, spec, name: str):
    """Records read with every list column: the model reads the first ``n_columns``."""
    need = spec.n_columns
    for s in sentences:
        if len(s.columns) < need:
            raise CorpusFormatError(
                f"the model reads {need} column(s) ({', '.join(spec.columns)})"
                f" but the input gives {len(s.columns)}; name them with "
                f"--fields",
                name,
            )
        del s.columns[need:]
        yield s


def _tag_in_parallel(
    tagger,
    model_path,
    input_path,
    source,
    head,
    output_path,
    fmt,
    label_column,
    jobs,
    sep,
    read,
    write,
) -> bool:
    """Tag with worker processes; False for a format that cannot be cut into blocks."""
    from tagger.tagging.parallel import PARALLEL_FORMATS, tag_parallel

    name = display_name(input_path)
    if fmt == "auto":
        fmt = sniff_format(head.decode("utf-8", errors="replace"), name)
    if fmt not in PARALLEL_FORMATS:
        return False
    with atomic_text_output(output_path) as out, contextlib.ExitStack() as stack:
        stream = source if input_path == "-" else stack.enter_context(open(input_path, "rb"))
        tag_parallel(
            model_path,
            stream,
            out,
            fmt,
            jobs,
            name,
            label_column,
            dict(write, sep=sep),
            tagger=tagger,
            read_options=read,
        )
        out.flush()
    return True
