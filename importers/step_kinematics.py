"""Read ISO 10303-105 kinematics (the kinematic pairs of AP214/AP242) from a STEP file.

OCCT parses these entities (``StepKinematics_*``) but neither OCP 7.9 nor XCAF exposes
them: the Python wheel has no ``StepKinematics`` module, so a parsed pair can be neither
down-cast nor read.  This module therefore reads the ISO 10303-21 text itself, with a
small whitelist parser (no ``eval``): records ``#id = NAME(...);`` and complex records
``#id = ( A(...) B(...) );`` are indexed in one pass and parsed lazily, only for the
entities the kinematic structure reaches.  The attribute order of every entity follows
OCCT's readers (``RWStepKinematics_RW*.cxx``), which follow the AP242 schema; simple
records are split into their supertypes' attributes, so complex records (the form some
exporters use for pairs with actuators or ranges) are read by the same code.

What is read
------------
``MECHANISM_REPRESENTATION``, ``KINEMATIC_TOPOLOGY_STRUCTURE``, ``KINEMATIC_LINK``,
``KINEMATIC_JOINT``, the kinematic pairs, ``RIGID_LINK_REPRESENTATION``,
``PAIR_REPRESENTATION_RELATIONSHIP``, ``KINEMATIC_LINK_REPRESENTATION_ASSOCIATION``,
``CONTEXT_DEPENDENT_KINEMATIC_LINK_REPRESENTATION``,
``PRODUCT_DEFINITION_RELATIONSHIP_KINEMATICS`` and
``KINEMATIC_PROPERTY_MECHANISM_REPRESENTATION`` (its ``base`` link is the ground).

From a pair to two parts
------------------------
A pair's ``joint`` is a ``KINEMATIC_JOINT(name, edge_start, edge_end)`` between two
``KINEMATIC_LINK`` s; ``transform_item_1`` is the pair frame in the first link
(``edge_start``), ``transform_item_2`` in the second.  A link is found in the assembly
through its link representation (``RIGID_LINK_REPRESENTATION(.., represented_link)``),
the ``KINEMATIC_LINK_REPRESENTATION_ASSOCIATION`` that relates it to a shape
representation, the ``SHAPE_DEFINITION_REPRESENTATION`` of that shape representation
(directly, or through untransformed ``SHAPE_REPRESENTATION_RELATIONSHIP`` s) and the
product behind it.  The product is matched with :attr:`StepAssembly.product_names`
(OCCT's product name: ``PRODUCT.name``, else its id).  When the product has several
instances, the ``CONTEXT_DEPENDENT_KINEMATIC_LINK_REPRESENTATION`` of the association
names the ``NEXT_ASSEMBLY_USAGE_OCCURRENCE``, whose instance name (OCCT's rule:
description, else name, else id) picks the part.  The link representation shares the
coordinate space of the shape representation (the association carries no
transformation), which is the part frame of :class:`StepAssembly`.  A link whose
product is a sub-assembly is not supported (an error says so).

Pairs -> cadmotion joints
-------------------------
=====================================  ==================================================
REVOLUTE_PAIR                          revolute (z = pair axis)
PRISMATIC_PAIR                         prismatic (z = slide direction)
CYLINDRICAL_PAIR                       cylindrical
SPHERICAL_PAIR                         spherical
UNIVERSAL_PAIR                         universal: Z_i = z of frame 1 (first rotation),
                                       Z_j = x of frame 2 (second rotation); a skew
                                       angle other than 0 is not supported
PLANAR_PAIR                            planar (z = plane normal)
FULLY_CONSTRAINED_PAIR                 fixed
SCREW_PAIR (pitch, length per turn)    screw (params pitch)
GEAR_PAIR (radius_first/second_link)   gear coupler of the two revolute joints that hold
                                       the gears to a common carrier; parallel axes only
RACK_AND_PINION_PAIR (pinion_radius)   rack-and-pinion coupler of the pinion's revolute
                                       and the rack's prismatic joint
LOW_ORDER_KINEMATIC_PAIR (t_x..r_z)    by its free directions (r_z: revolute, t_z:
                                       prismatic, t_z r_z: cylindrical, r_x r_y r_z:
                                       spherical, r_x r_z: universal, t_x t_y r_z: planar,
                                       none: fixed)
UNCONSTRAINED_PAIR                     no joint
=====================================  ==================================================

The ``*_WITH_RANGE`` forms give ``limits`` (``angle`` for revolute, cylindrical, planar
and screw pairs, ``disp`` for prismatic and cylindrical ones; limits of other
coordinates have no cadmotion coordinate and are ignored).  Any other pair
(``POINT_ON_SURFACE_PAIR``, ``SLIDING_CURVE_PAIR``, ``HOMOKINETIC_PAIR``, ...) raises
:class:`~cadmotion.errors.CadImportError` naming it, or is skipped with a
:class:`StepKinematicsWarning` when ``unsupported="skip"``.

Marker frames
-------------
``markers[0]`` is the pair frame in the first part exactly as written.  The spec
expects the two frames to coincide at the initial pose, where ISO 10303-105 makes them
coincide at zero pair values; so, as the FCStd and .asmt importers do
(:func:`cadmotion.importers.asmt.zero_joint_coordinates`), the second frame is turned
about z and moved along z by the pair's value at the assembly's pose, and range limits
are shifted by the same amounts.  A pair that does not hold at the assembly's pose by
more than ``tol`` (1e-6 m or rad) is reported with a :class:`StepKinematicsWarning`.

Gear and rack signs are taken from the geometry, not from a convention: external
gears (axis distance r1 + r2) turn in opposite senses, internal ones (distance
|r1 - r2|, or radii of opposite signs) in the same sense; a rack moves the way the
pinion's pitch circle moves where it touches the rack (the rack is on the side of its
pair frame origin, else of its centre of mass).

Units
-----
Placements are converted with the length unit of the context of the link
representation that holds them; pair parameters (pitch, radii, limits) with the units
of the mechanism representation's context (else the first link representation's);
a context without units falls back to :attr:`StepAssembly.unit_scale` and radians.
Everything returned is in metres and radians.

Example
-------
>>> from cadmotion.importers.step import read_step
>>> from cadmotion.importers.step_kinematics import read_step_kinematics
>>> asm = read_step("arm.step")                       # doctest: +SKIP
>>> joints = read_step_kinematics("arm.step", asm)    # doctest: +SKIP
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Tuple

import numpy as np

from ..errors import CadImportError
from ..kernel.rotations import quat_to_matrix
from ..kernel.spec import JointSpec, MechanismSpec
from .asmt import align_axes, joint_violations, zero_joint_coordinates
from .part_names import uniquify
from .step_links import Links
from .step_part21 import LINK_REPRESENTATIONS, Part21Index, Ref
from .step_units import Units, axis2_placement, frame_arrays, make_frame

__all__ = [
    "read_step_kinematics",
    "read_step_mechanism",
    "StepMechanism",
    "StepKinematicsWarning",
    "PAIR_TYPES",
    "UNSUPPORTED_PAIR_TYPES",
]


class StepKinematicsWarning(UserWarning):
    """Something in a file's kinematics was read with a fallback or skipped."""


