"""The simulation panel's settings, kept in the FreeCAD document.

Stored in a hidden ``App::FeaturePython`` called ``CadmotionSettings`` (no Python proxy,
so the document opens anywhere)::

    DriverJoints        StringList, joint names
    DriverCoordinates   StringList, the joint coordinate driven: angle or disp
    DriverExpressions   StringList, f(t) with t in s: rad for angles, mm for
                        displacements (FreeCAD's length unit); "" = not driven
    TEnd                Float, end time, s
    Steps               Integer, output intervals
    Analysis            String, kinematic or dynamic

The three driver lists are parallel, one entry per joint coordinate the panel showed.
They take the place of the document's own drivers of those coordinates (a workbench
joint's ``Driver``, a model file's ``[[drivers]]``): an entry with an empty expression
leaves that coordinate undriven. :func:`apply_drivers` does this for
:func:`cadmotion.plugin.freecad.document.document_spec`, so a headless run of a saved
document uses the drivers typed in the panel.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional, Tuple

from ...kernel.spec import DriverSpec, TimeFunctionSpec

__all__ = ["SETTINGS_OBJECT", "PanelSettings", "settings_object", "read_settings", "write_settings",
           "driver_spec", "apply_drivers"]

SETTINGS_OBJECT = "CadmotionSettings"
MM = 1e-3


@dataclass(frozen=True)
class PanelSettings:
    """What the panel stores: ``drivers`` as (joint, coordinate, expression) rows."""

    drivers: Tuple[Tuple[str, str, str], ...] = ()
    t_end: Optional[float] = None
    steps: Optional[int] = None
    analysis: Optional[str] = None


def settings_object(doc, create=False):
    """The document's ``CadmotionSettings`` object (None if it has none and not ``create``)."""
    obj = doc.getObject(SETTINGS_OBJECT)
    if obj is None or SETTINGS_OBJECT not in obj.PropertiesList:
        obj = next((o for o in doc.Objects if SETTINGS_OBJECT in o.PropertiesList), None)
    if obj is not None or not create:
        return obj
    obj = doc.addObject("App::FeaturePython", SETTINGS_OBJECT)
    add = obj.addProperty
    add("App::PropertyBool", SETTINGS_OBJECT, "Settings", "marks the cadmotion panel settings")
    add("App::PropertyStringList", "DriverJoints", "Drivers", "joint of each driver")
    add("App::PropertyStringList", "DriverCoordinates", "Drivers", "driven coordinate: angle or disp")
    add("App::PropertyStringList", "DriverExpressions", "Drivers",
        "f(t), t in s: rad for angles, mm for displacements; empty: not driven")
    add("App::PropertyFloat", "TEnd", "Settings", "end time, s")
    add("App::PropertyInteger", "Steps", "Settings", "output intervals")
    add("App::PropertyString", "Analysis", "Settings", "kinematic or dynamic")
    obj.setEditorMode(SETTINGS_OBJECT, 2)
    try:
        obj.Visibility = False
    except Exception:
        pass
    return obj


def read_settings(doc):
    """The stored :class:`PanelSettings`, or None when the document has none."""
    obj = settings_object(doc)
    if obj is None:
        return None
    rows = tuple(zip(obj.DriverJoints, obj.DriverCoordinates, obj.DriverExpressions))
    return PanelSettings(drivers=rows, t_end=float(obj.TEnd) if obj.TEnd > 0 else None,
                         steps=int(obj.Steps) if obj.Steps > 0 else None, analysis=obj.Analysis or None)


def write_settings(doc, settings):
    """Store ``settings`` in the document (the object is made if missing); the object."""
    obj = settings_object(doc, create=True)
    obj.DriverJoints = [str(j) for j, _, _ in settings.drivers]
    obj.DriverCoordinates = [str(c) for _, c, _ in settings.drivers]
    obj.DriverExpressions = [str(e) for _, _, e in settings.drivers]
    obj.TEnd = float(settings.t_end or 0.0)
    obj.Steps = int(settings.steps or 0)
    obj.Analysis = str(settings.analysis or "")
    return obj


def driver_spec(joint, coordinate, expression, source="task panel"):
    """The DriverSpec of one panel row (``disp`` expressions are in mm)."""
    return DriverSpec(name=f"{joint}.{coordinate}.driver", joint=joint, coordinate=coordinate,
                      function=TimeFunctionSpec(expression=expression, scale=MM if coordinate == "disp" else 1.0),
                      source=source)


def apply_drivers(spec, rows, source="task panel"):
    """``spec`` with the panel's ``rows`` in place of its drivers of those joint coordinates.

    Rows naming a joint the mechanism does not have are left out; returns
    ``(spec, notes)`` with a note for each of them.
    """
    from ...kernel.symbolic.templates import TEMPLATES

    joints = {j.name: j for j in spec.joints}
    notes, rows_kept = [], []
    for joint, coord, expr in rows:
        j = joints.get(joint)
        measures = TEMPLATES[j.type].measures if j is not None and j.type in TEMPLATES else ()
        if coord not in measures:
            notes.append(f"the stored driver of {joint}.{coord} is ignored: the mechanism has no such joint coordinate")
            continue
        rows_kept.append((joint, coord, expr.strip()))
    covered = {(j, c) for j, c, _ in rows_kept}

    def first_measure(d):
        j = joints.get(d.joint)
        m = TEMPLATES[j.type].measures if j is not None and j.type in TEMPLATES else ()
        return m[0] if m else None

    kept = [d for d in spec.drivers
            if not (d.joint and (d.joint, d.coordinate or first_measure(d)) in covered)]
    extra = [driver_spec(j, c, e, source) for j, c, e in rows_kept if e]
    return replace(spec, drivers=tuple(kept) + tuple(extra)), notes
