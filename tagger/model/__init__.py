"""The model file: its format (a zip of ``.npy`` arrays and a checked JSON header, written
atomically, never pickled: :mod:`.files`), the header's schema (:mod:`.header`) and the
report of a fitted model's weights (:mod:`.inspect`)."""
