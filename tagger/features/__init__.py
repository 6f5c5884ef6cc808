"""Feature templates -> integer attributes.

A feature specification (TOML) names the input columns, derives *views* of them with token
functions (lowercase, shape, prefixes, suffixes, character tests, user regexes) and lists
*templates*: conjunctions of views at relative offsets, as expressive as CRF++/Wapiti
patterns::

    [featurizer]
    columns = ["word", "pos"]
    templates = ["word[0]", "word[-1]|word[0]", "pos[-2]|pos[-1]|pos[0]", "suf3[0]", "bias"]
    min_count = 1          # attributes seen fewer times in training are dropped
    all_pairs = false      # parameters for every (attribute, label) pair, not only seen ones

    [views.suf3]
    column = "word"
    function = "suffix"
    length = 3

Nothing here builds attribute strings. Every view value gets an integer id from a per-view
vocabulary (0 = unknown, 1 = before the sentence, 2 = after it); a template instance becomes
one exact 64-bit key (mixed-radix over the view ids, template index in the lowest digit), and
a numba open-addressing hash table maps keys to attribute ids. Token functions run once per
distinct string (a per-column type cache), never once per token.
"""

from tagger.features.featurizer import TYPE_CACHE_LIMIT, EncodedViews, Featurized, Featurizer
from tagger.features.spec import N_SPECIAL, PRESETS, TOKEN_FUNCTIONS, FeatureSpec, View

__all__ = [
    "FeatureSpec",
    "View",
    "Featurizer",
    "Featurized",
    "EncodedViews",
    "PRESETS",
    "TOKEN_FUNCTIONS",
    "N_SPECIAL",
    "TYPE_CACHE_LIMIT",
]
