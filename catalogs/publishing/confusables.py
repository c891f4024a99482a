"""Look-alike names: the skeleton of Unicode Technical Standard #39 (section 4), for slugs.

Two strings are confusable when their skeletons are equal. ``skeleton`` is UTS #39's: NFD, each
character replaced by its prototype from confusables.txt, NFD again. Slugs are ASCII letters,
digits, ``-`` and ``_`` (Django's ``validate_slug``), so only the rows of confusables.txt whose
source is one of those characters are needed; they are below. On top of UTS #39, ``slug_key``
folds case (a slug is case-insensitive) and drops separators, so ``ACME``, ``Acme``, ``acme-``,
``0fficial``, ``officiaI`` and ``rnirrors`` all meet ``acme``, ``official`` and ``mirrors``.

The table is data from the Unicode Character Database, confusables.txt (version 15.1.0), under
the Unicode License v3 (https://www.unicode.org/license.txt): "Copyright © 1991-2023 Unicode,
Inc." Every row of that file whose source is in the slug alphabet:

    0030 ;  004F    # DIGIT ZERO → LATIN CAPITAL LETTER O
    0031 ;  006C    # DIGIT ONE → LATIN SMALL LETTER L
    0049 ;  006C    # LATIN CAPITAL LETTER I → LATIN SMALL LETTER L
    006D ;  0072 006E  # LATIN SMALL LETTER M → LATIN SMALL LETTER R, LATIN SMALL LETTER N
"""

from __future__ import annotations

import unicodedata

_PROTOTYPES = {"0": "O", "1": "l", "I": "l", "m": "rn"}
_SEPARATORS = str.maketrans("", "", "-_")


def skeleton(value: str) -> str:
    """UTS #39 ``skeleton(X)`` for strings of the slug alphabet."""
    decomposed = unicodedata.normalize("NFD", value)
    mapped = "".join(_PROTOTYPES.get(ch, ch) for ch in decomposed)
    return unicodedata.normalize("NFD", mapped)


def slug_keys(value: str) -> frozenset[str]:
    """The keys under which ``value`` may be confused with another slug.

    The skeleton of the slug as typed and of its lower-case form, each case-folded and with its
    separators dropped: ``officiaI`` (capital i) meets ``official`` through the first, ``OFFICIAL``
    through the second.
    """
    return frozenset(
        skeleton(skeleton(form).casefold()).translate(_SEPARATORS)
        for form in (value, value.casefold())
    )


def slugs_confusable(a: str, b: str) -> bool:
    """Whether slugs ``a`` and ``b`` look alike (equal ones included)."""
    return not slug_keys(a).isdisjoint(slug_keys(b))
