"""Read the ``[[contacts]]`` tables of a model file into :class:`~cadmotion.kernel.spec.ContactSpec`.

Keys (lengths in the file's ``units``; forces and coefficients in SI)::

    [[contacts]]
    name = "ball_floor"
    parts = ["ball", "floor"]    # or globs ["ball*", "floor"]; or pairs = "all" / [["a*", "b"], ...]
    ignore = [["ball1", "ball5"], "frame"]   # with patterns: pairs (either order) or parts left out
    shape = [{ sphere = 0.05 }, { plane = { point = [0, 0, 0], normal = [0, 0, 1] } }]
                                 # with pairs: a table { "ball*" = { sphere = 0.05 }, floor = { plane = {} } }
    method = "unilateral"        # the default (impacts, :mod:`cadmotion.kernel.dynamics.unilateral`), or "compliant"
    restitution = 0.8            # e in [0, 1] (unilateral: default 0); compliant: or `damping` (one of the two)
    damping = 2e5                # compliant: Hunt–Crossley c, N s/m^(n+1): F_n = k δ^n + c δ^n δ̇
    friction = 0.3               # or { static = 0.5, dynamic = 0.4 }; default 0 (frictionless)
    stiffness = 1e7              # compliant: k, N/m^n
    exponent = 1.5               # compliant: n (1.5: Hertz, sphere on a flat; 1: linear)
    stiction_velocity = 1e-4     # compliant: m/s, the slip speed of the regularised Coulomb law's static peak

``shape`` is one primitive per part, in that part's frame:

* ``{ sphere = R }`` or ``{ sphere = R, center = [x, y, z] }`` (centre default: the part origin);
* ``{ box = [a, b, c] }`` or ``{ box = [a, b, c], center = [x, y, z] }``: edge lengths along the part
  frame's axes (against a plane: its eight corners are the contact points; against a sphere: its
  faces, edges and corners; against a box, compliant method only: each box's corners against the
  other box and every edge of one against every edge of the other);
* ``{ cylinder = [R, h] }`` with optional ``center`` and ``axis`` (default +z): against a plane its
  two rim circles are the contact points; against a sphere, the solid cylinder's side, caps and rims
  (the point nearest the sphere's centre) — or, with ``inside = true``, the cylinder is a bore (a
  pipe: the material outside radius R over the length h, the sphere inside it);
* ``{ plane = { point = [x, y, z], normal = [nx, ny, nz] } }``: the solid is the half-space
  behind the normal (the normal points out of the material, into the free space);
  ``point`` defaults to the part origin, ``normal`` to +z (the part frame's xy plane);
* ``{ face = [x, y, z] }`` (parts read from CAD, a contact naming two parts): the exact primitive of
  the part's face nearest that point (assembly frame, the file's unit) — its plane, sphere or
  cylinder, or a hole's bore (:mod:`.contact_shapes`; sockets and other faces are refused);
* ``{ mesh = d }`` or ``{ face = [x, y, z], mesh = d }`` (parts read from CAD): the vertices of the
  tessellation of the whole part, or of that face, at linear deflection ``d`` (the file's unit) —
  any geometry, free-form surfaces included, as contact points (spheres of radius 0) against the
  other part's plane, sphere, box or cylinder (:func:`.contact_shapes.tessellation_points`).

Built pairs: sphere–plane, sphere–sphere, box–plane, cylinder–plane, sphere–box, box–box (compliant
only), sphere–cylinder, and mesh points against a plane, a sphere, a box or a cylinder. Not built
(refused with a message naming the contact and the two shapes, never faked): plane–plane (two
half-spaces), cylinder–cylinder, cylinder–box, a bore against anything but a sphere or mesh points,
mesh points against mesh points.
"""

from __future__ import annotations

import fnmatch
import math

import numpy as np

from ..kernel.dynamics.contacts import BUILT_PAIRS, BUILT_PAIRS_TEXT, UNILATERAL_PAIRS
from ..kernel.spec import ContactSpec

__all__ = ["read_contact", "CONTACT_KEYS", "METHODS"]

