"""What the interference check reports: one :class:`PairInterference` per pair found and the
:class:`InterferenceReport` over a motion."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional, Tuple

@dataclass(frozen=True)
class PairInterference:
    """What was found for one pair of parts.

    Attributes
    ----------
    parts : (name_a, name_b)
    kind : ``"penetration"`` (the parts overlap), ``"contact"`` (they touch), ``"clearance"``
        (closer than the threshold but not touching) or ``"near"`` (within ``near``, no
        violation).
    first_time : float or None
        s; the first time the pair is closer than its threshold (None for ``near``).
    min_distance : float
        m; the smallest exact distance over the motion (0 when touching or overlapping).
    min_distance_time : float
        s; when it occurs (the first time of contact when it is 0).
    depth : float
        m; the largest penetration depth found (defined in :mod:`cadmotion.plugin.interference`), 0 unless
        ``kind == "penetration"``.
    depth_time : float or None
        s; when that depth was found.
    threshold : float
        m; the clearance the pair was checked against.
    joints : tuple of str
        Joints that connect the two parts (pairs with joints are checked only with
        ``exclude_jointed=False``).
    moving : bool
        False when the two parts keep the same relative pose over the whole motion.
    message : str
        One readable line.
    """

    parts: Tuple[str, str]
    kind: str
    first_time: Optional[float]
    min_distance: float
    min_distance_time: float
    depth: float = 0.0
    depth_time: Optional[float] = None
    threshold: float = 0.0
    joints: Tuple[str, ...] = ()
    moving: bool = True
    message: str = ""

    def to_dict(self):
        """A JSON-friendly dict (lists instead of tuples)."""
        d = asdict(self)
        d["parts"] = list(self.parts)
        d["joints"] = list(self.joints)
        return d


@dataclass
class InterferenceReport:
    """Result of :func:`find_interference`.

    Attributes
    ----------
    collisions : pairs closer than their threshold along the motion (moving pairs, and
        static pairs when ``check_static``), ordered by first time.
    near : pairs that came within ``near`` without violating their threshold.
    static : pairs that never move relative to each other and touch or overlap (checked at
        the first frame; not collisions unless ``check_static``).
    skipped : parts without geometry (not checked).
    stats : counts (``parts`` with geometry, ``shapes`` distinct, ``frames``, ``pairs``,
        ``pairs_excluded`` (jointed or ignored), ``pairs_static``, ``pairs_moving``,
        ``candidates`` (pair-intervals kept by the broad phase), ``mesh_queries``,
        ``exact_distances`` (OCCT distance calls), ``classifications`` (OCCT point
        classifications), ``unproven_intervals``) and seconds (``seconds_prepare``,
        ``seconds_broad``, ``seconds_narrow``, ``seconds_total``).
    messages : notes for the user.
    """

    collisions: List[PairInterference] = field(default_factory=list)
    near: List[PairInterference] = field(default_factory=list)
    static: List[PairInterference] = field(default_factory=list)
    skipped: List[str] = field(default_factory=list)
    stats: Dict[str, float] = field(default_factory=dict)
    messages: List[str] = field(default_factory=list)

    @property
    def collides(self):
        """True when any pair violates its threshold."""
        return bool(self.collisions)

    @property
    def first(self):
        """The earliest collision, or None."""
        return self.collisions[0] if self.collisions else None

    def pair(self, a, b):
        """The entry for parts ``a`` and ``b`` (either order) in any list; KeyError if none."""
        for p in self.collisions + self.near + self.static:
            if set(p.parts) == {a, b}:
                return p
        raise KeyError(f"no interference entry for {a!r} and {b!r}")

    def to_dicts(self):
        """The collisions as JSON-friendly dicts (what ``CheckReport.collisions`` holds)."""
        return [p.to_dict() for p in self.collisions]

    def to_dict(self):
        """The report as plain data (JSON-ready): collisions, near and static pairs, skipped pairs, stats, messages."""
        return dict(collisions=self.to_dicts(), near=[p.to_dict() for p in self.near],
                    static=[p.to_dict() for p in self.static], skipped=list(self.skipped),
                    stats=dict(self.stats), messages=list(self.messages))

    def summary(self):
        """Readable lines: one per collision, then near and static pairs."""
        lines = []
        if self.collisions:
            lines.append(f"interference: {len(self.collisions)} colliding pair(s)")
            lines += ["  " + p.message for p in self.collisions]
        else:
            lines.append("interference: no collisions")
        if self.near:
            lines.append(f"close pairs ({len(self.near)}):")
            lines += ["  " + p.message for p in self.near]
        if self.static:
            lines.append(f"{len(self.static)} pair(s) touch without moving relative to each other "
                         "(fastened; not counted)")
        lines += self.messages
        return "\n".join(lines)


def format_mm(x):
    """A length in metres written in millimetres, 4 significant digits."""
    return f"{1e3 * x:.4g} mm"
