"""The seam between the learners and the model: every chain operation a learner may call.

A learner (``tagger.learners``) imports from this package only; nothing outside it reads the
weight layout (the offsets of the state, transition, start and end blocks in ``w``). The
layout itself is :mod:`.layout`; the kernels live in :mod:`.scores`, :mod:`.joint` and
:mod:`.gradients` here, and in :mod:`tagger.inference` and :mod:`tagger.constraints.decoding`
(re-exported, so a learner needs no other import).

============================== ==========================================================
name                           what a learner uses it for
============================== ==========================================================
**layout and model**
``ChainModel``                 the parameter index: ``n_weights``, ``state_scores``,
                               ``joint_features``, ``score``, ``restrict``, ``compact``
                               and the weight-block accessors below
``ChainLayout``                the layout record numba kernels take (``model.layout``);
                               pass it on, do not read its offsets
``FeatureBatch``               a featurized batch as numba kernels take it (``.of(X)``)
``Featurized``                 the featurized sentences a training problem holds (type)
``SparseAccumulator``          a dense update vector that remembers what it touched
**weight blocks** (views)
``ChainModel.state_weights``   the state parameters of ``w``
``ChainModel.transitions``     the (L, L) transition weights of ``w``
``transitions_of``             the same inside a numba kernel (from the layout record)
``ChainModel.start_weights``   the start weights of ``w`` (``start_end``: both ends)
``ChainModel.end_weights``     the end weights of ``w``
``ChainModel.edge_weights``    transitions, start and end together (every model has them)
``ChainModel.boundary_weights`` start and end together
``ChainModel.state_param_attr`` / ``state_param_label``: each state parameter's attribute
                               and label
**state scores**
``sentence_state_scores``      (T, L) scores of one sentence, start and end folded in
``sentence_param_table``       a sentence's state weights copied into a small dense table
``set_table_weight``           keep that table in step after one weight moved
``sentence_state_scores_table`` the same scores read from the table
``release_param_table``        reset the table's attribute rows
**joint features**
``add_joint_features``         out += scale * f(x, y) for one sentence
``add_difference``             acc += coef * (f(x, y+) - f(x, y-)), sparse
**max-product** (:mod:`tagger.inference.max_product`)
``viterbi_into``               best labeling of one sentence; ``viterbi_batch_into``: all
``loss_augmented_viterbi_into`` best labeling under score + scale * Hamming loss;
                               ``loss_augmented_viterbi_batch_into``: all sentences
``second_best_viterbi_into``   best labeling other than a given one
``labeling_score``             F(x, y) of one labeling from state scores and transitions
**constrained decoding** (:mod:`tagger.constraints.decoding`)
``constrained_decode``         best labelings under compiled hard (and soft) constraints
``constrained_decode_pairs``   the same for a model with label-pair templates or of order 2
                               (:mod:`.constrained`)
**sum-product** (:mod:`tagger.inference.sum_product`)
``fb_tables``                  per-transition-matrix tables, once per evaluation
``fb_buffers``                 scratch for sentences up to T tokens
``max_length``                 the longest sentence of a range (what scratch is sized by)
``fb_sentence``                log Z and node / summed edge marginals of one sentence
**gradients**
``scatter_expectations``       g += k (E[f] - f(gold)) from one sentence's marginals
``state_grad_from_marginals``  the state block's gradient from node marginals, per
                               attribute (the token CSR transposed)
**label pairs** (:mod:`.pairs`, :mod:`tagger.inference.pair_chain`)
``PairLayout``                 the pair parameters numba kernels take
                               (``model.pair_layout``; ``model.n_pair`` counts them)
``sentence_edge_scores``       a sentence's (T, L, L) position-dependent transitions
``pair_edges_batch``           those of every token of a batch, in parallel
``edge_path_score``            F(x, y) of one labeling from state scores and those
``pair_forward_backward``      log Z, node and per-position edge marginals over them
                               (``pair_fb_buffers``: its scratch)
``pair_viterbi_into``          (loss-augmented) Viterbi over them
``scatter_pair_expectations``  the pair block's gradient from per-position edge marginals
**second order** (:mod:`.second_order`, :mod:`.triples`, :mod:`tagger.inference.second_order`)
``Lattice``                    the pair-state lattice numba kernels take (``model.lattice``)
``entry_scores``               the lattice's per-entry triple scores for one evaluation
``order2_forward_backward``    log Z, node, per-position pair and summed triple marginals
                               (``order2_tables``, ``order2_buffers``: its tables, scratch)
``triple_path_score``          the triple part of F(x, y) of one labeling
``triple_entry``               the lattice entry of one label triple (-1: not allowed)
``scatter_triple_expectations`` the triple block's gradient from triple marginals
``ChainModel.plain``          False when transitions vary by position or the order is 2;
                               such a model decodes by ``ChainModel.decode`` (a batch's
                               best, loss-augmented, labelings and gold scores) and
                               ``ChainModel.marginals``
**any structure, one sentence** (:mod:`.structure`: for solvers that rescore a sentence
after every step)
``ChainStructure``             the model's structure as kernels take it
                               (``chain_structure(model)``: label pairs or order 2; None
                               for a plain chain); ``structure_sizes``: its pair and triple
                               weights
``structure_buffers``          a sentence's transitions, lattice scratch and triple scores
``structure_edges``            its (T, L, L) transitions, beyond the plain chain
``structure_entry_scores``     the lattice's triple scores of ``w`` (order 2)
``sync_structure_weight``      keep those in step after one weight moved
``structure_score``            F(x, y) of one labeling under any structure
``structure_loss_augmented_into`` loss-augmented Viterbi over the model's lattice
``add_structure_difference``   acc += coef * (f(x, y+) - f(x, y-)) over every weight block
============================== ==========================================================
"""