CONTACT_KEYS = {"name", "parts", "pairs", "ignore", "shape", "method", "restitution", "damping", "friction",
                "stiffness", "exponent", "stiction_velocity"}
METHODS = ("compliant", "unilateral")


def _number(ctx, item, key, value, *, nonneg=False, positive=False):
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        raise ctx.err(item, f"`{key}` must be a number, got {value!r}")
    if nonneg and value < 0:
        raise ctx.err(item, f"`{key}` must not be negative, got {value!r}")
    if positive and value <= 0:
        raise ctx.err(item, f"`{key}` must be positive, got {value!r}")
    return float(value)


def _shape(ctx, item, k, part, value, spec=None):
    """One primitive: (kind, numbers) in metres, part frame (``spec``: the part's PartSpec, for a
    ``face`` reference to its CAD geometry)."""
    where = f"`shape` #{k + 1} (part {part!r})"
    if not isinstance(value, dict):
        raise ctx.err(item, f"{where} must be a table like {{ sphere = 0.05 }} or "
                            f"{{ plane = {{ normal = [0, 0, 1] }} }}, got {value!r}")
    if "mesh" in value:
        return _mesh_shape(ctx, item, where, value, spec)
    if "face" in value:
        return _face_shape(ctx, item, where, value, spec)
    kinds = [key for key in ("sphere", "plane", "box", "cylinder") if key in value]
    if len(kinds) != 1:
        raise ctx.err(item, f"{where} must name exactly one primitive (sphere, box, cylinder or plane), "
                            f"got keys {sorted(value)}")
    kind = kinds[0]
    if kind == "cylinder":
        ctx.check_keys(f"{item} {where}", value, {"cylinder", "center", "axis", "inside"})
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
        inside = value.get("inside", False)
        if not isinstance(inside, bool):
            raise ctx.err(item, f"{where}: the cylinder's `inside` must be true or false, got {inside!r}")
        bore = (1.0,) if inside else ()  # the material outside the cylinder: a pipe's bore
        return "cylinder", (radius, height, *map(float, center), *(float(x) / norm for x in axis), *bore)
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


def _check_cad_part(ctx, item, where, key, spec):
    """A ``face`` or ``mesh`` shape needs one named part with CAD geometry."""
    if spec is None:
        what = "face" if key == "face" else "geometry"
        raise ctx.err(item, f"{where}: `{key}` names one part's {what}; it cannot stand for parts matched by a "
                            f"pattern", hint="declare the contact with `parts = [A, B]` (two names)")
    if spec.shape is None:
        raise ctx.err(item, f"{where}: `{key}` takes the shape from the part's CAD geometry, and this part has none",
                      hint="give a primitive (sphere, box, cylinder or plane) for a part without geometry")


def _mesh_shape(ctx, item, where, value, spec):
    """``{ mesh = d }`` / ``{ face = [x, y, z], mesh = d }``: the part's (or that face's) tessellation
    vertices, ``("points", (x1, y1, z1, x2, …))`` in the part frame, m (:mod:`.contact_shapes`)."""
    from ..errors import CadImportError
    from .contact_shapes import tessellation_points

    ctx.check_keys(f"{item} {where}", value, {"mesh", "face"})
    _check_cad_part(ctx, item, where, "mesh", spec)
    deflection = _number(ctx, item, "mesh", value["mesh"], positive=True) * ctx.scale
    near = ctx.vec(item, "face", value["face"]) if "face" in value else None
    try:
        points = tessellation_points(spec, deflection, near)
    except CadImportError as exc:
        raise ctx.err(item, f"{where}: {exc.message}", hint=exc.hint) from None
    return "points", tuple(float(x) for x in points.ravel())


def _face_shape(ctx, item, where, value, spec):
    """``{ face = [x, y, z] }``: the primitive of the part's CAD face nearest that point
    (:mod:`.contact_shapes`)."""
    from ..errors import CadImportError
    from .contact_shapes import primitive_near

    ctx.check_keys(f"{item} {where}", value, {"face"})
    _check_cad_part(ctx, item, where, "face", spec)
    near = ctx.vec(item, "face", value["face"])
    try:
        kind, n = primitive_near(spec, near)
    except CadImportError as exc:
        raise ctx.err(item, f"{where}: {exc.message}", hint=exc.hint) from None
    if kind == "plane":
        return "plane", (*map(float, n["point"]), *map(float, n["normal"]))
    if kind == "sphere":
        return "sphere", (float(n["radius"]), *map(float, n["center"]))
    bore = (1.0,) if n.get("inside") else ()  # a hole's face: the material outside the cylinder
    return "cylinder", (float(n["radius"]), float(n["height"]), *map(float, n["center"]), *map(float, n["axis"]),
                        *bore)


