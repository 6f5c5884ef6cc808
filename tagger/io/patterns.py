"""Regular expressions that users write (constraint-file ``pattern`` keys, ``regex`` views of a
feature specification, and both again as a model's header stores them), compiled with RE2
(the ``google-re2`` package) so that matching takes time linear in the token's length.

Python's :mod:`re` backtracks: ``^(a+)+$`` against 35 ``a`` followed by ``b`` runs for hours,
and a pattern is user input (a constraint file, or a model file someone edited). RE2 accepts
the usual syntax (classes, ``\\d \\w \\s \\b``, anchors, alternation, groups, ``(?:...)``,
``(?i)``, counted repetition up to 1000, Unicode classes ``\\p{L}``) and refuses what needs
backtracking: backreferences (``\\1``) and lookaround (``(?=``, ``(?!``, ``(?<=``, ``(?<!``).
A refused pattern is one :class:`PatternError` line saying why.
"""

from __future__ import annotations

from typing import Any

#: memory RE2 may use to compile one pattern (its default is 8 MiB): ``a{1000}{1000}`` and
#: the like are refused as too large rather than compiled
_MAX_MEM = 8 << 20


class PatternError(ValueError):
    """A pattern that RE2 refuses; the message says why, without the file or key (the caller
    names them)."""


class Pattern:
    """A compiled pattern: :meth:`search` finds it anywhere in a string, in linear time."""

    def __init__(self, pattern: str, ignore_case: bool = False):
        if not isinstance(pattern, str):
            raise PatternError(f"expected a regular expression (text), got {pattern!r}")
        re2 = _re2()
        options = re2.Options()
        options.log_errors = False  # RE2 would print its own line on standard error
        options.case_sensitive = not ignore_case
        options.max_mem = _MAX_MEM
        try:
            self._compiled = re2.compile(pattern, options)
        except re2.error as exc:
            raise PatternError(_reason(exc)) from None
        except (TypeError, ValueError, UnicodeError) as exc:  # a lone surrogate, a NUL
            raise PatternError(f"not a pattern RE2 can read ({exc})") from None
        self.pattern = pattern
        self.ignore_case = ignore_case

    def search(self, text: str) -> bool:
        """Whether the pattern occurs in ``text``."""
        try:
            return self._compiled.search(text) is not None
        except UnicodeEncodeError:
            # RE2 reads UTF-8; a lone surrogate (from a JSON \\ud800 escape) cannot be encoded
            return self._compiled.search(text.encode("utf-8", "replace").decode()) is not None

    def __reduce__(self):
        # the compiled program does not pickle; the pattern rebuilds it
        return (Pattern, (self.pattern, self.ignore_case))

    def __repr__(self) -> str:
        return f"Pattern({self.pattern!r}, ignore_case={self.ignore_case})"


def compile_pattern(pattern: Any, ignore_case: bool = False) -> Pattern:
    """``pattern`` compiled for linear-time matching; :class:`PatternError` if RE2 refuses it."""
    return Pattern(pattern, ignore_case)


def _reason(exc: BaseException) -> str:
    arg = exc.args[0] if exc.args else exc
    text = arg.decode("utf-8", "replace") if isinstance(arg, bytes) else str(arg)
    text = " ".join(text.split()) or "refused"
    if "invalid escape sequence: \\" in text and text[-1:].isdigit():
        text += " (backreferences are not supported)"
    elif "invalid perl operator: (?P" in text:
        text += " (named backreferences (?P=name) are not supported)"
    elif "invalid perl operator: (?>" in text:
        text += " (atomic groups are not supported)"
    elif "invalid perl operator: (?" in text:
        text += " (lookahead and lookbehind are not supported)"
    return f"RE2 refuses it: {text}; patterns use RE2 syntax (docs/reference.md, 'Patterns')"


def _re2():
    try:
        import re2
    except ImportError:  # pragma: no cover - a dependency of the package
        raise PatternError(
            "matching patterns needs the 'google-re2' package: pip install google-re2"
        ) from None
    return re2
