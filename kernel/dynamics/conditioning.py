"""Can a model's equations of motion be integrated as given? The inertia of the motion the joints allow, the steps
it leaves an error-controlled integrator, at the start of a dynamic run.

1. **The mass on the joints' motion** (:func:`check_mass`, every run). With N an orthonormal basis (nv, ndof) of
   the null space of the kept constraint rows Jv (velocities [v_c, ω] of the moving parts: m/s and rad/s, world
   axes), M_r = Nᵀ M N is the mass matrix of the motions the joints allow (kg for a translation, kg m² for a
   rotation, per unit of that mixed norm; for a tree it has the joint-space mass matrix's conditioning up to the
   scale of the joints' levers). Its smallest eigenvalue μ_min is the inertia of the motion that carries least; its
   eigenvector names the joints and parts that move in it. cond = μ_max / μ_min ≥ :data:`SINGULAR_CONDITION`: the
   accelerations of that motion keep no digit worth integrating (a point mass on its own joint axis, a part given a
   negligible inertia): the run is refused (:class:`~cadmotion.errors.MechanismError`). The 62 robots of
   example-robot-data that run have cond ≤ 9.8e5 (iCub with its point masses' 1 mm spheres 3.6e5): a condition
   number alone does not tell a slow run, the two figures below do.

2. **The steps of an error-controlled run** (:func:`check_steps`, before it starts). A run that would take
   :data:`SLOW_STEPS` steps or more runs for minutes to hours with nothing to show; it is warned of
   (:class:`ConditioningWarning`, and an event ``conditioning`` on the Motion) with the motion to blame and what to
   do, for either of two causes:

   * *stiffness* (explicit integrators): the fastest linearised mode (:mod:`.stiffness`) — a joint's damping
     against a small inertia, e.g. iCub's neck damping of 1 N m s/rad on its head's 1 mm sphere, 1.9e6 1/s — asks
     an explicit method for about span·|λ|/3 steps for stability alone (iCub's neck in small: 3.1e5 predicted,
     146 k taken by DOP853). A mode that nothing excites costs nothing: the Allegro hand's fastest (1.95e6 1/s, its
     fingertips' damping) stays exactly at rest in its fall, and the run takes 1.2e4 steps — hence "may";
   * *round-off* (the absolute-coordinate formulations, M v̇ + Jvᵀ λ = f): a part with a small inertia against the
     reactions it carries turns the multipliers' round-off into noise δ (m/s², rad/s²) in its accelerations,
     measured as the largest change of v̇ over :data:`NOISE_PROBES` states moved by a unit in the last place (q
     relative, v absolute). The error estimate of a step h carries about h δ, so while the velocities are small
     (at rest the error scale is atol) the steps stay below h_noise = :data:`NOISE_STEP_FACTOR` · atol / δ. Measured:
     iCub's two files falling at atol 1e-12 on DOP853 take steps of 8.6e-7 and 8.8e-7 s against h_noise 3.7e-7 and
     2.7e-7 s at factor 10 (δ of two to four units in 1e-5). A step ceiling below the round-off of t cannot make
     progress: the run is refused (:class:`~cadmotion.errors.SolverError`).

:func:`diagnose` returns a :class:`Conditioning` (the figures, the parts and joints). Models beyond :data:`MAX_NV`
body velocities skip the dense M_r.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla

from ...errors import MechanismError, SolverError

__all__ = ["Conditioning", "diagnose", "check_mass", "check_steps", "ConditioningWarning", "SINGULAR_CONDITION",
           "SLOW_STEPS", "NOISE_STEP_FACTOR", "MAX_NV"]

#: cond(M_r) from which the run is refused: 1e12 leaves four digits of the weakest motion's accelerations (the
#: corpus of 62 robots that run: at most 9.8e5, TIAGo without hand; iCub's 3.6e5 with its 1 mm spheres)
SINGULAR_CONDITION = 1e12
#: steps from which a run is warned of before it starts. example-robot-data falling 0.5 s at atol 1e-12: by round-off
#: iCub's files 1.35e6 and 1.88e6, the others at most 1.15e4 (Centauro, which takes 4,228); for stability (explicit)
#: iCub 3.1e5 and Allegro 3.2e5 (which takes ~1.5e5 steps), the others at most 4.2e4 (TIAGo without hand)
SLOW_STEPS = 1e5
#: h_noise = NOISE_STEP_FACTOR · atol / δ (see the module docstring: measured 9.4 to 10.6 on iCub's two files)
NOISE_STEP_FACTOR = 10.0
#: states moved by a unit in the last place at which the accelerations are evaluated again
NOISE_PROBES = 4
#: the largest model (body velocities, 6 per moving part) whose M_r is formed densely
MAX_NV = 600
#: a joint or part is named in the weakest motion when it moves at least this fraction of the fastest
SHARE = 0.3
#: the formulations whose accelerations are those of :meth:`.equations.Dynamics.accelerations`
ABSOLUTE_FORMULATIONS = ("projection", "baumgarte", "penalty", "augmented-lagrangian")


class ConditioningWarning(UserWarning):
    """A dynamic run that will be slow because of the model's mass data (:mod:`.conditioning`)."""


