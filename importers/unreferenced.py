"""Parts of a STEP assembly that no joint, driver or force mentions.

A STEP file brings every bolt, washer and bracket; the user's mates name the parts that
move. The model file's ``unreferenced_parts`` says what happens to the others:

``"weld"`` (default with ``step``)
    Each one is welded (a ``fixed`` joint) to a part the model does use in its own
    sub-assembly, walking up the hierarchy (``arm/bolts/bolt_1`` looks in ``arm/bolts/``,
    then in ``arm/``). A sub-assembly without used parts inside the level where they are
    found moves as one piece (a nut-bolt set stays together); when that level holds
    several used parts, the piece goes with the nearest one (exact B-rep distance at the
    initial pose, a warning names the choice). A part whose sub-assemblies hold no used
    part, or that sits at the top of the assembly, belongs to the assembly itself and is
    fixed.
``"fix"``
    Every one is fixed where the file places it.
``"report"``
    An error lists them (to make sure every part was thought about).
``"free"`` (default without ``step``)
    They stay free bodies (they fall under gravity in dynamics; kinematics refuses a
    mechanism with undriven free bodies).
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np

from ..kernel.rotations import unit_quat_to_matrix
from ..kernel.spec import Frame, JointSpec

__all__ = ["POLICIES", "referenced_parts", "resolve_unreferenced"]

POLICIES = ("weld", "fix", "report", "free")

_IDENTITY = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))


def referenced_parts(joints, drivers, forces, initial_velocities):
    """Names of the parts the joints, drivers, forces and initial velocities mention."""
    used = set()
    for j in joints:
        used.update(j.parts)
    used.update(d.part for d in drivers if d.part)
    for f in forces:
        used.update(f.parts)
    used.update(v.part for v in initial_velocities)
    return used


def _sub_assemblies(part):
    """Path prefixes of the sub-assemblies holding ``part``, innermost first ("a/b/", "a/")."""
    segments = (part.path or part.name).split("/")[:-1]
    return ["/".join(segments[:d]) + "/" for d in range(len(segments), 0, -1)]


def _placed_shape(part):
    """The part's shape at its initial pose (assembly frame), or None."""
    if part.shape is None:
        return None
    from ..geometry.placements import placed

    return placed(part.shape, part.position, part.orientation)


def _distance(a, b):
    """Exact distance between two placed shapes (m; 0 when they touch), infinite if unknown."""
    if a is None or b is None:
        return np.inf
    from ..geometry.distance import distance

    return distance(a, b)


def _weld_joint(name, target, part):
    """A fixed joint between ``target`` and ``part`` at ``part``'s frame at the initial pose."""
    Rt = unit_quat_to_matrix(target.orientation)
    Rp = unit_quat_to_matrix(part.orientation)
    s = Rt.T @ (np.asarray(part.position, float) - np.asarray(target.position, float))
    marker_t = Frame(tuple(map(float, s)), tuple(tuple(map(float, r)) for r in Rt.T @ Rp))
    marker_p = Frame((0.0, 0.0, 0.0), _IDENTITY)
    return JointSpec(name, "fixed", (target.name, part.name), (marker_t, marker_p),
                     source=f"unreferenced_parts = \"weld\": {part.name} welded to {target.name}")


def resolve_unreferenced(parts, joints, drivers, forces, initial_velocities, policy, error):
    """Apply ``policy`` to the unreferenced parts.

    Parameters
    ----------
    parts : dict name -> PartSpec (replaced in place for "fix" and top-level welds)
    joints, drivers, forces, initial_velocities : the model's lists (specs)
    policy : one of :data:`POLICIES`
    error : callable(message, hint) -> exception, for "report"

    Returns the joints to add (the welds).
    """
    used = referenced_parts(joints, drivers, forces, initial_velocities)
    loose = [name for name, p in parts.items() if name not in used and not p.fixed]
    if not loose or policy == "free":
        return []
    if policy == "report":
        shown = ", ".join(loose[:20]) + (f" and {len(loose) - 20} more" if len(loose) > 20 else "")
        raise error(f"{len(loose)} part(s) are in no joint, driver or force: {shown}",
                    'join them, or set unreferenced_parts = "weld", "fix" or "free"')
    if policy == "fix":
        for name in loose:
            parts[name] = replace(parts[name], fixed=True)
        return []
    anchors = [p for name, p in parts.items() if name in used or p.fixed]
    placed = {}

    def shape(p):
        if p.name not in placed:
            placed[p.name] = _placed_shape(p)
        return placed[p.name]

    # group the loose parts into units: the sub-assembly just below the innermost level that
    # holds used parts moves as one piece (a nut-bolt set goes where its bolt head sits)
    units = {}
    for name in loose:
        part = parts[name]
        levels = _sub_assemblies(part)
        target_level, candidates = None, []
        for prefix in levels:
            candidates = [a for a in anchors if (a.path or a.name).startswith(prefix)]
            if candidates:
                target_level = prefix
                break
        if target_level is None:
            unit = ("", name)
        else:
            below = [lv for lv in levels if len(lv) > len(target_level)]
            unit = (target_level, below[-1] if below else name)
        units.setdefault(unit, ([], candidates))[0].append(part)
    names = {j.name for j in joints}
    welds, guesses = [], []
    for (level, key), (members, candidates) in units.items():
        if not candidates:
            target = None
        elif len(candidates) == 1:
            target = candidates[0]
        else:
            gaps = [min(_distance(shape(m), shape(a)) for m in members) for a in candidates]
            target = candidates[int(np.argmin(gaps))]
            guesses.append(f"{key.rstrip('/')} -> {target.name}")
        for part in members:
            if target is None or target.fixed:
                parts[part.name] = replace(part, fixed=True)
                continue
            joint_name = f"weld {part.name}"
            while joint_name in names:
                joint_name += "'"
            names.add(joint_name)
            welds.append(_weld_joint(joint_name, target, part))
    if guesses:
        shown = "; ".join(guesses[:10]) + (f"; and {len(guesses) - 10} more" if len(guesses) > 10 else "")
        warnings.warn(f"unreferenced parts welded to the nearest used part of their sub-assembly: {shown}",
                      stacklevel=3)
    return welds
