"""CadQuery front end: simulate a live ``cq.Assembly`` and move it.

>>> from cadmotion.plugin.cadquery import simulate                  # doctest: +SKIP
>>> motion = simulate(assy, joints=[{"type": "revolute", "parts": ["base", "crank"],
...                                  "origin": [0, 0, 0], "axis": [0, 0, 1]}],
...                   drivers=[{"joint": "joint1", "expression": "2*pi*t"}],
...                   t_end=1.0, steps=50)     # "base", the first part added, is the ground
>>> motion.apply(assy, 0.25)          # the assembly's parts move to t = 0.25 s
>>> for t, moved in motion.frames(assy): ...
>>> motion                            # in Jupyter: the HTML player (_repr_html_)

Parts and joints are read by :mod:`cadmotion.importers.cadquery` (see there).

The ground: the parts named in ``fixed``, else those a ``Fixed`` constraint fixes, else
the first part added to the assembly (the convention of CAD assembly tools, where the
first component placed is grounded); a note says which part was grounded. Pass
``fixed=[]`` for an assembly with no ground (dynamics of a free body).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, fields, replace

import numpy as np

from ..errors import DrivingError, MechanismError, OutputError
from ..importers.cadquery import _nodes, assembly_spec
from ..kernel.motion import Motion

__all__ = ["simulate", "assembly_spec", "CadQueryMotion", "apply", "frames", "ocp_animation", "ocp_tracks"]


@dataclass
class CadQueryMotion(Motion):
    """A Motion that knows the cq.Assembly it came from and can move it."""

    length_unit: str = "mm"

    def _scale(self):
        from ..importers.modelfile import UNITS

        return UNITS[self.length_unit]

    def apply(self, assy, t):
        """Move the parts of ``assy`` (in place) to their poses at ``t``; returns ``assy``."""
        return apply(self, assy, t)

    def frames(self, assy, times=None):
        """Yield ``(t, assembly)`` with a moved copy of ``assy`` for each time (default: every frame)."""
        return frames(self, assy, times)

    def animation(self, assy=None, speed=1.0, show=True):
        """Play the motion in OCP CAD Viewer; see :func:`ocp_animation` (None without a viewer)."""
        return ocp_animation(self, assy if assy is not None else getattr(self.spec, "cad", None), speed=speed,
                             show=show)

    def export(self, paths, **options):
        """Write the motion through :func:`cadmotion.plugin.writers.write_outputs`."""
        from .writers import write_outputs

        return write_outputs(self, paths, **options)

    def _repr_html_(self):
        """A self-contained HTML player (Jupyter), in an iframe so its script runs."""
        import html

        from .writers.html import html_page

        page = html_page(self)
        return (f'<iframe srcdoc="{html.escape(page, quote=True)}" style="width:100%;height:640px;border:0" '
                'sandbox="allow-scripts"></iframe>')


def _wrap(motion, length_unit):
    kw = {f.name: getattr(motion, f.name) for f in fields(Motion)}
    return CadQueryMotion(**kw, length_unit=length_unit)


def simulate(assy, joints=None, drivers=None, *, t_end=1.0, steps=100, length_unit="mm", fixed=None,
             density=1000.0, analysis="kinematic", gravity=(0.0, 0.0, 0.0), **options):
    """Simulate a cq.Assembly; returns a :class:`CadQueryMotion` (SI units like every Motion).

    Parameters
    ----------
    assy : cadquery.Assembly, at the initial pose
    joints : list of model-file style dicts, or None to use the assembly's constraints
    drivers : list of ``[[drivers]]`` style dicts
    t_end, steps : output times linspace(0, t_end, steps + 1), s
    length_unit : the assembly's length unit ("mm")
    fixed : part keys fixed to the world; None: the ``Fixed`` constraints' parts, else
        the first part of the assembly (a note says so); ``[]``: no ground
    density : kg/m^3, a material name, or a mapping part key -> either
    analysis : "kinematic", "dynamic" or "inverse" (through the run service,
        :func:`~cadmotion.plugin.run_analysis.run_spec`); ``options`` go to the kernel's solver
    """
    from .run_analysis import run_spec

    spec = assembly_spec(assy, joints, drivers, length_unit=length_unit, fixed=fixed, density=density,
                         gravity=gravity)
    if fixed is None and not any(p.fixed for p in spec.parts):
        spec = _ground_first_part(spec, assy)
    try:
        motion = run_spec(spec, analysis, t_end=t_end, steps=steps, solver_options=options).motion
    except DrivingError as e:
        if analysis == "dynamic" or any(p.fixed for p in spec.parts):
            raise
        raise DrivingError(f"{e.message}; no part of cq.Assembly {assy.name!r} is fixed to the world",
                           where=e.where, hint=f"name the ground: fixed=[{spec.parts[0].name!r}] "
                                               "(or leave fixed out: the first part is the ground)") from e
    return _wrap(motion, length_unit)


def _ground_first_part(spec, assy):
    """``spec`` with its first part (the first one added to ``assy``) fixed, and a note."""
    first = spec.parts[0]
    warnings.warn(f"cq.Assembly {assy.name!r}: no part is fixed, {first.name!r} (the first part) is the ground; "
                  f"pass fixed=[...] to choose another", UserWarning, stacklevel=3)
    return replace(spec, parts=(replace(first, fixed=True), *spec.parts[1:]))


def apply(motion, assy, t, length_unit=None):
    """Set each part node's ``loc`` so that it sits at its pose at time ``t`` (in place); returns ``assy``.

    ``motion`` is any :class:`~cadmotion.kernel.motion.Motion` (poses in m, world frame);
    ``length_unit`` is the assembly's length unit (``"mm"``, ``"m"``, ...), by default the
    motion's own (a :class:`CadQueryMotion`) or mm. This is where a kernel Motion meets
    CadQuery: the kernel never imports the front end.
    """
    from ..importers.modelfile import UNITS
    from .cadquery_apply import apply_motion

    unit = length_unit or getattr(motion, "length_unit", "mm")
    apply_motion(motion, assy, t, length_scale=1.0 / UNITS[unit])
    return assy


def _clone(node):
    import cadquery as cq

    new = cq.Assembly(node.obj, loc=node.loc, name=node.name, color=node.color)
    for child in node.children:
        new.add(_clone(child))
    return new


def frames(motion, assy, times=None):
    """Yield ``(t, moved copy of assy)`` for each time (default: the motion's frames)."""
    times = motion.time if times is None else times
    for t in times:
        yield float(t), apply(motion, _clone(assy), float(t))


def ocp_tracks(motion, assy):
    """Keyframe tracks of the moving parts of ``assy``, as OCP CAD Viewer plays them.

    Returns a list of ``(path, action, times, values)``: for each moving part node (one
    that travels beyond round-off, :func:`~cadmotion.plugin.writers.movement.moving_parts`) a
    ``"t"`` track (offsets, assembly units, added to the node's initial position in its
    parent's frame) and a ``"q"`` track (quaternions x, y, z, w that three-cad-viewer
    multiplies onto the node's initial quaternion: final = initial * q, so
    q = R0^T R(t) in the parent's frame). Paths are ``/root/child/...`` by node name.
    Parents are taken as not moving (sub-assemblies that are parts of their own are
    animated through their own tracks).
    """
    from ..importers.modelfile import UNITS
    from ..kernel.rotations import invert_pose, matrix_to_quaternion

    if assy is None:
        raise MechanismError("ocp_tracks needs the assembly")
    scale = UNITS[getattr(motion, "length_unit", "mm")]
    nodes = _nodes(assy)
    world = {key: X for key, _, X, _ in nodes}
    paths = {}
    for key, node, _, parent in nodes:
        paths[key] = (paths[parent] if parent is not None else "") + "/" + node.name
    from .writers.movement import moving_parts

    times = [float(t) for t in motion.time]
    moving = dict(zip(motion.parts, moving_parts(motion))) if len(times) else {}
    tracks = []
    for key, node, X0, parent in nodes:
        if not moving.get(key, False):               # not a part, or still but for round-off
            continue
        P_inv = invert_pose(world[parent]) if parent is not None else np.eye(4)
        L0 = P_inv @ X0                                   # initial pose in the parent frame
        tv, qv = [], []
        for t in times:
            X = motion.pose(key, t)
            X[:3, 3] /= scale
            L = P_inv @ X
            tv.append([float(v) for v in L[:3, 3] - L0[:3, 3]])
            w, x, y, z = matrix_to_quaternion(L0[:3, :3].T @ L[:3, :3])
            qv.append([float(x), float(y), float(z), float(w)])
        tracks.append((paths[key], "t", times, tv))
        tracks.append((paths[key], "q", times, qv))
    return tracks


def _viewer_listening(ocp_vscode):
    """True when an OCP CAD Viewer (VS Code or ``python -m ocp_viewer``) answers on its port."""
    try:
        port = ocp_vscode.get_port()
        return port is not None and bool(ocp_vscode.port_check(int(port), ocp_vscode.get_host()))
    except Exception:                      # noqa: BLE001 - discovery failing means no viewer
        return False


def ocp_animation(motion, assy, speed=1.0, show=True):
    """Play the motion of ``assy`` in OCP CAD Viewer (VS Code or the standalone
    ``ocp_viewer``); returns the ``ocp_vscode.Animation``.

    ``show=True`` first shows the assembly at its initial pose (the animation's paths
    belong to the last ``show``); ``show=False`` animates what the viewer shows already.
    The tracks are :func:`ocp_tracks`.

    Returns None, with a warning that says how to see the motion, when ``ocp_vscode`` is
    not installed or no viewer is listening (a script or a test run without VS Code):
    nothing is sent and nothing fails. Raises :class:`OutputError` when ``show=False``
    and the viewer does not show the moving parts (show the assembly first).
    """
    try:
        import ocp_vscode
    except ImportError:
        warnings.warn("ocp_vscode is not installed, no animation: pip install ocp_vscode, or write "
                      "motion.export(['motion.html']) for a standalone player", UserWarning, stacklevel=3)
        return None
    if assy is None:
        raise OutputError("the animation needs the cq.Assembly", hint="motion.animation(assy)")
    if not _viewer_listening(ocp_vscode):
        warnings.warn("no OCP CAD Viewer is running, no animation: open it (VS Code's OCP CAD Viewer or "
                      "`python -m ocp_viewer`), or write motion.export(['motion.html']) for a standalone player",
                      UserWarning, stacklevel=3)
        return None
    tracks = ocp_tracks(motion, assy)
    if show:
        ocp_vscode.show(assy)
    anim = ocp_vscode.Animation()
    missing = sorted({path for path, *_ in tracks} - set(anim.paths))
    if missing:
        raise OutputError(f"OCP CAD Viewer does not show {', '.join(missing)}",
                          hint="show the assembly first: motion.animation(assy) with show=True, "
                               "or ocp_vscode.show(assy)")
    for path, action, times, values in tracks:
        anim.add_track(path, action, times, values)
    if tracks:                                  # nothing moves: nothing to play
        anim.animate(speed)
    return anim
