"""tagger: sparse sequence tagging with L1-regularized max-margin Markov networks and CRFs."""

__version__ = "0.1.0"
