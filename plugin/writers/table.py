"""Tables of numbers: CSV and JSON.

CSV (a plain table; scripts depend on the exact columns)
    one header row, then one row per output time, comma separated, ``\\n`` line ends.
    Columns: ``t`` (s); then for every part in ``motion.parts`` order
    ``<part>.x .y .z`` (origin position, m), ``<part>.qw .qx .qy .qz`` (orientation,
    unit quaternion), ``<part>.vx .vy .vz`` (m/s), ``<part>.wx .wy .wz`` (angular
    velocity, rad/s), ``<part>.ax .ay .az`` (m/s^2), ``<part>.alx .aly .alz`` (angular
    acceleration, rad/s^2), all in the assembly frame; then every joint coordinate under
    its :attr:`JointCoordinate.column` (``<joint>.angle`` rad, ``<joint>.disp`` m); then
    the ``motion.extra`` series in insertion order, under their keys.
    Numbers are written with full precision (Python ``repr``: the shortest text that
    reads back to the same double); ``nan``/``inf`` as such. The CSV carries no mark
    for an incomplete run (no comment lines): the JSON file and the CLI report it.

JSON
    ``{"time": [...], "parts": {name: {"position": [[x, y, z], ...], "quaternion":
    [[w, x, y, z], ...], "velocity", "angular_velocity", "acceleration",
    "angular_acceleration"}}, "joints": {column: [...]}, "extra": {key: [...]},
    "events": [{"kind", "time", "message", "items"}], "complete": bool, "message": str}``.
    Same units as the CSV. Non-finite numbers (not valid JSON) are written as ``null``.
"""

from __future__ import annotations

import csv
import json
import math

import numpy as np

from .atomic import atomic_write

__all__ = ["csv_columns", "csv_table", "write_csv", "write_json", "motion_to_dict"]

#: per-part CSV column suffixes, in order, with the Motion attribute they come from
PART_FIELDS = (
    ("position", ("x", "y", "z")),
    ("quaternion", ("qw", "qx", "qy", "qz")),
    ("velocity", ("vx", "vy", "vz")),
    ("angular_velocity", ("wx", "wy", "wz")),
    ("acceleration", ("ax", "ay", "az")),
    ("angular_acceleration", ("alx", "aly", "alz")),
)


def csv_columns(motion):
    """The CSV header: list of column names in file order."""
    cols = ["t"]
    for part in motion.parts:
        for _, suffixes in PART_FIELDS:
            cols.extend(f"{part}.{s}" for s in suffixes)
    cols.extend(jc.column for jc in motion.joint_coordinates)
    cols.extend(motion.extra.keys())
    return cols


def csv_table(motion):
    """The CSV body as an array, shape (nt, ncol), float64, columns as :func:`csv_columns`."""
    nt, nb = motion.nt, len(motion.parts)
    blocks = [np.asarray(motion.time, float).reshape(nt, 1)]
    per_part = np.concatenate(
        [np.asarray(getattr(motion, name), float).reshape(nt, nb, len(sfx))
         for name, sfx in PART_FIELDS], axis=2)            # (nt, nb, 22)
    blocks.append(per_part.reshape(nt, nb * per_part.shape[2]))
    for jc in motion.joint_coordinates:
        blocks.append(np.asarray(jc.values, float).reshape(nt, 1))
    for key, values in motion.extra.items():
        blocks.append(np.asarray(values, float).reshape(nt, 1))
    return np.concatenate(blocks, axis=1)


def write_csv(motion, path):
    """Write the CSV table described in the module docstring to ``path`` (atomically)."""
    header = csv_columns(motion)
    table = csv_table(motion)
    with atomic_write(path, "w", encoding="utf-8", newline="") as f:
        csv.writer(f, lineterminator="\n").writerow(header)
        f.writelines(",".join(map(repr, row)) + "\n" for row in table.tolist())
    return path


def _finite_or_none(values):
    """Nested lists of floats with non-finite numbers replaced by None."""
    arr = np.asarray(values, float)
    if np.isfinite(arr).all():
        return arr.tolist()
    obj = arr.astype(object)
    obj[~np.isfinite(arr)] = None
    return obj.tolist()


def motion_to_dict(motion, *, complete=None):
    """The JSON document as plain Python objects (see the module docstring)."""
    nt, nb = motion.nt, len(motion.parts)
    arrays = {field: np.asarray(getattr(motion, field), float).reshape(nt, nb, len(sfx))
              for field, sfx in PART_FIELDS}
    parts = {name: {field: _finite_or_none(arrays[field][:, b]) for field, _ in PART_FIELDS}
             for b, name in enumerate(motion.parts)}
    events = []
    for ev in motion.events:
        t = float(ev.time)
        events.append({"kind": ev.kind, "time": t if math.isfinite(t) else None,
                       "message": ev.message, "items": list(ev.items)})
    return {
        "time": _finite_or_none(motion.time),
        "parts": parts,
        "joints": {jc.column: _finite_or_none(jc.values) for jc in motion.joint_coordinates},
        "extra": {key: _finite_or_none(v) for key, v in motion.extra.items()},
        "events": events,
        "complete": bool(motion.complete if complete is None else complete),
        "message": str(motion.message or ""),
    }


def write_json(motion, path, *, complete=None):
    """Write the JSON document to ``path`` (atomically).

    ``complete`` overrides ``motion.complete`` (the CLI marks an interrupted run).
    """
    doc = motion_to_dict(motion, complete=complete)
    with atomic_write(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
        f.write("\n")
    return path
