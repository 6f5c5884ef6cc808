"""Scoring predictions against gold labels: the label index and BIO chunk reading
(:mod:`.labels`) and accuracy and conlleval chunk P/R/F1 (:mod:`.metrics`)."""
