"""CadQuery front end: simulate a live ``cq.Assembly`` and move it.

>>> from cadmotion.plugin.cadquery import simulate                  # doctest: +SKIP
>>> motion = simulate(assy, joints=[{"type": "revolute", "parts": ["base", "crank"],
...                                  "origin": [0, 0, 0], "axis": [0, 0, 1]}],
...                   drivers=[{"joint": "joint1", "expression": "2*pi*t"}],
...                   fixed=["base"], t_end=1.0, steps=50)
>>> motion.apply(assy, 0.25)          # the assembly's parts move to t = 0.25 s
>>> for t, moved in motion.frames(assy): ...
>>> motion                            # in Jupyter: the HTML player (_repr_html_)

Parts and joints are read by :mod:`cadmotion.importers.cadquery` (see there).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from ..errors import MechanismError
from ..importers.cadquery import _nodes, assembly_spec
from ..kernel.motion import Motion

__all__ = ["simulate", "assembly_spec", "CadQueryMotion", "apply", "frames", "ocp_animation"]


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
        """An ``ocp_vscode.Animation`` of the motion (None when ocp_vscode is not installed)."""
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
    fixed : part keys fixed to the world
    density : kg/m^3, a material name, or a mapping part key -> either
    analysis : "kinematic" or "dynamic"; ``options`` go to the kernel's solver
    """
    from ..kernel import compile_model

    spec = assembly_spec(assy, joints, drivers, length_unit=length_unit, fixed=fixed, density=density,
                         gravity=gravity)
    model = compile_model(spec)
    if analysis == "kinematic":
        from ..kernel import kinematics

        motion = kinematics(model, t_end=t_end, steps=steps, **options)
    elif analysis == "dynamic":
        from ..kernel.dynamics import simulate as dyn

        motion = dyn(model, t_end, steps, **options)
    else:
        raise MechanismError(f"unknown analysis {analysis!r}", hint="use 'kinematic' or 'dynamic'")
    if motion.spec is None:
        motion.spec = spec
    return _wrap(motion, length_unit)


def apply(motion, assy, t):
    """Set each part node's ``loc`` so that it sits at its pose at time ``t`` (in place); returns ``assy``."""
    from ..importers.modelfile import UNITS
    from .cadquery_apply import apply_motion

    apply_motion(motion, assy, t, length_scale=1.0 / UNITS[getattr(motion, "length_unit", "mm")])
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


def ocp_animation(motion, assy, speed=1.0, show=True):
    """Animate ``assy`` in OCP CAD Viewer (VS Code); None when ``ocp_vscode`` is absent.

    The assembly is shown at its initial pose and each moving part gets a translation
    (``t``) and a quaternion (``q``) track, relative to its initial placement in its
    parent's frame, as three-cad-viewer's Animation expects.
    """
    try:
        import ocp_vscode
    except ImportError:
        return None
    from ..importers.modelfile import UNITS
    from ..importers.asmt import matrix_to_quaternion

    if assy is None:
        raise MechanismError("ocp_animation needs the assembly")
    scale = UNITS[getattr(motion, "length_unit", "mm")]
    if show:
        ocp_vscode.show(assy)
    anim = ocp_vscode.Animation(assy)
    paths = {}
    for key, node, X, parent in _nodes(assy):
        paths[key] = (paths[parent] if parent is not None else "") + "/" + node.name
    times = [float(t) for t in motion.time]
    for key, node, X0, parent in _nodes(assy):
        if key not in motion.parts:
            continue
        tv, qv = [], []
        for t in times:
            P = motion.pose(key, t)
            P[:3, 3] /= scale
            # offsets from the initial pose: position p - p0, rotation R R0^T (about the
            # node's own origin), as three-cad-viewer adds them to the initial placement
            tv.append([float(v) for v in P[:3, 3] - X0[:3, 3]])
            w, x, y, z = matrix_to_quaternion(P[:3, :3] @ X0[:3, :3].T)
            qv.append([float(x), float(y), float(z), float(w)])
        if np.allclose(tv, tv[0]) and np.allclose(qv, qv[0]):
            continue
        anim.add_track(paths[key], "t", times, tv)
        anim.add_track(paths[key], "q", times, qv)
    anim.animate(speed)
    return anim
