"""Motion-study plots: position, velocity and acceleration against time (PNG or SVG).

One figure, axes stacked with a shared time axis:

- for the chosen parts: origin position, velocity and acceleration in the assembly
  frame, in the model's length unit (``mm``, ``mm/s``, ``mm/s²`` for a model in mm:
  :func:`length_unit`; metres otherwise), plus angular velocity (rad/s) and angular acceleration
  (rad/s^2) when one of them rotates; colour per part, line style per component
  (x solid, y dashed, z dotted);
- for chosen joint coordinates, grouped by kind: the coordinate (rad, or the length
  unit) and its rate by second-order finite differences of the stored values
  (``numpy.gradient``);
- events of the run as grey vertical lines; an incomplete run says so in the title,
  which is wrapped to the figure's width, never cut.

The selection ``plot`` is a comma separated list of part names, joint names (every
coordinate of that joint) or joint columns (``crank_pivot.angle``). Default: the parts
that move most (at most :data:`MAX_DEFAULT_PARTS`) and the joint coordinates of largest
range (at most :data:`MAX_DEFAULT_JOINTS`), in model order; parts and joints that move
only by round-off are left out (:mod:`.movement`). matplotlib is imported lazily, figures are
made with the Agg canvas directly (``matplotlib.figure.Figure``, no pyplot state).
"""

from __future__ import annotations

import io
import textwrap

import numpy as np

from ...errors import OutputError
from .atomic import atomic_path

__all__ = ["select", "make_figure", "write_plot", "svg_text", "MAX_DEFAULT_PARTS", "MAX_DEFAULT_JOINTS"]

MAX_DEFAULT_PARTS = 6
MAX_DEFAULT_JOINTS = 4
_STYLES = ("-", "--", ":")
_KINDS = {"angle": ("angle", "rad"), "disp": ("displacement", "m")}
#: characters per line of the figure's title (9 in wide, "large" font): longer titles wrap
TITLE_CHARS = 95


def length_unit(motion):
    """(name, metres per unit) of the model's length unit: the motion's ``length_unit``
    (CadQuery), else the model file's ``units``, else metres."""
    from ...importers.modelfile import UNITS

    spec = getattr(motion, "spec", None)
    name = getattr(motion, "length_unit", None) or (spec.setting("length_unit") if spec is not None else None)
    if name not in UNITS:
        name = "m"
    return name, float(UNITS[name])


def _default_selection(motion):
    """The parts and joint coordinates that move most (see :mod:`.movement`), in model order."""
    from .movement import REL_TOL, coordinate_travel, model_size, part_travel

    if motion.nt == 0:
        return list(motion.parts)[:MAX_DEFAULT_PARTS], []
    size = model_size(motion)
    travel = part_travel(motion, size)
    moving = [b for b in np.argsort(-travel, kind="stable") if travel[b] > REL_TOL][:MAX_DEFAULT_PARTS]
    parts = [motion.parts[b] for b in sorted(moving)] or list(motion.parts)[:MAX_DEFAULT_PARTS]
    coords = list(motion.joint_coordinates)
    ctravel = np.array([coordinate_travel(motion, jc, size) for jc in coords])
    chosen = [k for k in np.argsort(-ctravel, kind="stable") if ctravel[k] > REL_TOL][:MAX_DEFAULT_JOINTS]
    return parts, [coords[k] for k in sorted(chosen)]


def select(motion, plot=None):
    """Resolve a plot selection into (parts, joint coordinates).

    Parameters
    ----------
    plot : None, a comma separated string, or a sequence of names.

    Returns
    -------
    parts : list of part names
    coords : list of :class:`JointCoordinate`

    Raises
    ------
    OutputError
        If a name is neither a part, a joint nor a joint column.
    """
    if plot is None or (isinstance(plot, str) and not plot.strip()):
        return _default_selection(motion)
    names = [s.strip() for s in plot.split(",")] if isinstance(plot, str) else [str(s).strip() for s in plot]
    parts, coords = [], []
    for name in filter(None, names):
        if name in motion.parts:
            if name not in parts:
                parts.append(name)
            continue
        found = [jc for jc in motion.joint_coordinates if jc.column == name or jc.joint == name]
        if not found:
            joints = sorted({jc.joint for jc in motion.joint_coordinates})
            raise OutputError(
                f"cannot plot {name!r}: it is neither a part nor a joint coordinate",
                where="plot selection",
                hint=f"parts: {', '.join(motion.parts) or '(none)'}; "
                     f"joints: {', '.join(joints) or '(none)'}")
        coords.extend(jc for jc in found if all(jc is not c for c in coords))
    return parts, coords


