"""Joint frames taken from part geometry: the axis of a hole, the normal of a face.

A model file can place a joint on geometry instead of numbers::

    axis   = { part = "crank", face = "cylinder", near = [0.05, 0.0, 0.01] }
    origin = { part = "crank", edge = "circle",   near = [0.05, 0.0, 0.01] }

Among the faces (or edges) of the named kind, the one nearest to ``near`` is chosen
(exact distance from the point to the face or edge, ``BRepExtrema_DistShapeShape``),
and its axis is returned as a point and a unit direction:

================  =====================================================================
kind              point, direction
================  =====================================================================
face "cylinder"   foot of ``near`` on the axis; axis direction
face "cone"       foot of ``near`` on the axis; axis direction
face "revolution" foot of ``near`` on the axis of a surface of revolution; its direction
face "torus"      centre of the torus; axis direction
face "sphere"     centre of the sphere; the sphere's own z axis (arbitrary)
face "plane"      foot of ``near`` on the plane; outward normal of the face
edge "circle"     centre of the circle; axis (normal of the circle's plane)
edge "line"       foot of ``near`` on the line; line direction
================  =====================================================================

The sense of an axis (cylinder, cone, circle, line) is the one stored in the CAD
geometry, which a designer does not see; a model that needs a particular sense of
rotation must fix it (e.g. with a ``reverse`` flag or a second reference).

Frames: the shape must be given in the assembly frame (see :func:`world_shape`);
``near`` and the results are in the same frame and unit (metres for STEP parts).
"""

from __future__ import annotations

import warnings
from collections import Counter
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import numpy as np

from ..errors import CadImportError
from ..geometry import analytic, distance, placements, shapes

__all__ = [
    "GeometryRef",
    "GeometryRefWarning",
    "FACE_KINDS",
    "EDGE_KINDS",
    "find_geometry",
    "resolve_axis",
    "world_shape",
    "geometry_kinds",
]


class GeometryRefWarning(UserWarning):
    """A geometry reference was resolved, but not unambiguously."""


FACE_KINDS = ("cylinder", "cone", "revolution", "torus", "sphere", "plane")
"""Face kinds that :func:`find_geometry` can turn into an axis or a plane."""
EDGE_KINDS = ("circle", "line")
"""Edge kinds that :func:`find_geometry` can turn into an axis."""

_AMBIGUOUS_TOL = 1e-9  # m: two candidates closer than this to `near` are a tie


@dataclass(frozen=True)
class GeometryRef:
    """A face or edge picked by kind and a nearby point, with its axis.

    Attributes
    ----------
    kind : str
        One of :data:`FACE_KINDS` or :data:`EDGE_KINDS`.
    entity : str
        ``"face"`` or ``"edge"``.
    index : int
        1-based index of the face/edge in ``TopExp::MapShapes`` order (the numbering
        FreeCAD shows as ``Face3``/``Edge7``).
    point : ndarray, shape (3,)
        See the table in the module docstring; frame and unit of the shape.
    direction : ndarray, shape (3,)
        Unit vector, frame of the shape.
    radius : float or None
        Cylinder, sphere, circle radius; torus major radius; None otherwise.
    distance : float
        Distance from ``near`` to the chosen face/edge.
    """

    kind: str
    entity: str
    index: int
    point: np.ndarray
    direction: np.ndarray
    radius: Optional[float]
    distance: float


def world_shape(part):
    """A part's shape moved to its placement: the geometry in the assembly frame.

    Parameters
    ----------
    part : PartSpec
        With ``shape`` in the part frame (metres) and ``position``/``orientation``
        giving X_WP.

    Returns
    -------
    TopoDS_Shape
        Shares its geometry with ``part.shape`` (only the location differs).
    """
    if part.shape is None:
        raise CadImportError(
            "the part has no geometry", where=f"part {part.name!r}",
            hint="geometry references need a part read from a CAD file",
        )
    return placements.placed(part.shape, part.position, part.orientation)


def geometry_kinds(shape) -> dict:
    """Counts of face and edge kinds of ``shape``, e.g. ``{"face": {"plane": 6}, "edge": {...}}``."""
    fk = Counter(analytic.surface_kind(face) for face in shapes.sub_shapes(shape, "face"))
    ek = Counter(analytic.curve_kind(edge) for edge in shapes.sub_shapes(shape, "edge"))
    return {"face": dict(fk), "edge": dict(ek)}


