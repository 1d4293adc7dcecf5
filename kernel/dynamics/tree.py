"""The joint graph's spanning tree and the relative coordinates on it.

Graph: the moving parts are nodes, every fixed part is merged into one root (ground); a
joint of a *tree type* (:data:`TREE_TYPES`) is an edge. The spanning tree is Kruskal's
over the edges taken in decreasing number of joint equations (file order among equals), so
the joints that remove the most freedom are kept and a loop is cut where its joint has the
fewest closure equations (a spherical before a revolute). A part no tree joint connects to
ground gets a *free base* (6 relative coordinates: its frame origin and orientation).
``[formulation] cut = ["joint", ...]`` in the model file cuts those joints first; naming a
joint that is not in a loop is an error (cutting it would leave a part without a path).

Every other constraint row — the cut joints, the joints of types without relative
coordinates (distance, screw, ...), couplers and drivers — is a *closure* equation
Φ(z, t) = 0, evaluated by the kernel's generated code at the tree's body poses.

Relative coordinates of tree joint k, between its markers Mi (on the parent) and Mj (on
the child), with X0 the relative pose Mi→Mj at the assembled initial pose (so z = 0 there):

    revolute     X(z) = Rz(θ) X0                   z = [θ]
    prismatic    X(z) = Tz(d) X0                   z = [d]
    cylindrical  X(z) = Tz(d) Rz(θ) X0             z = [θ, d]
    spherical    X(z) = Rot(p) X0                  z = p (unit quaternion), ż = ω in Mi axes
    universal    X(z) = Rz(θ1) X0 Rz(θ2)           z = [θ1, θ2]
    planar       X(z) = T(x, y, 0) Rz(θ) X0        z = [x, y, θ]
    fixed        X(z) = X0                         (none)
    free base    X_W_B = (r, p)                    z = [r, p], ż = [ṙ, ω] (world)

Body velocities Z_b = [v_O, ω] (m/s, rad/s, world; v_O the velocity of the body point at the
world origin) are linear in the velocity coordinates ż (nz,): every velocity coordinate c
has a world *column* b_c = [p × u; u] (rotation about the axis u through p) or [t; 0]
(translation along t), and

    Z = R ż,     R[b, c] = T[b, c] b_c        (T: the accessibility (path) matrix, T[b, c] = 1
                                             when c's joint is on the path from the root to b)
    Ż = R z̈ + Ṙ ż,   Ṙ ż = T (ḃ_c ż_c),   ḃ_c = Z_F ×ₘ b_c

with Z_F the velocity of the frame the column is fixed in (the parent, the child or the
ground) and ×ₘ the motion cross product [v; ω] ×ₘ [l; a] = [ω × l + v × a; ω × a].
The kinematic outputs are the absolute coordinates q (frame origin and Euler parameters per
part, :mod:`.mass`) and velocities v = [v_c, ω] (v_c = v_O + ω × r_c).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Tuple

import numpy as np

from ...errors import MechanismError
from ..rotations import matrix_to_quaternion
from .mass import E_matrix, cross, rotation

__all__ = ["TREE_TYPES", "JointTree", "build_tree", "relative_fits", "TreeKinematics", "describe_tree",
           "motion_cross"]

#: joint types with relative coordinates (position coordinates, velocity coordinates)
TREE_TYPES = {"fixed": (0, 0), "revolute": (1, 1), "prismatic": (1, 1), "cylindrical": (2, 2),
              "spherical": (4, 3), "universal": (2, 2), "planar": (3, 3)}
FREE = (7, 6)
#: column kinds and the frame each column is fixed in
ROT, TRANS = 0, 1
PARENT, CHILD, GROUND = 0, 1, 2


@dataclass(frozen=True)
class TreeJoint:
    """One edge of the spanning tree (a joint, or a part's free base: ``name`` None)."""

    name: str
    type: str
    parent: int          # moving body index, −1 for the root (ground)
    child: int
    group: int           # model group index (−1 for a free base)
    instance: int
    flip: bool           # True when the joint's first part is the child (markers swapped)
    zq_adr: int
    z_adr: int


@dataclass(frozen=True)
class JointTree:
    """The spanning tree of a model's joint graph (see the module docstring).

    Attributes
    ----------
    joints : tree joints in topological order (parents before children).
    cut : names of the joints not in the tree (their equations are closure equations),
        in model order; ``free`` the parts with a free base.
    nzq, nz : position and velocity coordinates.
    closure_rows : rows of :class:`.equations.Dynamics` (its Jv ordering) that are closure
        equations; ``tree_rows`` the others (identically satisfied by the tree).
    path : (nmov, nz) accessibility matrix by velocity coordinate, 0/1.
    """

    joints: Tuple[TreeJoint, ...]
    cut: Tuple[str, ...]
    free: Tuple[str, ...]
    nzq: int
    nz: int
    closure_rows: np.ndarray
    tree_rows: np.ndarray
    path: np.ndarray
    body_joint: np.ndarray  # (nmov,) index into joints of the joint whose child is the body
    body_names: Tuple[str, ...]

    @property
    def depth(self):
        """Largest number of tree joints between the root and a part."""
        depth = np.zeros(len(self.body_joint), int)
        for tj in self.joints:
            depth[tj.child] = 1 + (depth[tj.parent] if tj.parent >= 0 else 0)
        return int(depth.max()) if len(depth) else 0


def relative_fits(model, dyn):
    """The model's :class:`JointTree` when its joints form an open tree that the relative coordinates
    take whole, else None.

    Every joint equation is then a tree joint's (no loop, coupler or driver leaves a closure
    equation) and no contact or joint stop acts (those run with the absolute formulation's events
    and step limits, :func:`.stiffness.default_method`). ``dyn`` is the model's
    :class:`~.equations.Dynamics`. Such a model runs in joint coordinates with no projection at all.
    """
    forces = dyn.forces
    if forces.contact_constraints is not None or forces.contacts is not None or forces.stops is not None:
        return None
    try:
        tree = build_tree(model, dyn.groups)
    except MechanismError:
        return None
    return tree if len(tree.closure_rows) == 0 else None


def _cut_override(model):
    cut = model.spec.setting("formulation.cut", ())
    names = {j.name for j in model.spec.joints}
    for name in cut:
        if name not in names:
            raise MechanismError(f"[formulation] cut names {name!r}, which is not a joint", where=model.spec.source,
                                 hint=f"joints: {', '.join(sorted(names))}")
    return tuple(dict.fromkeys(cut))  # a joint named twice is cut once


def build_tree(model, dyn_groups=None):
    """The :class:`JointTree` of a compiled model.

    ``dyn_groups`` are the constraint groups of :class:`.equations.Dynamics` (to map the
    closure rows to its Jv rows); without them only the structure is built.

    Raises
    ------
    MechanismError : a ``[formulation] cut`` joint that is not a joint, not of a tree type or
        not in a loop (cutting it would leave a part without a path to ground).
    """
    nmov = model.nq // model.nqb
    names = model.body_names
    override = _cut_override(model)
    edges = []  # (neq, order, name, type, gi, i, body a, body b)
    order = 0
    for gi, g in enumerate(model.groups):
        if g.kind != "joint" or g.template not in TREE_TYPES:
            continue
        for i, name in enumerate(g.names):
            a, b = (int(x) for x in g.bodies[i])
            edges.append((g.neq, order, name, g.template, gi, i, a, b))
            order += 1
    for name in override:
        if not any(e[2] == name for e in edges):
            jt = model.spec.joint(name).type
            raise MechanismError(f"[formulation] cut names joint {name!r} ({jt}), which is never in the tree: "
                                 f"only {', '.join(TREE_TYPES)} joints are", where=model.spec.source,
                                 hint="leave it out of `cut`: its equations are closure equations anyway")
    node = lambda b: b if b < nmov else nmov  # noqa: E731  (every fixed part is the root)
    parent = list(range(nmov + 1))

    root = functools.partial(_root, parent)

    kept = []
    for e in sorted(edges, key=lambda e: (-e[0], e[1])):
        a, b = node(e[6]), node(e[7])
        if e[2] in override or a == b:
            continue
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[ra] = rb
            kept.append(e)
    # every overridden cut joint must close a loop: its parts still joined by the tree
    for name in override:
        e = next(e for e in edges if e[2] == name)
        a, b = node(e[6]), node(e[7])
        if a != b and root(a) != root(b):
            part = names[e[7]] if e[7] < nmov and root(e[7]) != root(nmov) else names[e[6]]
            others = [o for o in override if o != name]
            if others and _joined(nmov, [x for x in edges if x[2] != name], node, a, b):
                # in a loop, but the other cut joints open the same loop: together they strand the part
                raise MechanismError(f"[formulation] cut joints {', '.join(repr(n) for n in override)} together "
                                     f"leave part {part!r} without a path to the other part of joint {name!r}: "
                                     f"{name!r} closes a loop that another cut joint has already opened",
                                     where=model.spec.source,
                                     hint="cut one joint per loop (the loops are independent: cutting a joint "
                                          "of each leaves a tree)")
            raise MechanismError(f"[formulation] cut joint {name!r} is not in a loop: cutting it leaves part "
                                 f"{part!r} without a path to the other part of the joint", where=model.spec.source,
                                 hint="cut a joint of a closed loop, or remove it from `cut`")
    # orient the kept edges from the root (and from one free base per floating component)
    adj = {k: [] for k in range(nmov + 1)}
    for e in kept:
        a, b = node(e[6]), node(e[7])
        adj[a].append((b, e))
        adj[b].append((a, e))
    seen = np.zeros(nmov + 1, bool)
    tree, free = [], []
    zq = z = 0
    body_joint = np.full(nmov, -1, int)

    def visit(start):
        nonlocal zq, z
        queue = [start]
        seen[start] = True
        while queue:
            u = queue.pop(0)
            for w, e in sorted(adj[u], key=lambda x: x[1][1]):
                if seen[w]:
                    continue
                seen[w] = True
                nq_, nv_ = TREE_TYPES[e[3]]
                flip = node(e[6]) == w
                tree.append(TreeJoint(e[2], e[3], -1 if u == nmov else u, w, e[4], e[5], flip, zq, z))
                body_joint[w] = len(tree) - 1
                zq += nq_
                z += nv_
                queue.append(w)

    visit(nmov)
    for b in range(nmov):
        if not seen[b]:
            tree.append(TreeJoint(None, "free", -1, b, -1, -1, False, zq, z))
            body_joint[b] = len(tree) - 1
            free.append(names[b])
            zq += FREE[0]
            z += FREE[1]
            visit(b)
    in_tree = {tj.name for tj in tree if tj.name is not None}
    cut = tuple(j.name for j in model.spec.joints if j.name not in in_tree)
    path = np.zeros((nmov, z))
    for tj in tree:  # topological: a child's path is its parent's plus its own columns
        nv_ = FREE[1] if tj.type == "free" else TREE_TYPES[tj.type][1]
        if tj.parent >= 0:
            path[tj.child] = path[tj.parent]
        path[tj.child, tj.z_adr: tj.z_adr + nv_] = 1.0
    closure, tree_rows = _rows(dyn_groups, in_tree)
    return JointTree(tuple(tree), cut, tuple(free), zq, z, closure, tree_rows, path, body_joint, names[:nmov])


def _root(parent, x):
    """The representative of x in the union–find forest ``parent`` (a list, halved on the way)."""
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def _joined(nmov, edges, node, a, b):
    """True when the nodes a and b are joined by the edges (every edge kept, none cut)."""
    parent = list(range(nmov + 1))
    root = functools.partial(_root, parent)
    for e in edges:
        parent[root(node(e[6]))] = root(node(e[7]))
    return root(a) == root(b)


def _rows(dyn_groups, in_tree):
    if dyn_groups is None:
        return np.zeros(0, int), np.zeros(0, int)
    closure, tree_rows = [], []
    for gr in dyn_groups:
        g = gr["g"]
        for i, name in enumerate(g.names):
            rows = gr["row0"] + i * gr["neq"] + np.arange(gr["neq"])
            (tree_rows if g.kind == "joint" and name in in_tree else closure).append(rows)
    cat = lambda xs: np.concatenate(xs).astype(int) if xs else np.zeros(0, int)  # noqa: E731
    return cat(closure), cat(tree_rows)


def describe_tree(tree):
    """Text lines: the tree joints (parent → child, coordinates) and the cut joints."""
    label = lambda b: "ground" if b < 0 else tree.body_names[b]  # noqa: E731
    lines = [f"spanning tree: {len(tree.joints)} joint(s), {tree.nz} relative coordinate(s), depth {tree.depth}"]
    for tj in tree.joints:
        nv_ = FREE[1] if tj.type == "free" else TREE_TYPES[tj.type][1]
        name = tj.name if tj.name is not None else "(free base)"
        lines.append(f"  {name} ({tj.type}): {label(tj.parent)} -> {label(tj.child)}, {nv_} coordinate(s)")
    lines.append("cut joints (closure equations): " + (", ".join(tree.cut) if tree.cut else "none"))
    return lines


# ====================================================================== quaternion helpers
def qmul(a, b):
    """Hamilton product a ⊗ b of quaternions (..., 4) [w, x, y, z]; A(a ⊗ b) = A(a) A(b)."""
    out = np.empty(a.shape if a.shape == b.shape else np.broadcast_shapes(a.shape, b.shape))
    aw, av = a[..., :1], a[..., 1:]
    bw, bv = b[..., :1], b[..., 1:]
    out[..., :1] = aw * bw - np.sum(av * bv, axis=-1, keepdims=True)
    out[..., 1:] = aw * bv + bw * av + cross(av, bv)
    return out


def qrot(p, x):
    """A(p) x for quaternions p (..., 4) and vectors x (..., 3)."""
    w, v = p[..., :1], p[..., 1:]
    t = 2.0 * cross(v, x)
    return x + w * t + cross(v, t)


def qconj(p):
    """Conjugate quaternions (..., 4): the inverse rotations of unit p."""
    out = p.copy()
    out[..., 1:] *= -1.0
    return out


def compose(pa, ra, pb, rb):
    """X_a ∘ X_b for poses (p, r): (pa ⊗ pb, ra + A(pa) rb)."""
    return qmul(pa, pb), ra + qrot(pa, rb)


def invert(p, r):
    """X⁻¹ of poses (p, r): (p̄, −A(p̄) r)."""
    pc = qconj(p)
    return pc, -qrot(pc, r)


def _mm(A, B):
    """A B for stacks of 3 × 3 matrices (n, 3, 3) (einsum's own loop: a stacked ``@`` makes a
    BLAS call per matrix)."""
    return np.einsum("nij,njk->nik", A, B)


def _mv(A, x):
    """A x for stacks of matrices (n, 3, 3) and vectors (n, 3)."""
    return np.einsum("nij,nj->ni", A, x)


_EYE = np.eye(3)
#: the joint frames a column's axis can be in: the parent's marker Mi, the child's Mj, Mi after the planar joint's
#: translation (:meth:`TreeKinematics.poses` gives each as (R (nj, 3, 3), r (nj, 3)), world)
_FRAME_KEYS = ("i", "j", "pre")


def _rz(theta):
    """Rz(θ) (n, 3, 3) for angles θ (n,)."""
    c, s = np.cos(theta), np.sin(theta)
    R = np.zeros(np.shape(theta) + (3, 3))
    R[..., 0, 0] = R[..., 1, 1] = c
    R[..., 0, 1] = -s
    R[..., 1, 0] = s
    R[..., 2, 2] = 1.0
    return R


def _quaternion_map():
    """(T (9, 16), c (16,)): K = 4 q qᵀ of a rotation matrix R as R.reshape(9) @ T + c."""
    T, c = np.zeros((3, 3, 4, 4)), np.zeros((4, 4))
    c[:] = np.diag([1.0, 1.0, 1.0, 1.0])
    for i, sign in enumerate(([1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1])):
        for j in range(3):
            T[j, j, i, i] = sign[j]
    for (i, j), terms in {(0, 1): ((2, 1, 1), (1, 2, -1)), (0, 2): ((0, 2, 1), (2, 0, -1)),
                          (0, 3): ((1, 0, 1), (0, 1, -1)), (1, 2): ((0, 1, 1), (1, 0, 1)),
                          (1, 3): ((0, 2, 1), (2, 0, 1)), (2, 3): ((1, 2, 1), (2, 1, 1))}.items():
        for a, b, sign in terms:
            T[a, b, i, j] = T[a, b, j, i] = sign
    return T.reshape(9, 16), c.reshape(16)


_QT, _QC = _quaternion_map()


def _quaternions(R):
    """Unit quaternions (n, 4) of rotation matrices (n, 3, 3) (Shepperd: the row of K = 4 q qᵀ
    with the largest diagonal entry, so never dividing by a small number)."""
    K = R.reshape(-1, 9) @ _QT + _QC
    k = np.argmax(K[:, ::5], axis=1)
    q = K.reshape(-1, 4, 4)[np.arange(len(K)), k]
    return q / np.sqrt(np.einsum("ij,ij->i", q, q))[:, None]


def _qz(theta):
    out = np.zeros(np.shape(theta) + (4,))
    out[..., 0] = np.cos(0.5 * theta)
    out[..., 3] = np.sin(0.5 * theta)
    return out


# ====================================================================== kinematics
class TreeKinematics:
    """Absolute poses, the columns b_c, velocities and the bias Ṙ ż of a :class:`JointTree`.

    Parameters
    ----------
    model : the compiled model; ``tree`` its :class:`JointTree`; ``q0`` (nq,) the assembled
        absolute coordinates that define X0 (z = 0 there for the scalar coordinates).
    """

    def __init__(self, model, tree, q0):
        self.model, self.tree = model, tree
        self.path = tree.path  #: the accessibility matrix, dense or sparse (set by the formulation)
        nmov = len(tree.body_joint)
        self.nmov = nmov
        J = tree.joints
        nj = len(J)
        self.nj = nj
        self.parent = np.array([tj.parent for tj in J], int)
        self.child = np.array([tj.child for tj in J], int)
        self.type = [tj.type for tj in J]
        # markers: X_P_Mi (parent side), X_C_Mj (child side)
        p_pi, r_pi = np.tile([1.0, 0, 0, 0], (nj, 1)), np.zeros((nj, 3))
        p_cj, r_cj = np.tile([1.0, 0, 0, 0], (nj, 1)), np.zeros((nj, 3))
        for k, tj in enumerate(J):
            if tj.type == "free":
                continue
            m = model.groups[tj.group].markers[tj.instance]
            (si, Ri), (sj, Rj) = (m[:3], m[3:12].reshape(3, 3)), (m[12:15], m[15:24].reshape(3, 3))
            if tj.flip:
                (si, Ri), (sj, Rj) = (sj, Rj), (si, Ri)
            p_pi[k], r_pi[k] = matrix_to_quaternion(Ri), si
            p_cj[k], r_cj[k] = matrix_to_quaternion(Rj), sj
        self.p_pi, self.r_pi = p_pi, r_pi
        self.p_cj, self.r_cj = p_cj, r_cj
        self.p_jc, self.r_jc = invert(p_cj, r_cj)  # X_Mj_C
        # X0 = X_Mi_Mj at q0 (Mi the parent's marker: the spec's second one for a flipped joint)
        Q = np.concatenate([q0, model.q_fixed]).reshape(-1, 7)
        pw = Q[:, 3:] / np.linalg.norm(Q[:, 3:], axis=1)[:, None]
        rw = Q[:, :3]
        # the parent's pose: a moving body's, the fixed part's for a joint to ground, identity for a free base
        pP, rP = np.tile([1.0, 0, 0, 0], (nj, 1)), np.zeros((nj, 3))
        for k, tj in enumerate(J):
            if tj.type == "free":
                continue
            b = tj.parent if tj.parent >= 0 else int(model.groups[tj.group].bodies[tj.instance][1 if tj.flip else 0])
            pP[k], rP[k] = pw[b], rw[b]
        pC, rC = pw[np.maximum(self.child, 0)], rw[np.maximum(self.child, 0)]
        pMi, rMi = compose(pP, rP, p_pi, r_pi)
        pMj, rMj = compose(pC, rC, p_cj, r_cj)
        pi_inv, ri_inv = invert(pMi, rMi)
        self.p0, self.r0 = compose(pi_inv, ri_inv, pMj, rMj)
        # the root's pose per joint: its parent body's (fixed) pose when the parent is ground
        self.p_root, self.r_root = pP.copy(), rP.copy()
        self._by_type = {t: (np.array([k for k, tj in enumerate(J) if tj.type == t], int),
                             np.array([tj.zq_adr for tj in J if tj.type == t], int))
                         for t in list(TREE_TYPES) + ["free"]}
        self._universal = len(self._by_type["universal"][0]) > 0
        self._p0jc, self._r0jc = compose(self.p0, self.r0, self.p_jc, self.r_jc)
        self._present = [(t, ka) for t, ka in self._by_type.items() if len(ka[0]) and t not in ("fixed", "free")]
        # column specification per velocity coordinate
        kinds, frames, axes, owners, where = [], [], [], [], []
        ez, ex, ey = np.eye(3)[2], np.eye(3)[0], np.eye(3)[1]
        for k, tj in enumerate(J):
            t = tj.type
            spec = {"revolute": [(ROT, PARENT, ez, "i")], "prismatic": [(TRANS, PARENT, ez, "i")],
                    "cylindrical": [(ROT, PARENT, ez, "i"), (TRANS, PARENT, ez, "i")],
                    "spherical": [(ROT, PARENT, ex, "i"), (ROT, PARENT, ey, "i"), (ROT, PARENT, ez, "i")],
                    "universal": [(ROT, PARENT, ez, "i"), (ROT, CHILD, ez, "j")],
                    "planar": [(TRANS, PARENT, ex, "i"), (TRANS, PARENT, ey, "i"), (ROT, CHILD, ez, "pre")],
                    "fixed": [],
                    "free": [(TRANS, GROUND, ex, "w"), (TRANS, GROUND, ey, "w"), (TRANS, GROUND, ez, "w"),
                             (ROT, CHILD, ex, "w"), (ROT, CHILD, ey, "w"), (ROT, CHILD, ez, "w")]}[t]
            for kind, frame, axis, ref in spec:
                kinds.append(kind)
                frames.append(frame)
                axes.append(axis)
                owners.append(k)
                where.append(ref)
        self.col_kind = np.array(kinds, int)
        self.col_frame = np.array(frames, int)
        self.col_axis = np.array(axes, float).reshape(-1, 3)
        self.col_joint = np.array(owners, int)
        self.col_ref = np.array(where)
        self.col_parent = self.parent[self.col_joint]
        self.col_child = self.child[self.col_joint]
        #: the joint frames the columns are taken in (of "i", "j", "pre"; :meth:`poses` computes only these); a
        #: column's axes and point are rows _col_Rsrc of [R of these frames, stacked; I] and _col_rsrc of
        #: [r of these frames, stacked; r of the parts] (:meth:`columns`)
        self._col_frames = tuple(key for key in _FRAME_KEYS if key in where)
        base = {key: n * nj for n, key in enumerate(self._col_frames)}
        world = len(self._col_frames) * nj
        self._col_Rsrc = np.array([base[w] + k if w in base else world for w, k in zip(where, owners)], int)
        self._col_rsrc = np.array([base[w] + k if w in base else world + self.child[k]
                                   for w, k in zip(where, owners)], int)
        self._col_rot = (self.col_kind == ROT)[:, None]
        # the parent (PARENT columns, ground none) or child (CHILD) whose velocity carries each column (:meth:`bias`)
        owner = np.where(self.col_frame == CHILD, self.col_child,
                         np.where(self.col_frame == PARENT, self.col_parent, -1))
        self._col_carrier = np.where(owner >= 0, owner, nmov)
        # quaternion coordinate blocks (spherical and free): (joint, zq address of p, z address of ω)
        sph = [(k, tj.zq_adr, tj.z_adr) for k, tj in enumerate(J) if tj.type == "spherical"]
        fre = [(k, tj.zq_adr + 3, tj.z_adr + 3) for k, tj in enumerate(J) if tj.type == "free"]
        self.quat_blocks = sph + fre
        self._qidx = np.array([a for _, a, _ in self.quat_blocks], int).reshape(-1, 1) + np.arange(4)
        self._widx = np.array([c for _, _, c in self.quat_blocks], int).reshape(-1, 1) + np.arange(3)
        scalar_q, scalar_z = [], []
        for tj in J:
            if tj.type in ("revolute", "prismatic", "cylindrical", "universal", "planar"):
                n = TREE_TYPES[tj.type][0]
                scalar_q += range(tj.zq_adr, tj.zq_adr + n)
                scalar_z += range(tj.z_adr, tj.z_adr + n)
            elif tj.type == "free":
                scalar_q += range(tj.zq_adr, tj.zq_adr + 3)
                scalar_z += range(tj.z_adr, tj.z_adr + 3)
        self.scalar_q = np.array(scalar_q, int)
        self.scalar_z = np.array(scalar_z, int)
        # the same poses as rotation matrices (the compositions of :meth:`poses`)
        self.R_pi, self.R_cj, self.R_jc = rotation(p_pi), rotation(p_cj), rotation(self.p_jc)
        self.R0, self.R_root = rotation(self.p0), rotation(self.p_root)
        self.R0jc = rotation(self._p0jc)
        # X_W_Mi (the root's pose then Mi) of a joint whose parent is ground, X_P_Mi of the others: poses composes
        # from these, so a joint hanging from ground needs no root pose prepended at each call
        root = self.parent < 0
        self._eyes = np.tile(_EYE, (nj, 1, 1))
        self._R_wpi = np.where(root[:, None, None], _mm(self.R_root, self.R_pi), self.R_pi)
        self._r_wpi = np.where(root[:, None], self.r_root + _mv(self.R_root, self.r_pi), self.r_pi)
        #: the body quaternions' signs follow the last poses computed (the model's q0 at first)
        self._p_ref = pw[:nmov].copy()

    # ---------------------------------------------------------------- positions
    def _pre_post(self, zq):
        """Per joint Pre(z) (R, r) and Post(z) (R) of X(z) = Pre X0 Post, rotation matrices."""
        R_pre = self._eyes.copy()
        r_pre = np.zeros((self.nj, 3))
        R_post = self._eyes.copy() if self._universal else None
        for t, (k, a) in self._present:
            if t == "revolute":
                R_pre[k] = _rz(zq[a])
            elif t == "prismatic":
                r_pre[k, 2] = zq[a]
            elif t == "cylindrical":
                R_pre[k] = _rz(zq[a])
                r_pre[k, 2] = zq[a + 1]
            elif t == "spherical":
                P = zq[a[:, None] + np.arange(4)]
                R_pre[k] = rotation(P / np.linalg.norm(P, axis=1)[:, None])
            elif t == "universal":
                R_pre[k] = _rz(zq[a])
                R_post[k] = _rz(zq[a + 1])
            elif t == "planar":
                R_pre[k] = _rz(zq[a + 2])
                r_pre[k, 0] = zq[a]
                r_pre[k, 1] = zq[a + 1]
        return R_pre, r_pre, R_post

    def poses(self, zq):
        """Body poses from the relative coordinates: (p (nmov, 4), r (nmov, 3)) of every moving
        part's frame (world; p continues the sign of the last poses), and ``frames``:
        ``frames["R"]`` the parts' rotation matrices, and the per-joint world frames :meth:`columns` takes
        (of :data:`_FRAME_KEYS`, those its columns use)."""
        R_pre, r_pre, R_post = self._pre_post(zq)
        # X_P_C = X_P_Mi Pre X0 Post X_Mj_C (X_W_C for a joint hanging from ground)
        Rpp = _mm(self._R_wpi, R_pre)
        rpp = self._r_wpi + _mv(self._R_wpi, r_pre)  # X_P_(Mi after Pre)
        if self._universal:
            R = _mm(_mm(Rpp, self.R0), _mm(R_post, self.R_jc))
            r = rpp + _mv(Rpp, self.r0 + _mv(self.R0, _mv(R_post, self.r_jc)))
        else:
            R = _mm(Rpp, self.R0jc)
            r = rpp + _mv(Rpp, self._r0jc)
        k, a = self._by_type["free"]
        if len(k):
            P = zq[a[:, None] + 3 + np.arange(4)]
            R[k] = rotation(P / np.linalg.norm(P, axis=1)[:, None])
            r[k] = zq[a[:, None] + np.arange(3)]
        # compose along the paths: X_W_C = X_W_P X_P_C (pointer jumping over the tree)
        nmov = self.nmov
        JR, jr = np.empty((nmov, 3, 3)), np.empty((nmov, 3))
        JR[self.child], jr[self.child] = R, r
        anc = np.full(nmov, -1, int)
        anc[self.child] = self.parent
        while np.any(anc >= 0):
            m = anc >= 0
            a = anc[m]
            jr[m] = jr[a] + _mv(JR[a], jr[m])
            JR[m] = _mm(JR[a], JR[m])
            anc[m] = anc[a]
        jp = _quaternions(JR)
        jp[np.sum(jp * self._p_ref, axis=1) < 0] *= -1.0
        self._p_ref = jp
        # world frames per joint: parent's pose (the identity for ground: the root's pose is in Rpp), Mi after Pre
        par = self.parent
        RP = np.where((par >= 0)[:, None, None], JR[np.maximum(par, 0)], _EYE)
        rP = np.where((par >= 0)[:, None], jr[np.maximum(par, 0)], 0.0)
        frames = {"R": JR}
        if "i" in self._col_frames:
            frames["i"] = (_mm(RP, self._R_wpi), rP + _mv(RP, self._r_wpi))
        if "pre" in self._col_frames:
            frames["pre"] = (_mm(RP, Rpp), rP + _mv(RP, rpp))
        if "j" in self._col_frames:
            RC, rC = JR[self.child], jr[self.child]
            frames["j"] = (_mm(RC, self.R_cj), rC + _mv(RC, self.r_cj))
        return jp, jr, frames

    def absolute(self, zq):
        """(q (nq,), body p, body r, frames): the absolute coordinates of the moving parts."""
        jp, jr, frames = self.poses(zq)
        q = np.concatenate([jr, jp], axis=1).reshape(-1)
        return q, jp, jr, frames

    def columns(self, frames, jr):
        """The columns b_c (nz, 6) = [lin; ang] in world axes (see the module docstring)."""
        keys = self._col_frames
        Rax = np.concatenate([frames[key][0] for key in keys] + [_EYE[None]])[self._col_Rsrc]
        pt = np.concatenate([frames[key][1] for key in keys] + [jr])[self._col_rsrc]
        u = _mv(Rax, self.col_axis)
        return np.concatenate([np.where(self._col_rot, cross(pt, u), u), np.where(self._col_rot, u, 0.0)], axis=1)

    def velocities(self, b, zd):
        """Z (nmov, 6) = R ż: every body's [v_O, ω] (m/s, rad/s, world) from the columns b (nz, 6)."""
        return self.path @ (b * zd[:, None])

    def bias(self, Z, b, zd):
        """Ṙ ż (nmov, 6): the bodies' [v̇_O, ω̇] when z̈ = 0; ḃ_c = Z_F ×ₘ b_c summed down the paths."""
        ZF = np.concatenate([Z, np.zeros((1, 6))])[self._col_carrier]
        return self.path @ (motion_cross(ZF, b) * zd[:, None])

    def rates(self, zq, zd):
        """ż_q (nzq,): the position coordinates' rates from the velocity coordinates ż (nz,)."""
        out = np.zeros(self.tree.nzq)
        out[self.scalar_q] = zd[self.scalar_z]
        if len(self.quat_blocks):
            P = zq[self._qidx]
            P = P / np.linalg.norm(P, axis=1)[:, None]
            out[self._qidx] = 0.5 * np.einsum("bji,bj->bi", E_matrix(P), zd[self._widx])
        return out

    def retract(self, zq, dz):
        """zq moved by the velocity-space increment dz (nz,) (rotations for the quaternions)."""
        out = zq.copy()
        out[self.scalar_q] += dz[self.scalar_z]
        if len(self.quat_blocks):
            w = dz[self._widx]
            ang = np.linalg.norm(w, axis=1)
            safe = np.where(ang > 0, ang, 1.0)
            dq = np.concatenate([np.cos(0.5 * ang)[:, None], (np.sin(0.5 * ang) / safe)[:, None] * w], axis=1)
            P = qmul(dq, zq[self._qidx])
            out[self._qidx] = P / np.linalg.norm(P, axis=1)[:, None]
        return out

    def normalized(self, zq):
        """zq with unit quaternion blocks."""
        out = zq.copy()
        if len(self.quat_blocks):
            P = out[self._qidx]
            out[self._qidx] = P / np.linalg.norm(P, axis=1)[:, None]
        return out

    # ---------------------------------------------------------------- inverse map
    def relative(self, q, zq_ref):
        """The relative coordinates zq of absolute coordinates q (nq,) consistent with the tree
        joints; angles continue from ``zq_ref`` (nearest turn), quaternions keep its sign."""
        Q = np.asarray(q, float).reshape(-1, 7)
        pw = Q[:, 3:] / np.linalg.norm(Q[:, 3:], axis=1)[:, None]
        rw = Q[:, :3]
        zq = np.array(zq_ref, float)
        par = self.parent
        pP = np.where((par >= 0)[:, None], pw[np.maximum(par, 0)], self.p_root)
        rP = np.where((par >= 0)[:, None], rw[np.maximum(par, 0)], self.r_root)
        pMi, rMi = compose(pP, rP, self.p_pi, self.r_pi)
        pMj, rMj = compose(pw[self.child], rw[self.child], self.p_cj, self.r_cj)
        pX, rX = compose(*invert(pMi, rMi), pMj, rMj)  # X_Mi_Mj
        # Pre = X X0⁻¹ (Post = identity except universal)
        pPre, rPre = compose(pX, rX, *invert(self.p0, self.r0))

        def angle(p, ref):
            th = 2.0 * np.arctan2(p[3], p[0])
            return th + 2 * np.pi * np.round((ref - th) / (2 * np.pi))

        for k, tj in enumerate(self.tree.joints):
            a, t = tj.zq_adr, tj.type
            if t == "revolute":
                zq[a] = angle(pPre[k], zq[a])
            elif t == "prismatic":
                zq[a] = rPre[k, 2]
            elif t == "cylindrical":
                zq[a] = angle(pPre[k], zq[a])
                zq[a + 1] = rPre[k, 2]
            elif t == "spherical":
                p = pPre[k] / np.linalg.norm(pPre[k])
                zq[a: a + 4] = p if p @ zq[a: a + 4] >= 0 else -p
            elif t == "planar":
                zq[a + 2] = angle(pPre[k], zq[a + 2])
                zq[a: a + 2] = rPre[k, :2]
            elif t == "universal":
                # A_X = Rz1 A0 Rz2: Rz1 takes A0 e_z to A_X e_z about e_z
                u0 = qrot(self.p0[k], np.array([0, 0, 1.0]))
                u1 = qrot(pX[k], np.array([0, 0, 1.0]))
                th1 = np.arctan2(u0[0] * u1[1] - u0[1] * u1[0], u0[0] * u1[0] + u0[1] * u1[1])
                th1 = th1 + 2 * np.pi * np.round((zq[a] - th1) / (2 * np.pi))
                p2 = qmul(qconj(self.p0[k]), qmul(qconj(_qz(th1)), pX[k]))
                zq[a] = th1
                zq[a + 1] = angle(p2, zq[a + 1])
            elif t == "free":
                zq[a: a + 3] = rw[tj.child]
                p = pw[tj.child]
                zq[a + 3: a + 7] = p if p @ zq[a + 3: a + 7] >= 0 else -p
        return zq

    def initial_zq(self, q):
        """The relative coordinates at the assembled pose q (= q0: the scalar ones are 0)."""
        zq = np.zeros(self.tree.nzq)
        for _, a, _ in self.quat_blocks:
            zq[a] = 1.0
        return self.relative(q, zq)


def motion_cross(Z, b):
    """Z ×ₘ b for spatial motions [lin; ang] (..., 6)."""
    out = np.empty(b.shape)
    v, w = Z[..., :3], Z[..., 3:]
    bl, ba = b[..., :3], b[..., 3:]
    out[..., :3] = cross(w, bl) + cross(v, ba)
    out[..., 3:] = cross(w, ba)
    return out

