"""Labels that only the constraint file names: learned by ssvm-annealing from the labels the
rules impute on unlabeled text, with the evidence per label reported. (Apart from
test_ssvm_annealing.py, whose kernels CI also runs without the JIT: this one trains.)"""

from __future__ import annotations

import numpy as np

from tagger.sentence import Sentence

from _addresses import RULES, addresses


def _sentences(rng, n, labeled=True):
    return [Sentence([toks], labs if labeled else None) for toks, labs in addresses(rng, n)]


ZIP_RULES = (
    RULES.replace(
        'labels = ["name", "street", "city"]', 'labels = ["name", "street", "city", "zip"]'
    )
    + """
[[instance]]
rule = "tokens"
pattern = '^[0-9]{5}$'
take = ["zip"]
hard = true
"""
)


def test_a_label_only_the_rules_name_is_learned_from_the_unlabeled_text(tmp_path):
    from tagger import Tagger
    from tagger.sentence import Sentence

    rng = np.random.default_rng(3)

    def with_zip(n, labeled):
        out = []
        for toks, labs in addresses(rng, n):
            z = str(int(rng.integers(10000, 99999)))
            out.append(Sentence([toks + [z]], labs + ["zip"] if labeled else None))
        return out

    rules = tmp_path / "zip.toml"
    rules.write_text(ZIP_RULES)
    train = _sentences(rng, 4)  # no zip code in the labeled data
    tg = Tagger(
        features="citation",
        learner="ssvm-annealing",
        params={"steps": 2, "epochs": 5, "start_epochs": 5},
        seed=0,
        select=False,
    ).fit(train, dev=with_zip(8, True), unlabeled=with_zip(40, False), constraints=str(rules))
    evidence = tg.info_["evidence"]
    assert evidence["zip"]["labeled"] == 0 and evidence["zip"]["imputed"] > 0
    assert evidence["name"]["labeled"] == sum(s.labels.count("name") for s in train)
    # decoded without the rules, fresh zip codes take the label the rules taught
    test = with_zip(10, True)
    pred = tg.predict(test)
    assert all(p[-1] == "zip" for p in pred)
    from tagger.cli.reports import evidence_text

    assert "zip" in evidence_text(evidence) and "from the rules alone" in evidence_text(evidence)