#: Pair entity (most specific first) -> cadmotion joint type ("" = no joint;
#: "low-order" = decided by the freedoms t_x .. r_z).
PAIR_TYPES: Mapping[str, str] = {
    "REVOLUTE_PAIR_WITH_RANGE": "revolute",
    "REVOLUTE_PAIR": "revolute",
    "PRISMATIC_PAIR_WITH_RANGE": "prismatic",
    "PRISMATIC_PAIR": "prismatic",
    "CYLINDRICAL_PAIR_WITH_RANGE": "cylindrical",
    "CYLINDRICAL_PAIR": "cylindrical",
    "SPHERICAL_PAIR_WITH_RANGE": "spherical",
    "SPHERICAL_PAIR": "spherical",
    "UNIVERSAL_PAIR_WITH_RANGE": "universal",
    "UNIVERSAL_PAIR": "universal",
    "PLANAR_PAIR_WITH_RANGE": "planar",
    "PLANAR_PAIR": "planar",
    "FULLY_CONSTRAINED_PAIR": "fixed",
    "UNCONSTRAINED_PAIR": "",
    "SCREW_PAIR_WITH_RANGE": "screw",
    "SCREW_PAIR": "screw",
    "GEAR_PAIR_WITH_RANGE": "gear",
    "GEAR_PAIR": "gear",
    "RACK_AND_PINION_PAIR_WITH_RANGE": "rack-and-pinion",
    "RACK_AND_PINION_PAIR": "rack-and-pinion",
    "LOW_ORDER_KINEMATIC_PAIR_WITH_RANGE": "low-order",
    "LOW_ORDER_KINEMATIC_PAIR": "low-order",
}

