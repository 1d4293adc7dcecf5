"""Drivers and gravity given on the command line, added to a mechanism read from any file.

FreeCAD documents, ``.asmt`` files and STEP kinematics carry joints but often no motion:
``cadmotion run crank.FCStd --drive "Revolute=2*pi*t"`` drives them without writing a model
file. The text is ``NAME=EXPRESSION``:

* ``NAME`` a joint of the mechanism: its coordinate (``angle`` in rad, or ``disp`` in m,
  zero at the initial pose; the first one the joint type reports) follows the expression;
  ``JOINT.angle`` / ``JOINT.disp`` picks the coordinate of a cylindrical joint;
* ``NAME`` = ``PART.x`` (``.y``, ``.z``): the absolute position of the part frame origin in
  the assembly frame, m.

Values are SI (rad, m) whatever unit the file uses. The expression is parsed by
:mod:`cadmotion.kernel.expressions` (a whitelist of ``t``, numbers and functions), never
executed. A driver given here replaces a driver of the file on the same coordinate.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import MechanismError
from ..kernel.expressions import parse_expression
from ..kernel.spec import DriverSpec, TimeFunctionSpec

__all__ = ["parse_drive", "with_drivers", "with_gravity"]

_PART_COORDINATES = ("x", "y", "z")
_JOINT_COORDINATES = ("angle", "disp")


def _measures(joint_type):
    from ..kernel.symbolic.templates import TEMPLATES

    template = TEMPLATES.get(joint_type)
    return template.measures if template is not None else ()


def parse_drive(text, spec):
    """The :class:`DriverSpec` of one ``NAME=EXPRESSION`` text for ``spec``.

    Raises :class:`~cadmotion.errors.MechanismError` naming the option and listing the
    joints a driver could take when ``NAME`` is neither a joint nor ``PART.x|y|z``.
    """
    where = f"--drive {text!r}"
    name, sep, expression = text.partition("=")
    name, expression = name.strip(), expression.strip()
    if not sep or not name or not expression:
        raise MechanismError("expected NAME=EXPRESSION", where=where, hint='e.g. --drive "crank_pivot=2*pi*t"')
    parse_expression(expression, where=where)  # refuse bad text before any work is done
    joints = {j.name: j for j in spec.joints}
    parts = {p.name for p in spec.parts}
    base, _, suffix = name.rpartition(".")
    source = f"command line: {where}"
    function = TimeFunctionSpec(expression=expression)
    if name in joints:
        measures = _measures(joints[name].type)
        if not measures:
            raise MechanismError(f"joint {name!r} ({joints[name].type}) has no coordinate to drive", where=where,
                                 hint="drive a revolute, prismatic, cylindrical or screw joint, or a part coordinate")
        return DriverSpec(f"{name}.driver", function, joint=name, coordinate=measures[0], source=source)
    if base in joints and suffix in _JOINT_COORDINATES:
        if suffix not in _measures(joints[base].type):
            raise MechanismError(f"joint {base!r} ({joints[base].type}) has no {suffix!r} coordinate", where=where)
        return DriverSpec(f"{name}.driver", function, joint=base, coordinate=suffix, source=source)
    if base in parts and suffix in _PART_COORDINATES:
        return DriverSpec(f"{name}.driver", function, part=base, coordinate=suffix, source=source)
    drivable = [j.name for j in spec.joints if _measures(j.type)]
    raise MechanismError(
        f"{name!r} is neither a joint nor PART.x|y|z of {spec.name}", where=where,
        hint=("joints that can be driven: " + ", ".join(drivable)) if drivable
        else "the mechanism has no drivable joint",
    )


def _same_coordinate(a, b):
    return (a.joint, a.part, a.coordinate) == (b.joint, b.part, b.coordinate)


def with_drivers(spec, texts):
    """``spec`` with the drivers of ``texts`` (``NAME=EXPRESSION`` each) added or replacing."""
    if not texts:
        return spec
    new = [parse_drive(text, spec) for text in texts]
    kept = [d for d in spec.drivers if not any(_same_coordinate(d, n) for n in new)]
    return replace(spec, drivers=tuple(kept) + tuple(new))


def with_gravity(spec, gravity):
    """``spec`` with gravity (3 numbers, m/s², assembly frame) replaced, or unchanged for None."""
    if gravity is None:
        return spec
    return replace(spec, gravity=tuple(float(g) for g in gravity))
