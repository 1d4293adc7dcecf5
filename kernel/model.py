"""Compile a MechanismSpec into a Model: immutable arrays, constraints grouped by type.

Layout (MuJoCo-style flat arrays)::

    q      = [q_b for every moving body b]            nq = nmov * nqb
    q_full = [q, coordinates of the fixed bodies]      fixed bodies never move
    body_qadr[b] = address of body b in q_full          (moving first, then fixed)

Each constraint type used by the mechanism is one :class:`ConstraintGroup`: the
instances' slot bodies, markers and parameters as arrays, the rows they occupy in Φ,
and the gather indices that pull their slot coordinates out of q_full in one call.
The Jacobian's sparsity pattern is fixed here: every group entry has a precomputed
position in a CSC structure (``jac_slot``), so a Jacobian evaluation is one ``bincount``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

import numpy as np

from ..errors import MechanismError
from .cams import CamCode, cam_pair_law
from .expressions import time_function
from .rotations import unit_quat_to_matrix
from .symbolic.codegen import generated
from .symbolic.parametrization import get_parametrization
from .symbolic.templates import COUPLER_TYPES, HIGHER_PAIR_TYPES, JOINT_TYPES, MEASURES, TEMPLATES

__all__ = ["Model", "ConstraintGroup", "compile_model", "frame_matrix"]


def _readonly(a):
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


def frame_matrix(frame):
    """Origin (3,) and rotation (3, 3) of a :class:`~cadmotion.kernel.spec.Frame`."""
    return np.asarray(frame.origin, float), np.asarray(frame.rotation, float)


@dataclass(frozen=True)
class ConstraintGroup:
    """All instances of one constraint type.

    Attributes
    ----------
    template : the template name.
    kind : ``joint``, ``coupler``, ``driver`` or ``normalize``.
    names : per instance, the joint/driver/part name it came from.
    bodies : (n, n_slots) body index of every slot.
    gather : (n, n_slots*nqb) addresses of the slot coordinates in q_full.
    markers : (n, n_slots*12) marker origin + rotation (row-major) in body frames, m.
    params : (n, n_params) scalar parameters.
    row : (n,) first row of each instance in Φ; rows ``row[i] .. row[i]+neq-1``.
    jac_slot : (n*neq*nq_slots,) position of each generated Jacobian entry in the CSC data,
        or −1 where the column belongs to a fixed body.
    jac_flat : the same entries as flat indices row*nq + col of a dense (nc, nq) matrix.
    functions : per instance time functions (drivers), else empty.
    """

    template: str
    kind: str
    names: Tuple[str, ...]
    bodies: np.ndarray
    gather: np.ndarray
    markers: np.ndarray
    params: np.ndarray
    row: np.ndarray
    jac_slot: np.ndarray
    jac_flat: np.ndarray
    functions: tuple
    code: object

    @property
    def n(self):
        """Number of instances in the group."""
        return len(self.names)

    @property
    def neq(self):
        """Scalar equations per instance."""
        return self.code.neq

    @property
    def n_angles(self):
        """Joint angles (winding-tracked) per instance."""
        return len(TEMPLATES[self.template].angle_terms)


@dataclass(frozen=True)
class Model:
    """A compiled mechanism (see the module docstring). Arrays are read-only."""

    spec: object
    parametrization: object
    body_names: Tuple[str, ...]
    body_fixed: np.ndarray  # (nb,) bool
    body_qadr: np.ndarray  # (nb,) address in q_full
    nq: int
    q0: np.ndarray  # (nq,) initial coordinates as given
    q_fixed: np.ndarray  # coordinates of fixed bodies (tail of q_full)
    groups: Tuple[ConstraintGroup, ...]
    nc: int
    jac_rows: np.ndarray  # CSC structure: row indices
    jac_indptr: np.ndarray
    row_labels: Tuple[Tuple[str, str, int], ...]  # per row: (item name, template, equation index)
    joint_measures: Tuple[Tuple[str, str, int, int], ...]  # (joint, kind, group index, instance)
    gravity: np.ndarray

    @property
    def nb(self):
        """Number of bodies (moving and fixed)."""
        return len(self.body_names)

    @property
    def nqb(self):
        """Coordinates per body: 3 positions + the orientation parameters (7 with Euler parameters)."""
        return self.parametrization.nqb

    @property
    def jac_nnz(self):
        """Structural non-zeros of the constraint Jacobian Φq."""
        return len(self.jac_rows)

    def body_index(self, name):
        """Index of the body named ``name`` (ValueError when there is none)."""
        return self.body_names.index(name)

    def q_full(self, q):
        """q followed by the fixed bodies' coordinates."""
        return np.concatenate([q, self.q_fixed])

    def jacobian_matrix(self, data):
        """A CSC matrix (nc, nq) from Jacobian data in the fixed pattern (imports scipy.sparse:
        only large models take the sparse path)."""
        import scipy.sparse as sps

        return sps.csc_matrix((data, self.jac_rows, self.jac_indptr), shape=(self.nc, self.nq))

    def body_coordinates(self, q):
        """Positions (nb, 3) and quaternions (nb, 4) of every body for coordinates q."""
        qf = self.q_full(q)
        idx = self.body_qadr[:, None] + np.arange(self.nqb)[None, :]
        qb = qf[idx]
        return qb[:, :3], self.parametrization.to_quaternion(qb[:, 3:])


