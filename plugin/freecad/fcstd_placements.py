"""Write part placements into a copy of an ``.FCStd`` file, without FreeCAD.

An ``.FCStd`` is a zip archive. A part's pose is stored twice:

- ``Document.xml``: the object's ``Placement`` property (``<PropertyPlacement Px Py Pz
  Q0 Q1 Q2 Q3 A Ox Oy Oz/>``: mm, quaternion x, y, z, w, and the same rotation as angle
  (rad) and axis), and for ``App::Link`` objects also ``LinkPlacement``;
- the object's ``<Name>.Shape.brp`` (OpenCASCADE BRep text), whose top-level shape carries
  a location. FreeCAD restores the shape *with that location* on opening, so a document
  whose XML was edited alone shows the parts where they were.

This module updates both: the XML attributes are rewritten in place (the rest of
Document.xml stays byte for byte), and the BRep is read with OCP, relocated by the change
of placement (``L_new = X_new · X_old⁻¹ · L_old``, so locations that are not the bare
placement stay right) and written back in BRep format version 1 without triangulation
(readable by FreeCAD 0.19 and later). Every other member is copied unchanged, and the new
archive is written to a temporary file beside the target and renamed over it when
complete.

Poses are 4x4 matrices in metres, relative to the frame the object's ``Placement`` is
given in (its container, or the assembly for Assembly-workbench parts) — the frame
:func:`cadmotion.importers.fcstd.read_fcstd` reports part poses in.

>>> from cadmotion.importers.fcstd import read_fcstd                     # doctest: +SKIP
>>> spec = read_fcstd("crank.FCStd"); motion = kinematics(compile_model(spec_with_driver), 1, 50)
>>> write_motion_frame("crank.FCStd", "crank-at-0.5s.FCStd", motion, t=0.5)  # doctest: +SKIP
"""

from __future__ import annotations

import math
import re
import zipfile
from pathlib import Path

import numpy as np

from ...errors import OutputError

__all__ = ["write_placements", "write_motion_frame", "read_placements", "placement_attributes"]

MM = 1e-3
_OBJ_RE = r'<Object name="{name}"(?:\s[^>]*)?>'


def placement_attributes(X):
    """FreeCAD's ``PropertyPlacement`` attributes (strings) of a 4x4 pose in metres."""
    from ...importers.asmt import matrix_to_quaternion

    X = np.asarray(X, float)
    if X.shape != (4, 4) or not np.all(np.isfinite(X)):
        raise ValueError("a pose must be a finite 4x4 matrix")
    R = X[:3, :3]
    if not np.allclose(R.T @ R, np.eye(3), atol=1e-6) or np.linalg.det(R) < 0:
        raise ValueError("a pose's rotation must be orthonormal and right-handed")
    w, x, y, z = matrix_to_quaternion(R)
    angle = 2.0 * math.atan2(math.sqrt(x * x + y * y + z * z), w)
    s = math.sqrt(x * x + y * y + z * z)
    axis = (x / s, y / s, z / s) if s > 1e-15 else (0.0, 0.0, 1.0)
    p = X[:3, 3] / MM
    vals = {"Px": p[0], "Py": p[1], "Pz": p[2], "Q0": x, "Q1": y, "Q2": z, "Q3": w, "A": angle,
            "Ox": axis[0], "Oy": axis[1], "Oz": axis[2]}
    return {k: f"{float(v):.16f}" for k, v in vals.items()}


