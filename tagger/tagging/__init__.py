"""Tagging files with a saved model: one input to one output in its own format
(:mod:`.files`), streamed through worker processes in blocks for ``--jobs N``
(:mod:`.parallel`)."""