@dataclass
class Conditioning:
    """What :func:`diagnose` found.

    Attributes
    ----------
    ndof : int — degrees of freedom (columns of N); 0 when M_r was not formed
    inertia_min, inertia_max : float — the extreme eigenvalues of M_r (kg, kg m², see the module docstring)
    condition : float — inertia_max / inertia_min (inf for a singular M_r, nan when not formed)
    joints, parts : tuple of str — the joints and parts that move in the weakest motion
    noise : float — δ, the round-off of the accelerations (m/s², rad/s²; nan when not measured)
    noise_part : str — the part whose acceleration carries it
    step_ceiling : float, s — h_noise (inf without noise)
    steps : float — span / h_noise
    """

    ndof: int
    inertia_min: float
    inertia_max: float
    condition: float
    joints: tuple
    parts: tuple
    noise: float
    noise_part: str
    step_ceiling: float
    steps: float

    @property
    def singular(self):
        """True when M_r is too ill-conditioned to integrate (:data:`SINGULAR_CONDITION`)."""
        return bool(self.condition >= SINGULAR_CONDITION)

    @property
    def slow(self):
        """True when an error-controlled run takes :data:`SLOW_STEPS` steps or more for the round-off alone."""
        return bool(self.steps >= SLOW_STEPS)

    def weakest(self):
        """The weakest motion, as text: its joints (or parts), its inertia and the condition number."""
        who = (f"joint{'s' if len(self.joints) > 1 else ''} {', '.join(map(repr, self.joints))}" if self.joints
               else f"part{'s' if len(self.parts) > 1 else ''} {', '.join(map(repr, self.parts))}")
        moving = f" (moving {', '.join(map(repr, self.parts))})" if self.joints and self.parts else ""
        return (f"the motion of {who}{moving} carries an inertia of {self.inertia_min:.3g} against "
                f"{self.inertia_max:.3g} for the heaviest (kg m², kg; condition {self.condition:.2g})")