#: Pairs of ISO 10303-105 that cadmotion's joint library cannot express (yet).
UNSUPPORTED_PAIR_TYPES: Tuple[str, ...] = (
    "SPHERICAL_PAIR_WITH_PIN_AND_RANGE", "SPHERICAL_PAIR_WITH_PIN", "HOMOKINETIC_PAIR",
    "POINT_ON_SURFACE_PAIR_WITH_RANGE", "POINT_ON_SURFACE_PAIR",
    "POINT_ON_PLANAR_CURVE_PAIR_WITH_RANGE", "POINT_ON_PLANAR_CURVE_PAIR",
    "PLANAR_CURVE_PAIR_RANGE", "PLANAR_CURVE_PAIR", "SLIDING_CURVE_PAIR",
    "ROLLING_CURVE_PAIR", "SURFACE_PAIR_WITH_RANGE", "SURFACE_PAIR", "SLIDING_SURFACE_PAIR",
    "ROLLING_SURFACE_PAIR", "LINEAR_FLEXIBLE_AND_PINION_PAIR",
    "LINEAR_FLEXIBLE_AND_PLANAR_CURVE_PAIR",
)

# freedoms (t_x, t_y, t_z, r_x, r_y, r_z) of a plain LOW_ORDER_KINEMATIC_PAIR -> joint type
_FREEDOMS = {
    (False, False, False, False, False, False): "fixed",
    (False, False, False, False, False, True): "revolute",
    (False, False, True, False, False, False): "prismatic",
    (False, False, True, False, False, True): "cylindrical",
    (False, False, False, True, True, True): "spherical",
    (False, False, False, True, False, True): "universal",
    (True, True, False, False, False, True): "planar",
    (True, True, True, True, True, True): "",
}

_TOL = 1e-6  # m or rad: a pair that misses the assembly's pose by more is reported


# ===================================================================== the result


@dataclass(frozen=True)
class StepMechanism:
    """The kinematics of a STEP file, mapped onto the parts of its :class:`StepAssembly`.

    Attributes
    ----------
    joints : tuple of JointSpec
        One per supported pair, in file order (SI units, markers in part frames).
    ground : tuple of str
        Parts of the base link(s) of ``KINEMATIC_PROPERTY_MECHANISM_REPRESENTATION``;
        a model should fix them.
    links : tuple of (link name, part name)
        How the file's links were matched to parts.
    name : str
        Name of the (first) mechanism representation.
    warnings : tuple of str
        Messages also issued as :class:`StepKinematicsWarning`.
    """

    joints: Tuple[JointSpec, ...] = ()
    ground: Tuple[str, ...] = ()
    links: Tuple[Tuple[str, str], ...] = ()
    name: str = ""
    warnings: Tuple[str, ...] = field(default=(), compare=False)


# ===================================================================== pairs -> joints


@dataclass
class _Pair:
    id: int
    leaf: str
    kind: str  # cadmotion type, "" (no joint), "gear", "rack-and-pinion"
    f: dict
    name: str
    parts: Tuple[str, str]
    links: Tuple[int, int]
    frames: Tuple[Tuple[np.ndarray, np.ndarray], Tuple[np.ndarray, np.ndarray]]
    length: float  # m per length unit of the pair's parameters
    angle: float  # rad per angle unit of the pair's parameters
    source: str


def _find_pairs(model: Part21Index) -> List[Tuple[int, str, bool]]:
    """(id, most specific pair type, supported) of every kinematic pair, in file order."""
    ids = set(model.ids(*PAIR_TYPES, *UNSUPPORTED_PAIR_TYPES, "KINEMATIC_PAIR"))
    for t, tids in model.by_type.items():
        if t.endswith("_PAIR") or t.endswith("_PAIR_WITH_RANGE"):
            ids.update(tids)
    out = []
    for pid in sorted(ids):
        names = model.record(pid).partials
        bad = next((t for t in UNSUPPORTED_PAIR_TYPES if t in names), None)
        good = next((t for t in PAIR_TYPES if t in names), None)
        if bad is None and good is not None:
            out.append((pid, good, True))
            continue
        other = [n for n in names if n.endswith("_PAIR") or n.endswith("_PAIR_WITH_RANGE")]
        out.append((pid, bad or (other[-1] if other else "KINEMATIC_PAIR"), False))
    return out


def _limit(model, f, eid, key, scale):
    v = model.real(f.get(key), eid, key, optional=True)
    return None if v is None else v * scale


