"""Units and placements of a STEP file's kinematics: the SI factor of its length and
plane-angle units (SI prefixes, conversion-based units) and ``AXIS2_PLACEMENT_3D`` frames
in metres. Used by :mod:`.step_kinematics`."""

from __future__ import annotations

import math
from typing import Dict, Optional, Tuple

import numpy as np

from ..errors import CadImportError
from ..kernel.spec import Frame
from .step_part21 import Enum, Part21Index, Ref, Typed

#: the SI prefixes of ISO 10303-41 ``SI_UNIT``
SI_PREFIX = {None: 1.0, "EXA": 1e18, "PETA": 1e15, "TERA": 1e12, "GIGA": 1e9, "MEGA": 1e6,
             "KILO": 1e3, "HECTO": 1e2, "DECA": 1e1, "DECI": 1e-1, "CENTI": 1e-2,
             "MILLI": 1e-3, "MICRO": 1e-6, "NANO": 1e-9, "PICO": 1e-12, "FEMTO": 1e-15,
             "ATTO": 1e-18}
#: references followed from a unit to its base unit before giving up (cycles, deep chains)
_MAX_UNIT_DEPTH = 6


def _unit_factor(model: Part21Index, uid, kind: str, depth=0) -> Optional[float]:
    """SI factor of a LENGTH_UNIT / PLANE_ANGLE_UNIT entity, or None when it is not one."""
    if depth > _MAX_UNIT_DEPTH or not isinstance(uid, Ref):
        return None
    rec = model.record(uid)
    p = rec.partials
    if kind not in p and not rec.simple:
        return None
    if "SI_UNIT" in p:
        args = p["SI_UNIT"]
        if len(args) != 2:
            return None
        prefix = args[0].upper() if isinstance(args[0], Enum) else None
        if prefix not in SI_PREFIX:
            return None
        return SI_PREFIX[prefix]
    if "CONVERSION_BASED_UNIT" in p:
        args = p["CONVERSION_BASED_UNIT"]
        if len(args) != 2 or not isinstance(args[1], Ref):
            return None
        mwu = model.record(args[1])
        for name, margs in mwu.partials.items():
            if name.endswith("MEASURE_WITH_UNIT") and len(margs) == 2:
                value = margs[0].args[0] if isinstance(margs[0], Typed) and margs[0].args else margs[0]
                base = _unit_factor(model, margs[1], kind, depth + 1)
                if isinstance(value, (int, float)) and base is not None:
                    return float(value) * base
        return None
    return None


class Units:
    """Length (m per unit) and plane angle (rad per unit) of representation contexts."""

    def __init__(self, model: Part21Index, fallback_length: Optional[float]):
        self.model = model
        self.fallback = fallback_length
        self._cache: Dict[int, Tuple[Optional[float], Optional[float]]] = {}

    def of_context(self, ctx) -> Tuple[Optional[float], Optional[float]]:
        """(length factor, angle factor) to SI of a representation context ``ctx``; None for
        a unit it does not state."""
        if not isinstance(ctx, Ref):
            return None, None
        if int(ctx) in self._cache:
            return self._cache[int(ctx)]
        length = angle = None
        rec = self.model.record(ctx)
        units = rec.partials.get("GLOBAL_UNIT_ASSIGNED_CONTEXT")
        if units and isinstance(units[0], list):
            for uid in units[0]:
                if not isinstance(uid, Ref):
                    continue
                urec = self.model.record(uid, ctx)
                if "LENGTH_UNIT" in urec.partials and length is None:
                    length = _unit_factor(self.model, uid, "LENGTH_UNIT")
                elif "PLANE_ANGLE_UNIT" in urec.partials and angle is None:
                    angle = _unit_factor(self.model, uid, "PLANE_ANGLE_UNIT")
        self._cache[int(ctx)] = (length, angle)
        return length, angle

    def scales(self, *contexts, what: str) -> Tuple[float, float]:
        """(m per length unit, rad per angle unit) from the first context that has them."""
        length = angle = None
        for ctx in contexts:
            lu, au = self.of_context(ctx)
            length = length if length is not None else lu
            angle = angle if angle is not None else au
        if length is None:
            length = self.fallback
        if length is None:
            raise CadImportError(
                f"{what}: no length unit (neither its representation context nor the file "
                "states one)", where=self.model.where,
                hint="export the file with units (e.g. millimetres)")
        return length, (1.0 if angle is None else angle)


def _unit(v, what, model, eid):
    v = np.asarray(v, float)
    n = float(np.linalg.norm(v))
    if not math.isfinite(n) or n < 1e-12:
        raise CadImportError(f"entity #{eid}: {what} is a zero or invalid direction",
                             where=model.where, hint="check the pair placements in the file")
    return v / n


def axis2_placement(model: Part21Index, pid, scale: float, referrer) -> Tuple[np.ndarray, np.ndarray]:
    """(R, o): axes as columns and origin (m) of an AXIS2_PLACEMENT_3D (ISO 10303-42 rules)."""
    _, f = model.fields(pid, ("AXIS2_PLACEMENT_3D",), referrer,
                        what="AXIS2_PLACEMENT_3D (a pair frame)")

    def triple(ref, typ, attr):
        _, g = model.fields(model.ref(ref, pid, attr), (typ,), pid)
        vals = g["coordinates" if typ == "CARTESIAN_POINT" else "direction_ratios"]
        if not isinstance(vals, list) or len(vals) != 3:
            raise CadImportError(f"entity #{int(ref)}: {typ} must have 3 coordinates",
                                 where=model.where, hint="pair frames are 3-D placements")
        return np.array([model.real(v, int(ref), attr) for v in vals])

    o = triple(f["location"], "CARTESIAN_POINT", "location") * scale
    z = np.array([0.0, 0.0, 1.0]) if f["axis"] is None else \
        _unit(triple(f["axis"], "DIRECTION", "axis"), "axis", model, pid)
    if f["ref_direction"] is None:
        v = np.array([1.0, 0.0, 0.0]) if not np.array_equal(z, [1.0, 0.0, 0.0]) \
            else np.array([0.0, 1.0, 0.0])
    else:
        v = _unit(triple(f["ref_direction"], "DIRECTION", "ref_direction"), "ref_direction",
                  model, pid)
    x = v - float(v @ z) * z
    if np.linalg.norm(x) < 1e-9:
        raise CadImportError(f"entity #{int(pid)}: ref_direction is parallel to axis",
                             where=model.where, hint="check the pair placements in the file")
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z]), o


def make_frame(R, o) -> Frame:
    """A :class:`~cadmotion.kernel.spec.Frame` from a rotation ``R`` (3, 3) and an origin ``o`` (3,) in metres."""
    return Frame(tuple(float(v) for v in o), tuple(tuple(float(v) for v in row) for row in R))


def frame_arrays(frame: Frame):
    """(rotation (3, 3), origin (3,)) of a :class:`~cadmotion.kernel.spec.Frame`, as arrays."""
    return np.array(frame.rotation, float), np.array(frame.origin, float)


