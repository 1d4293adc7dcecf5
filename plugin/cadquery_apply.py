"""Put a Motion back into a CadQuery assembly: ``apply_motion(motion, assy, t)``.

Each node of the ``cq.Assembly`` that is named like a part of the motion gets, as its
``loc``, what places the part at its pose X_WP at time ``t`` (:meth:`Motion.pose`:
interpolated between frames, ``t`` clamped to the run). The convention is the one of the
STEP importer, the writers and :mod:`cadmotion.plugin.cadquery`: a node's shape is in
its part frame P, and its placement in the world W is the product of the locations from
the root (the root's own ``loc`` included, as in ``toCompound`` and STEP export) down to
the node. The node's own ``loc`` is set so that this product is X_WP; the locations of
its parents are respected (and, when a parent is itself a part, its new location).

Units: the motion is in metres. ``length_scale`` converts its translations into the
assembly's length unit: 1.0 (default) for an assembly built in metres, 1000.0 for one
built in millimetres (CadQuery's usual unit), 1/0.0254 for inches. Rotations are not
scaled.

Name matching, for a motion part called ``name`` (e.g. ``crank`` or ``arm/link2`` for a
part of a sub-assembly):

1. the key ``name`` in ``assy.objects`` (CadQuery 2.8 keys nested nodes by their path
   below the root, ``arm/link2``; older versions by their plain name);
2. the path ``name`` followed down from the root through the ``children``'s names, with
   or without the root's own name in front (``root/arm/link2``);
3. the one node anywhere in the tree whose ``name`` is the last path element (``link2``);
   if several nodes have that name, the part is not placed.

Parts with no node are left out (a warning names the moving ones and the ambiguous ones);
nodes with no part are untouched. A part named like the root (``assy.name``) moves the
root itself.

>>> import cadquery as cq                                                    # doctest: +SKIP
>>> assy = cq.Assembly(name="slider_crank")                                  # doctest: +SKIP
>>> assy.add(cq.Workplane().box(100, 10, 5).translate((50, 0, 0)), name="crank")  # doctest: +SKIP
>>> apply_motion(motion, assy, 0.5, length_scale=1000.0)                     # doctest: +SKIP
{'crank': 'slider_crank/crank'}

:meth:`cadmotion.plugin.cadquery.CadQueryMotion.apply` does the same for a motion
simulated from a live assembly, with that assembly's length unit.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..errors import OutputError

__all__ = ["apply_motion", "location_from_matrix", "matrix_from_location"]


def location_from_matrix(X):
    """A ``cq.Location`` from a 4x4 homogeneous matrix (rotation orthonormalised)."""
    import cadquery as cq

    from ..geometry.placements import orthonormalised, rotation_trsf

    X = np.asarray(X, dtype=float)
    return cq.Location(rotation_trsf(orthonormalised(X[:3, :3]), X[:3, 3]))


def matrix_from_location(loc):
    """The 4x4 homogeneous matrix of a ``cq.Location``."""
    from ..geometry.placements import matrix_of_location

    return matrix_of_location(loc.wrapped)


def _path(node, root):
    names = []
    while node is not None and node is not root:
        names.append(node.name)
        node = node.parent
    return [root.name] + names[::-1]


def _nodes(assy):
    """Every node below the root, depth first."""
    stack = list(reversed(assy.children))
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(node.children))


def _find(assy, name):
    """The node for part ``name``, or None; ``"ambiguous"`` if rule 3 finds several."""
    node = assy.objects.get(name)
    if node is not None:
        return node
    steps = [s for s in str(name).split("/") if s]
    if not steps:
        return None
    tries = [steps]
    if len(steps) > 1 and steps[0] == assy.name:
        tries.append(steps[1:])
    for chain in tries:
        node = assy
        for step in chain:
            node = next((c for c in node.children if c.name == step), None)
            if node is None:
                break
        if node is not None:
            return node
    found = [n for n in [assy, *_nodes(assy)] if n.name == steps[-1]]
    if len(found) > 1:
        return "ambiguous"
    return found[0] if found else None


def apply_motion(motion, assy, t, length_scale=1.0):
    """Set the ``loc`` of every node of ``assy`` named like a part to its pose at ``t``.

    Parameters
    ----------
    motion : :class:`~cadmotion.kernel.motion.Motion`
    assy : ``cadquery.Assembly``, changed in place.
    t : time in s; clamped to the run.
    length_scale : assembly length units per metre (1.0 for metres, 1000.0 for mm).

    Returns
    -------
    dict
        motion part name -> path of the node it moved (``"root/arm/link2"``), in the
        order of ``motion.parts``.

    Raises
    ------
    OutputError
        No part of the motion names a node of ``assy``, or ``length_scale`` is not a
        positive number.
    """
    try:
        scale = float(length_scale)
    except (TypeError, ValueError):
        scale = float("nan")
    if not (math.isfinite(scale) and scale > 0):
        raise OutputError(f"length_scale must be a positive number, got {length_scale!r}",
                          hint="1.0 for an assembly in metres, 1000.0 for one in millimetres")
    matched = []
    missing = []
    ambiguous = []
    for part in motion.parts:
        node = _find(assy, part)
        if node is None:
            missing.append(part)
        elif isinstance(node, str):
            ambiguous.append(part)
        else:
            matched.append((part, node))
    if ambiguous:
        warnings.warn(f"cq.Assembly {assy.name!r} has several nodes called like the part(s) "
                      f"{', '.join(ambiguous)}; they are not placed (name the nodes by their path, "
                      "e.g. 'arm/link2')", stacklevel=2)
    if not matched:
        nodes = [n for n in assy.objects if n != assy.name]
        raise OutputError(
            "no part of the motion names a node of the assembly",
            where=f"cq.Assembly {assy.name!r}",
            hint=f"motion parts: {', '.join(motion.parts)}; assembly nodes: {', '.join(nodes) or '(none)'}")
    moving = [p for p in missing if not _is_fixed(motion, p)]
    if moving:
        warnings.warn(f"cq.Assembly {assy.name!r} has no node for the moving part(s) {', '.join(moving)}; "
                      "they are not placed", stacklevel=2)
    # parents before children, so that a moved parent's new location is the one composed
    matched.sort(key=lambda pn: len(_path(pn[1], assy)))
    S = np.diag([scale, scale, scale, 1.0])
    Sinv = np.diag([1.0 / scale, 1.0 / scale, 1.0 / scale, 1.0])
    result = {}
    for part, node in matched:
        X_WP = S @ motion.pose(part, t) @ Sinv          # translation in assembly units
        chain = []                                      # the node's ancestors, root last
        parent = node.parent if node is not assy else None
        while parent is not None:
            chain.append(parent)
            if parent is assy:
                break
            parent = parent.parent
        X_WA = np.eye(4)                                # the parent's placement in W
        for anc in reversed(chain):
            X_WA = X_WA @ matrix_from_location(anc.loc)
        node.loc = location_from_matrix(np.linalg.solve(X_WA, X_WP))
        result[part] = "/".join(_path(node, assy))
    return {p: result[p] for p in motion.parts if p in result}


def _is_fixed(motion, part):
    spec = getattr(motion, "spec", None)
    if spec is None:
        return False
    try:
        return bool(spec.part(part).fixed)
    except (KeyError, AttributeError):
        return False
