"""The seam between learners and the model: the parameter layout of a first-order chain
(:mod:`.layout`), and the operations a learner may call on it."""

from tagger.chain.layout import (ChainLayout, ChainModel, FeatureBatch, SparseAccumulator,
                                 add_difference, add_joint_features, sentence_state_scores,
                                 transitions_of)

__all__ = ["ChainLayout", "ChainModel", "FeatureBatch", "SparseAccumulator", "add_difference",
           "add_joint_features", "sentence_state_scores", "transitions_of"]