def _rate(t, y):
    """dy/dt by second-order finite differences (zeros for a single frame)."""
    if len(t) < 2:
        return np.zeros_like(y)
    return np.gradient(y, t, edge_order=2 if len(t) > 2 else 1)


def make_figure(motion, plot=None, *, complete=None):
    """A matplotlib Figure with the plots of the selection (see the module docstring)."""
    from matplotlib.figure import Figure

    parts, coords = select(motion, plot)
    t = np.asarray(motion.time, float)
    unit, per = length_unit(motion)
    groups = []  # (title, rows); a row is (ylabel, [(label, color, style, y)])
    if parts:
        fields = [("position", f"position ({unit})"), ("velocity", f"velocity ({unit}/s)"),
                  ("acceleration", f"acceleration ({unit}/s²)")]
        index = [motion.part_index(p) for p in parts]
        if np.any(np.asarray(motion.angular_velocity, float)[:, index] != 0.0):
            fields += [("angular_velocity", "angular velocity (rad/s)"),
                       ("angular_acceleration", "angular accel. (rad/s²)")]
        rows = []
        for field, ylabel in fields:
            data = np.asarray(getattr(motion, field), float)
            if not field.startswith("angular"):
                data = data / per
            rows.append((ylabel, [(f"{part} {comp}", f"C{i % 10}", _STYLES[c], data[:, b, c])
                                  for i, (part, b) in enumerate(zip(parts, index))
                                  for c, comp in enumerate("xyz")]))
        groups.append(("parts: x solid, y dashed, z dotted; assembly frame", rows))
    for kind, (word, _) in _KINDS.items():
        of_kind = [jc for jc in coords if jc.kind == kind]
        if not of_kind:
            continue
        unit_of_kind, div = (unit, per) if kind == "disp" else (_KINDS[kind][1], 1.0)
        values = [(jc.column, f"C{i % 10}", np.asarray(jc.values, float) / div) for i, jc in enumerate(of_kind)]
        rows = [(f"{word} ({unit_of_kind})", [(n, c, "-", y) for n, c, y in values]),
                (f"{word} rate ({unit_of_kind}/s)", [(n, c, "-", _rate(t, y)) for n, c, y in values])]
        groups.append((f"joint {word}s (rates by finite differences)", rows))
    other = [jc for jc in coords if jc.kind not in _KINDS]
    if other:
        lines = [(jc.column, f"C{i % 10}", "-", np.asarray(jc.values, float)) for i, jc in enumerate(other)]
        groups.append(("joint coordinates", [("coordinate", lines)]))

    nrows = sum(len(rows) for _, rows in groups) or 1
    fig = Figure(figsize=(9.0, 2.1 * nrows + 0.9), layout="constrained")
    axes = fig.subplots(nrows, 1, sharex=True, squeeze=False)[:, 0]
    k = 0
    for title, rows in groups:
        for r, (ylabel, series) in enumerate(rows):
            ax = axes[k]
            k += 1
            for label, color, style, y in series:
                ax.plot(t, y, color=color, linestyle=style, linewidth=1.3, label=label)
            ax.set_ylabel(ylabel)
            ax.grid(True, color="0.88", linewidth=0.6)
            for ev in motion.events:
                ax.axvline(float(ev.time), color="0.45", linestyle="-.", linewidth=0.8)
            if r == 0:
                ax.set_title(title, loc="left", fontsize="medium")
                if series:
                    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small",
                              frameon=False, ncols=1 if len(series) <= 12 else 2)
    if not groups:
        axes[0].text(0.5, 0.5, "nothing to plot", ha="center", va="center", transform=axes[0].transAxes)
    axes[-1].set_xlabel("time (s)")
    if len(t) > 1 and t[-1] > t[0]:
        axes[-1].set_xlim(t[0], t[-1])
    spec = getattr(motion, "spec", None)
    title = str(getattr(spec, "name", "") or "motion")
    if not (motion.complete if complete is None else complete):
        title += f" — partial run{': ' + motion.message if motion.message else ''}"
    if motion.events:
        title += "  (dash-dot lines: events)"
    fig.suptitle("\n".join(textwrap.wrap(title, TITLE_CHARS, break_long_words=True)) or title)
    return fig


def write_plot(motion, path, plot=None, *, complete=None):
    """Save the figure to ``path``; the format follows the suffix (``.png`` or ``.svg``)."""
    fig = make_figure(motion, plot, complete=complete)
    fmt = str(path).rsplit(".", 1)[-1].lower()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=fmt, dpi=120)
    return path


def svg_text(motion, plot=None, *, complete=None):
    """The figure as an inline ``<svg>`` element (text kept as text), for HTML pages."""
    import matplotlib

    fig = make_figure(motion, plot, complete=complete)
    out = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        fig.savefig(out, format="svg")
    text = out.getvalue()
    return text[text.index("<svg"):]
