"""Writing an assembly to a STEP file: an XCAF document of named, coloured products placed by
named components (``XCAFDoc_ShapeTool``), written by ``STEPCAFControl_Writer``.

Shapes are in metres and the document says so (``XCAFDoc_DocumentTool.SetLengthUnit``); the
file declares the unit given to :func:`write_step` and OCCT scales the values on writing.
OCCT's process-wide ``write.step.unit`` is set for the write and restored after;
``xstep.cascade.unit`` is neither read nor changed. Poses are 4x4 numpy matrices in metres.
"""

from __future__ import annotations

import contextlib

from ..errors import OutputError
from .placements import location, orthonormalised
from .shapes import compound, copy

__all__ = ["XcafAssembly", "write_step", "interface_static", "quiet_occt"]


@contextlib.contextmanager
def interface_static(values):
    """Temporarily set OCCT ``Interface_Static`` string parameters (``{name: value}``)."""
    from OCP.Interface import Interface_Static

    old = {}
    for key, value in values.items():
        old[key] = Interface_Static.CVal_s(key)
        Interface_Static.SetCVal_s(key, value)
    try:
        yield
    finally:
        for key, value in old.items():
            if value:
                Interface_Static.SetCVal_s(key, value)


@contextlib.contextmanager
def quiet_occt():
    """Keep OCCT's transfer statistics off stdout (only failures are printed) while writing."""
    from OCP.Message import Message, Message_Gravity

    printers = list(Message.DefaultMessenger_s().Printers())
    levels = [p.GetTraceLevel() for p in printers]
    for p in printers:
        p.SetTraceLevel(Message_Gravity.Message_Fail)
    try:
        yield
    finally:
        for p, level in zip(printers, levels):
            p.SetTraceLevel(level)


class XcafAssembly:
    """An XCAF document holding one top-level assembly named ``name``, shapes in metres.

    Add products (:meth:`add_product`), place components of them (:meth:`add_component`),
    then :meth:`finish` and :func:`write_step` ``.doc``.
    """

    def __init__(self, name):
        from OCP.TCollection import TCollection_ExtendedString
        from OCP.TDocStd import TDocStd_Document
        from OCP.XCAFApp import XCAFApp_Application
        from OCP.XCAFDoc import XCAFDoc_DocumentTool

        app = XCAFApp_Application.GetApplication_s()
        self.doc = TDocStd_Document(TCollection_ExtendedString("XmlXCAF"))
        app.InitDocument(self.doc)
        XCAFDoc_DocumentTool.SetLengthUnit_s(self.doc, 1.0)  # shapes are in metres
        self._shapes = XCAFDoc_DocumentTool.ShapeTool_s(self.doc.Main())
        self._colors = XCAFDoc_DocumentTool.ColorTool_s(self.doc.Main())
        self._top = self._shapes.NewShape()
        self._name(self._top, name)

    @staticmethod
    def _name(label, text):
        from OCP.TCollection import TCollection_ExtendedString
        from OCP.TDataStd import TDataStd_Name

        TDataStd_Name.Set_s(label, TCollection_ExtendedString(text))

    def add_product(self, shape, name, rgba, copy_geometry=False):
        """A product label of ``shape`` (part frame, m) named ``name``, coloured ``rgba`` (sRGB in
        0..1, alpha 1 when there are three values).

        The shape is wrapped in a fresh compound: OCCT 7.9 writes the colour of a compound
        product but not of a bare solid. STEP styles attach to the geometry, so a second colour
        of a shape already added needs ``copy_geometry``.
        """
        from OCP.Quantity import Quantity_Color, Quantity_ColorRGBA, Quantity_TOC_sRGB
        from OCP.XCAFDoc import XCAFDoc_ColorGen

        if copy_geometry:
            shape = copy(shape)
        label = self._shapes.AddShape(compound([shape]), False)
        self._name(label, name)
        r, g, bl = (min(max(float(c), 0.0), 1.0) for c in rgba[:3])
        alpha = float(rgba[3]) if len(rgba) > 3 else 1.0
        self._colors.SetColor(label, Quantity_ColorRGBA(Quantity_Color(r, g, bl, Quantity_TOC_sRGB), alpha),
                              XCAFDoc_ColorGen)
        return label

    def add_component(self, product, X, name):
        """Place ``product`` (a label from :meth:`add_product`) in the assembly at the pose X (4x4,
        m; the rotation re-orthonormalised against round-off), as a component named ``name``."""
        component = self._shapes.AddComponent(self._top, product, location(orthonormalised(X[:3, :3]), X[:3, 3]))
        self._name(component, name)
        return component

    def finish(self):
        """Update the assembly structure after the last component (before writing)."""
        self._shapes.UpdateAssemblies()


def write_step(doc, path, unit, where=None):
    """Write the XCAF document ``doc`` to the STEP file ``path`` (names and colours on), the file's
    length unit ``unit`` (OCCT's name, e.g. ``"MM"``). AP214, or AP242 in metres when the document
    holds meshes (faces without surface, :mod:`.meshes`): AP214 has no entity for them, AP242's
    ``TRIANGULATED_SURFACE_SET`` holds their triangles (OCCT writes the tessellation of shapes
    without B-rep only, its default), and OCCT 7.9 writes their nodes without converting them to
    the file's unit (a 0.1 m cube written in a millimetre file is 0.1 mm large).

    Raises
    ------
    OutputError
        OCCT cannot translate the document or write the file (``where`` names it in the message,
        default ``path``).
    """
    from OCP.IFSelect import IFSelect_ReturnStatus
    from OCP.STEPCAFControl import STEPCAFControl_Writer
    from OCP.STEPControl import STEPControl_StepModelType
    from OCP.XSControl import XSControl_WorkSession

    where = str(path) if where is None else where
    writer = STEPCAFControl_Writer(XSControl_WorkSession(), False)  # also initialises the statics
    if _has_meshes(doc):  # OCCT 7.9 writes a triangulation's nodes unscaled: the file's unit must be the metre
        settings = {"write.step.unit": "M", "write.step.schema": "AP242DIS"}
    else:
        settings = {"write.step.unit": unit}
    with interface_static(settings), quiet_occt():
        writer.SetColorMode(True)
        writer.SetNameMode(True)
        if not writer.Transfer(doc, STEPControl_StepModelType.STEPControl_AsIs):
            raise OutputError("OCCT could not translate the assembly to STEP", where=where)
        status = writer.Write(str(path))
        if status != IFSelect_ReturnStatus.IFSelect_RetDone:
            raise OutputError(f"OCCT failed to write STEP ({status})", where=where,
                              hint="check free space and permissions")


def _has_meshes(doc) -> bool:
    """True when a shape of the XCAF document ``doc`` has faces without surface (meshes)."""
    from OCP.TDF import TDF_LabelSequence
    from OCP.XCAFDoc import XCAFDoc_DocumentTool, XCAFDoc_ShapeTool

    from .meshes import has_mesh_faces

    labels = TDF_LabelSequence()
    XCAFDoc_DocumentTool.ShapeTool_s(doc.Main()).GetFreeShapes(labels)
    return any(has_mesh_faces(XCAFDoc_ShapeTool.GetShape_s(labels.Value(i))) for i in range(1, labels.Length() + 1))