def _describe(counts: dict) -> str:
    if not counts:
        return "none"
    return ", ".join(f"{k} x{n}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1]))


def _check_near(near, where) -> np.ndarray:
    try:
        q = np.asarray(near, dtype=float).reshape(3)
    except (TypeError, ValueError):
        q = None
    if q is None or not np.all(np.isfinite(q)):
        raise CadImportError(f"near must be three finite numbers [x, y, z], got {near!r}",
                             where=where, hint="give a point close to the face or edge, in metres")
    return q


def find_geometry(shape, kind: str, near: Sequence[float], *, entity: Optional[str] = None,
                  part: str = "") -> GeometryRef:
    """The face or edge of ``kind`` nearest to ``near``, with its axis.

    Parameters
    ----------
    shape : TopoDS_Shape
        The part's geometry in the frame the result should be in (normally the assembly
        frame, from :func:`world_shape`).
    kind : str
        One of :data:`FACE_KINDS` (``"cylinder"``, ``"plane"``, ...) or :data:`EDGE_KINDS`
        (``"circle"``, ``"line"``).
    near : sequence of 3 floats
        A point close to the wanted face/edge, same frame and unit as ``shape``.
    entity : {"face", "edge"}, optional
        What the model file said (``face = ...`` or ``edge = ...``); checked against ``kind``.
    part : str
        The part's name, for messages.

    Returns
    -------
    GeometryRef

    Raises
    ------
    CadImportError
        Unknown kind, kind not valid for ``entity``, bad ``near``, or no face/edge of
        that kind (the message lists the kinds the part has).

    Warns
    -----
    GeometryRefWarning
        Two faces/edges with different axes are equally near to ``near``.
    """
    where = f"part {part!r}" if part else "geometry reference"
    kind = str(kind).strip().lower()
    if kind in FACE_KINDS:
        kind_entity = "face"
    elif kind in EDGE_KINDS:
        kind_entity = "edge"
    else:
        raise CadImportError(
            f"unknown geometry kind {kind!r}", where=where,
            hint="use face = one of " + ", ".join(FACE_KINDS)
            + "; or edge = one of " + ", ".join(EDGE_KINDS),
        )
    if entity is not None and entity != kind_entity:
        valid = FACE_KINDS if entity == "face" else EDGE_KINDS
        raise CadImportError(
            f"{entity} = {kind!r} is not a {entity} kind", where=where,
            hint=f"use {kind_entity} = {kind!r}, or {entity} = one of " + ", ".join(valid),
        )
    if shapes.is_empty(shape):
        raise CadImportError("the part has no geometry", where=where,
                             hint="geometry references need a part read from a CAD file")
    q = _check_near(near, where)

    type_of = analytic.surface_kind if kind_entity == "face" else analytic.curve_kind
    counts: Counter = Counter()
    candidates = []  # (index, item) of the kind
    for i, item in enumerate(shapes.sub_shapes(shape, kind_entity), start=1):
        t = type_of(item)
        counts[t] += 1
        if t == kind:
            candidates.append((i, item))
    found = [(d, i, item) for d, (i, item) in zip(distance.point_distances(q, [it for _, it in candidates]),
                                                   candidates) if d is not None]  # (distance, index, item)
    if not found:
        raise CadImportError(
            f"the part has no {kind} {kind_entity}; its {kind_entity}s are: {_describe(counts)}",
            where=where,
            hint="pick another kind (e.g. edge = \"circle\" for a hole's rim), "
            "or give the axis as numbers",
        )
    found.sort(key=lambda f: (f[0], f[1]))
    nearest, index, item = found[0]
    point, direction, radius = analytic.axis_of(kind, item, q)
    direction = direction / np.linalg.norm(direction) + 0.0  # (+ 0.0 turns -0.0 into 0.0)
    for d2, i2, item2 in found[1:]:
        if d2 - nearest > _AMBIGUOUS_TOL:
            break
        p2, dir2, _ = analytic.axis_of(kind, item2, q)
        same_line = (abs(abs(np.dot(dir2, direction)) - 1.0) < 1e-9
                     and np.linalg.norm(np.cross(p2 - point, direction)) < 1e-9)
        if kind == "plane":
            same_line = same_line and np.dot(dir2, direction) > 0
        if not same_line:
            warnings.warn(
                f"{where}: {kind_entity}s {index} and {i2} of kind {kind!r} are equally near "
                f"to {q.tolist()}; using {kind_entity} {index}. Move 'near' onto the one you mean.",
                GeometryRefWarning, stacklevel=2,
            )
            break
    return GeometryRef(kind, kind_entity, index, point, direction, radius, float(nearest))


def resolve_axis(shape_in_world, kind: str, near: Sequence[float], *,
                 entity: Optional[str] = None, part: str = "") -> Tuple[np.ndarray, np.ndarray]:
    """Point and unit direction of the axis (or plane normal) of the nearest face/edge of a kind.

    Parameters
    ----------
    shape_in_world : TopoDS_Shape
        The part's geometry in the assembly frame, metres (see :func:`world_shape`).
    kind : str
        ``"cylinder"``, ``"cone"``, ``"revolution"``, ``"torus"``, ``"sphere"``,
        ``"plane"`` (faces) or ``"circle"``, ``"line"`` (edges).
    near : sequence of 3 floats
        A point near the wanted face/edge, assembly frame, m.
    entity : {"face", "edge"}, optional
        Checked against ``kind`` when given.
    part : str
        The part's name, for messages.

    Returns
    -------
    point : ndarray, shape (3,)
        m, assembly frame: the foot of ``near`` on the axis (cylinder, cone, revolution,
        line) or on the plane; the centre for circle, sphere and torus.
    direction : ndarray, shape (3,)
        Unit axis direction, or the outward unit normal of a plane face.

    Raises
    ------
    CadImportError
        As :func:`find_geometry`.
    """
    ref = find_geometry(shape_in_world, kind, near, entity=entity, part=part)
    return ref.point, ref.direction


def face_outline(shape, near: Sequence[float], samples: int = 720, *, part: str = "") -> np.ndarray:
    """Points (samples, 3) evenly spaced by arc length along the outer boundary of the
    planar face of ``shape`` nearest to ``near`` (same frame and unit as ``shape``): a cam's
    outline taken from its side face. The face is picked as :func:`find_geometry` picks a
    ``plane``; the points run once around without repeating the first."""
    ref = find_geometry(shape, "plane", near, entity="face", part=part)
    pts = analytic.outer_boundary_points(shapes.sub_shape(shape, "face", ref.index), samples)
    if pts is None:
        raise CadImportError("OCCT could not sample the face's outer boundary", where=f"part {part!r}",
                             hint="give the profile as points, profile = [[x, y, z], ...]")
    return pts
