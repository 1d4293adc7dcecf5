"""The geometry layer: every call into OpenCASCADE (OCCT, through its Python binding OCP).

Importers, writers, the interference check and the contact proposal ask this package for
what they need from CAD geometry — placements, mass properties, meshes, exact distances,
the kind and axis of a face — and get numbers (numpy arrays, floats, tuples) back wherever
numbers are all they need. Shapes themselves (``TopoDS_Shape``) pass through as opaque
handles. Lengths are in the shape's own unit (metres once an importer has scaled a part);
frames are named in each function's docstring.

Modules, one job each:

===================  ==========================================================================
``placements``       rigid transforms: ``gp_Trsf``/``TopLoc_Location`` <-> 4x4 numpy poses;
                     shapes moved, located, scaled
``shapes``           topology: compounds, numbered sub-shapes, faces around an edge, copies,
                     bounding boxes
``brep``             OCCT's BRep text format (the shapes inside ``.FCStd`` archives)
``xcaf``             reading a STEP file into an XCAF document: labels, names, colours, units
``step_writing``     writing an XCAF assembly to a STEP file
``mass_properties``  volume, centre and inertia of solids (``BRepGProp``)
``triangulation``    meshing (``BRepMesh``) and a shape's stored triangulation face by face
``analytic``         what a face or edge is exactly: plane, cylinder, cone, sphere, torus,
                     circle, line — with their axes, radii and planes
``distance``         exact distances and closest points (``BRepExtrema``) and point
                     classification against solids (``BRepClass3d``)
===================  ==========================================================================

Importing any module of this package imports no OCP: each function imports what it calls
when it is called, so a command loads OCP only when it reads or writes CAD geometry (a model
file without CAD, ``--help`` and the kernel never do). The kernel never imports this package.
"""

from __future__ import annotations

__all__ = ["ocp_available", "ocp_import_error"]


def ocp_available() -> bool:
    """True when OCP (OpenCASCADE's Python binding, the ``cad`` extra) can be imported."""
    return ocp_import_error() is None


def ocp_import_error():
    """None when OCP can be imported, else the :class:`ImportError` that importing it raised."""
    try:
        import OCP  # noqa: F401
    except ImportError as exc:
        return exc
    return None
