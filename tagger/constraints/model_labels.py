"""A constraint file decoded with a model that lacks some of the labels it names.

A model trained on a sample where a field never occurs (ten ads without a PHOTOS stretch) has
no such label and never predicts it. Every rule of the file still has a meaning over the
labelings that model can make, and that meaning is the rule with the missing labels taken out
of its lists: "the rent or the photos come first" says "the rent comes first", "one stretch
each of rent and photos" says "one stretch of rent". Taking them out changes nothing the
decoder could see, so those rules are kept as narrowed.

A rule left with no label (on a side that matters) is dropped. Such a rule either holds for
every labeling the model can make (``avoid``, ``one-segment``, ``contains``, ``order``, a
``count`` without ``min``) and adds nothing, or is broken by every one of them (``take``,
``start``, ``end``, ``only-inside``, a ``count`` with ``min``), and a hard rule nothing can
meet would only make the decoder settle for the labeling that breaks the fewest rules. One
:class:`~tagger.errors.TaggerWarning` names the dropped rules and the labels they lacked.

Decoding is refused (:class:`~tagger.errors.ConstraintError`) when nothing sensible remains:
the model has none of the file's labels (the file is for another model), or every
``[[instance]]`` rule of the file is dropped (corpus rules do not apply when tagging, so the
decoding would be the unconstrained one under the constraint file's name).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence

from tagger.constraints.rules import Rule, listed_rules
from tagger.errors import ConstraintError, TaggerWarning

#: rules with no label list of their own: a missing label cannot touch them
_LABEL_FREE = ("change-on-punctuation", "change-off-punctuation")


def narrowed(rule: Rule, known: set[str]) -> Rule | None:
    """``rule`` with the labels outside ``known`` taken out of its lists, or None when a list
    it needs is left empty (see the module's docstring for why that drops it)."""
    if rule.rule in _LABEL_FREE:
        return rule
    if rule.rule == "order":
        before = [lab for lab in rule.options["before"] if lab in known]
        after = [lab for lab in rule.options["after"] if lab in known]
        if not before or not after:
            return None
        if before + after == rule.labels:
            return rule
        options = dict(rule.options, before=before, after=after)
        return dataclasses.replace(rule, labels=before + after, options=options)
    labels = [lab for lab in rule.labels if lab in known]
    if not labels:
        return None
    return rule if labels == rule.labels else dataclasses.replace(rule, labels=labels)


def rules_for_labels(cset, label_names: Sequence[str]) -> list[Rule]:
    """The rules of the :class:`~tagger.constraints.language.ConstraintSet` ``cset`` that
    apply to a model with ``label_names``, narrowed to its labels; warns about the rules
    dropped and refuses when nothing sensible remains (the module's docstring)."""
    known = set(label_names)
    missing = [lab for lab in cset.labels if lab not in known]
    if not missing:
        return list(cset.rules)
    model = f"the model's labels: {', '.join(label_names)}"
    if len(missing) == len(cset.labels):
        raise ConstraintError(
            f"{cset.source}: none of the labels of the constraint file ({', '.join(missing)}) "
            f"is a label of the model ({model}); give the constraint file written for this "
            f"model's labels"
        )
    kept: list[Rule] = []
    dropped: list[Rule] = []
    changed: list[Rule] = []
    for rule in cset.rules:
        new = narrowed(rule, known)
        # corpus rules do not apply when tagging: narrowed or dropped, they go unmentioned
        if new is None:
            dropped += [rule] if rule.level == "instance" else []
        else:
            kept.append(new)
            changed += [rule] if new is not rule and rule.level == "instance" else []
    lacks = f"the model has no label {', '.join(missing)} ({model})"
    if dropped and not any(rule.level == "instance" for rule in kept):
        raise ConstraintError(
            f"{cset.source}: {lacks}, and every [[instance]] rule of the constraint file names "
            f"only those labels, so no rule is left to decode with; tag without the "
            f"constraints, or train the model on data (or rules) that have those labels"
        )
    parts = []
    if dropped:
        parts.append(
            f"decoding without the {len(dropped)} rule{'s' if len(dropped) > 1 else ''} that "
            f"name only labels it lacks: {listed_rules(dropped)}"
        )
    if changed:
        parts.append(f"these rules apply to their other labels: {listed_rules(changed)}")
    if parts:
        warnings.warn(f"{cset.source}: {lacks}; " + "; ".join(parts), TaggerWarning, stacklevel=3)
    return kept
