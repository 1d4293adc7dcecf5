"""FreeCAD front end: workbench, macro, headless simulation and FCStd placements.

Inside FreeCAD (GUI or ``freecadcmd``)::

    from cadmotion.plugin.freecad import simulate_document
    run = simulate_document("crank.step", joints=[...], drivers=[...], t_end=1, steps=50,
                            save_as="crank.FCStd")
    run.motion.pose("crank", 0.5)

Modules
-------
``document``          FreeCAD document -> MechanismSpec (Assembly joints, workbench joints,
                      or ``<doc>.cadmotion.toml``)
``placements``        FreeCAD placements (mm) <-> 4x4 poses (m), global placements
``joints``            the workbench's joint objects, their view provider, the
                      axis-from-selection rules
``simulate``          ``simulate_document``, the stored motion, ``show_time``, exports
``gui``               workbench commands, task panel, playback (FreeCAD GUI only)
``fcstd_placements``  write placements into a copy of an .FCStd *without* FreeCAD
``install``           ``cadmotion freecad-install``: link or copy into FreeCAD's Mod folder

Only ``fcstd_placements`` and ``install`` work outside FreeCAD; importing this package
does not import FreeCAD.
"""

__all__ = ["simulate_document", "import_step", "show_time", "load_motion", "document_spec",
           "make_joint", "joint_from_selection", "write_placements", "write_motion_frame"]

_LAZY = {
    "simulate_document": "simulate", "import_step": "simulate", "show_time": "simulate",
    "load_motion": "simulate", "document_spec": "document", "make_joint": "joints",
    "joint_from_selection": "joints", "write_placements": "fcstd_placements",
    "write_motion_frame": "fcstd_placements",
}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        module = importlib.import_module(f"{__name__}.{_LAZY[name]}")
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