def read_contact(ctx, k, entry, parts):
    """The ``k``-th ``[[contacts]]`` table as a list of ContactSpec, one per pair of parts (``ctx``: the
    model file's context, ``parts``: the model's parts by name; a pattern's pairs are named
    ``<name>:<first>-<second>``). Raises ModelFileError naming the contact."""
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
    pairs, shape_of = _pairs_and_shapes(ctx, item, entry, parts, method)
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
    single = len(pairs) == 1 and not _patterned(entry)
    return [ContactSpec(name=name if single else f"{name}:{a}-{b}", parts=(a, b),
                        shapes=(shape_of(a, 0), shape_of(b, 1)), method=method, restitution=restitution,
                        friction=(mu_s, mu_d), params=tuple(params), source=f"{ctx.source}: {item}")
            for a, b in pairs]


def _is_glob(text):
    return any(ch in text for ch in "*?[")


def _patterned(entry):
    """Whether the table names its pairs by patterns (``pairs``, or globs in ``parts``)."""
    return "pairs" in entry or any(isinstance(p, str) and _is_glob(p) for p in entry.get("parts") or ())


def _matching(ctx, item, key, pattern, parts):
    """The part names matching ``pattern`` (a name or a glob), in the model's order; an error if none."""
    if not isinstance(pattern, str) or not pattern:
        raise ctx.err(item, f"`{key}` entries must be part names or glob patterns, got {pattern!r}")
    names = [p for p in parts if fnmatch.fnmatchcase(p, pattern)]
    if not names:
        raise ctx.err(item, f"{'pattern' if _is_glob(pattern) else 'unknown part'} {pattern!r} in `{key}` matches no "
                            "part", hint=f"known parts: {', '.join(parts)}")
    return names


