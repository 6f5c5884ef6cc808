"""Where ``tagger`` meets other libraries: the spaCy pipeline component and its training
(:mod:`.spacy_component`, :mod:`.spacy_training`), the scikit-learn estimator
(:mod:`.sklearn`, public as ``tagger.sklearn``) and sharded tagging on Dask
(:mod:`.distributed`). Nothing below this layer imports it, and each module imports its library
only when it is used."""
