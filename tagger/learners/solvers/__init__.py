"""Parts shared by the registered learners of :mod:`tagger.learners`: optimizers (OWL-QN, the
SDM dual solver, extragradient, HiGHS), objectives (the CRF log-loss and gradient, smoothed LP
terms), working sets and trust regions, projections, and the semi-supervised steps (label
switching, constrained decoding of unlabeled text). None of them is a learner a user names."""
