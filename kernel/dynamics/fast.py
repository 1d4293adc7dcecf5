"""The fast right-hand side of the index-1 and penalty formulations: one compiled call per evaluation.

When numba is available (the kernel's code generation backend is ``numba``), the whole
evaluation of ẏ = [q̇, v̇, P_nc] — body kinematics, every constraint group's generated Φq
and γ (called from compiled code), the force elements, the Schur complement
S = Jv M⁻¹ Jvᵀ in band storage and its Cholesky factorisation — runs in one compiled
function of the parametrisation's library (:mod:`.library`: compiled once, shared by every
model). This module packs a model into the library's arrays (:mod:`._kernels`: ``COMMON`` and
``GROUP``) and calls its entry points. The kept constraint rows are reordered by reverse
Cuthill–McKee on the graph "two rows act on a common body", so S of a chain or a loop of N links
has a bandwidth independent of N and the cost is linear in N.

Expressions — torques and forces of (t, q, qd), drivers' time functions — are programs of the
library's interpreter (:mod:`.compiled_expressions`); a model with anything left in Python
(:attr:`FastRHS.self_contained` False) keeps scipy's loop. Compliant contacts (:mod:`.contacts`)
are evaluated in compiled code too (:mod:`._contact_kernels`: a broad phase by body pair, then by
feature, then the points near touch); their impact speeds are per-call data, recorded at accepted
steps by ``windings`` in the compiled loops, and the compiled DOP853 loop limits its steps by them
(:func:`._kernels.contact_step_limit`).

Not covered (the numpy path of :mod:`.equations` is used instead): models without numba, models
with joint stops (:mod:`.stops`) or unilateral contacts (:mod:`.unilateral`), and torque or force
expressions of q or qd that could not be compiled. :func:`fast_rhs` returns None in those cases,
and while the library is not compiled yet (:func:`.library.ready`). ``CADMOTION_DYNAMICS_FAST=0``
never uses the compiled path.
"""

from __future__ import annotations

import os

import numpy as np

from . import library
from .packed import check_shapes, library_constants, make_data, pack, zeros
from .compiled_expressions import (EXPRESSION_KINDS, compiled_expressions, expression_elements, expression_program,
                                   expression_table, time_function_data)

__all__ = ["fast_rhs", "FastRHS", "available", "applies"]

#: a constraint row whose Cholesky pivot falls below this fraction of its diagonal is redundant
DROP_TOL = 1e-10


def available():
    """True when numba is the code generation backend (and so importable)."""
    try:
        from ..symbolic.codegen import default_backend

        return default_backend() == "numba" and os.environ.get("CADMOTION_DYNAMICS_FAST", "1") != "0"
    except Exception:  # pragma: no cover - broken numba
        return False


def fast_rhs(dyn, angles, refs, baumgarte=None, penalty=None, planar=True):
    """A :class:`FastRHS` for ``dyn``, or None where the fast path does not apply
    (:func:`applies`) or its library is not compiled yet (the run then starts on numpy, and a
    long one switches when the library becomes ready: :mod:`.late_compiled`). ``planar``: a
    mechanism held in a plane is solved in it (:mod:`.planar`)."""
    if not applies(dyn):
        return None
    try:
        if not library.ready(dyn):  # not compiled yet: numpy now, the warm-up compiles it for the next run
            return None
        return FastRHS(dyn, angles, refs, baumgarte, penalty, planar)
    except ImportError:  # pragma: no cover - numba vanished
        return None


def applies(dyn):
    """True when the compiled right-hand side covers ``dyn``, whether its library is compiled
    yet or not: numba is there, no joint stops or unilateral contacts (the numpy path evaluates
    them), no cams (their laws are numpy splines), and every torque or force expression of the
    state has a compiled program."""
    if not available() or dyn.forces.stops is not None or dyn.forces.contact_constraints is not None:
        return False
    from ..symbolic.templates import TEMPLATES

    if any(TEMPLATES[gr["g"].template].numeric for gr in dyn.groups):
        return False
    for kind in EXPRESSION_KINDS:
        if any(fn.uses_state and expression_program(fn) is None for _, fn in expression_elements(dyn, kind)):
            return False
    return True


