"""Read the ``[[contacts]]`` tables of a model file into :class:`~cadmotion.kernel.spec.ContactSpec`.

Keys (lengths in the file's ``units``; forces and coefficients in SI)::

    [[contacts]]
    name = "ball_floor"
    parts = ["ball", "floor"]
    shape = [{ sphere = 0.05 }, { plane = { point = [0, 0, 0], normal = [0, 0, 1] } }]
    method = "compliant"
    restitution = 0.8            # e in [0, 1]: or `damping` (one of the two)
    damping = 2e5                # Hunt–Crossley c, N s/m^(n+1): F_n = k δ^n + c δ^n δ̇
    friction = 0.3               # or { static = 0.5, dynamic = 0.4 }; default 0 (frictionless)
    stiffness = 1e7              # k, N/m^n
    exponent = 1.5               # n (1.5: Hertz, sphere on a flat; 1: linear)
    stiction_velocity = 1e-4     # m/s, the slip speed of the regularised Coulomb law's static peak

``shape`` is one primitive per part, in that part's frame:

* ``{ sphere = R }`` or ``{ sphere = R, center = [x, y, z] }`` (centre default: the part origin);
* ``{ box = [a, b, c] }`` or ``{ box = [a, b, c], center = [x, y, z] }``: edge lengths along the part
  frame's axes (against a plane only: its eight corners are the contact points);
* ``{ plane = { point = [x, y, z], normal = [nx, ny, nz] } }``: the solid is the half-space
  behind the normal (the normal points out of the material, into the free space);
  ``point`` defaults to the part origin, ``normal`` to +z (the part frame's xy plane).

Built: ``method = "compliant"`` with sphere–plane, sphere–sphere and box–plane pairs. Not built
yet (refused with a message naming the contact, never faked): ``method = "unilateral"`` (the
issue's default), the ``cylinder`` primitive, box–sphere and box–box, shapes from the parts' CAD geometry,
``pairs = "all"``/globs.
"""

from __future__ import annotations

import math

import numpy as np

from ..kernel.dynamics.contacts import BUILT_PAIRS, BUILT_PAIRS_TEXT
from ..kernel.spec import ContactSpec

__all__ = ["read_contact", "CONTACT_KEYS", "METHODS"]

CONTACT_KEYS = {"name", "parts", "shape", "method", "restitution", "damping", "friction", "stiffness",
                "exponent", "stiction_velocity"}
METHODS = ("compliant", "unilateral")


def _number(ctx, item, key, value, *, nonneg=False, positive=False):
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        raise ctx.err(item, f"`{key}` must be a number, got {value!r}")
    if nonneg and value < 0:
        raise ctx.err(item, f"`{key}` must not be negative, got {value!r}")
    if positive and value <= 0:
        raise ctx.err(item, f"`{key}` must be positive, got {value!r}")
    return float(value)


def _shape(ctx, item, k, part, value):
    """One primitive: (kind, numbers) in metres, part frame."""
    where = f"`shape` #{k + 1} (part {part!r})"
    if not isinstance(value, dict):
        raise ctx.err(item, f"{where} must be a table like {{ sphere = 0.05 }} or "
                            f"{{ plane = {{ normal = [0, 0, 1] }} }}, got {value!r}")
    kinds = [key for key in ("sphere", "plane", "box", "cylinder") if key in value]
    if len(kinds) != 1:
        raise ctx.err(item, f"{where} must name exactly one primitive (sphere, box, cylinder or plane), "
                            f"got keys {sorted(value)}")
    kind = kinds[0]
    if kind == "cylinder":
        ctx.check_keys(f"{item} {where}", value, {"cylinder", "center", "axis"})
        dims = value["cylinder"]
        if not (isinstance(dims, list) and len(dims) == 2):
            raise ctx.err(item, f"{where}: `cylinder` must be [radius, height], got {dims!r}")
        radius = _number(ctx, item, "cylinder radius", dims[0], positive=True) * ctx.scale
        height = _number(ctx, item, "cylinder height", dims[1], positive=True) * ctx.scale
        center = ctx.vec(item, "center", value.get("center", [0, 0, 0]))
        axis = ctx.vec(item, "axis", value.get("axis", [0, 0, 1]), length=False)
        norm = math.sqrt(float(axis @ axis))
        if norm < 1e-12:
            raise ctx.err(item, f"{where}: the cylinder's `axis` must not be zero")
        return "cylinder", (radius, height, *map(float, center), *(float(x) / norm for x in axis))
    if kind == "box":
        ctx.check_keys(f"{item} {where}", value, {"box", "center"})
        edges = ctx.vec(item, "box", value["box"])
        if np.any(edges <= 0):
            raise ctx.err(item, f"{where}: a box's edge lengths must be positive, got {value['box']!r}")
        center = ctx.vec(item, "center", value.get("center", [0, 0, 0]))
        return "box", (*map(float, edges), *map(float, center))
    if kind == "sphere":
        ctx.check_keys(f"{item} {where}", value, {"sphere", "center"})
        radius = _number(ctx, item, "sphere", value["sphere"], positive=True) * ctx.scale
        center = ctx.vec(item, "center", value.get("center", [0, 0, 0]))
        return "sphere", (radius, *map(float, center))
    ctx.check_keys(f"{item} {where}", value, {"plane"})
    plane = value["plane"]
    if not isinstance(plane, dict):
        raise ctx.err(item, f"{where}: `plane` must be a table {{ point = [x, y, z], normal = [nx, ny, nz] }}, "
                            f"got {plane!r}")
    ctx.check_keys(f"{item} {where} plane", plane, {"point", "normal"})
    point = ctx.vec(item, "point", plane.get("point", [0, 0, 0]))
    normal = ctx.vec(item, "normal", plane.get("normal", [0, 0, 1]), length=False)
    norm = math.sqrt(float(normal @ normal))
    if norm < 1e-12:
        raise ctx.err(item, f"{where}: the plane's `normal` must not be zero")
    return "plane", (*map(float, point), *(float(x) / norm for x in normal))


