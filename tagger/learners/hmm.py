"""``hmm``: a first-order hidden Markov model by maximum likelihood with add-alpha smoothing,
the generative baseline of Wang, Shawe-Taylor & Szedmak's POS table (docs/algorithms.md
section 2), written into the chain model's weights so that it decodes like every other model.

With ``c`` counts over the training sentences, V distinct observations and L labels::

    P(word | l)   = (c(word, l) + alpha) / (c(l) + alpha (V + 1))    (one share for unseen words)
    P(l' | l)     = (c(l, l') + alpha) / (c(l, .) + alpha (L + 1))   (the +1: the sentence end)
    P(end | l)    = (c_end(l) + alpha) / (c(l, .) + alpha (L + 1))
    P(l at start) = (c_start(l) + alpha) / (n + alpha L)

and the weights are their logarithms, so that Viterbi returns argmax_y P(x, y). An emission is
split over two parameters: the (word, label) weight log((c(word, l) + alpha) / alpha), zero for
a pair never seen (so a model with parameters only for seen pairs is the same model), and the
bias attribute's weight log(alpha / (c(l) + alpha (V + 1))), the probability of an unseen word,
which every token has. With the ``hmm`` preset (the word and a bias) this is exactly the
smoothed HMM; with richer features every attribute is treated as an observation of its own
(naive Bayes within a token), a generative baseline rather than an HMM. An attribute present
on every token is taken to be the bias; without one, unseen words get no emission term.
"""

from __future__ import annotations

import numpy as np

from tagger.chain import FeatureBatch, add_joint_features
from tagger.errors import ParameterError
from tagger.learners.base import Learner, Param, Stopwatch, TrainingProblem


class HMM(Learner):
    """First-order HMM, maximum likelihood with add-alpha smoothing.

    Objective: max_theta sum_i log P_theta(x_i, y_i) (closed form: smoothed relative
    frequencies); weights are log-probabilities. The generative baseline of Wang, Shawe-Taylor
    & Szedmak (AISTATS 2009).
    """

    name = "hmm"
    closed_form = True
    strength = ("alpha", 1)  # the smoothing, +1: larger is stronger
    params = (
        Param(
            "alpha",
            1.0,
            float,
            "add-alpha smoothing of every distribution (1 = add-one)",
            low=0.0,
            low_open=True,
        ),
    )

    def _fit(self, problem: TrainingProblem, settings: dict, seed: int, w0) -> np.ndarray:
        model, X, y = problem.model, problem.X, problem.y
        if X.values is not None:
            raise ParameterError(
                "the hmm learner counts observations and cannot use "
                "real-valued features; use a discriminative learner"
            )
        alpha = settings["alpha"]
        clock = Stopwatch()
        layout, batch = model.layout, FeatureBatch.of(X)
        L = model.n_labels
        counts = np.zeros(model.n_weights)
        for s in range(X.n_sentences):
            add_joint_features(
                layout, batch, int(X.offsets[s]), int(X.offsets[s + 1]), y, 1.0, counts
            )
        label_count = np.bincount(y, minlength=L).astype(np.float64)
        attr_of = model.state_param_attr()
        seen = (
            np.bincount(X.attrs, minlength=model.n_attrs)
            if len(X.attrs)
            else np.zeros(model.n_attrs, np.int64)
        )
        bias = np.flatnonzero(seen == X.n_tokens) if X.n_tokens else np.zeros(0, np.int64)
        V = int(np.count_nonzero(seen)) - len(bias)
        w = np.zeros(model.n_weights)
        # counts and weights share the layout: each block of w from the same block of counts
        state = model.state_weights(counts)
        label = model.state_param_label()
        w_state = model.state_weights(w)
        w_state[:] = np.log((state + alpha) / alpha)
        unseen = np.log(alpha / (label_count + alpha * (V + 1)))
        is_bias = np.isin(attr_of, bias)
        w_state[is_bias] = unseen[label[is_bias]]
        trans = model.transitions(counts)
        start, end = model.start_end(counts)
        out = trans.sum(axis=1) + end + alpha * (L + 1)
        model.transitions(w)[:] = np.log((trans + alpha) / out[:, None])
        model.end_weights(w)[:] = np.log((end + alpha) / out)
        model.start_weights(w)[:] = np.log((start + alpha) / (start.sum() + alpha * L))
        # the negative log-likelihood of the training data, per sentence: every observation
        # (non-bias attribute occurrence) with its probability, every transition, start, end
        emit = w_state + unseen[label]
        nll = -float(state[~is_bias] @ emit[~is_bias])
        nll -= float(model.edge_weights(counts) @ model.edge_weights(w))
        row = {
            "epoch": 1,
            "objective": nll / max(X.n_sentences, 1),
            "observations": V,
            "bias_attributes": len(bias),
            "nonzero": int(np.count_nonzero(w)),
            "converged": True,
        }
        if problem.dev_score is not None:
            row.update(problem.dev_score(w))
        row["time"] = round(clock(), 2)
        self.report(problem, row)
        return w
