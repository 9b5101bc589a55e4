"""Rule ids: the one pattern they follow, and ids derived from file paths.

A derived id must be valid (letters, digits, ``. _ / -``, starting alphanumeric), stable (the
same path always gives the same id, on every platform) and recognisable. Accented letters are
transliterated (``über`` -> ``uber``); a path whose letters cannot all be written in ASCII
(``日本.md``) keeps what it can and gets a short hash of the name, so two such files never share
an id. Paths that already are valid ids are left as they are.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

VALID_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]*$")
"""What a rule id may be."""

_NOT_ID = re.compile(r"[^A-Za-z0-9._/-]+")
_EXTENSION = re.compile(r"\.(md|mdc|markdown)$", re.IGNORECASE)
_LETTERS = str.maketrans(
    {"ß": "ss", "æ": "ae", "Æ": "AE", "œ": "oe", "Œ": "OE", "ø": "o", "Ø": "O", "ł": "l", "Ł": "L"}
)
"""Letters NFKD does not split into an ASCII letter and an accent."""


def transliterate(text: str) -> tuple[str, bool]:
    """``text`` with accents dropped (NFKD); and whether a letter or digit had no ASCII form."""
    decomposed = unicodedata.normalize("NFKD", text.translate(_LETTERS))
    kept = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    lossy = any(not ch.isascii() and ch.isalnum() for ch in kept)
    return kept, lossy


def derive_id(text: str) -> str:
    """A valid rule id made from a path-like string: anything else becomes '-'.

    Where letters were lost, or nothing usable is left, an 8-hex hash of the (NFC) text is
    appended, or stands alone as ``rule-<hash>``.
    """
    kept, lossy = transliterate(text)
    cleaned = _NOT_ID.sub("-", kept).strip("-./_")
    if lossy or not cleaned:
        tag = hashlib.sha256(unicodedata.normalize("NFC", text).encode("utf-8")).hexdigest()[:8]
        cleaned = f"{cleaned}-{tag}" if cleaned else f"rule-{tag}"
    return cleaned


def rule_path_id(path: str) -> str:
    """The id a rule document's path gives it, and the path part of its directive ids.

    The relative path without its extension, with '/'; made valid by :func:`derive_id` only
    when it is not already (``sub dir/x.md`` -> ``sub-dir/x``).
    """
    raw = _EXTENSION.sub("", path.replace("\\", "/"))
    return raw if VALID_ID.match(raw) else derive_id(raw)
