"""The model file: its format (a zip of ``.npy`` arrays and a checked JSON header, written
atomically, never pickled: :mod:`.files`, read back with its checks by :mod:`.reading`, the two
sharing :mod:`.manifest`), the header's schema (:mod:`.header`), a model as bytes
(:mod:`.in_memory`), a decoded batch (:mod:`.predictions`) and the report of a fitted model's
weights (:mod:`.inspect`)."""
