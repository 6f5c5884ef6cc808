"""Parameters that more than one learner takes, each declared once.

A learner lists these objects in its ``params``; where its default differs, it derives its
own with :func:`dataclasses.replace` from the declaration here and says why, so the name,
type, range and help stay one. A parameter only one learner (or one family sharing a module)
takes is declared with that learner.
"""

from __future__ import annotations

from tagger.learners.base import Param

# ---- regularization

#: the L1 term of the penalized L1 learners (crf-l1, the Grafting learners, m3n-owlqn)
C1 = Param(
    "c1",
    1.0,
    float,
    "L1 coefficient c1: c1 ||w||_1 on the loss summed over "
    "sentences (CRFsuite's c1 on the likelihood)",
    low=0.0,
    low_open=True,
)
#: the L2 term: the elastic net beside c1, or crf-l2's only penalty
C2 = Param(
    "c2",
    0.0,
    float,
    "L2 coefficient c2: c2 ||w||^2 on the loss summed over "
    "sentences (CRFsuite's c2 on the likelihood); beside c1, 0 = pure L1",
    low=0.0,
)
#: the weight of the hinges against the regularizer (M3N and LP learners)
HINGE_C = Param(
    "C",
    0.1,
    float,
    "weight C of each sentence's structured hinge (slack) against the regularizer",
    low=0.0,
    low_open=True,
)

# ---- passes over the data

EPOCHS = Param(
    "epochs",
    20,
    int,
    "passes over the training data (at most, where a stopping rule may end training sooner)",
    low=1,
)
SHUFFLE = Param("shuffle", True, bool, "visit the sentences in a new random order each epoch")

# ---- quasi-Newton (OWL-QN, L-BFGS): crf-l2, crf-l1, the Grafting learners, m3n-owlqn

QN_EPOCHS = Param("epochs", 1000, int, "maximum number of quasi-Newton iterations", low=1)
MEMORY = Param("memory", 6, int, "number of (step, gradient change) pairs kept by L-BFGS", low=1)
DELTA = Param(
    "delta",
    1e-5,
    float,
    "stop when the objective fell by less than this relative "
    "amount over the last 'period' iterations (CRFsuite's rule)",
    low=0.0,
)
PERIOD = Param("period", 10, int, "iterations over which 'delta' is measured", low=1)
START_END = Param(
    "start_end",
    True,
    bool,
    "learn start and end weights (false holds them at 0: CRFsuite's model, which has none)",
)
ADAPTIVE_STEP = Param(
    "adaptive_step",
    False,
    bool,
    "start each line search at the last "
    "accepted step (doubled back towards 1 after 5 first-trial acceptances) "
    "instead of at 1",
)

# ---- the Sequential Dual Method: m3n-l2, m3n-em, ssvm-annealing

SDM_TOL = Param(
    "tol",
    1e-3,
    float,
    "stop an SDM solve when its relative duality gap (P - D) / P is at most this",
    low=0.0,
)
MAX_WORKING_SET = Param("max_working_set", 32, int, "competitor labelings kept per sentence", low=1)
MAX_INNER = Param("max_inner", 10, int, "SDM minimal steps per sentence visit", low=1)
#: the SDM learners' block-parallel rounds (tagger.learners.solvers.sdm_blocks): a setting of
#: the method that the user chooses, never derived from the thread count, so that the weights
#: do not depend on --threads. Off by default: the blocks' steps are damped on the weights
#: they share (transitions, frequent attributes), so a pass gains less than a sequential one
#: (on the citation and chunking data about a third as much with 8 blocks), which pays only
#: with more threads than that ratio
SDM_BLOCKS = Param(
    "blocks",
    0,
    int,
    "SDM blocks of sentences optimised at once, one per thread, and joined by a line "
    "search on the dual: the same weights with any --threads (0: the sequential method, "
    "one sentence at a time, one thread)",
    low=0,
)
SDM_BLOCK_SIZE = Param(
    "block_size", 8, int, "sentences per SDM block and round (with blocks > 0)", low=1
)

# ---- minibatch subgradient: m3n-subgradient, m3n-l2-subgradient

ETA0 = Param(
    "eta0",
    40.0,
    float,
    "first step size, divided by the mean number of active attributes per token (plus one)",
    low=0.0,
    low_open=True,
)
BATCH_SIZE = Param(
    "batch_size",
    0,
    int,
    "sentences per update at the start; 0 = N/256 (about "
    "256 updates in the first epoch); N or more = full batch",
    low=0,
)
BATCH_GROWTH = Param(
    "batch_growth",
    1.25,
    float,
    "multiply the batch size by this after every "
    "epoch (larger, less noisy batches late in training leave fewer spurious "
    "non-zeros)",
    low=1.0,
)
MOMENTUM = Param(
    "momentum",
    0.97,
    float,
    "heavy-ball momentum beta: step along the running "
    "average of subgradients (damps the hinge's subgradient flicker); 0 = plain "
    "subgradient steps",
    low=0.0,
    high=0.999,
)

# ---- which weights to return

SELECT = Param(
    "select",
    "dev",
    str,
    "with dev data, the weights that score best on it along "
    "the learner's schedule (its stages or annealing steps); 'last': the final "
    "weights",
    choices=("dev", "last"),
)

# ---- where the per-sentence work runs

#: a Dask scheduler's address: the learner's per-sentence work runs on its workers, with the
#: result the learner computes here (crf-l1, crf-l2, m3n-owlqn: the objective; ssvm-annealing:
#: the decoding of the unlabeled sentences)
SCHEDULER = Param(
    "scheduler",
    "",
    str,
    "address of a Dask scheduler (tcp://host:8786): each evaluation of the objective runs "
    "on its workers, the weights the same as here to the bit (empty: in this process)",
)
#: how many tasks that work is cut into
PARTITIONS = Param(
    "partitions",
    0,
    int,
    "with a scheduler, parts of whole sentences sent to the workers as separate tasks "
    "(0: two per worker)",
    low=0,
)
#: both, for the learners whose objective runs on a cluster
ON_A_CLUSTER = (SCHEDULER, PARTITIONS)
#: where the work runs, not what is learned: like the thread count, a model's stored
#: configuration leaves them out (a rerun elsewhere has another cluster, or none)
WHERE_IT_RUNS = frozenset(p.name for p in ON_A_CLUSTER)
