"""Training a tagger: the configuration (:mod:`.config`), the rules of a run and its data
(:mod:`.run`), the featurized problem a learner sees (:mod:`.data`, :mod:`.unlabeled`), the fit
itself with the choice of regularization (:mod:`.fit`, :mod:`.selection`, :mod:`.auto`), its
progress on stderr (:mod:`.progress`) and synthetic data for experiments (:mod:`.synthetic`).
``tagger.train`` (:func:`tagger.api.train`) is the one entry point that applies every rule; the
command line, ``Tagger.fit``, spaCy and scikit-learn call it."""