def _n_measures(g):
    from ..symbolic.templates import TEMPLATES

    return len(TEMPLATES[g.template].measures)

def _rcm_order(dyn, rows):
    """Kept rows reordered for a small bandwidth of S (reverse Cuthill–McKee)."""
    import scipy.sparse as sps
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    nmov = dyn.nmov
    row_body = _row_bodies(dyn)
    m = len(rows)
    r_idx, b_idx = [], []
    for pos, r in enumerate(rows):
        for b in row_body[r]:
            if 0 <= b < nmov:
                r_idx.append(pos)
                b_idx.append(b)
    if not r_idx:
        return np.arange(m)
    Inc = sps.csr_matrix((np.ones(len(r_idx)), (r_idx, b_idx)), shape=(m, max(nmov, 1)))
    G = (Inc @ Inc.T).tocsr()
    return np.asarray(reverse_cuthill_mckee(G, symmetric_mode=True), dtype=np.int64)


def _row_bodies(dyn):
    out = []
    for gr in dyn.groups:
        g = gr["g"]
        for i in range(g.n):
            for _ in range(gr["neq"]):
                out.append(tuple(int(b) for b in g.bodies[i]))
    return out


class FastRHS:
    """ẏ = rhs(t, y) of the index-1 and penalty formulations in one compiled call (see the
    module docstring).

    ``baumgarte`` = (α, β) in 1/s adds −2α Φ̇ − β² Φ to γ̂. ``penalty`` = (ε, max_iter, tol):
    λ from S + εI instead of S (ε = 1/α of the penalty formulation, so the redundant rows are
    kept, with a small λ each), iterated as the augmented Lagrangian when max_iter > 1 with the
    relative tolerance tol (see ``_kernels.multipliers``). Both are run-time data: every
    formulation shares the model's compiled module.

    ``planar`` (the default): where the joints hold the mechanism in a plane normal to a world
    axis (:func:`.planar.planar_reduction`), the evaluations take only its in-plane rows, with the
    parts' inverse masses seen through the plane (:attr:`reduction`); the output frames
    (:meth:`frame`) are evaluated on every row, by a second instance without the reduction.

    After each call ``aux`` holds max |Jv v + Φt| and max |Φ| over the rows (the in-plane rows
    of a planar mechanism; the others hold by its motion) (and max ||p|² − 1|) at (t, y), the
    smallest pivot ratio of S over the kept rows (how near a singular configuration (t, y) is: 1
    far from one, → 0 at one), then the raw joint coordinates in ``model.joint_measures`` order —
    what the per-step bookkeeping needs, without another evaluation.
    """

    #: the :class:`.planar.PlanarReduction` the evaluations use, or None (every row, in 3-D; always for the
    #: semi-recursive tree's subclass, which solves in joint coordinates)
    reduction = None

    def __init__(self, dyn, angles, refs, baumgarte=None, penalty=None, planar=True):
        self.dyn = dyn
        self.angles = angles
        self.refs = refs
        self.baumgarte = baumgarte
        self.penalty = penalty
        if planar:
            from .planar import planar_reduction

            self.reduction = planar_reduction(dyn)
        self._full = None  # the instance on every row that evaluates the output frames of a reduced one
        module = library.module(dyn)
        self.rhs_fn = module.rhs
        self.groups_fn = module.groups
        self.project_fn = module.project
        self.dop853_fn = module.dop853
        self.radau_fn = module.radau
        self.rk4_fn = module.rk4
        self.build()

    def build(self):
        """(Re)build the argument tuple for the current kept rows of ``dyn``."""
        dyn = self.dyn
        model = dyn.model
        nmov, nb = dyn.nmov, model.nb
        # every joint row (a planar mechanism's in-plane rows): the band Cholesky drops the redundant
        # ones chosen at the last accepted state (_kernels.choose_rows)
        reduction = self.reduction
        rows = np.arange(dyn.nc, dtype=np.int64) if reduction is None else reduction.rows
        order = _rcm_order(dyn, rows)
        rows = rows[order]
        m = len(rows)
        row_map = np.full(dyn.nc, -1, dtype=np.int64)
        row_map[rows] = np.arange(m)
        row_body = _row_bodies(dyn)
        ns = max([len(rb) for rb in row_body] + [1])
        rb = np.full((m, ns), -1, dtype=np.int64)
        for pos, r in enumerate(rows):
            for s, b in enumerate(row_body[r]):
                if b < nmov:
                    rb[pos, s] = b
        # pairs (i ≥ j, slots) acting on a common body
        entries = {}
        for pos in range(m):
            for s in range(ns):
                b = rb[pos, s]
                if b >= 0:
                    entries.setdefault(b, []).append((pos, s))
        pi, pj, psi, psj = [], [], [], []
        for b, lst in entries.items():
            for (i, si) in lst:
                for (j, sj) in lst:
                    if i >= j:
                        pi.append(i)
                        pj.append(j)
                        psi.append(si)
                        psj.append(sj)
        pi, pj, psi, psj = (np.array(x, dtype=np.int64) for x in (pi, pj, psi, psj))
        bw = int(np.max(pi - pj)) if len(pi) else 0
        self.row_order = rows
        self._row_map, self._rb = row_map, rb
        from . import _kernels as K

        forces = dyn.forces
        mass = dyn.mass
        force_arrays = forces.compiled_arrays()  # the model's force elements; the layout's others are empty
        self.n_axis = len(force_arrays.get("ax_ia", ()))
        self.tau = force_arrays.get("tau", np.zeros(0))
        # the expressions not compiled into the module: evaluated in Python (t only, see fast_rhs)
        self.exprs = {}
        for kind in EXPRESSION_KINDS:
            compiled = {s for s, _, _ in compiled_expressions(dyn, kind)}
            self.exprs[kind] = [(s, fn) for s, fn in expression_elements(dyn, kind) if s not in compiled]
        a_, b_ = (self.baumgarte or (0.0, 0.0))
        from ..expression_programs import ProgramTable

        programs = ProgramTable()  # every expression of the model, as data for the library's interpreter
        ax_prog, ax_const = expression_table(dyn, "torque", self.n_axis, programs)
        ln_prog, ln_const = expression_table(dyn, "force", len(force_arrays.get("ln_ia", ())), programs)
        group_data = [time_function_data(gr["g"], programs) for gr in dyn.groups]
        templates, variants = library.library_templates(), library.library_variants()
        kept = set(rows.tolist()) if reduction is not None else None  # a planar mechanism's row variants
        grp = np.zeros((len(dyn.groups), 7), dtype=np.int64)
        for k, gr in enumerate(dyn.groups):
            g = gr["g"]
            entry = templates.index(g.template) if kept is None else library.group_entry(templates, variants, gr, kept)
            grp[k] = (entry, gr["row0"], gr["neq"], bool(g.functions), g.n_angles > 0,
                      g.kind == "joint" and _n_measures(g) > 0,
                      len(K.COMMON) + len(self.extra_layout()) + k * len(K.GROUP))
        extra = self._extra_arrays(grp)  # a subclass's own (the tree of :mod:`.fast_tree`), right after COMMON
        nmeas = len(model.joint_measures)
        mpos = {}
        for n_, (_, kind_, gi_, inst_) in enumerate(model.joint_measures):
            mpos.setdefault(gi_, {})[(inst_, kind_)] = n_
        if reduction is None:
            imt = np.eye(3)[None, :, :] * mass.body_mass_inv[:, None, None]
            jbinv = mass.body_inertia_inv
        else:
            imt, jbinv = reduction.translation_inverse_mass, reduction.body_inverse_inertia
        values = dict(q_fixed=model.q_fixed, com_all=mass.body_com_all, Jb=_pad(mass.body_inertia, nb),
                      Jbinv=_pad(jbinv, nb), mass=mass.body_mass, imt=imt,
                      gravf=forces.gravity_force.reshape(-1, 3),
                      row_map=row_map, rb=rb, pair_i=pi, pair_j=pj, pair_si=psi, pair_sj=psj,
                      sizes=np.array([dyn.nq, nmov, nb, m, bw, nmeas], dtype=np.int64),
                      stab=np.array([a_, b_, getattr(dyn, 'drop_tol', DROP_TOL), *(self.penalty or (0.0, 1, 0.0)),
                                     dyn.length_scale]),
                      ax_prog=ax_prog, ax_const=ax_const, ln_prog=ln_prog, ln_const=ln_const,
                      is_angle=np.array([kind_ == "angle" for _, kind_, _, _ in model.joint_measures], np.int64),
                      grp=grp)
        values.update(zip(("pg_ops", "pg_val", "pg_start"), programs.arrays()))
        values.update(force_arrays)
        self._ct_order = np.zeros(0, dtype=np.int64)
        if forces.contacts is not None:
            ct, self._ct_order = forces.contacts.arrays()
            values.update(zip(("ct_s", "ct_o", "ct_ds", "ct_do", "ct_no", "ct_half", "ct_axis", "ct_kind", "ct_par",
                               "ct_pair", "ct_pc", "ct_feat", "ct_ft", "ct_bp", "ct_bx", "ct_state", "ct_opt",
                               "ct_stats"), ct))
        constants = library_constants()
        sizes = dict(nq=dyn.nq, nv=6 * nmov, nb=nb, nmov=nmov, nq_fixed=7 * (nb - nmov), nq_all=7 * nb, nc=dyn.nc,
                     m=m, ns=ns, bw1=bw + 1, nmeas=nmeas, naux=3 + nmeas, ngroup=len(dyn.groups))
        check_shapes([fld for fld in K.COMMON if fld.name in values], values, sizes, constants)
        for fld in K.COMMON:  # the workspace, and the arrays of element types the model has not: zeros
            if fld.name not in values:
                values[fld.name] = zeros(fld, sizes, constants)
        entries = [(fld.name, fld.kind, values[fld.name]) for fld in K.COMMON] + list(extra)
        self._timed = []
        self._angle_groups = []
        from ..symbolic.templates import TEMPLATES

        for k, gr in enumerate(dyn.groups):
            g = gr["g"]
            kinds = TEMPLATES[g.template].measures if g.kind == "joint" else ()
            pos = np.full((g.n, max(len(kinds), 1)), -1, dtype=np.int64)
            for i in range(g.n):
                for c, kind_ in enumerate(kinds):
                    pos[i, c] = mpos.get(gr["gi"], {}).get((i, kind_), -1)
            group_sizes = dict(n=g.n, neq=gr["neq"], n_gather=g.gather.shape[1], n_angle=g.n_angles,
                               n_measure=_n_measures(g))
            arrays = dict(gather=g.gather, markers=g.markers, params=g.params.reshape(g.n, -1), bodies=g.bodies,
                          mpos=pos, **group_data[k])
            check_shapes([fld for fld in K.GROUP if fld.name in arrays], arrays, group_sizes, constants)
            for fld in K.GROUP:  # the group's per-call data and workspace: zeros
                if fld.name not in arrays:
                    arrays[fld.name] = zeros(fld, group_sizes, constants)
            entries += [(f"{fld.name}_{k}", fld.kind, arrays[fld.name]) for fld in K.GROUP]
        #: the model's constants as the library reads them, and this right-hand side's data (:mod:`.packed`)
        self.packed_model = pack(entries)
        self.data = make_data(self.packed_model)
        self.df, self.di, self.dd, self.ws = self.packed_model.df, self.packed_model.di, self.data.dd, self.data.ws
        views = self._views = self.data.views
        self.aux = views["aux"]
        for k, gr in enumerate(dyn.groups):
            g = gr["g"]
            python_fns = [(i, fn) for i, fn in enumerate(g.functions) if group_data[k]["fn_kind"][i] == K.FN_PYTHON]
            if python_fns:
                self._timed.append((views[f"F_{k}"], python_fns))
            if g.n_angles:
                self._angle_groups.append((views[f"ref_{k}"], gr["gi"]))
        self.tau = views["tau"]
        self.line_force = views["ln_F"]
        #: the compliant contacts' impact speeds (compiled point order) and counters (evaluations, points
        #: evaluated, points in touch, features tested: :mod:`._contact_kernels`)
        self._ct_state = views["ct_state"]
        self.contact_stats = views["ct_stats"]
        self._stateful = bool(forces.contacts is not None and forces.contacts.stateful)
        self._refs_arr = views["ax_ref"]
        self._mref = views["mref"]
        self.m = m
        self.bw = bw
        python_exprs = self.exprs["torque"] or self.exprs["force"]
        self._needs_update = bool(self._timed or self._angle_groups or python_exprs or self.n_axis or self._stateful)
        #: nothing in ẏ is evaluated in Python (drivers' time functions, torque or force
        #: expressions not compiled into the module): the compiled integrator loop applies
        self.self_contained = not (self._timed or python_exprs)

    def choose_rows(self, t, y):
        """At an accepted state y (at t s): the redundant rows the evaluations drop until the
        next one (:func:`._kernels.choose_rows`); True if they changed."""
        from ._kernels import choose_rows

        return bool(self._on_joint_rows(t, y, choose_rows))

    def _on_joint_rows(self, t, y, fn):
        """fn(df, di, dd, ws) on the joint rows at (t, y) only: body kinematics and the constraint
        groups, not the forces and accelerations of a whole evaluation; ``aux`` keeps the
        by-products of the last evaluation, which the step's bookkeeping reads."""
        from ._kernels import stage_kinematics

        if self._needs_update:
            self._update(t)
        aux = self.aux.copy()
        y = np.ascontiguousarray(y, dtype=float)
        stage_kinematics(y, self.df, self.di, self.ws)
        self.groups_fn(t, y, self.df, self.di, self.dd, self.ws, False)
        out = fn(self.df, self.di, self.dd, self.ws)
        self.aux[:] = aux
        return out

    def extra_layout(self):
        """The fields (:class:`.layout.Field`) of a subclass's own packed arrays, right after :data:`.layout.COMMON`
        (none here)."""
        return ()

    def _extra_arrays(self, grp):
        """[(name, kind, array)] of :meth:`extra_layout`, given the group table ``grp``."""
        return []

    def _update(self, t):
        for F, fns in self._timed:
            for i, fn in fns:
                F[i] = fn(t)
        for ref, gi in self._angle_groups:
            ref[:] = self.angles.ref[gi]
        for i, fn in self.exprs["torque"]:
            self.tau[i] = fn(t, 0.0, 0.0)
        for i, fn in self.exprs["force"]:
            self.line_force[i] = fn(t, 0.0, 0.0)
        if self.n_axis:
            self._refs_arr[:] = self.refs[:self.n_axis]
        if self._stateful:
            self._ct_state[:] = self.dyn.forces.contact_state(self.refs)[self._ct_order]

    def __call__(self, t, y):
        if self._needs_update:
            self._update(t)
        out, ok = self.rhs_fn(t, y, self.df, self.di, self.dd, self.ws)
        if not ok:
            raise FloatingPointError(f"the accelerations are not finite at t = {t:.6g} s")
        # self.aux: max |Jv v + Φt|, max |Φ| (and ||p|² − 1|), smallest pivot ratio of S, raw joint measures
        return out

    #: whether :meth:`frame` applies: the workspace holds the index-1 λ of every joint row after ``rhs``
    #: (the semi-recursive tree's subclass solves in other coordinates)
    frames = True

    def frame(self, t, y, angles, refs):
        """An output frame at (t, y) (y = [q, v, work]) with the winding state ``angles``, ``refs``
        of that frame: ``rhs`` on the index-1 equations (no Baumgarte or penalty terms; the rows
        of ``dyn.redundant`` dropped, as the numpy outputs drop them; :meth:`_rows_hold`), then
        :func:`._kernels.frame_reactions`. Returns None where that fails (not finite, or rows
        that no longer hold: the numpy outputs then take the frame), else a dict of ``vd``
        (6 nmov,: m/s², rad/s², world), ``lam`` (nc,: the minimum-norm multipliers in row order),
        ``wrench`` (Σ group instances, 6: [F N, T N m] on each instance's second body, about its
        first marker's origin, world axes), ``involved`` (nc,: 1 for the rows of a redundancy),
        ``vres`` (the rows' Jv v + Φt) and copies of the body kinematics (``qf``, ``A``, ``rho``,
        ``rc``, ``E``, ``Jw``, ``Jwinv``, ``vc``, ``w``) at unit Euler parameters. A planar
        mechanism's frames are evaluated on every row (its out-of-plane reactions too), by an
        instance without the reduction."""
        from ._kernels import frame_reactions

        if self.reduction is not None:
            if self._full is None:
                self._full = type(self)(self.dyn, self.angles, self.refs, self.baumgarte, self.penalty, planar=False)
            return self._full.frame(t, y, angles, refs)

        views = self._views
        stab, redundant = views["stab"], views["redundant"]
        saved = (self.angles, self.refs, stab.copy(), redundant.copy())
        try:
            self.angles, self.refs = angles, refs
            self._update(t)
            stab[0] = stab[1] = stab[3] = 0.0  # the index-1 λ: no Baumgarte terms, no penalty
            stab[4] = 1.0
            redundant[:] = 0.0
            redundant[self._row_map[self.dyn.redundant]] = 1.0
            y = np.ascontiguousarray(y, dtype=float)
            out, ok = self.rhs_fn(t, y, self.df, self.di, self.dd, self.ws)
            if not ok or not self._rows_hold(out[self.dyn.nq: self.dyn.nq + self.dyn.nv]):
                return None
            lam = np.zeros(self.dyn.nc)
            involved = np.zeros(self.dyn.nc, dtype=np.int64)
            wrench = np.zeros((sum(gr["n"] for gr in self.dyn.groups), 6))
            if not frame_reactions(self.df, self.di, self.dd, self.ws, lam, wrench, involved):
                return None
        finally:
            self.angles, self.refs = saved[0], saved[1]
            stab[:], redundant[:] = saved[2], saved[3]
        nq, nv = self.dyn.nq, self.dyn.nv
        frame = {name: views[name].copy() for name in ("qf", "A", "rho", "rc", "E", "Jw", "Jwinv", "vc", "w", "vres")}
        frame.update(vd=out[nq: nq + nv], lam=lam, wrench=wrench, involved=involved)
        return frame

    def _rows_hold(self, vd, rtol=1e-6):
        """After ``rhs`` with the rows of ``dyn.redundant`` dropped: True if exactly those were
        dropped and the accelerations vd satisfy every row, theirs included, Jv v̇ = γ̂ to rtol
        (relative to 1 + max |γ̂| + max |Jv v̇|). False where the redundant rows chosen before are
        no longer the dependent ones (a planar loop's move with its configuration)."""
        views = self._views
        if int(np.count_nonzero(views["dropped"])) != len(self.dyn.redundant):
            return False
        if not len(self.dyn.redundant):
            return True
        V = np.zeros((self.dyn.nmov + 1, 6))
        V[:-1] = vd.reshape(-1, 6)
        Jvd = np.einsum("rsl,rsl->r", views["Jc"], V[self._rb])
        gam = views["gam"]
        return bool(np.max(np.abs(Jvd - gam)) <= rtol * (1.0 + np.max(np.abs(gam)) + np.max(np.abs(Jvd))))

    def singularity(self, t, y):
        """:func:`._kernels.singularity` at (t, y): how near a singular configuration y is."""
        from ._kernels import singularity

        return float(self._on_joint_rows(t, y, singularity))  # (the fixed-step loops probe every step)

    def project(self, t, y, tol, max_iter=5):
        """(y, changed): positions then velocities projected onto the joints (mass-weighted,
        Δq = B Δv with Δv = −M⁻¹ Jvᵀ S⁻¹ Φ, at most ``max_iter`` steps until max |Φ| ≤ tol; then
        v −= M⁻¹ Jvᵀ S⁻¹ (Jv v + Φt) if that exceeds tol). ``tol`` in m (and rad, m/s, rad/s)."""
        self._update(t)
        y = np.array(y, dtype=float)
        changed = self.project_fn(t, y, self.df, self.di, self.dd, self.ws, float(tol), int(max_iter))
        return y, changed

    def dop853(self, times, y0, rtol, atol, project_tol=None, max_iter=5, meas_ref=None, zone=0.0):
        """Integrate ẏ = self(t, y) by the compiled DOP853 loop (:mod:`._dop853`, the method and
        step control of ``scipy.integrate.DOP853``) from (times[0], y0) to times[-1].

        Requires :attr:`self_contained`. The angle references of ``self.angles`` and
        ``self.refs`` and the joint measures' continuity reference ``meas_ref`` (rad or m, in
        ``model.joint_measures`` order) are the starting point and are followed in compiled
        code after every accepted step; ``project_tol`` (None: no projection) and
        ``max_iter`` are the projection formulation's (see :meth:`project`). rtol is relative,
        atol absolute in the state's units (m, 1, m/s, rad/s, J). ``zone`` > 0: stop with
        status ``_dop853.SINGULAR`` at an accepted step whose smallest pivot ratio of S is
        below it.

        Returns (status, Y, snapshots, stats, y_end): ``status`` one of ``_dop853.DONE``,
        ``NOT_FINITE``, ``STEP_COLLAPSE``, ``NAN_STATE``, ``SINGULAR``; ``y_end`` the state
        where the loop stopped; ``Y[k]`` the state at times[k] for the
        frames filled (``stats[_dop853.S_K]`` of them, frame 0 is y0); ``snapshots[k]`` the
        references after the step that reached frame k (give it to :meth:`restore`);
        ``stats`` as documented in :func:`._dop853.dop853`.
        """
        return self._loop(self.dop853_fn, times, y0, (float(rtol), float(atol)), project_tol, max_iter, meas_ref, zone)

    def radau(self, times, y0, rtol, atol, project_tol=None, max_iter=5, meas_ref=None, zone=0.0):
        """As :meth:`dop853`, by the compiled Radau IIA loop (:mod:`._radau`, the method, Newton
        iteration and step control of ``scipy.integrate.Radau``, iterating with the compiled
        analytic Jacobian); ``stats`` also holds the Jacobian evaluations and LU
        factorisations (``_radau.S_NJEV``, ``_radau.S_NLU``)."""
        return self._loop(self.radau_fn, times, y0, (float(rtol), float(atol)), project_tol, max_iter, meas_ref, zone)

    def rk4(self, times, y0, dt, project_tol=None, max_iter=5, meas_ref=None, zone=0.0):
        """As :meth:`dop853`, by the compiled fixed-step RK4 loop (:mod:`._rk4`, the steps of
        :meth:`.contract.Formulation._run_rk4`: each output interval in equal steps of at most
        ``dt`` s); the status is never ``STEP_COLLAPSE``, and ``stats[_rk4.S_STEP]`` is the last
        step h (s)."""
        return self._loop(self.rk4_fn, times, y0, (float(dt),), project_tol, max_iter, meas_ref, zone)

    def _loop(self, fn, times, y0, method_args, project_tol, max_iter, meas_ref, zone):
        from ._radau import N_STATS

        times = np.ascontiguousarray(times, dtype=float)
        y0 = np.ascontiguousarray(y0, dtype=float)
        self._update(times[0])
        self.choose_rows(float(times[0]), y0)
        if meas_ref is not None:
            self._mref[:] = meas_ref
        nt = len(times)
        Y = np.zeros((nt, len(y0)))
        Y[0] = y0
        snaps = np.zeros((nt, len(self.dd)))
        snaps[0] = self.dd
        stats = np.zeros(N_STATS)
        ptol = -1.0 if project_tol is None else float(project_tol)
        y_end = np.empty_like(y0)
        status = fn(float(times[0]), y0, times, *method_args, ptol, int(max_iter), float(zone), self.df,
                    self.di, self.dd, self.ws, Y, snaps, stats, y_end)
        return int(status), Y, snaps, stats, y_end

    def restore(self, snapshot):
        """Set ``self.angles``, ``self.refs`` from a snapshot of :meth:`dop853`; returns the
        joint measures' continuity reference of that snapshot."""
        self.dd[:] = snapshot
        for ref, gi in self._angle_groups:
            self.angles.ref[gi] = ref.copy()
        if self.n_axis:
            self.refs[:self.n_axis] = self._refs_arr
        if self._stateful:
            self.dyn.forces.contact_state(self.refs)[self._ct_order] = self._ct_state
        return self._mref.copy()


def _pad(a, nb):
    """Per-moving-body arrays padded to all bodies (fixed bodies get identity)."""
    out = np.zeros((nb,) + a.shape[1:])
    out[: len(a)] = a
    out[len(a):] = np.eye(3)
    return out

