"""Synthetic sequence data with a known sparse truth (Zhu, Xing & Zhang, KDD 2009, section 5.1).

The paper (following the LapM3N study it cites) generates sequence data sets from
pre-specified linear-chain CRFs with *correlated* real-valued input features:

* each token has ``d = 100`` real-valued input features; 30 are relevant, in 10 groups of 3
  correlated ones: per group and token one draw ``z ~ N(0, 1)``, and each of the group's three
  features is ``z + e`` with ``e ~ N(0, 0.05^2)``; the other 70 features are irrelevant
  (independent ``N(0, 1)`` draws that the labels never depend on);
* a linear-chain CRF over sequences of length 8 with binary labels: ``2 d = 200`` real-valued
  state feature functions ``x_j * [y_t = l]`` and ``2 x 2 = 4`` transition feature functions;
* the labels of each sequence are drawn from that CRF's ``p(y | x)`` by Gibbs sampling;
* 10 such CRFs, each generating a set of 1000 sequences.

The paper does not print how the true weights were drawn. Its Figure 3 shows the generating
model's 200 state weights between 0 and 1, the irrelevant ones at 0; we therefore draw the
relevant state weights and the 4 transition weights uniformly from ``[0, 1)``
(``weight_range``) and set every weight of an irrelevant feature to 0. The paper's remark that
the generating CRF's own Viterbi labels disagree with the sampled labels on a large fraction of
tokens (Gibbs samples are draws, not modes) holds for these data too; ``true_error`` measures it.

Everything here is plain numpy: it is run once per experiment, and a vectorised Gibbs sweep over
all sequences at once costs a few milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tagger.chain.layout import ChainModel
from tagger.features import Featurized


@dataclass
class SyntheticSet:
    """One generated data set and the CRF that generated it.

    ``X`` holds every input feature of every token (attribute ``j`` = input feature ``j``, with
    its real value); ``y`` the sampled label ids (0/1), stacked over the sequences; ``model`` the
    parameter layout with every (feature, label) pair, so ``true_weights`` (in that layout; start
    and end weights 0) scores the data exactly as the generating CRF did.
    """

    X: Featurized
    y: np.ndarray  # int32[N]
    model: ChainModel
    true_weights: np.ndarray  # float64[model.n_weights]
    relevant: np.ndarray  # bool[d]: input features the labels depend on
    groups: np.ndarray  # int64[d]: group of each relevant feature, -1 if irrelevant
    inputs: np.ndarray  # float64[n_sequences, length, d]: the raw input features

    @property
    def n_sequences(self) -> int:
        return self.X.n_sentences

    @property
    def relevant_params(self) -> np.ndarray:
        """bool[model.n_state]: state parameters whose input feature is relevant."""
        return self.relevant[self.model.state_param_attr()]

    def subset(self, sequences) -> tuple[Featurized, np.ndarray]:
        """(X, y) of the given sequences (indices into this set), in that order."""
        idx = np.asarray(sequences, dtype=np.int64)
        return featurize(self.inputs[idx]), np.ascontiguousarray(
            self.y.reshape(self.inputs.shape[0], -1)[idx].ravel()
        )


def featurize(inputs: np.ndarray) -> Featurized:
    """Dense real inputs (n, T, d) -> ``Featurized`` with every feature active at every token."""
    n, T, d = inputs.shape
    N = n * T
    indptr = np.arange(N + 1, dtype=np.int64) * d
    attrs = np.tile(np.arange(d, dtype=np.int32), N)
    values = np.ascontiguousarray(inputs.reshape(-1), dtype=np.float64)
    offsets = np.arange(n + 1, dtype=np.int64) * T
    return Featurized(indptr, attrs, offsets, values)


def generate(
    n_sequences: int = 1000,
    length: int = 8,
    n_features: int = 100,
    n_relevant: int = 30,
    group_size: int = 3,
    noise_sd: float = 0.05,
    n_labels: int = 2,
    weight_range: tuple[float, float] = (0.0, 1.0),
    gibbs_sweeps: int = 100,
    seed: int | np.random.Generator = 0,
) -> SyntheticSet:
    """Generate one data set of the KDD'09 synthetic study (see the module docstring).

    ``n_features`` is d; the first ``n_relevant`` features are the relevant ones, in
    consecutive groups of ``group_size`` (``n_relevant`` must be a multiple of it).
    ``gibbs_sweeps`` sweeps of single-site Gibbs updates (every position of every sequence in
    turn) start from uniformly random labels; the state after the last sweep is the sample.
    The same ``seed`` gives the same set.
    """
    if n_relevant > n_features or n_relevant % group_size:
        raise ValueError(
            f"n_relevant ({n_relevant}) must be a multiple of group_size "
            f"({group_size}) and at most n_features ({n_features})"
        )
    if min(n_sequences, length, group_size, n_labels, gibbs_sweeps) < 1 or n_labels < 2:
        raise ValueError(
            "n_sequences, length, group_size, gibbs_sweeps must be >= 1 and n_labels >= 2"
        )
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    n, T, d, L = n_sequences, length, n_features, n_labels
    lo, hi = weight_range

    # --- the generating CRF
    state_w = np.zeros((d, L))
    state_w[:n_relevant] = rng.uniform(lo, hi, size=(n_relevant, L))
    trans_w = rng.uniform(lo, hi, size=(L, L))

    # --- correlated inputs
    inputs = rng.standard_normal((n, T, d))
    n_groups = n_relevant // group_size
    z = rng.standard_normal((n, T, n_groups))
    inputs[:, :, :n_relevant] = np.repeat(z, group_size, axis=2) + noise_sd * rng.standard_normal(
        (n, T, n_relevant)
    )

    # --- labels by Gibbs sampling from p(y | x)
    state = inputs @ state_w  # (n, T, L)
    y = rng.integers(0, L, size=(n, T))
    for _ in range(gibbs_sweeps):
        for t in range(T):
            logit = state[:, t, :].copy()
            if t > 0:
                logit += trans_w[y[:, t - 1], :]
            if t < T - 1:
                logit += trans_w[:, y[:, t + 1]].T
            logit -= logit.max(axis=1, keepdims=True)
            p = np.exp(logit)
            cdf = np.cumsum(p, axis=1)
            u = rng.random(n) * cdf[:, -1]
            y[:, t] = np.minimum((cdf < u[:, None]).sum(axis=1), L - 1)

    X = featurize(inputs)
    y_flat = np.ascontiguousarray(y.reshape(-1), dtype=np.int32)
    model = ChainModel.from_data(X, y_flat, L, d, all_pairs=True)
    w = np.zeros(model.n_weights)
    w[: model.n_state] = state_w.reshape(-1)  # all_pairs layout: attribute-major, label-minor
    w[model.n_state : model.n_state + L * L] = trans_w.reshape(-1)
    groups = np.full(d, -1, dtype=np.int64)
    groups[:n_relevant] = np.arange(n_relevant) // group_size
    relevant = groups >= 0
    return SyntheticSet(X, y_flat, model, w, relevant, groups, inputs)


def generate_sets(n_sets: int = 10, seed: int = 0, **kwargs) -> list[SyntheticSet]:
    """``n_sets`` independent sets, each from its own generating CRF (the paper's 10 sets)."""
    children = np.random.SeedSequence(seed).spawn(n_sets)
    return [generate(seed=np.random.default_rng(c), **kwargs) for c in children]


def kfold_parts(n_sequences: int, k: int, seed: int = 0) -> list[np.ndarray]:
    """The paper's K-fold protocol: ``k`` disjoint parts of a shuffled index; each run trains on
    one part and tests on the other ``k - 1`` (so the training set is the small side)."""
    if not 2 <= k <= n_sequences:
        raise ValueError(f"k must be in [2, {n_sequences}]; got {k}")
    order = np.random.default_rng(seed).permutation(n_sequences)
    return [np.sort(p) for p in np.array_split(order, k)]


def true_error(data: SyntheticSet) -> float:
    """Token error rate of the generating CRF's own Viterbi labels against the sampled labels."""
    from tagger.inference import viterbi_batch

    L = data.model.n_labels
    d = data.inputs.shape[2]
    W = data.true_weights[: data.model.n_state].reshape(d, L)
    trans = data.model.transitions(data.true_weights)
    state = (data.inputs @ W).reshape(-1, L)
    pred, _ = viterbi_batch(state, data.X.offsets, trans)
    return float(np.mean(pred != data.y))
