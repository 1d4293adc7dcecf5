"""The index-3 formulation: generalised-α (or HHT) on the equations in q.

``index3``      the index-3 DAE in q (7 coordinates per body, normalisation rows included),

                    M_q q̈ + Φqᵀ λ = Q_q(q, q̇, t),    Φ(q, t) = 0,

                integrated by the generalised-α method of Arnold & Brüls (2007) — the
                equations hold at t_{n+1}, a pseudo-acceleration a carries the numerical
                damping:

                    (1 − α_m) a_{n+1} + α_m a_n = (1 − α_f) q̈_{n+1} + α_f q̈_n
                    q_{n+1} = q_n + h q̇_n + h² (½ − β) a_n + h² β a_{n+1}
                    q̇_{n+1} = q̇_n + h (1 − γ) a_n + h γ a_{n+1}

                (Chung–Hulbert parameters from the spectral radius ρ∞, default 0.9:
                α_m = (2ρ∞ − 1)/(ρ∞ + 1), α_f = ρ∞/(ρ∞ + 1); ``HHT``: α_m = 0,
                α_f = (1 − ρ∞)/(1 + ρ∞) ≤ ⅓; γ = ½ − α_m + α_f, β = ¼ (γ + ½)²).
                Each step solves for (q̈_{n+1}, λ) by Newton's method on

                    [M_q q̈ + Φqᵀ λ − Q_q;  β' Φ] = 0,     β' = (1 − α_m)/(h² β (1 − α_f))

                with the iteration matrix (Negrut et al. 2007, Arnold & Brüls 2007)

                    [ M_q + (γ'/β') C_t + K_t / β'    Φqᵀ ]       γ' = γ/(h β)
                    [ Φq                               0  ]

                C_t = −∂Q/∂q̇ and K_t = ∂(M_q q̈ − Q_q)/∂q: the force elements' damping and
                stiffness (exact, :mod:`.force_jacobians`), the centripetal and gyroscopic
                terms and the normalisation rows' Hessians (:mod:`.index3_kernels` lists what
                is left out). So stiff springs and dampers take steps far beyond their own
                time constants without halving (``newton="mass"`` keeps the earlier matrix
                [M_q, Φqᵀ; Φq, 0], for comparison). The matrix is factorised at the first
                iteration of a step and again when the iteration slows (``jacobian="step"``),
                or kept over steps while it converges fast (``jacobian="lazy"``). The
                iteration stops when the correction is below ``tol`` or when the
                contraction rate θ says what is left is: θ/(1 − θ) |Δq| ≤ tol.
                Positions satisfy Φ = 0 to the Newton tolerance ``tol`` (default: atol, m)
                at every step; the reported velocities are projected onto Φq q̇ = −Φt (M_q
                metric) and the reported accelerations solve the index-1 equations at the
                reported state. ``project_velocities="state"`` feeds the projection back into
                the integration (drift-free velocities, but first order, as Arnold showed);
                ``False`` reports the raw velocities. Second order otherwise. Fixed step
                ``dt`` (halved on Newton failure; the run's notes count the halvings).

With numba, once compiled, the residual (body kinematics, forces, M_q q̈ − Q_q) and the Newton
matrix are compiled code (:mod:`.index3_kernels`, the force kernels of the compiled right-hand
side); without numba, and until the background warm-up has compiled them, the same equations
run on numpy, vectorised over the bodies and force elements (:mod:`.index3_numpy`,
:mod:`.force_jacobians_numpy`; the forces from :meth:`.forces.ForceElements.evaluate`;
:mod:`.stiff_kernels` chooses, and the run's notes say which). Torque and force expressions
are evaluated in Python between the compiled calls.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import scipy.sparse as sps
from scipy.linalg.lapack import dgetrf, dgetrs
from scipy.sparse.linalg import splu

from ...errors import SolverError
from ..analysis import rank_info
from ..linalg import DENSE_LIMIT
from . import stiff_kernels
from .contract import INDEX3_INTEGRATORS, Formulation, default_dt, _Failure, _Recorder, _Stop
from .mass import velocities_from_rates

__all__ = ["Index3Formulation", "QForm", "alpha_coefficients"]


def alpha_coefficients(scheme, rho):
    """(α_m, α_f, γ, β) of ``generalized-alpha`` or ``HHT`` for the spectral radius ρ∞ ∈ [0, 1]."""
    if not 0.0 <= rho <= 1.0:
        raise SolverError(f"index3: rho_inf must be in [0, 1], got {rho}",
                          hint="ρ∞ = 1 is undamped (trapezoidal); smaller values damp high frequencies more")
    if scheme == "HHT":
        af = min((1.0 - rho) / (1.0 + rho), 1.0 / 3.0)  # HHT α in [0, 1/3] for ρ∞ in [0.5, 1]
        am = 0.0
    else:
        am = (2.0 * rho - 1.0) / (rho + 1.0)
        af = rho / (rho + 1.0)
    gam = 0.5 - am + af
    beta = 0.25 * (gam + 0.5) ** 2
    return am, af, gam, beta


class QForm:
    """The index-3 equations in q of a :class:`~.equations.Dynamics`: residual and Newton matrix.

    ``residual(q, q̇, q̈, t) -> (R, P_nc)`` with R = M_q q̈ − Q_q (nq,) and the power of the
    non-conservative forces (W); ``matrix(q, q̇, t, λ_n, c_k, c_d)`` the Newton matrix
    S = M_q + c_d C_t + c_k K_t (dense (nq, nq), or CSR for sparse models); ``c_k = c_d = 0``
    gives M_q. See :mod:`.index3_kernels` for the equations.
    """

    def __init__(self, dyn, refs):
        # the compiled kernels once compiled, else the same equations vectorised over the bodies (not Python loops)
        self.kernels = stiff_kernels.choose()
        self._k = self.kernels.index3
        self.dyn = dyn
        self.refs = refs
        model = dyn.model
        fe = dyn.forces
        self.fe = fe
        nmov, nb = dyn.nmov, model.nb
        self.nmov, self.nq = nmov, dyn.nq
        self.compiled = self.kernels.compiled and not fe.unilateral  # contacts: evaluated by ForceElements
        self.q_fixed = np.ascontiguousarray(model.q_fixed, float)
        self.com_all = np.ascontiguousarray(dyn.mass.body_com_all, float)
        self.Jb = np.ascontiguousarray(dyn.mass.body_inertia, float)
        self.mass = np.ascontiguousarray(dyn.mass.body_mass, float)
        self.grav_f = np.ascontiguousarray(fe.gravity_force, float)
        self.A = np.zeros((nb, 3, 3))
        self.rho = np.zeros((nb, 3))
        self.rc = np.zeros((nb, 3))
        self.E = np.zeros((nmov, 3, 4))
        self.Jw = np.zeros((nmov, 3, 3))
        self.w = np.zeros((nb, 3))
        self.vc = np.zeros((nb, 3))
        self.F = np.zeros((nb, 3))
        self.N = np.zeros((nb, 3))
        self.R = np.zeros(self.nq)
        self.Cs = np.zeros((nmov, 6, 7))
        self.Vs = np.zeros((nmov, 6, 7))
        self.diag = np.zeros((nmov, 7, 7))
        self.bs = SimpleNamespace(A=self.A, rc=self.rc, w=self.w, vc=self.vc)
        self.has_expr = bool((fe.angle is not None and len(fe.axis_expr)) or fe.line is not None)
        if self.compiled:
            self._force_args = self._pack_forces()
        # normalisation rows: one per moving body (Euler parameters)
        self.norm_rows = np.full(nmov, -1, dtype=np.int64)
        for g in model.groups:
            if g.kind == "normalize":
                self.norm_rows[g.bodies[:, 0]] = g.row[0] + np.arange(g.n)
        self._patterns = {}

    # ------------------------------------------------------------------ data
    def _pack_forces(self):
        fe = self.fe
        i0, f3, f33 = np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros((0, 3, 3))
        f0 = np.zeros(0)
        s = fe.springs
        sp = (s["ia"], s["ib"], s["da"], s["db"], s["k"], s["c"], s["l0"], s["F0"]) if s is not None \
            else (i0, i0, f3, f3, f0, f0, f0, f0)
        a = fe.angle
        if a is not None:
            nr, ne = fe.n_axis_rot, len(fe.axis_expr)
            pad = np.zeros(ne)
            r = fe.axis_rot
            self._ax_tau = np.zeros(nr + ne)
            ax = (a["ia"], a["ib"], a["Ri"], a["Rj"], np.concatenate([r["k"], pad]), np.concatenate([r["c"], pad]),
                  np.concatenate([r["tau0"], pad]), np.concatenate([np.zeros(nr, np.int64), np.ones(ne, np.int64)]),
                  self.refs, self._ax_tau)
        else:
            self._ax_tau = f0
            ax = (i0, i0, f33, f33, f0, f0, f0, i0, f0, f0)
        b = fe.ball
        bl = (b["ia"], b["ib"], b["Ri"], b["Rj"], b["k"], b["c"]) if b is not None else (i0, i0, f33, f33, f0, f0)
        ln = fe.line
        self._ln_F = np.zeros(len(ln["ia"]) if ln is not None else 0)
        lnargs = (ln["ia"], ln["ib"], ln["di"], ln["Ri"], ln["dj"], self._ln_F) if ln is not None \
            else (i0, i0, f3, f33, f3, self._ln_F)
        bu = fe.bushing
        buargs = (bu["ia"], bu["ib"], bu["da"], bu["db"], bu["Ra"], bu["Rb"], bu["Kt"], bu["Ct"], bu["Kr"], bu["Cr"]) \
            if bu is not None else (i0, i0, f3, f3, f33, f33, f3, f3, f3, f3)
        args = sp + ax + bl + lnargs + buargs
        return tuple(np.ascontiguousarray(x) if x is not self.refs else x for x in args)

    # ------------------------------------------------------------------ evaluation
    def kinematics(self, q, qd):
        """Fill the per-body arrays (rotation, ω, centre-of-mass velocity, ...) of q and q̇ in place."""
        self._k.body_kinematics(q, qd, self.nmov, self.q_fixed, self.com_all, self.Jb, self.A, self.rho, self.rc,
                                self.E, self.Jw, self.w, self.vc)

    def residual(self, q, qd, qdd, t):
        """(R = M_q q̈ − Q_q (nq,), non-conservative power W) at (q, q̇, q̈, t)."""
        self.kinematics(q, qd)
        if self.compiled:
            if self.has_expr:
                tau, lnF = self.fe.expression_values(self.bs, t, self.refs)
                self._ax_tau[self.fe.n_axis_rot:] = tau
                self._ln_F[:] = lnF
            power = self._k.applied_forces(self.A, self.rc, self.w, self.vc, self.F, self.N, self.nmov, self.grav_f,
                                      *self._force_args)
            if self.fe.tyres is not None:  # the same compiled loop as the other paths
                power += self.fe.tyres.evaluate(self.bs, self.F, self.N)
        else:
            self.F[:] = 0.0
            self.N[:] = 0.0
            self.F[: self.nmov] = self.grav_f
            _, _, power = self.fe.evaluate(self.bs, t, self.refs, self.F, self.N)
        self._k.residual(qdd, self.nmov, self.mass, self.rho, self.E, self.Jw, self.w, self.F, self.N, self.R)
        return self.R.copy(), float(power)

    def _element_blocks(self, t):
        return self.fe.tangent_blocks(self.bs, t, self.refs, self.kernels)

    def blocks(self, q, qd, t, lam_norm, c_k, c_d, with_forces=True):
        """(diag (nmov, 7, 7), [(ia, ib, offd (n, 2, 2, 7, 7))]) of the Newton matrix."""
        self.kinematics(q, qd)
        self._k.body_blocks(q, qd, self.nmov, self.mass, self.rho, self.E, self.Jw, self.w, lam_norm, c_k, c_d, self.Cs,
                       self.Vs, self.diag)
        out = []
        if with_forces and (c_k != 0.0 or c_d != 0.0) and not self.fe.empty:
            for ia, ib, Kb, Db in self._element_blocks(t):
                offd = np.zeros((len(ia), 2, 2, 7, 7))
                self._k.element_blocks(self.nmov, c_k, c_d, self.Cs, self.Vs, ia, ib, Kb, Db, offd)
                out.append((ia, ib, offd))
        return self.diag, out

    def matrix(self, q, qd, t, lam_norm, c_k, c_d, sparse=False, with_forces=True):
        """The Newton matrix S (nq, nq): dense, or CSR when ``sparse``."""
        diag, elems = self.blocks(q, qd, t, lam_norm, c_k, c_d, with_forces)
        rows, cols, keep = self._block_index(elems)
        data = np.concatenate([diag.reshape(-1)] + [o.reshape(-1) for _, _, o in elems])
        if keep is not None:
            data = data[keep]
        nq = self.nq
        if sparse:
            return sps.csr_matrix((data, (rows, cols)), shape=(nq, nq))
        return np.bincount(rows * nq + cols, weights=data, minlength=nq * nq).reshape(nq, nq)

    def _block_index(self, elems):
        """(rows, cols, keep) of the blocks' entries: their indices in S and the mask of the
        entries that touch moving bodies only (None: all); cached per element structure."""
        key = tuple(len(ia) for ia, _, _ in elems)
        if key in self._patterns:
            return self._patterns[key]
        nmov = self.nmov
        r7 = np.arange(7)
        rows = [((7 * np.arange(nmov))[:, None, None] + r7[None, :, None] + 0 * r7[None, None, :]).reshape(-1)]
        cols = [((7 * np.arange(nmov))[:, None, None] + r7[None, None, :] + 0 * r7[None, :, None]).reshape(-1)]
        keeps = [np.ones(49 * nmov, bool)]
        for ia, ib, _ in elems:
            bodies = np.stack([ia, ib], 1)  # (n, 2)
            bj = np.broadcast_to(bodies[:, :, None, None, None], (len(ia), 2, 2, 7, 7))
            bk = np.broadcast_to(bodies[:, None, :, None, None], (len(ia), 2, 2, 7, 7))
            rr = np.broadcast_to(r7[None, None, None, :, None], bj.shape)
            cc = np.broadcast_to(r7[None, None, None, None, :], bj.shape)
            keeps.append(((bj < nmov) & (bk < nmov)).reshape(-1))
            rows.append((7 * bj + rr).reshape(-1))
            cols.append((7 * bk + cc).reshape(-1))
        keep = np.concatenate(keeps)
        out = (np.concatenate(rows)[keep], np.concatenate(cols)[keep], None if keep.all() else keep)
        self._patterns[key] = out
        return out


# ====================================================================== index 3
class Index3Formulation(Formulation):
    """Generalised-α (or HHT) on the index-3 equations in q; see the module docstring."""

    name = "index3"
    integrators = INDEX3_INTEGRATORS
    default_integrator = "generalized-alpha"
    defaults = {"rho_inf": 0.9, "tol": None, "max_iter": 12, "project_velocities": "output", "newton": "full",
                "jacobian": "step"}

    def solve(self, times, q0, v0, *, integrator="generalized-alpha", rtol=1e-8, atol=1e-10, dt=None, max_steps=None):
        """Integrate from consistent (q0, v0) to ``times`` (s) with generalised-α or HHT steps of ``dt``
        (s; default from the output interval); a :class:`~.contract.DynamicsResult` (the contract; ``max_steps``
        as there)."""
        self.check_integrator(integrator)
        if self.options["newton"] not in ("full", "mass"):
            raise SolverError(f"index3: newton must be 'full' or 'mass', got {self.options['newton']!r}")
        if self.options["jacobian"] not in ("step", "lazy"):
            raise SolverError(f"index3: jacobian must be 'step' or 'lazy', got {self.options['jacobian']!r}")
        self.coef = alpha_coefficients(integrator, float(self.options["rho_inf"]))
        self.tol = self.options["tol"] if self.options["tol"] is not None else atol
        if dt is not None and not (np.isfinite(dt) and dt > 0):
            raise SolverError(f"index3: the step dt must be a positive number of seconds, got {dt!r}",
                              hint="e.g. --dt 1e-2 for a stiff model; leave it out for min(output interval, 1 ms)")
        if not (np.isfinite(self.tol) and self.tol > 0):
            raise SolverError(f"index3: the Newton tolerance must be positive, got {self.tol!r}",
                              hint="set atol (or the option tol) to a positive length, m")
        if int(self.options["max_iter"]) < 1:
            raise SolverError(f"index3: max_iter must be at least 1, got {self.options['max_iter']!r}")
        times = np.asarray(times, float)
        nt = len(times)
        rec = _Recorder(self, nt, max_steps)
        t = times[0]
        q = np.array(q0, float)
        self.prepare(t, q)
        if self.qf.compiled:
            rec.notes.append("index3: compiled residual and Newton matrix")
        elif not self.qf.kernels.compiled:
            rec.notes.append("index3: residual and Newton matrix in numpy (the compiled kernels are not compiled yet, "
                             "or numba is not installed)")
        qd = self.dyn.qd(self._bs(q), np.asarray(v0, float))
        qdd, lam = self._consistent_acc(q, qd, t)
        a = qdd.copy()
        work, power = 0.0, self._power
        self._y_out = (q, qd, work)
        rec.record(t, None)
        h_target = dt if dt else default_dt(times)
        self._solve = None
        self.nhalve = 0
        late = stiff_kernels.LateKernels.watch(self.qf.kernels, times)
        try:
            for k in range(1, nt):
                t_out = times[k]
                n = max(1, int(math.ceil((t_out - t) / h_target - 1e-9)))
                h_nom = (t_out - t) / n
                while t < t_out - 1e-12 * max(1.0, abs(t_out)):
                    h = min(h_nom, t_out - t)
                    while True:
                        try:
                            res = self._step(t, h, q, qd, qdd, a, lam)
                            break
                        except (_Failure, np.linalg.LinAlgError, ArithmeticError) as exc:
                            h *= 0.5
                            self.nhalve += 1
                            self._solve = None
                            if h < 1e-10 * max(1.0, times[-1] - times[0]):
                                rec.fail(t, f"index3: the Newton iteration does not converge at t = {t:.6g} s "
                                            f"even with step {h:.3g} s: {exc}")
                    q1, qd1, qdd1, a1, lam1, p1 = res
                    if not np.all(np.isfinite(q1)) or not np.all(np.isfinite(qd1)):
                        rec.fail(t, f"the solution became NaN/inf at t = {t + h:.6g} s")
                    work += 0.5 * h * (power + p1)
                    power = p1
                    t = t + h
                    q, qd, qdd, a, lam = q1, qd1, qdd1, a1, lam1
                    self._update_windings(q)
                    rec.took_steps(1, t)
                qd_out = self._project_qd(q, qd, t, fresh=True) if self.options["project_velocities"] else qd
                self._y_out = (q, qd_out, work)
                rec.record(t_out, None)
                if late is not None and k < nt - 1 and late.due(t_out):  # the kernels compiled during the run
                    late, self._solve = None, None
                    self.qf = QForm(self.dyn, self.refs)
                    if self.qf.kernels.compiled:
                        rec.notes.append(f"index3: on the compiled residual and Newton matrix from t = {t_out:.6g} s "
                                         "(compiled in the background during the run)")
        except _Stop:
            pass
        if self.nhalve:
            rec.notes.append(f"index3: the step was halved {self.nhalve} times (Newton failures)")
        return rec.result(self)

    def prepare(self, t, q):
        """Set up the residual and the constraint rows kept (independent at q) for steps from
        the coordinates q (nq,) at t (s); :meth:`newton` also needs ``self.tol`` (m)."""
        self.qf = QForm(self.dyn, self.refs)
        self.qf.kinematics(q, np.zeros(self.nq))
        J = self.system.jacobian_auto(q, t, self.angles)
        self.rows = rank_info(J).independent
        self._prepare_constraints()
        self._norm_pos = self._norm_positions()
        self._solve = None

    def unpack(self, t, y):
        """(q, v, W) of the last step: coordinates, velocities (m/s, rad/s) and non-conservative work (J)."""
        q, qd, work = self._y_out
        v = velocities_from_rates(self._bs(q), qd, self.dyn.nmov)
        return q, v, work

    def _bs(self, q):
        from .mass import body_state

        return body_state(self.model, self.dyn.mass, q, np.zeros(self.nv))

    def _norm_positions(self):
        """Positions of the moving bodies' normalisation rows among the kept rows (−1: none)."""
        pos = np.full(self.dyn.nmov, -1, dtype=np.int64)
        where = {int(r): k for k, r in enumerate(self.rows)}
        for b, r in enumerate(self.qf.norm_rows):
            pos[b] = where.get(int(r), -1)
        return pos

    def _lam_norm(self, lam):
        out = np.zeros(self.dyn.nmov)
        ok = self._norm_pos >= 0
        out[ok] = lam[self._norm_pos[ok]]
        return out

    def _constraints(self, q, t):
        """(Φ (kept rows), Φq (all rows; dense, or CSC for large models)) at (q, t), in one pass."""
        system, model, angles = self.system, self.model, self.angles
        if self.dyn.sparse or model.nq > DENSE_LIMIT:
            return system.phi(q, t, angles)[self.rows], system.jacobian_auto(q, t, angles)
        qf = model.q_full(q)
        phi = np.empty(model.nc)
        J = np.zeros(model.nc * model.nq)
        for gi, g, flat, keep, dup in self._groups:
            Q = qf[g.gather]
            Fv = system._F(gi, g, t)
            W = system._W(gi, g, Q, angles)
            val = g.code.phi(Q, g.markers, g.params, Fv, W)
            phi[g.row[0]: g.row[0] + val.size] = val.reshape(-1)
            jv = g.code.jac(Q, g.markers, g.params, Fv, W).reshape(-1)[keep]
            if dup:
                np.add.at(J, flat, jv)
            else:
                J[flat] = jv
        return (phi if self._all_rows else phi[self.rows]), J.reshape(model.nc, model.nq)

    def _prepare_constraints(self):
        system = self.system
        self._groups = [(gi, g, g.jac_flat[system._keep[gi]], system._keep[gi], system._dup[gi])
                        for gi, g in enumerate(self.model.groups)]
        self._all_rows = len(self.rows) == self.model.nc and np.all(self.rows == np.arange(self.model.nc))

    # ------------------------------------------------------------------ linear algebra
    def _factor(self, S, J):
        """The iteration matrix [S, Jᵀ; J, 0] (kept rows), factorised; returns a solve function."""
        nq = self.nq
        m = len(self.rows)
        Jr = J[self.rows] if not sps.issparse(J) else J.tocsr()[self.rows]
        self.nfactor += 1
        if self.dyn.sparse:
            Jr = sps.csr_matrix(Jr)
            K = sps.bmat([[sps.csr_matrix(S), Jr.T], [Jr, None]], format="csc")
            try:
                lu = splu(K)
            except RuntimeError as exc:  # exactly singular
                raise np.linalg.LinAlgError(str(exc))
            return lambda b: lu.solve(b)
        K = np.zeros((nq + m, nq + m), order="F")
        K[:nq, :nq] = S
        Jd = Jr.toarray() if sps.issparse(Jr) else Jr
        K[:nq, nq:] = Jd.T
        K[nq:, :nq] = Jd
        lu, piv, info = dgetrf(K, overwrite_a=True)
        if info != 0 or not np.all(np.isfinite(np.diagonal(lu))):
            raise np.linalg.LinAlgError("singular iteration matrix")

        def solve(b):
            x, info = dgetrs(lu, piv, b)
            return x

        return solve

    def _mass_solver(self, q, qd, t, J):
        Mq = self.qf.matrix(q, qd, t, np.zeros(self.dyn.nmov), 0.0, 0.0, sparse=self.dyn.sparse, with_forces=False)
        return self._factor(Mq, J)

    def _project_qd(self, q, qd, t, fresh=False):
        """q̇ with Φq q̇ = −Φt, closest to the given one in the M_q metric."""
        nq = self.nq
        J = self.system.jacobian_auto(q, t, self.angles)
        Jr = J[self.rows]
        res = Jr @ qd + self.system.phit(q, t, self.angles)[self.rows]
        if not res.size:
            return qd
        # the M_q metric: the Newton matrix (damping, stiffness) would not give the closest q̇
        solve = self._mass_solver(q, qd, t, J)
        for _ in range(3):
            qd = qd + solve(np.concatenate([np.zeros(nq), -res]))[:nq]
            res = Jr @ qd + self.system.phit(q, t, self.angles)[self.rows]
            if np.max(np.abs(res)) <= 1e-14 * (1.0 + np.max(np.abs(qd))):
                break
        return qd

    def _consistent_acc(self, q, qd, t):
        """(q̈, λ) of the index-1 equations at (q, q̇, t); sets the initial power."""
        R, power = self.qf.residual(q, qd, np.zeros(self.nq), t)
        Qq = -R.copy()
        self.nfev += 1
        J = self.system.jacobian_auto(q, t, self.angles)
        solve = self._mass_solver(q, qd, t, J)
        gamma = self.system.gamma(q, qd, t, self.angles)[self.rows]
        x = solve(np.concatenate([Qq, gamma]))
        self._power = self._power_of(power, x[self.nq:], q, t)
        return x[: self.nq], x[self.nq:]

    def _power_of(self, power, lam, q, t):
        if self.dyn.timed:
            phit = self.system.phit(q, t, self.angles)[self.rows]
            power += float(lam @ phit)
        return power

    # ------------------------------------------------------------------ step
    def _step(self, t, h, q0, qd0, qdd0, a0, lam0):
        am, af, gam, beta = self.coef
        t1 = t + h
        c_k = h * h * beta * (1 - af) / (1 - am)  # ∂q/∂q̈
        c_d = h * gam * (1 - af) / (1 - am)  # ∂q̇/∂q̈
        # q = base_q + c_k q̈, q̇ = base_qd + c_d q̈
        ahat = (af * qdd0 - am * a0) / (1 - am)
        base_q = q0 + h * qd0 + h * h * ((0.5 - beta) * a0 + beta * ahat)
        base_qd = qd0 + h * ((1 - gam) * a0 + gam * ahat)
        if self.options["jacobian"] != "lazy" or getattr(self, "_solve_h", None) != h:
            self._solve = None
        q1, qd1, qdd, lam, power = self.newton(t1, base_q, base_qd, c_k, c_d, qdd0, lam0)
        self._solve_h = h
        ahat_q = (1 - af) / (1 - am) * qdd
        a1 = ahat + ahat_q
        if self.options["project_velocities"] == "state":
            qd1 = self._project_qd(q1, qd1, t1)
        p1 = self._power_of(power, lam, q1, t1)  # forces of the last iterate (the work is O(h²) anyway)
        return q1, qd1, qdd, a1, lam, p1

    def newton(self, t1, base_q, base_qd, c_k, c_d, qdd0, lam0):
        """Newton's method at t1 (s) on [M_q q̈ + Φqᵀ λ − Q_q; Φ/c_k] = 0 for (q̈, λ) with
        q = base_q + c_k q̈ and q̇ = base_qd + c_d q̈ (c_k in s², c_d in s: the integration
        formula's dependence on q̈; generalised-α's, or a BDF's), from the guess (q̈0, λ0).
        Returns (q, q̇, q̈, λ, power of the force elements at the last iterate in W); raises
        _Failure without convergence. The iteration matrix is kept while ``self._solve`` is set."""
        nq = self.nq
        bp = 1.0 / c_k
        full = self.options["newton"] == "full"
        qdd = qdd0.copy()
        lam = lam0.copy()
        tol = self.tol
        rows = self.rows
        prev = np.inf
        err = np.inf
        fresh = False
        for it in range(self.options["max_iter"]):
            q1 = base_q + c_k * qdd
            qd1 = base_qd + c_d * qdd
            R, power = self.qf.residual(q1, qd1, qdd, t1)
            self.nfev += 1
            phi, J = self._constraints(q1, t1)
            Jr = J if self._all_rows else J[rows]
            if self._solve is None:
                if full:
                    S = self.qf.matrix(q1, qd1, t1, self._lam_norm(lam), c_k, c_d, sparse=self.dyn.sparse)
                else:
                    S = self.qf.matrix(q1, qd1, t1, np.zeros(self.dyn.nmov), 0.0, 0.0, sparse=self.dyn.sparse,
                                       with_forces=False)
                self._solve = self._factor(S, J)
                fresh = True
            dx = self._solve(-np.concatenate([R + Jr.T @ lam, bp * phi]))
            qdd += dx[:nq]
            lam += dx[nq:]
            err = c_k * np.max(np.abs(dx[:nq]))
            if not np.isfinite(err):
                raise _Failure("the Newton iteration produced NaN/inf")
            if err <= tol and np.max(np.abs(phi)) <= 10 * tol:
                break
            # the contraction rate θ bounds what is left after this correction: θ/(1 − θ) |Δq|
            # (Hairer & Wanner, Solving ODEs II, IV.8), so a fast iteration stops a pass early
            if it >= 1:
                theta = err / prev
                if theta < 0.5 and theta / (1.0 - theta) * err <= tol:
                    break
            if it >= 1 and err > 0.25 * prev:
                if err > 1e3 * prev and fresh:
                    raise _Failure(f"the Newton iteration diverges (correction {err:.3g})")
                self._solve = None  # slow: refactorise at the current iterate
                fresh = False
            prev = err
        else:
            raise _Failure(f"no convergence in {self.options['max_iter']} iterations (last correction {err:.3g})")
        return base_q + c_k * qdd, base_qd + c_d * qdd, qdd, lam, power