def _pairs_and_shapes(ctx, item, entry, parts, method):
    """The contact's part pairs [(a, b), ...] and ``shape_of(part, side)`` -> (kind, numbers).

    ``parts = [A, B]`` names (or globs: every a matching A with every b matching B); ``pairs = "all"``
    (every two parts with a shape) or ``pairs = [[A, B], ...]`` (globs); ``ignore`` drops pairs
    ``[A, B]`` (either order) or every pair of a part ``A``. ``shape`` is two primitives (first and
    second part) or, with patterns, a table {name or glob: primitive} (the first key that matches a
    part). Pairs of two fixed parts, of a part with itself and of shapes that are no built pair (for
    ``method``) are left out of a pattern; a pattern that leaves no pair is an error."""
    patterned = _patterned(entry)
    shapes = entry.get("shape")
    if "pairs" in entry and "parts" in entry:
        raise ctx.err(item, "give `parts` or `pairs`, not both")
    if not patterned:
        pair = entry.get("parts")
        if not isinstance(pair, list) or len(pair) != 2 or not all(isinstance(p, str) for p in pair):
            raise ctx.err(item, "`parts` must be two part names [first, second]",
                          hint="or glob patterns [\"ball*\", \"floor\"], or `pairs = \"all\"`")
        for p in pair:
            if p not in parts:
                raise ctx.err(item, f"unknown part {p!r}", hint=f"known parts: {', '.join(parts)}")
        if pair[0] == pair[1]:
            raise ctx.err(item, f"a contact needs two different parts, got {pair[0]!r} twice")
        if not isinstance(shapes, list) or len(shapes) != 2:
            raise ctx.err(item, "`shape` must be two primitives, one per part: "
                                "[{ sphere = R }, { plane = { point = [..], normal = [..] } }]",
                          hint="a primitive per part, or { face = [x, y, z] } for a face of the part's CAD geometry")
        prims = tuple(_shape(ctx, item, i, pair[i], s, parts[pair[i]]) for i, s in enumerate(shapes))
        kinds = sorted(kind for kind, _ in prims)
        if kinds not in BUILT_PAIRS:
            named = (("mesh points" if kind == "points" else kind) for kind, _ in prims)
            raise ctx.err(item, f"the pair {' – '.join(named)} is not built yet",
                          hint=f"built pairs: {BUILT_PAIRS_TEXT}")
        return [tuple(pair)], lambda part, side: prims[side]
    # patterns
    if isinstance(shapes, dict):
        table = {}
        for pattern, prim in shapes.items():
            for part in _matching(ctx, item, "shape", pattern, parts):
                if part not in table:
                    table[part] = _shape(ctx, item, len(table), part, prim)

        def shape_of(part, side):
            return table[part]
    elif isinstance(shapes, list) and len(shapes) == 2 and "parts" in entry:
        sides = [_shape(ctx, item, i, entry["parts"][i], s) for i, s in enumerate(shapes)]
        table = None

        def shape_of(part, side):
            return sides[side]
    else:
        raise ctx.err(item, "with `pairs` or glob patterns, `shape` must be a table { \"name or glob\" = primitive }"
                            " (or, with `parts` globs, two primitives)",
                      hint="e.g. shape = { \"ball*\" = { sphere = 0.025 }, frame = { plane = {} } }")
    if "parts" in entry:
        pattern = entry["parts"]
        if not isinstance(pattern, list) or len(pattern) != 2:
            raise ctx.err(item, "`parts` must be two part names or glob patterns [first, second]")
        candidates = [(a, b) for a in _matching(ctx, item, "parts", pattern[0], parts)
                      for b in _matching(ctx, item, "parts", pattern[1], parts)]
    else:
        spec = entry["pairs"]
        if spec == "all":
            shaped = [p for p in parts if table is None or p in table]
            candidates = [(a, b) for i, a in enumerate(shaped) for b in shaped[i + 1:]]
        elif isinstance(spec, list) and all(isinstance(x, list) and len(x) == 2 for x in spec):
            candidates = [(a, b) for pa, pb in spec for a in _matching(ctx, item, "pairs", pa, parts)
                          for b in _matching(ctx, item, "pairs", pb, parts)]
        else:
            raise ctx.err(item, f"`pairs` must be \"all\" or a list of [first, second] names or globs, got {spec!r}")
    ignore = entry.get("ignore", [])
    if not isinstance(ignore, list):
        raise ctx.err(item, "`ignore` must be a list of part names/globs or [first, second] pairs of them")
    for rule in ignore:
        if not (isinstance(rule, str) or (isinstance(rule, list) and len(rule) == 2
                                          and all(isinstance(x, str) for x in rule))):
            raise ctx.err(item, f"`ignore` entries must be a part name/glob or a [first, second] pair, got {rule!r}")

    def ignored(a, b):
        for rule in ignore:
            if isinstance(rule, str):
                if fnmatch.fnmatchcase(a, rule) or fnmatch.fnmatchcase(b, rule):
                    return True
            elif any(fnmatch.fnmatchcase(x, rule[0]) and fnmatch.fnmatchcase(y, rule[1]) for x, y in ((a, b), (b, a))):
                return True
        return False

    built = UNILATERAL_PAIRS if method == "unilateral" else BUILT_PAIRS  # box–box: compliant only
    pairs, seen = [], set()
    for a, b in candidates:
        key = frozenset((a, b))
        if a == b or key in seen or ignored(a, b) or (table is not None and (a not in table or b not in table)):
            continue
        if parts[a].fixed and parts[b].fixed:
            continue
        if sorted((shape_of(a, 0)[0], shape_of(b, 1)[0])) not in built:
            continue
        seen.add(key)
        pairs.append((a, b))
    if not pairs:
        raise ctx.err(item, "the patterns leave no pair of parts to put in contact",
                      hint=f"pairs need two different parts, not both fixed, whose shapes are a built pair "
                           f"({BUILT_PAIRS_TEXT}), and not in `ignore`")
    return pairs, shape_of
