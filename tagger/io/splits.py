"""A corpus split file: which sentences belong to train, dev and test."""

from __future__ import annotations

from tagger.errors import CorpusFormatError
from tagger.io.streams import is_number, iter_lines, show_line, source_name

# --------------------------------------------------------------------------------------------
# split file


def read_split(path) -> dict[str, list[int]]:
    """Read a split file mapping citation indices to splits.

    The file (``split_cpf_zheng_chang_2016.tsv``) has ``#`` comment lines, a tab-separated
    header (``ref_index_0based``, ``line_in_tagged_references_1based``, ``split``) and one row
    per citation. Returns split name -> sorted 0-based indices (``train``, ``dev``, ``test``
    first). Non-integer or negative indices, repeated indices, rows with the wrong number of
    fields and gaps in the indices are errors.
    """
    name = source_name(path)
    header = None
    split_col = -1
    n_fields = None
    seen: dict[int, int] = {}
    splits: dict[str, list[int]] = {}
    for lineno, line in iter_lines(path):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.rstrip("\n").split("\t")
        if header is None and n_fields is None and not is_number(fields[0].strip().lstrip("-")):
            header = [f.strip() for f in fields]
            if len(header) < 2:
                raise CorpusFormatError(
                    f"expected a tab-separated header with an index and a split column, found "
                    f"{show_line(line)}",
                    name,
                    lineno,
                )
            split_col = header.index("split") if "split" in header else len(header) - 1
            n_fields = len(header)
            continue
        if n_fields is None:
            n_fields = len(fields)
            if n_fields < 2:
                raise CorpusFormatError(
                    f"expected tab-separated fields 'index<TAB>...split', found {show_line(line)}",
                    name,
                    lineno,
                )
        if len(fields) != n_fields:
            raise CorpusFormatError(
                f"expected {n_fields} tab-separated fields, found {len(fields)}: {show_line(line)}",
                name,
                lineno,
            )
        idx = fields[0].strip()
        if not is_number(idx):
            raise CorpusFormatError(
                f"expected a non-negative integer citation index in the first field, found {idx!r}",
                name,
                lineno,
            )
        for k, f in enumerate(fields[1:], 1):
            if (
                k != split_col % n_fields
                and header is not None
                and "line" in header[k]
                and not is_number(f.strip())
            ):
                raise CorpusFormatError(
                    f"expected an integer in column {header[k]!r}, found {f!r}", name, lineno
                )
        split = fields[split_col].strip()
        if not split:
            raise CorpusFormatError(
                "expected a split name (train, dev, test), found an empty field", name, lineno
            )
        i = int(idx)
        if i in seen:
            raise CorpusFormatError(
                f"citation index {i} is listed twice (first at line {seen[i]})", name, lineno
            )
        seen[i] = lineno
        splits.setdefault(split, []).append(i)
    if not seen:
        raise CorpusFormatError("contains no split rows", name)
    top = max(seen)
    if top != len(seen) - 1:  # distinct indices >= 0 cover 0..top exactly when there are top+1
        # the first few gaps, found without building 0..top (an index may be huge)
        shown, expected = [], 0
        for i in sorted(seen):
            shown += range(expected, min(i, expected + 10 - len(shown)))
            expected = i + 1
            if len(shown) >= 10:
                break
        n_missing = top + 1 - len(seen)
        text = ", ".join(map(str, shown)) + (" ..." if n_missing > len(shown) else "")
        raise CorpusFormatError(
            f"citation indices must cover 0..{top} without gaps; missing {n_missing}: {text}",
            name,
        )
    order = [s for s in ("train", "dev", "test") if s in splits]
    order += sorted(s for s in splits if s not in order)
    return {s: sorted(splits[s]) for s in order}