class _Reader:
    def __init__(self, path: Path, text: str, asm, unsupported: str):
        self.where = str(path)
        self.model = Part21Index(text, self.where)
        self.asm = asm
        self.unsupported = unsupported
        self.units = Units(self.model, getattr(asm, "unit_scale", None))
        self.links = Links(self.model, asm)
        self.messages: List[str] = []
        self.pose = {p.name: (quat_to_matrix(p.orientation), np.array(p.position, float))
                     for p in asm.parts}
        self._mech_of_item: Optional[Dict[int, int]] = None
        self._prr_of_pair: Optional[Dict[int, List[int]]] = None

    def warn(self, message):
        self.messages.append(f"{self.where}: {message}")

    # ------------------------------------------------------------------ context lookups
    def _mechanisms(self):
        if self._mech_of_item is None:
            self._mech_of_item, self._prr_of_pair = {}, {}
            for prr in self.model.ids("PAIR_REPRESENTATION_RELATIONSHIP"):
                _, f = self.model.fields(prr, ("PAIR_REPRESENTATION_RELATIONSHIP",))
                op = f["transformation_operator"]
                if isinstance(op, Ref):
                    self._prr_of_pair.setdefault(int(op), []).append(prr)
            for mid in self.model.ids("MECHANISM_REPRESENTATION"):
                _, f = self.model.fields(mid, ("MECHANISM_REPRESENTATION",))
                for item in f["items"] if isinstance(f["items"], list) else ():
                    if isinstance(item, Ref):
                        self._mech_of_item.setdefault(int(item), mid)
        return self._mech_of_item, self._prr_of_pair

    def mechanism_context(self, pid):
        mech_of_item, prr_of_pair = self._mechanisms()
        for key in [pid] + prr_of_pair.get(pid, []):
            mid = mech_of_item.get(key)
            if mid is not None:
                _, f = self.model.fields(mid, ("MECHANISM_REPRESENTATION",))
                return f["context_of_items"]
        return None

    def mechanism_name(self) -> str:
        ids = self.model.ids("MECHANISM_REPRESENTATION")
        if len(ids) > 1:
            self.warn(f"the file holds {len(ids)} mechanism representations "
                      f"({', '.join('#' + str(i) for i in ids)}); the pairs of all are read")
        if not ids:
            return ""
        _, f = self.model.fields(ids[0], ("MECHANISM_REPRESENTATION",))
        return self.model.string(f["name"])

    # ------------------------------------------------------------------ ground
    def ground(self) -> Tuple[str, ...]:
        out = []
        for kid in self.model.ids("KINEMATIC_PROPERTY_MECHANISM_REPRESENTATION"):
            _, f = self.model.fields(kid, ("KINEMATIC_PROPERTY_MECHANISM_REPRESENTATION",))
            base = f["base"]
            if base is None:
                continue
            base = self.model.ref(base, kid, "base")
            _, rf = self.model.fields(base, LINK_REPRESENTATIONS, kid, what="a link representation")
            link = self.model.ref(rf["represented_link"], int(base), "represented_link")
            out.append(self.links.part_of(link))
        return tuple(dict.fromkeys(out))

    # ------------------------------------------------------------------ one pair
    def read_pair(self, pid: int, leaf: str) -> _Pair:
        m = self.model
        _, f = m.fields(pid, (leaf,))
        joint = m.ref(f["joint"], pid, "joint")
        _, jf = m.fields(joint, ("KINEMATIC_JOINT",), pid, what="KINEMATIC_JOINT")
        l1 = m.ref(jf["edge_start"], int(joint), "edge_start")
        l2 = m.ref(jf["edge_end"], int(joint), "edge_end")
        for link in (l1, l2):
            m.fields(link, ("KINEMATIC_LINK",), int(joint), what="KINEMATIC_LINK")
        p1, p2 = self.links.part_of(l1), self.links.part_of(l2)
        name = (m.string(f["name"]) or m.string(jf["name"]) or m.string(f["idt_name"])
                or f"{leaf.lower()}_{pid}")
        if p1 == p2:
            raise CadImportError(
                f"pair #{pid} {name!r} joins links #{int(l1)} and #{int(l2)}, which are both "
                f"part {p1!r}", where=self.where,
                hint="each link must be a different part")
        items = (m.ref(f["transform_item_1"], pid, "transform_item_1"),
                 m.ref(f["transform_item_2"], pid, "transform_item_2"))
        reps = (self.links.reps_of_link(l1), self.links.reps_of_link(l2))

        def holder(item, rep_ids):
            for rid in rep_ids:
                its = self.links.rep(rid)["items"]
                if isinstance(its, list) and any(isinstance(i, Ref) and int(i) == int(item)
                                                 for i in its):
                    return rid
            return None

        h = [holder(items[0], reps[0]), holder(items[1], reps[1])]
        if h[0] is None and h[1] is None:
            swapped = (holder(items[0], reps[1]), holder(items[1], reps[0]))
            if swapped[0] is not None and swapped[1] is not None:
                self.warn(f"pair #{pid} {name!r}: transform_item_1 is in the second link's "
                          "representation and transform_item_2 in the first's; read swapped")
                items = items[::-1]
                h = [swapped[1], swapped[0]]
        ctx = [self.links.rep(h[k] if h[k] is not None else reps[k][0])["context_of_items"]
               for k in range(2)]
        frames = []
        for k in range(2):
            length, _ = self.units.scales(ctx[k], what=f"pair #{pid} {name!r}")
            frames.append(axis2_placement(m, items[k], length, pid))
        length, angle = self.units.scales(self.mechanism_context(pid), ctx[0], ctx[1],
                                          what=f"pair #{pid} {name!r}")
        kind = PAIR_TYPES[leaf]
        if kind == "low-order":
            free = tuple(f[k] for k in ("t_x", "t_y", "t_z", "r_x", "r_y", "r_z"))
            if not all(isinstance(v, bool) for v in free):
                raise CadImportError(
                    f"pair #{pid} {leaf}: the freedoms t_x .. r_z must be .T. or .F., got "
                    f"{free}", where=self.where,
                    hint="the file does not follow the ISO 10303-105 entity layouts")
            if free not in _FREEDOMS:
                pattern = " ".join(k for k, v in zip(("t_x", "t_y", "t_z", "r_x", "r_y", "r_z"),
                                                     free) if v) or "none"
                raise CadImportError(
                    f"pair #{pid} {leaf} {name!r} leaves {pattern} free, which is no cadmotion "
                    "joint", where=self.where,
                    hint="cadmotion reads r_z, t_z, t_z r_z, r_x r_y r_z, r_x r_z, t_x t_y r_z "
                         "or no freedom")
            kind = _FREEDOMS[free]
        return _Pair(pid, leaf, kind, f, name, (p1, p2), (int(l1), int(l2)), tuple(frames),
                     length, angle, f"{self.where}: #{pid} {leaf}")

    # ------------------------------------------------------------------ low-order joints
    def joint(self, pr: _Pair) -> JointSpec:
        m, f, pid = self.model, pr.f, pr.id
        (R1, o1), (R2, o2) = pr.frames
        jtype = pr.kind
        params: List[Tuple[str, float]] = []
        if jtype == "universal":
            skew = m.real(f.get("input_skew_angle"), pid, "input_skew_angle", optional=True)
            if skew is not None and abs(skew * pr.angle) > 1e-12:
                raise CadImportError(
                    f"pair #{pid} {pr.leaf} {pr.name!r} has a skew angle of "
                    f"{math.degrees(skew * pr.angle):.6g} deg; cadmotion's universal joint "
                    "has perpendicular axes", where=self.where,
                    hint="model it with a constant-velocity or angle joint in a model file")
            R2 = R2[:, [1, 2, 0]]  # z_j = x of the second frame (the second rotation axis)
        if jtype == "screw":
            params.append(("pitch", m.real(f["pitch"], pid, "pitch") * pr.length))
        X_WPi, X_WPj = self.pose[pr.parts[0]], self.pose[pr.parts[1]]
        R_WMi, R_WMj = X_WPi[0] @ R1, X_WPj[0] @ R2
        R2 = align_axes(jtype, R_WMi, R_WMj, R2)
        spec = JointSpec(pr.name, jtype, pr.parts, (make_frame(R1, o1), make_frame(R2, o2)),
                         params=tuple(params), source=pr.source)
        check = spec if jtype != "screw" else JointSpec(pr.name, "cylindrical", pr.parts,
                                                        spec.markers)
        violations = joint_violations(MechanismSpec(parts=self.asm.parts, joints=(check,)),
                                      tol=_TOL)
        if jtype == "universal":
            c = abs(float(R_WMi[:, 2] @ (X_WPj[0] @ R2)[:, 2]))
            if c > _TOL:
                violations.append((pr.name, "cross", math.asin(min(1.0, c))))
        if jtype == "screw" and not violations:
            (_, _), (_, _), off = zero_joint_coordinates("cylindrical", X_WPi, (R1, o1), X_WPj, (R2, o2))
            miss = abs(off["disp"] - params[0][1] / (2 * math.pi) * off["angle"])
            if miss > _TOL:
                violations.append((pr.name, "screw", miss))
        if violations:
            what = ", ".join(f"{w} {v:.3g}" for _, w, v in violations)
            self.warn(f"pair #{pid} {pr.leaf} {pr.name!r} does not hold at the assembly's pose "
                      f"({what}; m or rad)")
        zero_as = "cylindrical" if jtype == "screw" else jtype
        (R1, o1), (R2, o2), offsets = zero_joint_coordinates(zero_as, X_WPi, (R1, o1), X_WPj,
                                                             (R2, o2))
        limits = self._limits(pr, jtype, offsets)
        return JointSpec(pr.name, jtype, pr.parts, (make_frame(R1, o1), make_frame(R2, o2)),
                         params=tuple(params), limits=limits, source=pr.source)

    def _limits(self, pr: _Pair, jtype, offsets):
        m, f, pid = self.model, pr.f, pr.id
        if not pr.leaf.endswith("_WITH_RANGE"):
            return ()
        pairs = []
        if jtype in ("revolute", "cylindrical", "planar", "screw"):
            keys = ("lower_limit_actual_rotation", "upper_limit_actual_rotation")
            if pr.leaf == "LOW_ORDER_KINEMATIC_PAIR_WITH_RANGE":
                keys = ("lower_limit_actual_rotation_z", "upper_limit_actual_rotation_z")
            pairs.append(("angle", keys, pr.angle))
        if jtype in ("prismatic", "cylindrical"):
            keys = ("lower_limit_actual_translation", "upper_limit_actual_translation")
            if pr.leaf == "LOW_ORDER_KINEMATIC_PAIR_WITH_RANGE":
                keys = ("lower_limit_actual_translation_z", "upper_limit_actual_translation_z")
            pairs.append(("disp", keys, pr.length))
        out = []
        for coord, (lo_key, hi_key), scale in pairs:
            lo = _limit(m, f, pid, lo_key, scale)
            hi = _limit(m, f, pid, hi_key, scale)
            if lo is None and hi is None:
                continue
            off = offsets.get(coord, 0.0)
            lo = -math.inf if lo is None else lo - off
            hi = math.inf if hi is None else hi - off
            if lo > hi:
                raise CadImportError(f"pair #{pid} {pr.name!r}: lower limit {lo_key} is above "
                                     f"the upper limit", where=self.where,
                                     hint="check the range of the pair")
            out.append((coord, (lo, hi)))
        return tuple(out)

    # ------------------------------------------------------------------ couplers
    def _carrier(self, part, ground):
        return "<ground>" if part in ground else part

    def _holding(self, part, kinds, joints, ground):
        """[(joint, carrier)] of the joints of type ``kinds`` holding ``part``."""
        out = []
        for j in joints:
            if j.type in kinds and part in j.parts:
                other = j.parts[1] if j.parts[0] == part else j.parts[0]
                out.append((j, self._carrier(other, ground)))
        return out

    def _axis(self, j):
        R_P, p_P = self.pose[j.parts[0]]
        R_M, p_M = frame_arrays(j.markers[0])
        return (R_P @ R_M)[:, 2], p_P + R_P @ p_M

    @staticmethod
    def _side(j, part):
        return 1.0 if j.parts[1] == part else -1.0

    def gear(self, pr: _Pair, joints, ground) -> JointSpec:
        m, f, pid = self.model, pr.f, pr.id
        r1 = m.real(f["radius_first_link"], pid, "radius_first_link") * pr.length
        r2 = m.real(f["radius_second_link"], pid, "radius_second_link") * pr.length
        if r1 == 0.0 or r2 == 0.0:
            raise CadImportError(f"gear pair #{pid} {pr.name!r} has a zero radius",
                                 where=self.where, hint="check radius_first/second_link")
        a, b = pr.parts
        rot = ("revolute", "cylindrical")
        found = None
        for ja, ca in self._holding(a, rot, joints, ground):
            for jb, cb in self._holding(b, rot, joints, ground):
                if ca == cb and ja is not jb:
                    found = found or (ja, jb)
        if found is None:
            raise CadImportError(
                f"gear pair #{pid} {pr.name!r}: parts {a!r} and {b!r} are not both held by "
                "revolute pairs to a common part, which cadmotion's gear coupler needs",
                where=self.where, hint="add the revolute pairs of both gears to their carrier")
        ja, jb = found
        za, ca = self._axis(ja)
        zb, cb = self._axis(jb)
        cos = float(za @ zb)
        if abs(abs(cos) - 1.0) > 1e-6:
            raise CadImportError(
                f"gear pair #{pid} {pr.name!r}: the gear axes are not parallel (bevel or "
                "crossed gears), which is not supported", where=self.where,
                hint="only spur and helical gears on parallel axes are read")
        dvec = cb - ca
        d = float(np.linalg.norm(dvec - (dvec @ za) * za))
        ext, internal = abs(d - (abs(r1) + abs(r2))), abs(d - abs(abs(r1) - abs(r2)))
        is_internal = (r1 * r2 < 0.0) or internal < ext
        miss = internal if is_internal else ext
        if miss > max(_TOL, 1e-3 * (abs(r1) + abs(r2))):
            self.warn(f"gear pair #{pid} {pr.name!r}: the axis distance {d:.6g} m does not "
                      f"match the pitch radii {abs(r1):.6g} and {abs(r2):.6g} m; the ratio is "
                      "taken from the radii")
        ratio_file = m.real(f.get("gear_ratio"), pid, "gear_ratio", optional=True)
        if ratio_file:
            k = abs(r1 / r2)
            if min(abs(abs(ratio_file) - k), abs(abs(ratio_file) - 1.0 / k)) > 1e-6 * max(k, 1.0 / k):
                self.warn(f"gear pair #{pid} {pr.name!r}: gear_ratio {ratio_file:.6g} does not "
                          f"match the radii ({r1:.6g}, {r2:.6g}); the radii are used")
        k = (1.0 if is_internal else -1.0) * abs(r1) / abs(r2)
        ratio = k * self._side(ja, a) * self._side(jb, b) * math.copysign(1.0, cos)
        return JointSpec(pr.name, "gear", joints=(ja.name, jb.name),
                         params=(("ratio", float(ratio)),), source=pr.source)

    def rack(self, pr: _Pair, joints, ground) -> JointSpec:
        m, f, pid = self.model, pr.f, pr.id
        r = m.real(f["pinion_radius"], pid, "pinion_radius") * pr.length
        if r <= 0.0:
            raise CadImportError(f"rack and pinion pair #{pid} {pr.name!r} has pinion radius "
                                 f"{r:.6g} m", where=self.where,
                                 hint="the pinion radius must be positive")
        found = None
        for pin, rack_side in ((1, 0), (0, 1)):
            pinion, rack = pr.parts[pin], pr.parts[rack_side]
            for jq, cq in self._holding(pinion, ("revolute", "cylindrical"), joints, ground):
                for jt, ct in self._holding(rack, ("prismatic", "cylindrical"), joints, ground):
                    if cq == ct and jq is not jt and found is None:
                        found = (pinion, rack, rack_side, jq, jt)
        if found is None:
            raise CadImportError(
                f"rack and pinion pair #{pid} {pr.name!r}: one of {pr.parts[0]!r}, "
                f"{pr.parts[1]!r} needs a revolute pair and the other a prismatic pair to a "
                "common part, which cadmotion's rack-and-pinion coupler needs",
                where=self.where, hint="add the pinion's revolute and the rack's prismatic pair")
        pinion, rack, rack_side, jq, jt = found
        a, c = self._axis(jq)
        t, _ = self._axis(jt)
        if abs(float(a @ t)) > 1e-6:
            raise CadImportError(
                f"rack and pinion pair #{pid} {pr.name!r}: the rack slides along the pinion "
                "axis", where=self.where, hint="check the pairs' axes")
        R_W, p_W = self.pose[rack]
        rack_frame_origin = p_W + R_W @ pr.frames[rack_side][1]
        part = next(p for p in self.asm.parts if p.name == rack)
        com = p_W + R_W @ np.array(part.com, float)
        w = None
        for point in (rack_frame_origin, com):
            v = point - c
            v = v - (v @ a) * a - (v @ t) * t
            if np.linalg.norm(v) > 1e-9:
                w = v / np.linalg.norm(v)
                break
        if w is None:
            raise CadImportError(
                f"rack and pinion pair #{pid} {pr.name!r}: cannot tell on which side of the "
                "pinion the rack lies", where=self.where,
                hint="place the rack's pair frame on its pitch line")
        radius = self._side(jq, pinion) * self._side(jt, rack) * r * float(np.cross(a, w) @ t)
        return JointSpec(pr.name, "rack-and-pinion", joints=(jq.name, jt.name),
                         params=(("radius", float(radius)),), source=pr.source)

    # ------------------------------------------------------------------ all
    def read(self) -> StepMechanism:
        found = _find_pairs(self.model)
        name = self.mechanism_name()
        pairs: List[_Pair] = []
        for pid, leaf, supported in found:
            if not supported:
                message = (f"pair #{pid} is a {leaf}, which cadmotion cannot express; "
                           f"it reads {', '.join(sorted(set(PAIR_TYPES) - {'UNCONSTRAINED_PAIR'}))}")
                if self.unsupported == "skip":
                    self.warn(message + "; skipped")
                    continue
                raise CadImportError(message, where=self.where,
                                     hint="pass unsupported='skip' to read the other pairs, or "
                                          "define that joint in a model file")
            pairs.append(self.read_pair(pid, leaf))
        ground = self.ground()
        names = uniquify([p.name for p in pairs if p.kind])
        joints: List[JointSpec] = []
        by_id: Dict[int, JointSpec] = {}
        k = 0
        for p in pairs:
            if not p.kind:
                continue
            p.name = names[k]
            k += 1
            if p.kind not in ("gear", "rack-and-pinion"):
                by_id[p.id] = self.joint(p)
        plain = list(by_id.values())
        for p in pairs:
            if p.kind == "gear":
                by_id[p.id] = self.gear(p, plain, ground)
            elif p.kind == "rack-and-pinion":
                by_id[p.id] = self.rack(p, plain, ground)
        joints = [by_id[p.id] for p in pairs if p.id in by_id]
        links = tuple((self.model.string(self.model.fields(lid, ("KINEMATIC_LINK",))[1]["name"])
                       or f"#{lid}", part) for lid, part in sorted(self.links._part_of.items()))
        for message in self.messages:
            warnings.warn(message, StepKinematicsWarning, stacklevel=3)
        return StepMechanism(joints=tuple(joints), ground=ground, links=links, name=name,
                             warnings=tuple(self.messages))


