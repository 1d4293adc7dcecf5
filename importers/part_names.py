"""Part names as the STEP readers make them: cleaned of OCCT's decorations, made unique.

Shared by :mod:`.step` (XCAF labels) and :mod:`.step_kinematics` (the Part-21 text), so
that both name the same instance the same way.
"""

from __future__ import annotations

import re
from typing import List, Optional, Sequence

__all__ = ["clean_name", "uniquify", "decode_c1"]

_AUTO_NAME = re.compile(r"^=>\[[0-9:]+\]$")  # names OCCT makes up for unnamed instances
#: C1 control characters: ISO 10303-21's ``\X\hh`` is ISO 8859-1, where 0x80–0x9F are controls
#: that no name means; writers that put them there meant the DOS code page 850 (``Pe\X\87a`` is
#: "Peça" in the gripper sample's file), so they are read as cp850
_C1 = re.compile("[\u0080-\u009f]")


def clean_name(raw: Optional[str]) -> Optional[str]:
    """The name without OCCT's ``->`` prefix, ``/`` replaced by ``_`` (it separates the
    hierarchy in part paths), C1 control characters read as code page 850 (see ``_C1``);
    None for a missing, empty or OCCT-made-up name."""
    if not isinstance(raw, str):
        return None
    name = raw.strip()
    if name.startswith("->"):
        name = name[2:].strip()
    if not name or _AUTO_NAME.match(name):
        return None
    return decode_c1(name).replace("/", "_")


def decode_c1(text: str) -> str:
    """``text`` with its C1 control characters read as code page 850 (see ``_C1``); model files
    written against the names of earlier versions (``Pe\u0087a``) name the same parts."""
    return _C1.sub(lambda m: bytes([ord(m.group())]).decode("cp850"), text)


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
