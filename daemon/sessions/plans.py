"""How an agent's stated plan is read and compared, live (signals) and offline (evaluation).

The planning-framework paper's agents announce their next action in their reasoning ("… the
next action I will perform is ```click [1234]```"); plans and actions are compared after
:func:`normalize`.
"""

from __future__ import annotations

import re
import string
import unicodedata

_PUNCT = str.maketrans({c: " " for c in string.punctuation})
_PLANNED = re.compile(r"next action I will perform is\s*`{1,3}\s*(.+?)\s*`{1,3}", re.I | re.S)


def normalize(text: str | None) -> str:
    """Case-folded, punctuation-free, whitespace-collapsed text (NFKC)."""
    if not text:
        return ""
    t = unicodedata.normalize("NFKC", text).casefold().translate(_PUNCT)
    return " ".join(t.split())


def planned_from_thought(thought: str | None) -> str | None:
    """The action an agent announced in its reasoning, or ``None``."""
    if not thought:
        return None
    found = _PLANNED.findall(thought)
    return found[-1].strip() if found else None
