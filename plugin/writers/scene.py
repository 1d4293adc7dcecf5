"""What the animation writers (glTF, HTML) draw: distinct meshes, parts and keyframes.

:func:`build_scene` reads a :class:`~cadmotion.kernel.motion.Motion` and the
:class:`~cadmotion.kernel.spec.MechanismSpec` it carries (``motion.spec``) and returns a
:class:`Scene`. Parts are matched to the spec by name; a part with no shape (model
files without CAD, or ``motion.spec`` is None) gets placeholder sticks between its joints (a cube at its centre of
mass, of edge ``PLACEHOLDER_FRACTION`` of the scene size. Colours are sRGB(A) in 0..1;
parts without a colour take one from :data:`PALETTE` by part index.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass, field
from typing import List, Tuple

import numpy as np

from ...kernel.motion import quat_to_matrix
from .movement import moving_parts
from .tessellate import MeshCache, bar_mesh, box_mesh, merge_meshes

__all__ = ["Scene", "build_scene", "contact_tracks", "PALETTE", "MARKER_COLOR", "continuous_quaternions",
           "srgb_to_linear"]

#: colours (sRGB) for parts without one: muted, distinguishable
PALETTE = (
    (0.60, 0.64, 0.70), (0.84, 0.55, 0.27), (0.35, 0.55, 0.75), (0.45, 0.66, 0.42),
    (0.78, 0.40, 0.40), (0.62, 0.50, 0.74), (0.80, 0.72, 0.38), (0.40, 0.68, 0.70),
)
PLACEHOLDER_FRACTION = 0.04
#: the initial view of every picture of a scene (HTML page, video): Z up, the eye at azimuth
#: ``VIEW_AZIMUTH`` and elevation ``VIEW_ELEVATION`` (rad) from the centre of
#: :meth:`Scene.bounds`, at ``VIEW_DISTANCE`` radii / sin(FOV/2), vertical field of view
#: ``VIEW_FOV`` (rad), perspective
VIEW_AZIMUTH, VIEW_ELEVATION, VIEW_FOV, VIEW_DISTANCE = -0.95, 0.45, float(np.radians(45.0)), 0.85
#: contact markers: colour (sRGB) and edge, as a fraction of the scene's radius
MARKER_COLOR, MARKER_FRACTION = (0.90, 0.12, 0.10, 1.0), 0.03
#: edges of the placeholder blocks, in placeholder sizes: pads at the joints of a part with
#: two or more joints, and the block of a part with one joint (larger, so never inside a pad)
PAD_BLOCK, SINGLE_BLOCK = 1.6, 2.4


@dataclass(frozen=True)
class Scene:
    """Meshes, parts and keyframes of one motion.

    Attributes
    ----------
    name : mechanism name
    meshes : distinct meshes (part frames), list of :class:`Mesh`
    part_names : list, length nb, ``motion.parts`` order
    part_mesh : ndarray, shape (nb,), int, index into ``meshes``
    part_color : list of (r, g, b, a) sRGB in 0..1, length nb
    animated : ndarray, shape (nb,), bool; True when the part moves beyond round-off
        (:func:`~cadmotion.plugin.writers.movement.moving_parts`)
    time : ndarray, shape (nt,), s
    position : ndarray, shape (nt, nb, 3), m, assembly frame (Z up)
    quaternion : ndarray, shape (nt, nb, 4), (w, x, y, z), sign-continuous in time
    complete, message : from the motion (``complete`` may be overridden)
    markers : names of the contacts marked (a dynamic run's ``[[contacts]]``), length nm
    marker_mesh : index into ``meshes`` of the marker (a small cube), or -1 without markers
    marker_position : ndarray, shape (nt, nm, 3), m, assembly frame: each contact's point
        (outputs ``<contact>.point_x/y/z``)
    marker_visible : ndarray, shape (nt, nm), bool: the contact is active at the frame, or the
        frame is the one nearest one of its impacts (:func:`contact_tracks`)
    """

    name: str
    meshes: list
    part_names: List[str]
    part_mesh: np.ndarray
    part_color: List[Tuple[float, float, float, float]]
    animated: np.ndarray
    time: np.ndarray
    position: np.ndarray
    quaternion: np.ndarray
    complete: bool
    message: str
    markers: List[str] = field(default_factory=list)
    marker_mesh: int = -1
    marker_position: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 3)))
    marker_visible: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), bool))

    def bounds(self):
        """(centre, radius) of a sphere holding every part at every frame, m."""
        lo = np.full(3, np.inf)
        hi = np.full(3, -np.inf)
        for b, m in enumerate(self.part_mesh):
            mlo, mhi = self.meshes[m].bounds
            c = 0.5 * (mlo.astype(float) + mhi.astype(float))
            r = 0.5 * float(np.linalg.norm(mhi.astype(float) - mlo.astype(float)))
            R = quat_to_matrix(self.quaternion[:, b])            # (nt, 3, 3)
            centres = self.position[:, b] + R @ c
            lo = np.minimum(lo, centres.min(axis=0) - r)
            hi = np.maximum(hi, centres.max(axis=0) + r)
        if not np.isfinite(lo).all():
            return np.zeros(3), 1.0
        return 0.5 * (lo + hi), max(0.5 * float(np.linalg.norm(hi - lo)), 1e-6)


def continuous_quaternions(q):
    """Flip signs of q[k] so that consecutive quaternions are in the same hemisphere.

    q : ndarray, shape (nt, ..., 4). Linear (and spherical) interpolation between
    keyframes then takes the short way round.
    """
    q = np.array(q, float, copy=True)
    if len(q) < 2:
        return q
    dots = np.einsum("k...i,k...i->k...", q[1:], q[:-1])
    flips = np.cumprod(np.where(dots < 0.0, -1.0, 1.0), axis=0)
    q[1:] *= flips[..., None]
    return q


def srgb_to_linear(c):
    """sRGB component(s) in 0..1 to linear light (IEC 61966-2-1)."""
    c = np.asarray(c, float)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def _rgba(color, index):
    if color is None:
        color = PALETTE[index % len(PALETTE)]
    c = [min(max(float(x), 0.0), 1.0) for x in color]
    if len(c) == 3:
        c.append(1.0)
    if len(c) != 4:
        raise ValueError(f"colour {color!r} is not (r, g, b) or (r, g, b, a)")
    return tuple(c)


def part_specs(motion):
    """Part name -> PartSpec of the motion's mechanism (empty when the motion carries none)."""
    spec = getattr(motion, "spec", None)
    if spec is None:
        return {}
    return {p.name: p for p in getattr(spec, "parts", ())}


def spec_of(motion):
    """The MechanismSpec a motion was computed from, or None."""
    return getattr(motion, "spec", None)


def _joint_points(spec):
    """Part name -> joint marker origins in that part's frame (m), in joint order."""
    points = {}
    for j in getattr(spec, "joints", ()) or ():
        for part, marker in zip(j.parts, j.markers):
            points.setdefault(part, []).append(np.asarray(marker.origin, float))
    return points


def _stick_mesh(points, part, size):
    """Placeholder geometry of a part without CAD: bars between its joints, a block at each.

    A fixed part gets only the blocks (pads at its joints); a part with fewer than two
    distinct joint points gets a cube of :data:`SINGLE_BLOCK` sizes at its joint (else its
    centre of mass): larger than the pads of the parts jointed to it there, so that it is
    not hidden inside them (the slider of a slider-crank, pinned where the rod's pad is).
    """
    distinct = []
    for p in points:
        if all(np.linalg.norm(p - q) > 1e-9 for q in distinct):
            distinct.append(p)
    if len(distinct) < 2:
        center = distinct[0] if distinct else (part.com if part is not None else (0.0, 0.0, 0.0))
        return box_mesh(center, SINGLE_BLOCK * size)
    pieces = [box_mesh(p, PAD_BLOCK * size) for p in distinct]
    if part is None or not part.fixed:
        pieces += [bar_mesh(a, b, 0.6 * size) for a, b in zip(distinct[:-1], distinct[1:])]
    return merge_meshes(pieces)


def build_scene(motion, *, cache=None, complete=None):
    """Collect meshes (one per distinct shape), colours and keyframes of ``motion``: its frames, and
    frames inserted where a part turns by more than a quarter turn between two
    (:meth:`~cadmotion.kernel.motion.Motion.with_turn_frames`), which players interpolate the short way round.

    Parameters
    ----------
    motion : Motion with at least one frame
    cache : MeshCache to share tessellations between writers; a new one by default
    complete : overrides ``motion.complete``

    Warns
    -----
    UserWarning once, naming the parts drawn as placeholder sticks.
    """
    cache = MeshCache() if cache is None else cache
    motion = motion.with_turn_frames()  # the players interpolate keyframes the short way round
    specs = part_specs(motion)
    nb = len(motion.parts)
    position = np.asarray(motion.position, float).reshape(motion.nt, nb, 3)
    quaternion = np.asarray(motion.quaternion, float).reshape(motion.nt, nb, 4)
    norm = np.linalg.norm(quaternion, axis=-1, keepdims=True)
    quaternion = continuous_quaternions(np.divide(quaternion, norm, out=np.zeros_like(quaternion),
                                                  where=norm > 0))

    meshes, mesh_index, part_mesh, missing = [], {}, [], []
    for b, name in enumerate(motion.parts):
        ps = specs.get(name)
        mesh = cache.get(ps.shape) if ps is not None and ps.shape is not None else None
        if mesh is None:
            missing.append(b)
            part_mesh.append(-1)
            continue
        key = id(mesh)
        if key not in mesh_index:
            mesh_index[key] = len(meshes)
            meshes.append(mesh)
        part_mesh.append(mesh_index[key])

    if missing:
        # placeholder size from the scene: part origins over the run and the real meshes
        pts = [position.reshape(-1, 3)]
        for m in meshes:
            pts.extend(m.bounds)
        pts = np.vstack([np.atleast_2d(p) for p in pts])
        extent = float(np.linalg.norm(np.ptp(pts, axis=0))) if len(pts) else 0.0
        size = float(np.clip(PLACEHOLDER_FRACTION * extent, 1e-3, 0.05)) if extent > 0 else 0.01
        points = _joint_points(spec_of(motion))
        placeholders = {}  # identical placeholders share one mesh
        for b in missing:
            name = motion.parts[b]
            ps = specs.get(name)
            pts = points.get(name, [])
            key = (tuple(tuple(np.round(p, 12)) for p in pts),
                   bool(ps is not None and ps.fixed and len(pts) > 1),  # fixed matters for sticks only
                   tuple(ps.com) if ps is not None and len(pts) < 2 else None)
            if key not in placeholders:
                placeholders[key] = len(meshes)
                meshes.append(_stick_mesh(pts, ps, size))
            part_mesh[b] = placeholders[key]
        names = ", ".join(motion.parts[b] for b in missing[:10]) + (" ..." if len(missing) > 10 else "")
        warnings.warn(f"{len(missing)} part(s) without CAD geometry drawn as sticks between their joints: {names}",
                      stacklevel=3)

    colors = [_rgba(specs[n].color if n in specs else None, b) for b, n in enumerate(motion.parts)]
    animated = moving_parts(motion) if motion.nt > 0 else np.zeros(nb, bool)
    spec = getattr(motion, "spec", None)
    scene = Scene(
        name=str(getattr(spec, "name", "") or "mechanism"),
        meshes=meshes, part_names=list(motion.parts), part_mesh=np.array(part_mesh, int),
        part_color=colors, animated=animated, time=np.asarray(motion.time, float),
        position=position, quaternion=quaternion,
        complete=bool(motion.complete if complete is None else complete),
        message=str(motion.message or ""),
    )
    return _with_contact_markers(scene, motion)


def contact_tracks(motion):
    """(names, points (nt, nm, 3) m, shown (nt, nm) bool) of the contacts whose point and active flag
    a dynamic run recorded (``<contact>.active``, ``.point_x/y/z`` in ``motion.extra``): shown at the
    frames where the contact is active and at the frame nearest each of its impacts (an impact that
    rebounds lasts no time, so no frame finds it active); only contacts shown at some frame."""
    extra = getattr(motion, "extra", None) or {}
    names = [key[:-len(".point_x")] for key in extra if key.endswith(".point_x") and
             f"{key[:-len('.point_x')]}.active" in extra]
    time = np.asarray(motion.time, float)
    shown = np.zeros((motion.nt, len(names)), bool)
    for i, n in enumerate(names):
        shown[:, i] = np.asarray(extra[f"{n}.active"], float) > 0.5
    column = {n: i for i, n in enumerate(names)}
    for ev in getattr(motion, "events", ()) or ():
        if ev.kind == "impact" and ev.items and ev.items[0] in column and len(time):
            shown[int(np.argmin(np.abs(time - ev.time))), column[ev.items[0]]] = True
    keep = np.flatnonzero(shown.any(axis=0))
    if not len(keep):
        return [], np.zeros((motion.nt, 0, 3)), np.zeros((motion.nt, 0), bool)
    points = np.stack([np.stack([np.asarray(extra[f"{names[i]}.point_{c}"], float) for c in "xyz"], axis=-1)
                       for i in keep], axis=1)
    return [names[i] for i in keep], np.nan_to_num(points), shown[:, keep]


def _with_contact_markers(scene, motion):
    """``scene`` with a marker per contact shown at some frame (see :func:`contact_tracks`)."""
    names, points, active = contact_tracks(motion)
    if not names:
        return scene
    _, radius = scene.bounds()
    meshes = scene.meshes + [box_mesh((0.0, 0.0, 0.0), MARKER_FRACTION * radius)]
    return dataclasses.replace(scene, meshes=meshes, markers=names, marker_mesh=len(meshes) - 1,
                               marker_position=points, marker_visible=active)