def _part_coordinates(par, part):
    R = unit_quat_to_matrix(part.orientation)
    q = np.asarray(part.orientation, float)
    q = q / np.linalg.norm(q)
    return np.concatenate([np.asarray(part.position, float), par.from_quaternion(q)]), R


def _marker_row(frame):
    s, R = frame_matrix(frame)
    return np.concatenate([s, R.reshape(-1)])


def _cam_pair(j, joints, joint_slots, part_of, par, where):
    """(template, slot bodies, slot markers, lift law) of a cam pair ``j`` (:mod:`.cams`).

    ``joints = [cam joint, follower joint]``: the cam's revolute and the follower's prismatic
    (``cam-disp``) or revolute (``cam-angle``) joint, sharing the part that carries both.
    """
    refs = tuple(j.joints)
    if len(refs) != 2 or any(r not in joints for r in refs):
        raise MechanismError(f"cam {j.name!r} needs `joints = [cam joint, follower joint]` naming two joints",
                             where=where, hint=f"known joints: {', '.join(joints)}")
    a, b = joints[refs[0]], joints[refs[1]]
    if a.type != "revolute" or b.type not in ("prismatic", "revolute"):
        raise MechanismError(f"cam {j.name!r}: the cam's joint must be a revolute and the follower's a prismatic "
                             f"or revolute joint, got {a.type} {a.name!r} and {b.type} {b.name!r}", where=where)
    support = set(a.parts) & set(b.parts)
    if len(support) != 1:
        raise MechanismError(f"cam {j.name!r}: joints {a.name!r} and {b.name!r} must share one part, the support "
                             f"of the cam and the follower", where=where)
    (ba, ma), (bb, mb) = joint_slots(a), joint_slots(b)

    def world(bi, frame):  # a marker's origin and axes in the assembly frame at the initial pose (m)
        _, R = _part_coordinates(par, part_of(bi))
        s, Rm = frame_matrix(frame)
        return np.asarray(part_of(bi).position, float) + R @ s, R @ Rm

    try:
        law = cam_pair_law(j, world(ba[0], a.markers[0]), world(bb[0], b.markers[0]),
                           cam_turns=1.0 if a.parts[1] not in support else -1.0,
                           follower_moves=1.0 if b.parts[1] not in support else -1.0,
                           follower=b.type)
    except ValueError as exc:
        raise MechanismError(f"cam {j.name!r}: {exc}", where=where) from None
    key = "cam-disp" if b.type == "prismatic" else "cam-angle"
    return key, ba + bb, ma + mb, law