def diagnose(dyn, q, v, t, refs, *, span=0.0, atol=None, mass=True, noise=True):
    """The :class:`Conditioning` of ``dyn`` at (q, v, t).

    Parameters
    ----------
    dyn : :class:`~.equations.Dynamics` with its independent rows set (:func:`.forward.prepare`)
    q, v : ndarray (nq,), (nv,) — consistent coordinates (m, unit quaternions) and velocities (m/s, rad/s)
    t : float, s
    refs : the force elements' angle references
    span : float, s — the run's span, for the step count
    atol : float or ndarray — the integrator's absolute tolerance (None: no step count)
    mass : bool — form M_r (models up to :data:`MAX_NV` body velocities)
    noise : bool — measure the accelerations' round-off (the absolute-coordinate formulations')
    """
    nmov = dyn.nmov
    ndof, lo, hi, cond, joints, parts = 0, math.nan, math.nan, math.nan, (), ()
    if mass and 0 < dyn.nv <= MAX_NV:
        ev = dyn.evaluate(q, v, t, refs, with_gamma=False, with_forces=False)
        M = dyn.mass_matrix(ev.bs)
        M = M.toarray() if hasattr(M, "toarray") else np.asarray(M)
        Jr = ev.Jr.toarray() if hasattr(ev.Jr, "toarray") else np.asarray(ev.Jr)
        N = sla.null_space(Jr) if Jr.shape[0] else np.eye(dyn.nv)
        ndof = N.shape[1]
        if ndof:
            mu, U = np.linalg.eigh(N.T @ M @ N)
            lo, hi = float(mu[0]), float(mu[-1])
            cond = hi / lo if lo > 0 else math.inf
            joints, parts = _moving(dyn, (N @ U[:, 0]).reshape(nmov, 6))
    delta, noise_part, ceiling, steps = math.nan, "", math.inf, 0.0
    if noise and nmov:
        delta, body = _roundoff(dyn, q, v, t, refs)
        noise_part = dyn.model.body_names[body]
        if atol is not None and delta > 0:
            ceiling = NOISE_STEP_FACTOR * float(np.min(atol)) / delta
            steps = span / ceiling
    return Conditioning(ndof, lo, hi, cond, joints, parts, delta, noise_part, ceiling, steps)


def _moving(dyn, u):
    """(joints, parts) that move in the body velocities ``u`` (nmov, 6): the joints whose parts turn or slide
    relative to each other, the parts that move, each at least :data:`SHARE` of the largest (at most four)."""
    model, nmov = dyn.model, dyn.nmov
    speed = np.linalg.norm(u[:, 3:], axis=1) + np.linalg.norm(u[:, :3], axis=1) / dyn.length_scale
    parts = tuple(model.body_names[b] for b in np.argsort(-speed) if speed[b] >= SHARE * speed.max() > 0)
    full = np.zeros((model.nb, 6))
    full[:nmov] = u
    rel = {}
    for name, _, gi, inst in model.joint_measures:
        i, j = model.groups[gi].bodies[inst][:2]
        d = full[j] - full[i]
        rel[name] = max(rel.get(name, 0.0), float(np.linalg.norm(d[3:]) + np.linalg.norm(d[:3]) / dyn.length_scale))
    top = max(rel.values(), default=0.0)
    joints = tuple(n for n in sorted(rel, key=rel.get, reverse=True) if rel[n] >= SHARE * top > 0)
    return joints[:4], parts[:4]


def _roundoff(dyn, q, v, t, refs):
    """(δ, body): the largest change of v̇ (m/s², rad/s²) over :data:`NOISE_PROBES` states moved by a unit in the
    last place (a seeded draw: the same model gives the same figure), and the moving body it is on."""
    vd0 = dyn.accelerations(dyn.evaluate(q, v, t, refs))[0]
    rng = np.random.default_rng(0)
    eps = np.finfo(float).eps
    worst = np.zeros(dyn.nv)
    for _ in range(NOISE_PROBES):
        qp = q * (1.0 + eps * rng.standard_normal(q.shape))
        vp = v + eps * (1.0 + np.abs(v)) * rng.standard_normal(v.shape)
        vd = dyn.accelerations(dyn.evaluate(qp, vp, t, refs))[0]
        worst = np.maximum(worst, np.abs(vd - vd0))
    per_body = worst.reshape(dyn.nmov, 6).max(axis=1)
    body = int(np.argmax(per_body))
    return float(per_body[body]), body


#: what to do about a motion that carries (almost) no inertia
TODO = ("give the parts their mass properties (a link with a mass and no inertia gets a 1 mm sphere's; a real "
        "inertia, even a rough one, ends it), or make the joint fixed if it need not move")