# ===================================================================== public API

_MARKERS = (b"KINEMATIC_JOINT", b"_PAIR")


def _read_text(path: Path) -> Optional[str]:
    """The file's text, or None when it holds no kinematic entities at all (fast path)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CadImportError(f"cannot read the file: {exc.strerror or exc}", where=str(path),
                             hint="check the path and its permissions") from None
    if not all(marker in data or marker.lower() in data for marker in _MARKERS):
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def read_step_mechanism(path, step_assembly, *, unsupported: str = "error") -> StepMechanism:
    """The ISO 10303-105 kinematics of a STEP file as cadmotion joints, ground and links.

    Parameters
    ----------
    path : str or os.PathLike
        The STEP file (ISO 10303-21 text) that ``step_assembly`` was read from.
    step_assembly : StepAssembly
        :func:`cadmotion.importers.step.read_step` of the same file: its part names,
        product keys and names, placements (to express the pair frames in part frames
        and to find gear and rack geometry) and ``unit_scale`` (a fallback).
    unsupported : {"error", "skip"}
        What a pair type cadmotion cannot express does: raise, or be skipped with a
        :class:`StepKinematicsWarning`.

    Returns
    -------
    StepMechanism
        Empty (no joints) for a file without kinematic pairs.

    Raises
    ------
    CadImportError
        Malformed kinematic entities (wrong parameter counts or types, dangling
        references, a link that matches no part or several), an unsupported pair (when
        ``unsupported="error"``), gear or rack pairs without the revolute/prismatic
        pairs they couple; each message names the file and the entity id.
    """
    if unsupported not in ("error", "skip"):
        raise ValueError(f"unsupported must be 'error' or 'skip', got {unsupported!r}")
    path = Path(path)
    text = _read_text(path)
    if text is None:
        return StepMechanism()
    if not hasattr(step_assembly, "parts") or not hasattr(step_assembly, "product_names"):
        raise TypeError("step_assembly must be the StepAssembly that read_step() made of "
                        f"the same file, got {type(step_assembly).__name__}")
    reader = _Reader(path, text, step_assembly, unsupported)
    try:
        return reader.read()
    except CadImportError:
        raise
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        raise CadImportError(f"the kinematic entities are inconsistent ({type(exc).__name__}: "
                             f"{exc})", where=str(path),
                             hint="the file does not follow the ISO 10303-105 entity layouts") from exc


def read_step_kinematics(path, step_assembly, *, unsupported: str = "error") -> Tuple[JointSpec, ...]:
    """The kinematic pairs of a STEP file as :class:`~cadmotion.kernel.spec.JointSpec` s.

    Shorthand for ``read_step_mechanism(path, step_assembly).joints``; see
    :func:`read_step_mechanism` and the module docstring.  Returns ``()`` for a file
    without kinematics.
    """
    return read_step_mechanism(path, step_assembly, unsupported=unsupported).joints
