"""Writers that put a :class:`~cadmotion.kernel.motion.Motion` out, chosen by file extension.

=====================  ==============================================================
``.csv``               the table of every part's pose, velocity, acceleration, joint
                       coordinates and extra series (:mod:`.table`)
``.json``              the same data as a JSON document, with events and run status
``.glb`` / ``.gltf``   glTF 2.0 animation, binary or JSON with embedded buffer (:mod:`.gltf`)
``.html``              self-contained page: 3-D player and plots (:mod:`.html`)
``.step`` / ``.stp``   the assembly at time ``at`` (:mod:`.step_frames`)
folder or ``.../``     one STEP file per output frame in that folder
``.png`` / ``.svg``    position/velocity/acceleration plots (:mod:`.plots`)
``.gif`` / ``.mp4``    video drawn offscreen (:mod:`.video`; ``.mp4`` needs imageio-ffmpeg)
=====================  ==============================================================

Every file is written to a temporary file in its folder and renamed over the target
when complete, so a failed write never destroys what was there. An incomplete motion
(``complete=False``) is written all the same: JSON, glTF and HTML say so; the CSV stays a
plain table (the caller reports it).

Each writer module is imported when a file of its kind is written (``.csv`` needs neither the
glTF scene nor matplotlib, ``.step`` brings in OCP only then), so choosing outputs costs nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

from ...errors import OutputError
from .atomic import atomic_path, atomic_write, check_writable_dir

__all__ = ["write_outputs", "check_outputs", "WRITERS", "atomic_write", "atomic_path"]

#: extension -> short description, the formats write_outputs knows
WRITERS = {
    ".csv": "table of poses, velocities, accelerations",
    ".json": "JSON document of the motion",
    ".glb": "binary glTF 2.0 animation",
    ".gltf": "glTF 2.0 animation with embedded buffer",
    ".html": "self-contained 3-D player with plots",
    ".step": "STEP assembly at time --at (a folder: one file per frame)",
    ".stp": "STEP assembly at time --at (a folder: one file per frame)",
    ".png": "plots (PNG)",
    ".svg": "plots (SVG)",
    ".gif": "animation drawn offscreen (GIF)",
    ".mp4": "animation drawn offscreen (H.264 MP4, needs cadmotion[video])",
}


def _kind(raw):
    """'frames' for a folder target, else the lower-case extension; OutputError if unknown."""
    text = os.fspath(raw)
    path = Path(text)
    if text.endswith(("/", os.sep)) or path.is_dir():
        return "frames"
    ext = path.suffix.lower()
    if ext in WRITERS:
        return ext
    known = ", ".join(WRITERS)
    raise OutputError(
        f"unknown output format {ext or '(no extension)'!r}", where=text,
        hint=f"known extensions: {known}; a folder (ending with '/') gets one STEP file per frame")


def check_outputs(paths):
    """Check output paths before any computing: known extensions, writable folders.

    Parameters
    ----------
    paths : a path or a sequence of paths (str or os.PathLike); see :func:`write_outputs`.

    Returns
    -------
    list of (kind, path)
        ``kind`` is the lower-case extension (``.csv``) or ``frames`` for a STEP folder.

    Raises
    ------
    OutputError
        Unknown extension (naming it and the known ones), missing or unwritable folder.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    jobs = [(_kind(p), p) for p in paths]
    for kind, raw in jobs:
        if kind in (".gif", ".mp4"):
            from .video import check_video_backend

            try:
                check_video_backend(kind)
            except OutputError as exc:
                raise OutputError(exc.message, where=os.fspath(raw), hint=exc.hint) from None
        path = Path(raw)
        if kind == "frames" and path.is_dir():
            check_writable_dir(path)
        else:                                       # the file's folder, or the frame folder's parent
            parent = path.parent
            check_writable_dir(parent if str(parent) else Path("."), raw)
    return jobs


def write_outputs(motion, paths, *, at=None, plot=None, partial=False):
    """Write ``motion`` to each path, the format chosen by its extension.

    Parameters
    ----------
    motion : Motion
    paths : a path or a sequence of paths (str or os.PathLike). A path that is an existing
        folder or ends with '/' receives one STEP file per output frame.
    at : time (s) of the assembly written to ``.step``/``.stp`` files; default the last frame.
    plot : selection for ``.png``/``.svg``/``.html`` plots: comma separated part names,
        joint names or joint columns; default the moving parts (at most 6).
    partial : mark the outputs as from an incomplete run even if ``motion.complete`` is True
        (the caller interrupted it).

    Returns
    -------
    list of Path
        Every file written, in order (a STEP folder contributes one path per frame).

    Raises
    ------
    OutputError
        Unknown extension (before anything is written), missing or unwritable folder,
        ``at`` outside the run, nothing drawable in the motion.
    """
    jobs = check_outputs(paths)                     # every extension and folder first
    kinds = {k for k, _ in jobs}
    if kinds & {".png", ".svg", ".html"}:
        from .plots import select

        select(motion, plot)                        # unknown plot names fail before writing
    if kinds & {".step", ".stp"}:
        from .step_frames import check_time

        check_time(motion, at)                      # so does a time outside the run
    needs_frames = {".glb", ".gltf", ".html", ".png", ".svg", ".gif", ".mp4", "frames"}
    if motion.nt == 0 and any(k in needs_frames for k, _ in jobs):
        raise OutputError("the run produced no frames; only .csv and .json can be written",
                          where=", ".join(os.fspath(p) for k, p in jobs if k in needs_frames))

    complete = bool(motion.complete) and not partial
    scene = None
    written = []
    for kind, raw in jobs:
        path = Path(raw)
        if kind in (".glb", ".gltf", ".html", ".gif", ".mp4") and scene is None:
            from .scene import build_scene
            from .tessellate import MeshCache

            scene = build_scene(motion, cache=MeshCache(), complete=complete)
        if kind == ".csv":
            from .table import write_csv

            written.append(Path(write_csv(motion, path)))
        elif kind == ".json":
            from .table import write_json

            written.append(Path(write_json(motion, path, complete=complete)))
        elif kind == ".glb":
            from .gltf import write_glb

            written.append(Path(write_glb(motion, path, scene=scene)))
        elif kind == ".gltf":
            from .gltf import write_gltf

            written.append(Path(write_gltf(motion, path, scene=scene)))
        elif kind == ".html":
            from .html import write_html

            written.append(Path(write_html(motion, path, plot=plot, scene=scene)))
        elif kind in (".step", ".stp"):
            from .step_frames import write_step

            written.append(Path(write_step(motion, path, at=at)))
        elif kind == "frames":
            from .step_frames import write_step_frames

            written.extend(write_step_frames(motion, path))
        elif kind in (".gif", ".mp4"):
            from .video import write_video

            written.append(Path(write_video(motion, path, scene=scene, complete=complete)))
        elif kind in (".png", ".svg"):
            from .plots import write_plot

            written.append(Path(write_plot(motion, path, plot, complete=complete)))
    return written
