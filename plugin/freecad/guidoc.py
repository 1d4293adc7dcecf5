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
already has a ``GuiDocument.xml`` (saved by the GUI) is left alone. A document that was
opened from a file the GUI saved keeps that file's view data (``freecadcmd`` drops it on
saving): :func:`read_gui_data` before the save, ``previous=`` after. The file is
rewritten atomically (a temporary zip in the same folder, then ``os.replace``).

Works with or without FreeCAD; ``visibility`` is a mapping object name -> bool.
"""

from __future__ import annotations

import os
import re
import tempfile
import zipfile
from xml.sax.saxutils import quoteattr

__all__ = ["GUI_DOCUMENT", "gui_document_xml", "add_gui_document", "document_visibility", "read_gui_data"]

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


def read_gui_data(path):
    """The view data of an ``.FCStd`` the GUI saved: {entry name: bytes}, or None.

    ``GuiDocument.xml`` and the files it refers to (``file="..."``: colour lists). A save
    by ``freecadcmd`` drops them; :func:`add_gui_document` puts them back.
    """
    try:
        with zipfile.ZipFile(os.fspath(path)) as zf:
            names = set(zf.namelist())
            if GUI_DOCUMENT not in names:
                return None
            text = zf.read(GUI_DOCUMENT)
            files = set(re.findall(rb'file="([^"]+)"', text)) if text else set()
            data = {GUI_DOCUMENT: text}
            for f in files:
                name = f.decode("utf-8", "replace")
                if name in names:
                    data[name] = zf.read(name)
            return data
    except (OSError, zipfile.BadZipFile, KeyError):
        return None


def _merged(previous, visibility, taken):
    """``previous`` view data with a Visibility-only entry for each object it lacks; None if unusable."""
    text = previous[GUI_DOCUMENT].decode("utf-8")
    if any(name in taken for name in previous if name != GUI_DOCUMENT):
        return None                                   # an entry name the new file already uses
    have = set(re.findall(r'<ViewProvider name="([^"]*)"', text))
    extra = {n: v for n, v in visibility.items() if quoteattr(str(n))[1:-1] not in have}
    end = text.rfind("</ViewProviderData>")
    count = re.search(r'<ViewProviderData Count="(\d+)"', text)
    if end < 0 or count is None:
        return None
    entries = gui_document_xml(extra).split("\n")
    start = next(i for i, line in enumerate(entries) if "<ViewProviderData" in line) + 1
    stop = next(i for i, line in enumerate(entries) if "</ViewProviderData>" in line)
    block = "\n".join(entries[start:stop])
    text = text[:end].rstrip(" ") + (block + "\n    " if block else "") + text[end:]
    text = text.replace(count.group(0), f'<ViewProviderData Count="{int(count.group(1)) + len(extra)}"', 1)
    out = dict(previous)
    out[GUI_DOCUMENT] = text.encode("utf-8")
    return out


def add_gui_document(path, visibility, previous=None):
    """Add a ``GuiDocument.xml`` to the ``.FCStd`` at ``path`` if it has none; True if added.

    ``visibility``: object name -> bool (see :func:`document_visibility`).
    ``previous``: :func:`read_gui_data` of the file the document was opened from; its
    view data (colours, display modes, camera) is kept, objects it does not know get a
    ``Visibility`` entry.
    """
    path = os.fspath(path)
    with zipfile.ZipFile(path) as zin:
        taken = set(zin.namelist())
        if GUI_DOCUMENT in taken:
            return False
        entries = _merged(previous, visibility, taken) if previous else None
        if entries is None:
            entries = {GUI_DOCUMENT: gui_document_xml(visibility).encode("utf-8")}
        fd, tmp = tempfile.mkstemp(suffix=".FCStd", prefix=".cadmotion-", dir=os.path.dirname(path) or ".")
        os.close(fd)
        try:
            with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zout:
                zout.comment = zin.comment
                for info in zin.infolist():
                    zout.writestr(info, zin.read(info.filename))
                for name, data in entries.items():
                    zout.writestr(name, data)
        except BaseException:
            os.unlink(tmp)
            raise
    os.chmod(tmp, os.stat(path).st_mode & 0o7777)
    os.replace(tmp, path)
    return True