def read_contact(ctx, k, entry, parts):
    """The ``k``-th ``[[contacts]]`` table as a ContactSpec (``ctx``: the model file's context,
    ``parts``: the model's parts by name). Raises ModelFileError naming the contact."""
    name = entry.get("name", f"contact{k + 1}") if isinstance(entry, dict) else f"contact{k + 1}"
    item = f"[[contacts]] #{k + 1} {name!r}"
    ctx.check_keys(item, entry, CONTACT_KEYS)
    if not isinstance(name, str) or not name:
        raise ctx.err(item, "`name` must be a non-empty string")
    method = entry.get("method", "unilateral")
    if method not in METHODS:
        raise ctx.err(item, f"unknown method {method!r}", hint="use method = \"compliant\"")
    if method == "unilateral":
        compliant = sorted(key for key in ("stiffness", "damping", "exponent", "stiction_velocity") if key in entry)
        if compliant:
            raise ctx.err(item, f"{', '.join(f'`{k}`' for k in compliant)} belong(s) to method \"compliant\"; the "
                                "unilateral method" + (" (the default when `method` is left out)"
                                                       if "method" not in entry else "")
                                + " takes `restitution` and `friction` only",
                          hint="write method = \"compliant\" for a Hunt–Crossley contact, or drop those keys")
    pair = entry.get("parts")
    if not isinstance(pair, list) or len(pair) != 2 or not all(isinstance(p, str) for p in pair):
        raise ctx.err(item, "`parts` must be two part names [first, second]",
                      hint="`pairs = \"all\"` and glob patterns are not built yet")
    for p in pair:
        if p not in parts:
            raise ctx.err(item, f"unknown part {p!r}", hint=f"known parts: {', '.join(parts)}")
    if pair[0] == pair[1]:
        raise ctx.err(item, f"a contact needs two different parts, got {pair[0]!r} twice")
    shapes = entry.get("shape")
    if not isinstance(shapes, list) or len(shapes) != 2:
        raise ctx.err(item, "`shape` must be two primitives, one per part: "
                            "[{ sphere = R }, { plane = { point = [..], normal = [..] } }]",
                      hint="shapes from the parts' CAD geometry are not built yet: give a primitive for each part")
    shapes = tuple(_shape(ctx, item, i, pair[i], s) for i, s in enumerate(shapes))
    kinds = sorted(kind for kind, _ in shapes)
    if kinds not in BUILT_PAIRS:
        raise ctx.err(item, f"the pair {' – '.join(kind for kind, _ in shapes)} is not built yet",
                      hint=f"built pairs: {BUILT_PAIRS_TEXT}")
    restitution = None
    if "restitution" in entry:
        restitution = _number(ctx, item, "restitution", entry["restitution"], nonneg=True)
        if restitution > 1:
            raise ctx.err(item, f"`restitution` must be in [0, 1], got {restitution!r}",
                          hint="e > 1 would feed energy into every impact")
    friction = entry.get("friction", 0.0)
    if isinstance(friction, dict):
        ctx.check_keys(f"{item} friction", friction, {"static", "dynamic"})
        if "static" not in friction:
            raise ctx.err(item, "`friction` needs `static` (and optionally `dynamic`, default: the static value)")
        mu_s = _number(ctx, item, "friction.static", friction["static"], nonneg=True)
        mu_d = _number(ctx, item, "friction.dynamic", friction.get("dynamic", mu_s), nonneg=True)
    else:
        mu_s = mu_d = _number(ctx, item, "friction", friction, nonneg=True)
    if mu_d > mu_s:
        raise ctx.err(item, f"the dynamic friction coefficient {mu_d} exceeds the static one {mu_s}",
                      hint="Coulomb friction has μ_dynamic ≤ μ_static")
    params = []
    for key in ("stiffness", "damping", "exponent", "stiction_velocity"):
        if key in entry:
            params.append((key, _number(ctx, item, key, entry[key], nonneg=True)))
    return ContactSpec(name=name, parts=tuple(pair), shapes=shapes, method=method, restitution=restitution,
                       friction=(mu_s, mu_d), params=tuple(params), source=f"{ctx.source}: {item}")