def check_mass(dyn, q, v, t, refs, *, where=None):
    """The :class:`Conditioning` of M_r at (q, v, t) (no round-off measured); a
    :class:`~cadmotion.errors.MechanismError` naming the joints and parts of the weakest motion when M_r is
    singular (:data:`SINGULAR_CONDITION`). ``where``: the model's file, for the message."""
    diag = diagnose(dyn, q, v, t, refs, noise=False)
    if diag.singular:
        raise MechanismError(f"the mass matrix is singular on the motion the joints allow: {diag.weakest()}; no "
                             "integrator can follow that motion", where=where, hint=TODO)
    return diag


def check_steps(dyn, q, v, times, refs, *, integrator, atol, absolute, mass=None, estimate=None, where=None):
    """Before an error-controlled run: will its steps be so short that it runs for hours? Two causes are measured
    (module docstring): the stiffness of the linearised model (:func:`.stiffness.stiffness_estimate`; ``estimate``
    if the caller has it) for an explicit ``integrator``, and the accelerations' round-off at ``atol`` for an
    ``absolute``-coordinate formulation. Either reaching :data:`SLOW_STEPS` steps over the span of ``times`` (s) is a
    :class:`ConditioningWarning` naming the motion and what to do; a round-off step below the round-off of t a
    :class:`~cadmotion.errors.SolverError`. Return the warning's text, or None. ``mass``: the :class:`Conditioning`
    of :func:`check_mass`, whose weakest motion the text names."""
    from .integrators import REGISTRY
    from .stiffness import MAX_DOF, fastest_mode, stiffness_estimate

    info = REGISTRY.get(integrator)
    if info is None or info.family != "scipy":
        return None
    t, span = float(times[0]), float(times[-1] - times[0])
    weakest = f"; {mass.weakest()}" if mass is not None and mass.ndof else ""
    causes = []
    if info.explicit and not dyn.forces.empty and 0 < dyn.nv - len(dyn.rows) <= MAX_DOF:
        est = estimate if estimate is not None else stiffness_estimate(dyn, q, v, t, refs, times)
        if est.explicit_steps >= SLOW_STEPS:
            rate, u = fastest_mode(dyn, q, v, t, refs)
            joints, parts = _moving(dyn, u)
            who = ", ".join(map(repr, joints or parts))
            causes.append(f"its fastest linearised mode, the motion of {who}, has a rate of {rate:.3g} 1/s (its "
                          f"force elements' damping or stiffness against its inertia{weakest}): the explicit "
                          f"{integrator} needs about {est.explicit_steps:.2g} steps for the {span:.3g} s for "
                          "stability alone once that motion is excited — run it with --integrator Radau (or leave "
                          "the method and tolerances to "
                          "cadmotion, which picks an implicit one for a stiff model)")
    if absolute:
        noise = diagnose(dyn, q, v, t, refs, span=span, atol=atol, mass=False)
        if noise.slow:
            cause = (f"its accelerations carry a round-off of {noise.noise:.2g} m/s² or rad/s² (largest on part "
                     f"{noise.noise_part!r}: small inertias against the reactions they carry)")
            floor = 10.0 * np.finfo(float).eps * max(abs(t), abs(t + span))
            if noise.step_ceiling < floor:
                raise SolverError(f"{cause}: an error-controlled step at atol {float(np.min(atol)):.2g} would be below "
                                  f"{noise.step_ceiling:.2g} s, the round-off of t; the run cannot make progress",
                                  where=where, hint=f"{TODO}; or a looser --atol")
            causes.append(f"{cause}: an error-controlled step at atol {float(np.min(atol)):.2g} stays below about "
                          f"{noise.step_ceiling:.2g} s while the motion is slow, about {noise.steps:.2g} steps for the "
                          f"{span:.3g} s — loosen --atol (at 1e-8 the steps may reach "
                          f"{NOISE_STEP_FACTOR * 1e-8 / noise.noise:.2g} s)")
    if not causes:
        return None
    text = (f"this run may take very many steps, showing nothing while it goes, or fail where a step is too long: "
            f"{'; and '.join(causes)}; or {TODO}")
    warnings.warn(f"{where + ': ' if where else ''}{text}", ConditioningWarning, stacklevel=4)
    return text