def compile_model(spec, parametrization="euler-parameters"):
    """Compile a :class:`~cadmotion.kernel.spec.MechanismSpec` into a :class:`Model`.

    Raises :class:`~cadmotion.errors.MechanismError` for unknown parts, joints or types
    and inconsistent joint data, naming the item and its source.
    """
    par = get_parametrization(parametrization)
    parts = list(spec.parts)
    names = [p.name for p in parts]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise MechanismError(f"part names must be unique; repeated: {', '.join(dup)}", where=spec.source)
    if not parts:
        raise MechanismError("the mechanism has no parts", where=spec.source)
    moving = [p for p in parts if not p.fixed]
    fixed = [p for p in parts if p.fixed]
    order = moving + fixed
    body_names = tuple(p.name for p in order)
    index = {n: i for i, n in enumerate(body_names)}
    nqb = par.nqb
    coords = []
    for p in order:
        qb, _ = _part_coordinates(par, p)
        coords.append(qb)
    coords = np.array(coords).reshape(-1, nqb) if coords else np.zeros((0, nqb))
    nq = len(moving) * nqb
    body_qadr = np.arange(len(order)) * nqb

    joints = {j.name: j for j in spec.joints}
    if len(joints) != len(spec.joints):
        seen, dup = set(), set()
        for j in spec.joints:
            (dup if j.name in seen else seen).add(j.name)
        raise MechanismError(f"joint names must be unique; repeated: {', '.join(sorted(dup))}", where=spec.source)

    def body_of(part, item):
        if part not in index:
            raise MechanismError(
                f"{item.name!r} refers to unknown part {part!r}",
                where=item.source or spec.source,
                hint=f"known parts: {', '.join(body_names)}",
            )
        return index[part]

    # instances per template: list of (name, kind, bodies, markers, params, function)
    instances = {}
    laws = {}  # cam template -> the lift law of each instance (kernel/cams.py)

    def add(template, kind, name, bodies, markers, params=(), function=None):
        instances.setdefault(template, []).append((name, kind, bodies, markers, params, function))

    def joint_slots(j):
        if len(j.parts) != 2:
            raise MechanismError(f"joint {j.name!r} needs exactly two parts, got {list(j.parts)}",
                                 where=j.source or spec.source)
        if len(j.markers) != 2:
            raise MechanismError(f"joint {j.name!r} needs two marker frames", where=j.source or spec.source)
        if j.parts[0] == j.parts[1]:
            raise MechanismError(f"joint {j.name!r} joins part {j.parts[0]!r} to itself", where=j.source or spec.source)
        b = [body_of(p, j) for p in j.parts]
        return b, [_marker_row(m) for m in j.markers]

    for j in spec.joints:
        where = j.source or spec.source
        if j.type in JOINT_TYPES:
            b, m = joint_slots(j)
            tpl = TEMPLATES[j.type]
            params = []
            for key in tpl.params:
                value = j.param(key)
                if value is None and key == "length":
                    s0, s1 = (frame_matrix(m)[0] for m in j.markers[:2])
                    P = [coords[bi][:3] + _part_coordinates(par, order[bi])[1] @ s for bi, s in zip(b, (s0, s1))]
                    d = P[1] - P[0]
                    if j.type != "distance":  # measured from the z line of the first marker
                        z = _part_coordinates(par, order[b[0]])[1] @ frame_matrix(j.markers[0])[1][:, 2]
                        d = d - (d @ z) * z
                    value = float(np.linalg.norm(d))
                if value is None:
                    raise MechanismError(f"joint {j.name!r} of type {j.type} needs parameter {key!r}", where=where)
                params.append(float(value))
            add(j.type, "joint", j.name, b, m, params)
        elif j.type in COUPLER_TYPES:
            if len(j.joints) != 2:
                raise MechanismError(f"{j.type} {j.name!r} needs `joints = [first, second]`", where=where)
            slots_b, slots_m = [], []
            for ref in j.joints:
                if ref not in joints:
                    raise MechanismError(f"{j.type} {j.name!r} refers to unknown joint {ref!r}", where=where,
                                         hint=f"known joints: {', '.join(joints)}")
                b, m = joint_slots(joints[ref])
                slots_b += b
                slots_m += m
            key = TEMPLATES[j.type].params[0]
            value = j.param(key)
            if value is None:
                raise MechanismError(f"{j.type} {j.name!r} needs parameter {key!r}", where=where)
            add(j.type, "coupler", j.name, slots_b, slots_m, [float(value)])
        elif j.type in HIGHER_PAIR_TYPES:
            key, slots_b, slots_m, law = _cam_pair(j, joints, joint_slots, lambda bi: order[bi], par, where)
            laws.setdefault(key, []).append(law)
            add(key, "coupler", j.name, slots_b, slots_m, [float(len(laws[key]) - 1)])
        else:
            raise MechanismError(
                f"joint {j.name!r} has unknown type {j.type!r}", where=where,
                hint="known types: " + ", ".join(JOINT_TYPES + COUPLER_TYPES + HIGHER_PAIR_TYPES),
            )

    for d in spec.drivers:
        where = d.source or spec.source
        fn = time_function(d.function, where=f"{where}: driver {d.name!r}" if where else f"driver {d.name!r}")
        if d.joint is not None:
            if d.joint not in joints:
                raise MechanismError(f"driver {d.name!r} refers to unknown joint {d.joint!r}", where=where,
                                     hint=f"known joints: {', '.join(joints) or '(none)'}")
            j = joints[d.joint]
            measures = TEMPLATES[j.type].measures if j.type in TEMPLATES else ()
            coordinate = d.coordinate or (measures[0] if measures else None)
            if coordinate not in measures:
                raise MechanismError(
                    f"driver {d.name!r}: joint {j.name!r} ({j.type}) has no coordinate {coordinate!r}", where=where,
                    hint=f"{j.type} joints can be driven in: " + (
                        ", ".join(measures)
                        or "nothing (drive a revolute, prismatic, cylindrical, screw or planar joint)"),
                )
            b, m = joint_slots(j)
            add(MEASURES[coordinate], "driver", d.name, b, m, (), fn)
        elif d.part is not None:
            axis = {"x": 0, "y": 1, "z": 2}.get(d.coordinate)
            if axis is None:
                raise MechanismError(f"driver {d.name!r}: part coordinate must be x, y or z, got {d.coordinate!r}",
                                     where=where)
            b = body_of(d.part, d)
            u = np.zeros(3)
            u[axis] = 1.0
            add("drive-point", "driver", d.name, [b], [_marker_row(_origin_frame())], u, fn)
        else:
            raise MechanismError(f"driver {d.name!r} needs a `joint` or a `part`", where=where)

    if par.normalized:
        for bi, p in enumerate(moving):
            add("normalize", "normalize", p.name, [bi], [_marker_row(_origin_frame())])

    # groups, rows, Jacobian pattern
    groups, row_labels = [], []
    row = 0
    pending = []
    order_keys = [k for k in TEMPLATES if k in instances]
    for key in order_keys:
        items = instances[key]
        if key in laws:
            code = CamCode(laws[key], key.split("-")[1], par.name)
        else:
            code = generated(key, par.name, instances=len(items))
        n, neq = len(items), code.neq
        bodies = np.array([it[2] for it in items], dtype=np.int64)
        gather = (body_qadr[bodies][:, :, None] + np.arange(nqb)[None, None, :]).reshape(n, -1)
        markers = np.array([np.concatenate(it[3]) for it in items], dtype=float)
        params = np.array([list(it[4]) for it in items], dtype=float).reshape(n, -1)
        rows = row + neq * np.arange(n)
        for it in items:
            for e in range(neq):
                row_labels.append((it[0], key, e))
        # entries (instance, eq, slot coordinate) -> (row, col)
        R = rows[:, None, None] + np.arange(neq)[None, :, None]
        C = gather[:, None, :]
        R, C = np.broadcast_arrays(R, C)
        pending.append((R.reshape(-1), C.reshape(-1)))
        groups.append(dict(template=key, kind=items[0][1], names=tuple(it[0] for it in items), bodies=bodies,
                           gather=gather, markers=markers, params=params, row=rows,
                           functions=tuple(it[5] for it in items if it[5] is not None), code=code))
        row += n * neq
    nc = row
    all_r = np.concatenate([p[0] for p in pending]) if pending else np.zeros(0, np.int64)
    all_c = np.concatenate([p[1] for p in pending]) if pending else np.zeros(0, np.int64)
    movable = all_c < nq
    keys = np.sort(all_c[movable] * max(nc, 1) + all_r[movable])
    if keys.size:  # np.unique's result without its import of numpy.ma
        keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]
    cols_u, rows_u = np.divmod(keys, max(nc, 1))
    indptr = np.searchsorted(cols_u, np.arange(nq + 1))
    final_groups = []
    for g, (r, c) in zip(groups, pending):
        slot = np.full(len(r), -1, dtype=np.int64)
        mv = c < nq
        slot[mv] = np.searchsorted(keys, c[mv] * max(nc, 1) + r[mv])
        arrays = {k: (_readonly(v) if isinstance(v, np.ndarray) else v) for k, v in g.items()}
        flat = np.where(mv, r * nq + c, -1)
        final_groups.append(ConstraintGroup(jac_slot=_readonly(slot), jac_flat=_readonly(flat), **arrays))

    measures = []
    for gi, g in enumerate(final_groups):
        if g.kind != "joint":
            continue
        for i, name in enumerate(g.names):
            for kind in TEMPLATES[g.template].measures:
                measures.append((name, kind, gi, i))

    return Model(
        spec=spec,
        parametrization=par,
        body_names=body_names,
        body_fixed=_readonly(np.array([p.fixed for p in order], dtype=bool)),
        body_qadr=_readonly(body_qadr),
        nq=nq,
        q0=_readonly(coords[: len(moving)].reshape(-1)),
        q_fixed=_readonly(coords[len(moving):].reshape(-1)),
        groups=tuple(final_groups),
        nc=nc,
        jac_rows=_readonly(rows_u.astype(np.int32)),
        jac_indptr=_readonly(indptr.astype(np.int32)),
        row_labels=tuple(row_labels),
        joint_measures=tuple(measures),
        gravity=_readonly(np.asarray(spec.gravity, float)),
    )


def _origin_frame():
    from .spec import Frame

    return Frame()
