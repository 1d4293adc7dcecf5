"""Is a model stiff? An eigenvalue estimate of the linearised equations at the start.

At the initial state (q0, v0) the equations of motion in velocity variables,

    M v̇ + Jvᵀ λ = f(x, v, t),    Jv v = −Φt,

are linearised about the current motion: a perturbation δx (virtual displacement, [δr_c, δθ]
per body) that keeps the joints, δx = N z with N a basis of the null space of Jv, obeys

    M_r z̈ + D_r ż + K_r z = 0,   M_r = Nᵀ M N,  D_r = Nᵀ (D + G) N,  K_r = Nᵀ K N,

with K = −∂f/∂x and D = −∂f/∂v the force elements' stiffness and damping
(:meth:`.forces.ForceElements.tangent`) and G = [ω] J − [J ω] the gyroscopic damping of each
body. The eigenvalues of [[0, I], [−M_r⁻¹ K_r, −M_r⁻¹ D_r]] are the rates (1/s) of the
linearised modes; the largest |λ| sets the step an explicit integrator can take for
stability, about c/|λ| (c ≈ 3 for DOP853 and the classical Runge–Kutta methods), whatever
the accuracy asked for. Gravity and the joint reactions' geometric stiffness are left out
(they give the slow pendulum-like modes, which never make a model stiff).

The model is called *stiff* when |λ|max × h_ref ≥ ``threshold`` (default 100), h_ref the
output interval (or the span with one frame): an explicit method would then need at least
threshold/c ≈ 30 steps per output interval for stability alone, where an implicit method
steps over the fast modes it does not resolve: Radau IIA in the compiled loop (:mod:`._radau`,
error-controlled, L-stable) where it runs, else index-3 generalised-α (:mod:`.index3`) at the
output interval or shorter. Lightly damped oscillations slower than that (damping ratio
ζ < 0.5) are resolved by the step suggested for the implicit method.

:func:`stiffness_estimate` returns a :class:`StiffnessEstimate` (the numbers and the reason,
as text); :func:`default_method` turns it into a formulation, integrator and step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla

__all__ = ["StiffnessEstimate", "MethodChoice", "stiffness_estimate", "default_method", "linearised_system", "modes",
           "fastest_mode"]

#: explicit Runge–Kutta stability: h |λ| ≲ this on the negative real axis (DOP853, RK45, RK4 ≈ 2.8–6)
EXPLICIT_STABILITY = 3.0
#: the largest model (degrees of freedom) whose eigenvalues are computed densely
MAX_DOF = 1500
#: the tolerances of the stiff choice, Radau in the compiled loop (relative; absolute in m, rad-like, m/s, rad/s,
#: J): the absolute one is the relative one rather than the explicit default's 1e-10, which on the joints'
#: near-zero velocity components asks for steps well below what the invariants need (A05, 10 s: 2,188 steps
#: instead of 3,890; L_z to 1e-9, the energy never rising, the symmetry to 5e-10, the positions within 5e-9 m
#: of DOP853 at rtol 1e-10)
STIFF_RTOL, STIFF_ATOL = 1e-8, 1e-8
#: why an open tree runs in relative coordinates (benchmarks/README.md, "The default for open trees")
OPEN_TREE_REASON = ("the joints form an open tree: its joint coordinates need no projection, and light parts' "
                    "accelerations carry no round-off of the joint reactions (the absolute coordinates took 12-120x "
                    "the steps on real robots with light links)")


@dataclass
class StiffnessEstimate:
    """The outcome of :func:`stiffness_estimate`.

    Attributes
    ----------
    eigenvalues : ndarray (2 ndof,), complex, 1/s — rates of the linearised modes
    lambda_max : float, 1/s — the largest |λ|
    h_ref : float, s — the reference interval (output interval)
    ratio : float — lambda_max × h_ref
    stiff : bool — ratio ≥ threshold
    explicit_steps : float — steps an explicit method needs over the span for stability alone
    dt : float, s — a step for the implicit method (resolves the lightly damped modes below the
        stiff ones, at most h_ref and 0.01 s)
    reason : str — one sentence that says why, with the numbers
    """

    eigenvalues: np.ndarray
    lambda_max: float
    h_ref: float
    ratio: float
    stiff: bool
    explicit_steps: float
    dt: float
    reason: str


@dataclass
class MethodChoice:
    """Formulation, integrator and step (s, None: the formulation's default) for a model, and
    the tolerances (rtol, atol) the choice runs at (None: the caller's defaults)."""

    formulation: str
    integrator: str
    dt: float
    reason: str
    estimate: StiffnessEstimate
    rtol: float = None
    atol: float = None


def linearised_system(dyn, q, v, t, refs):
    """(M_r, D_r, K_r) (ndof, ndof) of the linearised motion on the joints' null space at (q, v, t).

    ``dyn`` a :class:`~.equations.Dynamics` (its independent rows set), ``refs`` the force
    elements' angle references. Units: kg and kg m² (M_r), N s/m … (D_r), N/m … (K_r) in the
    coordinates z of an M-orthonormal null-space basis (so M_r = I).
    """
    M, D, K, Nm = _on_the_joints(dyn, q, v, t, refs)
    return Nm.T @ M @ Nm, Nm.T @ D @ Nm, Nm.T @ K @ Nm


def modes(dyn, q, v, t, refs):
    """The linearised modes at (q, v, t): (ω (m,), c (m,), P (m, nv)).

    ω_i (1/s) = √λ_i of the eigenvalues of K_r's symmetric part (:func:`linearised_system`; 0 where
    λ_i ≤ 0: gravity and the joints' geometric stiffness are left out, those modes are slow) with
    eigenvectors U; c_i (1/s) = (Uᵀ D_r U)_ii, the mode's own damping (η̈ + c η̇ + ω² η = 0 when the
    damping does not couple the modes; the gyroscopic part adds nothing there); P = Uᵀ N_mᵀ M maps
    a velocity (or acceleration) of the bodies, [v_c, ω] per moving body (m/s, rad/s, world), to the
    modes' rates η̇ (their accelerations η̈), in the M-orthonormal coordinates: ½ Σ η̇_i² is the
    kinetic energy (J) of a motion that keeps the joints, and a mode's energy is
    ½ η̇_i² + ½ ((η̈_i + c_i η̇_i) / ω_i)² (its kinetic and, its deflection from its restoring force,
    its elastic share).
    """
    M, D, K, Nm = _on_the_joints(dyn, q, v, t, refs)
    Kr = Nm.T @ K @ Nm
    lam, U = np.linalg.eigh(0.5 * (Kr + Kr.T))
    c = np.einsum("ji,jk,ki->i", U, Nm.T @ D @ Nm, U)
    return np.sqrt(np.maximum(lam, 0.0)), c, U.T @ Nm.T @ M


def fastest_mode(dyn, q, v, t, refs):
    """(|λ|, u): the rate (1/s) of the fastest linearised mode at (q, v, t) (the module docstring's eigenvalues) and
    the motion it is, as velocities [v_c, ω] of the moving parts (nmov, 6; m/s, rad/s, world; the shape of the
    motion, its scale arbitrary). (0, zeros) for a model without degrees of freedom."""
    M, D, K, Nm = _on_the_joints(dyn, q, v, t, refs)
    n = Nm.shape[1]
    if n == 0:
        return 0.0, np.zeros((dyn.nmov, 6))
    lam, V = np.linalg.eig(_state_matrix(Nm.T @ M @ Nm, Nm.T @ D @ Nm, Nm.T @ K @ Nm))
    k = int(np.argmax(np.abs(lam)))
    z = V[:n, k]  # the eigenvector is [z, λ z]: its positions
    z = np.real(z * np.exp(-1j * np.angle(z[np.argmax(np.abs(z))])))
    return float(np.abs(lam[k])), (Nm @ z).reshape(dyn.nmov, 6)


def _state_matrix(Mr, Dr, Kr):
    """[[0, I], [−M_r⁻¹ K_r, −M_r⁻¹ D_r]] (2 ndof, 2 ndof): the linearised equations as a first-order system in
    [z, ż], whose eigenvalues (1/s) are the modes' rates (module docstring)."""
    n = Mr.shape[0]
    Minv = np.linalg.inv(Mr)
    A = np.zeros((2 * n, 2 * n))
    A[:n, n:] = np.eye(n)
    A[n:, :n] = -Minv @ Kr
    A[n:, n:] = -Minv @ Dr
    return A


def _on_the_joints(dyn, q, v, t, refs):
    """(M, D, K, N_m): the mass matrix, the force elements' damping (with each body's gyroscopic
    damping) and stiffness (nv, nv) at (q, v, t), and an M-orthonormal basis N_m (nv, ndof) of
    the joints' null space."""
    ev = dyn.evaluate(q, v, t, refs, with_gamma=False)
    bs = ev.bs
    M = dyn.mass_matrix(bs)
    M = M.toarray() if hasattr(M, "toarray") else np.asarray(M)
    K, D = dyn.forces.tangent(bs, t, refs)
    nmov = dyn.nmov
    for b in range(nmov):  # gyroscopic damping of each body: ∂(ω × J ω)/∂ω
        w, J = bs.w[b], bs.J[b]
        D[6 * b + 3: 6 * b + 6, 6 * b + 3: 6 * b + 6] += _skew(w) @ J - _skew(J @ w)
    Jr = ev.Jr.toarray() if hasattr(ev.Jr, "toarray") else np.asarray(ev.Jr)
    if Jr.shape[0]:
        N = sla.null_space(Jr)
    else:
        N = np.eye(dyn.nv)
    # M-orthonormal basis: N ← N L⁻ᵀ with L Lᵀ = Nᵀ M N
    Mr = N.T @ M @ N
    L = np.linalg.cholesky(0.5 * (Mr + Mr.T))
    return M, D, K, sla.solve_triangular(L, N.T, lower=True).T


def _skew(a):
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def stiffness_estimate(dyn, q, v, t, refs, times, *, threshold=100.0):
    """Estimate the stiffness of a model at its initial state (see the module docstring).

    Parameters
    ----------
    dyn : :class:`~.equations.Dynamics` with its independent rows set (:func:`.forward.prepare`)
    q, v : ndarray (nq,), (nv,) — consistent initial coordinates and velocities
    t : float, s — initial time
    refs : the force elements' angle references (from :func:`.forward.prepare`)
    times : array of output times (s); the output interval is the reference step
    threshold : float — stiff when |λ|max × output interval ≥ threshold

    Returns
    -------
    StiffnessEstimate
    """
    times = np.asarray(times, float)
    span = float(times[-1] - times[0]) if len(times) > 1 else 0.0
    h_ref = span / (len(times) - 1) if len(times) > 1 and span > 0 else max(span, 1.0)
    ndof = dyn.nv - len(dyn.rows)
    if dyn.forces.empty or ndof <= 0 or ndof > MAX_DOF:
        why = ("no force elements: only gravity and inertia, never stiff" if dyn.forces.empty and ndof > 0
               else "no degrees of freedom" if ndof <= 0 else f"{ndof} degrees of freedom: too large to estimate")
        return StiffnessEstimate(np.zeros(0, complex), 0.0, h_ref, 0.0, False, 0.0, min(h_ref, 1e-2),
                                 f"not stiff: {why}")
    Mr, Dr, Kr = linearised_system(dyn, q, v, t, refs)
    lam = np.linalg.eigvals(_state_matrix(Mr, Dr, Kr))
    mag = np.abs(lam)
    k = int(np.argmax(mag))
    lmax = float(mag[k])
    ratio = lmax * h_ref
    stiff = ratio >= threshold
    explicit_steps = span * lmax / EXPLICIT_STABILITY
    # the implicit step: resolve lightly damped modes that are not themselves stiff
    zeta = np.where(mag > 0, -lam.real / np.where(mag > 0, mag, 1.0), 1.0)
    resolved = (zeta < 0.5) & (mag * h_ref < threshold) & (mag > 0)
    dt = min(h_ref, 1e-2)
    if np.any(resolved):
        dt = min(dt, 0.2 / float(np.max(mag[resolved])))
    fast = lam[k]
    if lmax == 0.0:
        kind = "no stiffness or damping"
    elif abs(fast.imag) > 1e-12 * lmax:
        kind = (f"an oscillation of {abs(fast.imag) / (2 * math.pi):.3g} Hz with damping ratio "
                f"{-fast.real / lmax + 0.0:.2g}")
    else:
        kind = f"a decay with time constant {1.0 / lmax:.3g} s"
    if stiff:
        reason = (f"stiff: the fastest linearised mode (|λ| = {lmax:.3g} 1/s, {kind}) is {ratio:.3g} times faster "
                  f"than the output interval {h_ref:.3g} s; an explicit integrator needs about "
                  f"{explicit_steps:.3g} steps for stability alone, so an implicit method is indicated")
    else:
        reason = (f"not stiff: the fastest linearised mode (|λ| = {lmax:.3g} 1/s, {kind}) is resolved by "
                  f"the output interval {h_ref:.3g} s (ratio {ratio:.3g} < {threshold:g}); an explicit "
                  f"integrator fits")
    return StiffnessEstimate(lam, lmax, h_ref, ratio, stiff, explicit_steps, dt, reason)


def default_method(dyn, q, v, t, refs, times, *, threshold=100.0, compiled_radau=False, relative=None):
    """The formulation, integrator and step that fit the model. When it is stiff:
    ``projection`` / ``Radau`` at :data:`STIFF_RTOL`, :data:`STIFF_ATOL` if ``compiled_radau``
    (the caller's word that Radau runs in the compiled loop with the analytic Jacobian,
    :mod:`._radau`: error-controlled, it keeps the invariants to the tolerance), else
    ``index3`` / ``generalized-alpha`` with the estimate's step (fixed steps, second order; halved by the run where its
    global error estimate asks, :mod:`.global_error`);
    when it is not, ``relative`` / ``DOP853`` where ``relative`` is a (formulation, reason) pair (the
    caller's word that the joints form an open tree that this relative-coordinate formulation takes,
    :func:`.forward.tree_formulation`), else ``projection`` / ``DOP853`` (dt None). Returns a
    :class:`MethodChoice` whose ``reason`` says why."""
    est = stiffness_estimate(dyn, q, v, t, refs, times, threshold=threshold)
    if dyn.forces.contact_constraints is not None:
        # impacts and switches are events of the projection formulation's explicit steps
        reason = (f"{len(dyn.forces.contact_constraints.names)} unilateral contact(s): projection / DOP853, the "
                  f"contact switches located as events ({est.reason})")
        return MethodChoice("projection", "DOP853", None, reason, est)
    contacts = dyn.forces.contacts
    if contacts is not None:
        # a contact's stiffness exists only while it touches, so the estimate at t0 cannot see it;
        # the explicit integrator's steps follow each contact (:meth:`.contacts.Contacts.step_limit`)
        reason = (f"{len(contacts.names)} declared contact(s): projection / DOP853 with its steps limited to "
                  f"resolve every contact (the contacts' stiffness is not in the linearised estimate; {est.reason})")
        return MethodChoice("projection", "DOP853", None, reason, est)
    if dyn.forces.stops is not None:
        # the same for the joint limits' stops (:mod:`.stops`): their stiffness acts only past a limit
        reason = (f"joint limits as stops on {', '.join(dyn.forces.stops.prefixes)}: projection / DOP853 with its "
                  f"steps limited to resolve every stop ({est.reason})")
        return MethodChoice("projection", "DOP853", None, reason, est)
    if relative is not None and dyn.mass.massless:
        # the absolute formulations need every moving part's mass (:func:`.mass.refuse_massless`)
        integrator = "Radau" if est.stiff else "DOP853"
        return MethodChoice(relative[0], integrator, None, f"{est.reason}; {relative[1]}; massless part(s) "
                            f"{', '.join(dyn.mass.massless)}: joint coordinates, {integrator}", est)
    if est.stiff and compiled_radau:
        return MethodChoice("projection", "Radau", None,
                            est.reason + " (Radau IIA compiled with the model, iterating with the analytic Jacobian, "
                            f"rtol {STIFF_RTOL:g}, atol {STIFF_ATOL:g})", est, STIFF_RTOL, STIFF_ATOL)
    if est.stiff:
        return MethodChoice("index3", "generalized-alpha", est.dt,
                            est.reason + f" (index3 / generalized-alpha, dt = {est.dt:.3g} s)", est)
    if relative is not None:
        return MethodChoice(relative[0], "DOP853", None, f"{est.reason}; {relative[1]}", est)
    return MethodChoice("projection", "DOP853", None, est.reason, est)
