"""Give a document saved without FreeCAD's GUI the view data the GUI needs to show its parts.

An ``.FCStd`` is a zip; FreeCAD's GUI keeps each object's view-provider properties
(``Visibility``, colours, display mode) in its ``GuiDocument.xml``. ``freecadcmd`` has
no view providers and writes no ``GuiDocument.xml``, and FreeCAD 0.20's GUI opens such a
file with every shape-bearing object hidden (its view providers start hidden and
nothing says otherwise) although ``Document.xml`` stores ``Visibility = true``.

:func:`add_gui_document` adds a minimal ``GuiDocument.xml`` to such a file: one
``ViewProvider`` entry per object with just its ``Visibility`` — the object's own
``Visibility`` as the document in memory has it (so the stored motion stays hidden and
the parts are shown), and an empty ``Camera`` (FreeCAD requires the element; empty
settings keep its default view). Every other view property keeps FreeCAD's default. A file that
already has a ``GuiDocument.xml`` (saved by the GUI) is left alone. The file is
rewritten atomically (a temporary zip in the same folder, then ``os.replace``).

Works with or without FreeCAD; ``visibility`` is a mapping object name -> bool.
"""

from __future__ import annotations

import os
import tempfile
import zipfile
from xml.sax.saxutils import quoteattr

__all__ = ["GUI_DOCUMENT", "gui_document_xml", "add_gui_document", "document_visibility"]

GUI_DOCUMENT = "GuiDocument.xml"


def gui_document_xml(visibility):
    """The text of a ``GuiDocument.xml`` that sets only each object's ``Visibility``."""
    lines = ["<?xml version='1.0' encoding='utf-8'?>",
             "<!-- written by cadmotion for a document saved without FreeCAD's GUI -->",
             '<Document SchemaVersion="1">',
             f'    <ViewProviderData Count="{len(visibility)}">']
    for name, shown in visibility.items():
        lines += [f"        <ViewProvider name={quoteattr(str(name))} expanded=\"0\">",
                  '            <Properties Count="1" TransientCount="0">',
                  '                <Property name="Visibility" type="App::PropertyBool" status="1">',
                  f'                    <Bool value="{"true" if shown else "false"}"/>',
                  "                </Property>",
                  "            </Properties>",
                  "        </ViewProvider>"]
    # FreeCAD reads a Camera element after the view providers; empty settings keep its default view
    lines += ["    </ViewProviderData>", '    <Camera settings=""/>', "</Document>", ""]
    return "\n".join(lines)


def document_visibility(doc):
    """Object name -> the object's ``Visibility`` (True where it has none) for a FreeCAD document."""
    return {o.Name: bool(getattr(o, "Visibility", True)) for o in doc.Objects}


def add_gui_document(path, visibility):
    """Add a ``GuiDocument.xml`` to the ``.FCStd`` at ``path`` if it has none; True if added.

    ``visibility``: object name -> bool (see :func:`document_visibility`).
    """
    path = os.fspath(path)
    with zipfile.ZipFile(path) as zin:
        if GUI_DOCUMENT in zin.namelist():
            return False
        fd, tmp = tempfile.mkstemp(suffix=".FCStd", prefix=".cadmotion-", dir=os.path.dirname(path) or ".")
        os.close(fd)
        try:
            with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zout:
                zout.comment = zin.comment
                for info in zin.infolist():
                    zout.writestr(info, zin.read(info.filename))
                zout.writestr(GUI_DOCUMENT, gui_document_xml(visibility))
        except BaseException:
            os.unlink(tmp)
            raise
    os.chmod(tmp, os.stat(path).st_mode & 0o7777)
    os.replace(tmp, path)
    return True
