"""Part names as the STEP readers make them: cleaned of OCCT's decorations, made unique.

Shared by :mod:`.step` (XCAF labels) and :mod:`.step_kinematics` (the Part-21 text), so
that both name the same instance the same way.
"""

from __future__ import annotations

import re
from typing import List, Optional, Sequence

__all__ = ["clean_name", "uniquify"]

_AUTO_NAME = re.compile(r"^=>\[[0-9:]+\]$")  # names OCCT makes up for unnamed instances


def clean_name(raw: Optional[str]) -> Optional[str]:
    """The name without OCCT's ``->`` prefix, ``/`` replaced by ``_`` (it separates the
    hierarchy in part paths); None for a missing, empty or OCCT-made-up name."""
    if not isinstance(raw, str):
        return None
    name = raw.strip()
    if name.startswith("->"):
        name = name[2:].strip()
    if not name or _AUTO_NAME.match(name):
        return None
    return name.replace("/", "_")


def uniquify(names: Sequence[str]) -> List[str]:
    """Make names unique in order: n, n_2, n_3, ...; never reuse a name in ``names``."""
    taken, used, out = set(names), set(), []
    for n in names:
        candidate = n
        if n in used:
            k = 2
            while f"{n}_{k}" in used or f"{n}_{k}" in taken:
                k += 1
            candidate = f"{n}_{k}"
        used.add(candidate)
        out.append(candidate)
    return out
