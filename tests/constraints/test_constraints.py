"""The constraint language: validation messages, compiled counts against a plain-Python
recount, and the incremental switch deltas against a full recount after the switch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tagger.constraints import (
    ConstraintSet,
    Proposal,
    ViolationState,
    apply_switch,
    boundary_on_punctuation,
    normalize_word,
    switch_penalty_delta,
)
from tagger.errors import ConstraintError

ROOT = Path(__file__).resolve().parents[2]
LABELS = ["a", "b", "c", "d"]

FULL = """
labels = ["a", "b", "c", "d"]
[[instance]]
rule = "start"
labels = ["a", "b"]
weight = 1.5
[[instance]]
rule = "one-segment"
labels = "all"
shape = "squared"
[[instance]]
rule = "tokens"
words = ["pp"]
take = ["c"]
weight = 2.0
[[instance]]
rule = "tokens"
pattern = '^[0-9]+$'
avoid = ["a"]
[[instance]]
rule = "only-inside"
property = "quote"
labels = ["d"]
[[instance]]
rule = "change-on-punctuation"
weight = 0.7
[[instance]]
rule = "end"
labels = ["b", "d"]
weight = 1.2
[[instance]]
rule = "tokens"
sequence = ["<digit>", "pp|v"]
mark = [1]
take = ["b"]
weight = 0.9
[[instance]]
rule = "count"
labels = ["b"]
min = 1
max = 2
shape = "squared"
[[instance]]
rule = "count"
labels = ["a", "c"]
unit = "segments"
max = 1
[[instance]]
rule = "contains"
labels = ["c", "d"]
pattern = '^[0-9]+$'
words = ["v"]
weight = 1.3
[[instance]]
rule = "contains"
labels = ["a"]
property = "quote"
shape = "squared"
[[instance]]
rule = "order"
before = ["a", "d"]
after = ["b"]
weight = 0.6
[[corpus]]
rule = "label-fraction"
labels = ["a"]
fraction = 0.3
tolerance = 0.05
weight = 3.0
shape = "squared"
[[corpus]]
rule = "change-off-punctuation"
fraction = 0.1
weight = 2.0
"""

WORDS = ["pp.", "12", "x", ",", '"q', "y", "7", "pp", ".", "z", "(w", "v"]


def _corpus(rng, n=30):
    sents, ys = [], []
    for _ in range(n):
        T = int(rng.integers(1, 9))
        sents.append([WORDS[i] for i in rng.integers(0, len(WORDS), T)])
        ys.append(rng.integers(0, len(LABELS), T).astype(np.int32))
    return sents, ys


# ---- a plain-Python definition of every penalty, independent of the kernels


def _segments(y):
    segs = {}
    for t, lab in enumerate(y):
        if t == 0 or y[t - 1] != lab:
            segs[lab] = segs.get(lab, 0) + 1
    return segs


def _direct_penalty(cs: ConstraintSet, sents, ys, hard_weight=1000.0):
    lid = {lab: i for i, lab in enumerate(LABELS)}
    total = 0.0
    for toks, y in zip(sents, ys):
        for r in [r for r in cs.rules if r.level == "instance"]:
            ids = {lid[x] for x in r.labels}
            if r.rule == "start":
                phi, lo, hi = float(y[0] not in ids), 0, 0
            elif r.rule == "end":
                phi, lo, hi = float(y[-1] not in ids), 0, 0
            elif r.rule == "tokens" and r.options.get("sequence"):
                # written out for this file's one sequence: a digit, then pp or v; the second
                # token is the marked one
                marked = {
                    t + 1
                    for t in range(len(toks) - 1)
                    if any(ch.isdigit() for ch in toks[t])
                    and normalize_word(toks[t + 1]) in ("pp", "v")
                }
                phi = sum(1 for t in marked if y[t] not in ids)
                lo, hi = 0, 0
            elif r.rule == "one-segment":
                phi = sum(max(0, v - 1) for k, v in _segments(y).items() if k in ids)
                lo, hi = 0, 0
            elif r.rule == "tokens":
                hit = [
                    normalize_word(w) in r.options["words"]
                    or (r.options.get("pattern") is not None and r.options["pattern"].search(w))
                    for w in toks
                ]
                if r.options["mode"] == "take":
                    phi = sum(1 for h, lab in zip(hit, y) if h and lab not in ids)
                else:
                    phi = sum(1 for h, lab in zip(hit, y) if h and lab in ids)
                lo, hi = 0, 0
            elif r.rule == "only-inside":
                phi = sum(1 for w, lab in zip(toks, y) if '"' in w and lab not in ids)
                lo, hi = 0, 0
            elif r.rule == "change-on-punctuation":
                phi = sum(
                    1
                    for t in range(1, len(y))
                    if y[t] != y[t - 1] and not boundary_on_punctuation(toks[t - 1], toks[t])
                )
                lo, hi = 0, 0
            elif r.rule == "contains":
                # segments (maximal runs of one label) of the rule's labels with no matching token
                if "property" in r.options:
                    match = ['"' in w for w in toks]
                else:
                    match = [
                        normalize_word(w) in r.options["words"]
                        or bool(r.options["pattern"].search(w))
                        for w in toks
                    ]
                runs, t0 = [], 0
                for t in range(1, len(y) + 1):
                    if t == len(y) or y[t] != y[t0]:
                        runs.append((y[t0], t0, t))
                        t0 = t
                phi = sum(1 for lab, u, v in runs if lab in ids and not any(match[u:v]))
                lo, hi = 0, 0
            elif r.rule == "order":
                before = {lid[x] for x in r.options["before"]}
                after = {lid[x] for x in r.options["after"]}
                phi = sum(
                    1
                    for t in range(len(y))
                    if (t == 0 or y[t] != y[t - 1])
                    and y[t] in before
                    and any(lab in after for lab in y[:t])
                )
                lo, hi = 0, 0
            else:
                if r.options["unit"] == "tokens":
                    phi = sum(1 for lab in y if lab in ids)
                else:
                    phi = sum(v for k, v in _segments(y).items() if k in ids)
                lo = r.options["min"]
                hi = np.inf if r.options["max"] is None else r.options["max"]
            d = max(0, phi - hi) + max(0, lo - phi)
            rho = hard_weight if r.hard else r.weight
            total += rho * (d * d if r.shape == "squared" else d)
    n = len(sents)
    for r in [r for r in cs.rules if r.level == "corpus"]:
        if r.rule == "label-fraction":
            ids = {lid[x] for x in r.labels}
            num = sum(1 for y in ys for lab in y if lab in ids)
            den = sum(len(y) for y in ys)
        else:
            num = den = 0
            for toks, y in zip(sents, ys):
                for t in range(1, len(y)):
                    if y[t] != y[t - 1]:
                        den += 1
                        num += not boundary_on_punctuation(toks[t - 1], toks[t])
        ratio = num / den if den else r.options["fraction"]
        d = max(0.0, abs(ratio - r.options["fraction"]) - r.options["tolerance"])
        rho = hard_weight if r.hard else r.weight
        total += rho * n * (d * d if r.shape == "squared" else d)
    return total


def test_penalty_matches_direct_count():
    cs = ConstraintSet.from_text(FULL)
    cc = cs.compile(LABELS)
    rng = np.random.default_rng(0)
    for _ in range(5):
        sents, ys = _corpus(rng)
        st = ViolationState(cc, cc.indicators(sents), np.concatenate(ys))
        assert st.penalty() == pytest.approx(_direct_penalty(cs, sents, ys), rel=1e-12, abs=1e-9)


def test_switch_delta_matches_recount():
    cs = ConstraintSet.from_text(FULL)
    cc = cs.compile(LABELS)
    rng = np.random.default_rng(1)
    sents, ys = _corpus(rng, 25)
    st = ViolationState(cc, cc.indicators(sents), np.concatenate(ys))
    phi_new = np.zeros(cc.n_instance)
    dnum, dden = np.zeros(cc.n_corpus), np.zeros(cc.n_corpus)
    offsets = st.ti.offsets
    for _ in range(400):
        s = int(rng.integers(0, len(sents)))
        a, b = int(offsets[s]), int(offsets[s + 1])
        t = int(rng.integers(a, b))
        new = int(rng.integers(0, len(LABELS)))
        before = st.penalty()
        rules, counts = st.records()
        proposal = Proposal(phi_new, dnum, dden)
        delta = switch_penalty_delta(st.y, s, t, new, rules, counts, proposal)
        apply_switch(st.y, s, t, new, offsets, counts, proposal)
        kept = (st.phi.copy(), st.segs.copy(), st.num.copy(), st.den.copy())
        st.recount()  # the incremental bookkeeping equals a recount from scratch
        for k0, k1 in zip(kept, (st.phi, st.segs, st.num, st.den)):
            np.testing.assert_allclose(k0, k1)
        ys_now = [st.y[offsets[i] : offsets[i + 1]] for i in range(len(sents))]
        after = _direct_penalty(cs, sents, ys_now)
        assert after - before == pytest.approx(delta, abs=1e-9)


def test_run_counts_equal_a_recount_of_the_switched_sequence():
    """A whole run of equal labels taking a new label (label switching's run move): the counts
    from the run and its ends equal, exactly, the counts of the changed sequence from scratch."""
    from tagger.constraints.penalties import (
        run_corpus,
        run_phi,
        segments_of,
        sequence_corpus,
        sequence_phi,
    )

    cs = ConstraintSet.from_text(FULL)
    cc = cs.compile(LABELS)
    rng = np.random.default_rng(2)
    sents, ys = _corpus(rng, 25)
    st = ViolationState(cc, cc.indicators(sents), np.concatenate(ys))
    rules, counts = st.records()
    kind, mask, other, row = rules.instance[:4]
    ckind, cmask, crow = rules.corpus[:3]
    y, ind, offsets = st.y, rules.ind, st.ti.offsets
    K = cc.n_corpus
    phi0, phi1 = np.zeros(cc.n_instance), np.zeros(cc.n_instance)
    n0, d0, n1, d1, dn, dd = (np.zeros(K) for _ in range(6))
    segs = np.zeros(len(LABELS), np.int64)
    tried = 0
    for _ in range(400):
        s = int(rng.integers(0, len(sents)))
        a, b = int(offsets[s]), int(offsets[s + 1])
        t = int(rng.integers(a, b))
        r0, r1 = t, t + 1
        while r0 > a and y[r0 - 1] == y[t]:
            r0 -= 1
        while r1 < b and y[r1] == y[t]:
            r1 += 1
        new = int(rng.integers(0, len(LABELS)))
        if new == y[t]:
            continue
        tried += r1 - r0 > 1
        sequence_phi(y, ind, a, b, kind, mask, other, row, phi0)
        sequence_corpus(y, ind, a, b, ckind, cmask, crow, n0, d0)
        segments_of(y, a, b, segs)
        run_phi(y, ind, a, b, r0, r1, new, kind, mask, other, row, segs, phi0, phi1)
        run_corpus(y, ind, a, b, r0, r1, new, ckind, cmask, crow, dn, dd)
        y[r0:r1] = new
        expect = np.zeros(cc.n_instance)
        sequence_phi(y, ind, a, b, kind, mask, other, row, expect)
        sequence_corpus(y, ind, a, b, ckind, cmask, crow, n1, d1)
        assert np.array_equal(phi1, expect)
        assert np.array_equal(n0 + dn, n1) and np.array_equal(d0 + dd, d1)
    assert tried > 50  # runs longer than one token were switched


def test_all_mistakes_reported_at_once():
    text = """
labels = ["author", "title", "date"]
colour = "red"
[[instance]]
rule = "start"
labels = ["autor"]
[[instance]]
rule = "tokens"
pattern = '([0-9]'
take = ["dat"]
[[instance]]
rule = "count"
labels = ["title"]
min = 5
max = 2
[[instance]]
rule = "one-segment"
labels = "all"
wieght = 2
[[corpus]]
rule = "label-fraction"
labels = ["author"]
fraction = 1.5
"""
    with pytest.raises(ConstraintError) as info:
        ConstraintSet.from_text(text, "ads.toml")
    msg = str(info.value)
    assert msg.startswith("ads.toml: 7 mistakes")
    for fragment in (
        "colour: unknown key",
        "instance[0].labels[0]: unknown label 'autor'; did you mean 'author'",
        "instance[1].pattern: bad regular expression",
        "instance[1].take[0]: unknown label 'dat'; did you mean 'date'",
        "instance[2].min: min (5) is larger than max (2)",
        "instance[3].wieght: unknown key 'wieght'; did you mean 'weight'",
        "corpus[0].fraction: must be between 0.0 and 1.0",
    ):
        assert fragment in msg, (fragment, msg)


def test_shipped_citation_file_is_valid_and_complete():
    cs = ConstraintSet.load(ROOT / "constraints" / "citations.toml")
    rules = {r.rule for r in cs.rules}
    assert {
        "start",
        "one-segment",
        "change-on-punctuation",
        "tokens",
        "only-inside",
        "label-fraction",
        "change-off-punctuation",
    } <= rules
    assert len(cs.labels) == 13


def test_quote_property_means_double_quotation_marks_not_apostrophes():
    from tagger.constraints.language import has_property

    for tok in ['"', "``Telnet", "parameters''", "\u201cword", "end\u201d"]:
        assert has_property(tok, "quote"), tok
    for tok in ["Master's", "'91", "D'Andrea", "Minsky`s", "word"]:
        assert not has_property(tok, "quote"), tok


@pytest.mark.parametrize(
    "body, fragment",
    [
        ('rule = "tokens"\nsequence = ["no", "pets"]\nwords = ["x"]\ntake = ["a"]', "not both"),
        ('rule = "tokens"\nsequence = ["<nmber>", "br"]\ntake = ["a"]', "did you mean '<number>'"),
        (
            'rule = "tokens"\nsequence = ["no", "pets"]\nmark = [2]\ntake = ["a"]',
            "instance[0].mark",
        ),
        (
            'rule = "tokens"\nwords = ["x"]\nmark = [0]\ntake = ["a"]',
            "picks tokens of a `sequence`",
        ),
        ('rule = "tokens"\nsequence = []\ntake = ["a"]', "instance[0].sequence"),
        ('rule = "contains"\nlabels = ["a"]', "needs `words`"),
        ('rule = "contains"\nlabels = ["a"]\nproperty = "digits"', "did you mean 'digit'"),
        ('rule = "contains"\nwords = ["x"]', "needs `labels`"),
        ('rule = "order"\nbefore = ["a"]', "needs `after`"),
        ('rule = "order"\nbefore = ["a"]\nafter = ["a", "b"]', "instance[0].after: label(s) a"),
        (
            'rule = "order"\nbefore = ["A"]\nafter = ["b"]',
            "instance[0].before[0]: unknown label 'A'",
        ),
        ('rule = "order"\nlabels = ["a"]\nbefore = ["a"]\nafter = ["b"]', "unknown key 'labels'"),
    ],
)
def test_sequence_contains_and_order_mistakes_are_reported_with_their_key(body, fragment):
    text = f'labels = ["a", "b"]\n[[instance]]\n{body}\n'
    with pytest.raises(ConstraintError) as info:
        ConstraintSet.from_text(text)
    assert fragment in str(info.value)


def test_end_and_sequence_indicator_rows():
    cs = ConstraintSet.from_text(
        'labels = ["a", "b"]\n[[instance]]\nrule = "end"\n'
        'labels = ["a"]\n[[instance]]\nrule = "tokens"\n'
        'sequence = "no pets|pet"\nmark = 1\ntake = ["b"]\n'
    )
    cc = cs.compile(["a", "b"])
    ti = cc.indicators([["no", "pets", ",", "No", "pet"], ["no"], ["pets", "no"]])
    end_row, seq_row = ti.ind[cc.row[0]], ti.ind[cc.row[1]]
    assert end_row.tolist() == [0, 0, 0, 0, 1, 1, 0, 1]
    # within sentences only: "no" ending one sentence and "pets" starting the next do not match
    assert seq_row.tolist() == [0, 1, 0, 0, 1, 0, 0, 0]


def test_every_example_file_in_the_constraint_docs_is_valid():
    text = (ROOT / "constraints" / "README.md").read_text(encoding="utf-8")
    blocks = [b.split("```", 1)[0] for b in text.split("```toml\n")[1:]]
    assert len(blocks) >= 3
    for block in blocks:
        cs = ConstraintSet.from_text(block, "README.md")
        cs.compile(cs.labels)