from tagger.chain.constrained import constrained_decode_pairs
from tagger.chain.gradients import scatter_expectations, state_grad_from_marginals
from tagger.chain.joint import add_difference, add_joint_features
from tagger.chain.layout import (
    ChainLayout,
    ChainModel,
    FeatureBatch,
    SparseAccumulator,
    transitions_of,
)
from tagger.chain.pairs import (
    PairLayout,
    edge_path_score,
    pair_edges_batch,
    scatter_pair_expectations,
    sentence_edge_scores,
)
from tagger.chain.scores import (
    release_param_table,
    sentence_param_table,
    sentence_state_scores,
    sentence_state_scores_table,
    set_table_weight,
)
from tagger.chain.second_order import Lattice
from tagger.chain.structure import (
    ChainStructure,
    add_structure_difference,
    chain_structure,
    structure_buffers,
    structure_edges,
    structure_entry_scores,
    structure_loss_augmented_into,
    structure_score,
    structure_sizes,
    sync_structure_weight,
)
from tagger.chain.triples import entry_scores, scatter_triple_expectations, triple_path_score
from tagger.constraints.decoding import constrained_decode
from tagger.constraints.expanded_viterbi import triple_entry
from tagger.features import Featurized
from tagger.inference.batching import max_length
from tagger.inference.max_product import (
    labeling_score,
    loss_augmented_viterbi_batch_into,
    loss_augmented_viterbi_into,
    second_best_viterbi_into,
    viterbi_batch_into,
    viterbi_into,
)
from tagger.inference.pair_chain import pair_fb_buffers, pair_forward_backward, pair_viterbi_into
from tagger.inference.second_order import order2_buffers, order2_forward_backward, order2_tables
from tagger.inference.sum_product import fb_buffers, fb_sentence, fb_tables

__all__ = [
    # layout and model
    "ChainModel",
    "ChainLayout",
    "FeatureBatch",
    "Featurized",
    "SparseAccumulator",
    "transitions_of",
    # state scores
    "sentence_state_scores",
    "sentence_param_table",
    "set_table_weight",
    "sentence_state_scores_table",
    "release_param_table",
    # joint features
    "add_joint_features",
    "add_difference",
    # max-product and constrained decoding
    "viterbi_into",
    "viterbi_batch_into",
    "loss_augmented_viterbi_into",
    "loss_augmented_viterbi_batch_into",
    "second_best_viterbi_into",
    "labeling_score",
    "constrained_decode",
    "constrained_decode_pairs",
    # sum-product
    "fb_tables",
    "fb_buffers",
    "fb_sentence",
    "max_length",
    # gradients
    "scatter_expectations",
    "state_grad_from_marginals",
    # label pairs
    "PairLayout",
    "sentence_edge_scores",
    "pair_edges_batch",
    "edge_path_score",
    "pair_forward_backward",
    "pair_fb_buffers",
    "pair_viterbi_into",
    "scatter_pair_expectations",
    # second order
    "Lattice",
    "entry_scores",
    "order2_forward_backward",
    "order2_tables",
    "order2_buffers",
    "triple_path_score",
    "triple_entry",
    "scatter_triple_expectations",
    # any structure, one sentence
    "ChainStructure",
    "chain_structure",
    "structure_sizes",
    "structure_buffers",
    "structure_edges",
    "structure_entry_scores",
    "sync_structure_weight",
    "structure_score",
    "structure_loss_augmented_into",
    "add_structure_difference",
]