def _pose_from_attrs(attrs):
    x, y, z, w = (float(attrs[k]) for k in ("Q0", "Q1", "Q2", "Q3"))
    n = math.sqrt(x * x + y * y + z * z + w * w)
    x, y, z, w = x / n, y / n, z / n, w / n
    X = np.eye(4)
    X[:3, :3] = [[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                 [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                 [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]]
    X[:3, 3] = [float(attrs[k]) * MM for k in ("Px", "Py", "Pz")]
    return X


def _object_span(text, name, where):
    """(start, end) of the object's <Object name=...> element inside <ObjectData>."""
    data = text.find("<ObjectData")
    if data < 0:
        raise OutputError("Document.xml has no <ObjectData>", where=where)
    m = re.compile(_OBJ_RE.format(name=re.escape(name))).search(text, data)
    if m is None:
        return None
    end = text.find("</Object>", m.end())
    if end < 0:
        raise OutputError(f"the object {name!r} is not closed in Document.xml", where=where)
    return m.start(), end


def _property_element(text, span, prop):
    """(start, end, attrs) of <PropertyPlacement .../> of property ``prop`` in the span."""
    start, end = span
    pattern = re.compile(r'<Property name="%s"[^>]*>\s*(<PropertyPlacement\b[^>]*/>)' % re.escape(prop))
    m = pattern.search(text, start, end)
    if m is None:
        return None
    el = m.group(1)
    attrs = dict(re.findall(r'(\w+)="([^"]*)"', el))
    return m.start(1), m.end(1), attrs


def _names_and_labels(text):
    """Label -> internal name, from the objects' Label properties."""
    out = {}
    data = text.find("<ObjectData")
    for m in re.finditer(r'<Object name="([^"]+)"(?:\s[^>]*)?>', text[data:] if data >= 0 else ""):
        name = m.group(1)
        seg_start = data + m.end()
        seg_end = text.find("</Object>", seg_start)
        lm = re.compile(r'<Property name="Label"[^>]*>\s*<String value="([^"]*)"').search(text, seg_start, seg_end)
        if lm:
            out.setdefault(_unescape(lm.group(1)), []).append(name)
    return out


def _unescape(s):
    import html

    return html.unescape(s)


def _relocate_brep(data, X_old, X_new, where):
    """BRep text with its top-level location changed by X_new · X_old^-1 (poses in metres)."""
    from ...geometry import brep, ocp_available, placements

    if not ocp_available():
        raise OutputError("rewriting the shapes inside an .FCStd needs OCP (cadquery's OpenCASCADE "
                          "bindings)", where=where, hint="pip install cadquery-ocp (or cadquery)")
    shape = brep.read_brep(data)
    if shape is None:
        raise OutputError("cannot read the BRep shape", where=where)
    D = X_new @ np.linalg.inv(X_old)
    D[:3, 3] /= MM          # the BRep is in mm
    L = D @ placements.location_matrix(shape)   # one location, not a chain: what FreeCAD reads back as the placement
    R, T = np.linalg.qr(L[:3, :3])
    R = R * np.sign(np.diag(T))          # re-orthonormalised, the columns keep their senses
    return brep.write_brep(placements.located(shape, placements.location(R, L[:3, 3])))


def read_placements(path):
    """Object name -> Placement pose (4x4, m) of every object with a Placement in the file."""
    from ...importers.fcstd_archive import Archive

    arc = Archive(path)
    try:
        text = arc.read("Document.xml").decode("utf-8")
    finally:
        arc.close()
    out = {}
    data = text.find("<ObjectData")
    for m in re.finditer(r'<Object name="([^"]+)"(?:\s[^>]*)?>', text[data:]):
        span = _object_span(text, m.group(1), path)
        el = _property_element(text, span, "Placement") if span else None
        if el is not None:
            out[m.group(1)] = _pose_from_attrs(el[2])
    return out


def write_placements(src, dst, placements, *, in_place=False):
    """Copy ``src`` to ``dst`` with new placements for some objects.

    Parameters
    ----------
    src, dst : paths of .FCStd files; ``dst`` is replaced atomically. ``dst`` may be
        ``src`` only with ``in_place=True``.
    placements : mapping object name (internal ``Name``, or a ``Label`` that one object
        has) -> 4x4 pose in metres, in the frame of the object's ``Placement``.

    Returns
    -------
    Path of ``dst``.

    Raises
    ------
    OutputError
        An object that is not in the document, a pose that is not rigid, a missing or
        unwritable folder, a BRep that cannot be read, OCP missing.
    CadImportError
        ``src`` is not a readable FCStd file.
    """
    from ...importers.fcstd_archive import Archive
    from ..writers.atomic import atomic_path

    src, dst = Path(src), Path(dst)
    if src.resolve() == dst.resolve() and not in_place:
        raise OutputError("the output would overwrite the input", where=str(dst),
                          hint="write to another file, or pass in_place=True")
    arc = Archive(src)
    try:
        text = arc.read("Document.xml").decode("utf-8")
        labels = _names_and_labels(text)
        edits, breps = [], {}
        for key, X in placements.items():
            name = key
            span = _object_span(text, name, str(src))
            if span is None:
                names = labels.get(key, [])
                if len(names) != 1:
                    raise OutputError(f"no object called {key!r} in the document" if not names else
                                      f"{len(names)} objects are labelled {key!r}: " + ", ".join(names),
                                      where=str(src), hint="use the objects' internal names")
                name = names[0]
                span = _object_span(text, name, str(src))
            try:
                attrs_new = placement_attributes(X)
            except ValueError as exc:
                raise OutputError(f"placement of {key!r}: {exc}", where=str(dst)) from None
            found = False
            X_old = None
            for prop in ("Placement", "LinkPlacement"):
                el = _property_element(text, span, prop)
                if el is None:
                    continue
                found = True
                s, e, attrs = el
                if prop == "Placement":
                    X_old = _pose_from_attrs(attrs)
                rest = {k: v for k, v in attrs.items() if k not in attrs_new}
                body = " ".join(f'{k}="{v}"' for k, v in {**attrs_new, **rest}.items())
                edits.append((s, e, f"<PropertyPlacement {body}/>"))
            if not found:
                raise OutputError(f"the object {name!r} has no Placement", where=str(src))
            m = re.compile(r'<Property name="Shape"[^>]*>\s*<Part\b[^>]*\bfile="([^"]+)"').search(text, *span)
            if m and m.group(1) in arc.members and X_old is not None:
                breps[m.group(1)] = (X_old, np.asarray(X, float), name)
        for s, e, new in sorted(edits, reverse=True):
            text = text[:s] + new + text[e:]
        new_members = {"Document.xml": text.encode("utf-8")}
        for member, (X_old, X_new, name) in breps.items():
            data = arc.read(member)
            if data.strip():
                new_members[member] = _relocate_brep(data, X_old, X_new, f"{src}: {member}")
        with atomic_path(dst) as tmp:
            with zipfile.ZipFile(tmp, "w") as out:
                for info in arc.zip.infolist():
                    data = new_members.get(info.filename)
                    if data is None:
                        data = arc.read(info.filename)
                    zi = zipfile.ZipInfo(info.filename, date_time=info.date_time)
                    zi.compress_type = info.compress_type
                    zi.external_attr = info.external_attr
                    zi.comment = info.comment
                    out.writestr(zi, data)
    finally:
        arc.close()
    return dst


def write_motion_frame(src, dst, motion, t=None, *, spec=None, in_place=False):
    """Write the poses of ``motion`` at time ``t`` (default: the last frame) into a copy of ``src``.

    The motion's parts are matched to the document's objects through the spec they came
    from (``motion.spec`` or ``spec``): ``PartSpec.path`` of :func:`read_fcstd` ends with
    the object's internal name. Parts without an object (the assembly's ground) and fixed
    parts are skipped.
    """
    spec = spec if spec is not None else getattr(motion, "spec", None)
    if spec is None:
        raise OutputError("the motion has no spec to match its parts to the document's objects",
                          where=str(dst), hint="pass spec= (the MechanismSpec read from the .FCStd)")
    if t is None:
        t = float(motion.time[-1])
    placements = {}
    objects = {p.name: p.path.rsplit("/", 1)[-1] for p in spec.parts if p.path and not p.fixed}
    for name in motion.parts:
        obj = objects.get(name)
        if obj is None:
            continue
        placements[obj] = motion.pose(name, t)
    if not placements:
        raise OutputError("none of the motion's parts maps to an object of the document", where=str(dst))
    return write_placements(src, dst, placements, in_place=in_place)
