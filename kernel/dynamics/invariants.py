"""A dynamic run checks itself: energy balance, constraint violations, momentum, friction cones, step count.

Every forward-dynamics run (:func:`.forward.run`) ends with :func:`check_motion` on its output
frames. Each check compares a drift with the allowance the run's accuracy warrants; a drift
beyond its allowance is an Event of kind ``invariant`` (time, magnitude, what to do) on the
Motion, and the whole :class:`InvariantReport` is ``result.invariants`` of :func:`.forward.run`.
Nothing here tunes a number to a sample: every allowance is the bound below, with the run's
own tolerances, step count and the model's scales taken from the frames.

What a step may change
----------------------
An adaptive integrator (``RK23``, ``RK45``, ``DOP853``, ``Radau``, ``BDF``, ``LSODA``) accepts
a step when the rms over the n state components of err_i / (atol + rtol |y_i|) is ≤ 1, so
Σ (err_i / sc_i)² ≤ n and, for any function R of the state, |∇R · err| ≤ √n ‖∇R ∘ sc‖₂
≤ √n (rtol ‖∇R ∘ |y|‖₂ + atol ‖∇R‖₂) (Cauchy–Schwarz). Per step, in relative and absolute terms,

    e_r = √n · rtol,     e_a = √n · atol           (n = nq + nv + 1, the index-1 state).

A fixed-step method of local order q (``RK4``: q = 5; ``generalized-alpha``, ``HHT``: q = 3,
their numerical dissipation per step is ∝ (ωh)⁴, inside the bound) with mean step h
= span / steps has

    e_r = (h · ω_m)^q,   e_a = atol                  (atol: the projection / Newton tolerance),

where ω_m (1/s) is the motion's rate, taken from the frames: the largest of
max_t ‖a_c‖_M / max_t ‖v_c‖_M (com accelerations and velocities, kinetic-energy metric) and
max_t |ω| — the frequency of the motion (ω for a pendulum swinging at ω, 1/T for a body falling
from rest for T). Singular-configuration crossings (index-3 steps inside an adaptive run) count
as steps of the run. With compliant contacts ω_m is taken over the frames outside them, and the
steps inside a contact are bounded at the contact's own rate (below, "Compliant contacts").

Energy balance
--------------
The drift R(t) = E(t) − E(t0) − W_nc(t) (E = T + V; W_nc the work of dampers, applied
forces/torques and drivers, integrated in the state) is a first integral of the extended
state [y, W]: the exact flow keeps it, so after N steps it is exactly the sum of the N
steps' defects |∇R · err|, each bounded as above. Per unit of e_r the defect is
G_rel = ‖∇R ∘ |y|‖₂, whose components are m v_c,i² and (J ω)_i ω_i (kinetic energy),
m g_i r_i and 2 m |g| |c| (gravity through the positions and the orientation of an offset
centre of mass c), 2 |V_springs| (about quadratic in the positions) and |W|; per unit of e_a
it is G_abs = ‖∇R‖₂ with components m v_c,i, (J ω)_i, m g_i, 2 m |g| |c| and 1 (for W; the
spring forces' share is left out, it matters only for springs shorter than atol/rtol).
Both are taken at every frame and their maxima used. A formulation whose constraints hold only
approximately (Baumgarte, penalty, augmented Lagrangian: their error does not vanish with the
tolerance) lets the reactions work through the velocity violation, |P_c| ≤ |λ| ‖Φ̇‖:
W_c = ∫ Σ(|F| + |T| + |effort|) ‖Φ̇‖ dt over the frames (trapezoidal), from the reported
reactions and efforts. (The formulations that hold the joints to the tolerance — projection,
partitioning, index3 — get no such share: near a singular configuration their minimum-norm
reactions are large and meaningless, and their violations are inside the step bound.)
Allowance, with S_rel = max_t (2T + |V| + |W|) (J) for the round-off share:

    |R(t)| ≤ N (e_r G_rel + e_a G_abs) + W_c + D_on + 10³ ε_mach S_rel

(D_on: the compliant contacts' onsets, below; for a fixed-step method N e_r is the sum of the
steps' (h ω)^q, each at the rate of the motion it steps over.)

(Without the parts' mass data the 1-norm bounds G_rel ≤ S_rel, G_abs ≤ 1 + |V| + |W| are used.)

Constraint violations
---------------------
‖Φ‖ (``violation.position``) and ‖Jv v + Φt‖ (``violation.velocity``) over nc equations,
with L = max(1 m, largest |r| of a part) and V = largest |v| or |ω| + L ω_m:

    ‖Φ‖ ≤ √nc · N (e_r L + e_a),        ‖Φ̇‖ ≤ √nc · N (e_r V + e_a)

(the projection formulation keeps them near atol; the bounds hold for all of them and catch a
joint that comes apart, not a violation that a formulation allows by design). ‖Φ‖ is taken
from its value at the first frame: CAD joint data is often slightly inconsistent (a planar
linkage whose pins are 2 mm out of plane), and the assembly then leaves redundant equations
violated and unenforced (an ``assembly`` event says so); that residual is the data's, not a
drift of the run (FreeCAD's crank-slider sample starts with ‖Φ‖ = 0.002 m). The penalty
formulation holds the joints only to O(1/α) by design: its multipliers are
λ = α (Φ̈ + 2ξωΦ̇ + ω²Φ), so Φ is the output of a damped second-order filter driven by
λ/α; for ξ = 1 (its default: no overshoot) |Φ| ≤ Λ/(α ω²) and |Φ̇| ≤ 2Λ/(α ω) (the filter's
impulse response t e^(−ωt) integrates to 1/ω², its derivative's modulus to 2/(e ω) < 2/ω),
with Λ = max Σ(|F| + |T| + |effort|) over the frames; these are added to the allowances.

Momentum (free systems only)
----------------------------
Linear momentum P = Σ m v_c and angular momentum about the origin L = Σ (r_c × m v_c + J ω)
are conserved exactly when no part is fixed, gravity is zero, there are no drivers and every
force element is an equal and opposite pair on two parts along their common line or as a
pure torque (``spring-damper``, ``rotational-spring-damper``, ``torque``, ``force``; not
``bushing``, whose two frames may differ): the joints' reactions are internal, the constraints
being invariant under a rigid motion of the whole system. :func:`free_system` says whether a
model is such a system (and why not). Allowances, per the step bound (δL from δr and δv):

    |P − P0| ≤ N (e_r max Σ m |v_c| + e_a Σ m)
    |L − L0| ≤ N (e_r max Σ (2 m |r_c| |v_c| + ‖J‖ |ω|) + e_a max Σ (m (|r_c| + |v_c|) + ‖J‖))

Friction cones (unilateral contacts)
------------------------------------
A sticking contact's friction may not exceed μ_s times its normal force: at every frame
|Σ f_t| − μ_s |Σ λ_n n| ≤ 10⁻⁹ max_t |Σ λ_n n| (the round-off the mode choice allows,
:meth:`.unilateral.UnilateralContacts.cone_values`), per contact with static friction, from its
``normal_force`` and ``friction_force`` series. Beyond it a contact was held sticking outside its cone
because slipping would have reversed at once (rigid contacts with friction need not have a
solution, Painlevé's paradox, and redundant ones share their forces by a rule, not by physics).

Compliant contacts
------------------
A compliant contact (:mod:`.contacts`, F = k δ^n while δ > 0) is a motion of its own, fast and
short: its rate is ω_c = π / t_c, t_c its duration at the impact speed (the run's own estimate,
:func:`.contacts.compliant_step_limit`), far above the rate of the flight between contacts, and
the output frames may miss it altogether. Taken from the frames, ω_m either saw the contact (then
(h ω_m)^q with its ω_c was charged to every step of the run: loose by orders of magnitude) or did
not (then the steps in contact were charged at the flight's rate: a false alarm). Instead, the
contact's gap δ (the depth of its deepest point, < 0 apart) and rate |δ̇| are taken at every frame
from the contact geometry (:class:`CompliantContact`), and in each frame interval the contact may
act where δ > 0 at either end or where the gap could close between them, |δ_a| + |δ_b| ≤ v Δt, with
v the largest |δ̇| at a switch: |δ̇| at an end (and, from an end in contact, the speed its stored
energy k δ^(n+1)/(n + 1) would give) plus the contact-free acceleration (twice the bodies' largest
at the frames out of contact, or at all of them when every frame is in touch) over Δt. Such an
interval has s switches (touch or release: 1 when δ changes sign, 2 when it may close and open
again, else 0), τ = Δt in contact when δ > 0 at both ends, else at most min(Δt, t_c), and t_c at the
speed v. ω_m is then the rate over the frames out of contact (over all of them when every frame is
in touch), and ω_c is taken at least ω_m.

The contacts acting in one interval share its steps: the interval counts the longest τ among them
at the fastest ω_c (the shortest t_c). The steps inside (a fixed-step method: min(Δt/h, τ/h + 1) of
them per interval) are charged (h ω_c)^q, the others (h ω_m)^q. And (h ω_c)^q holds only while h ω_c ≤ 1: a fixed-step
run through compliant contacts also reports ``steps.resolution``, max h ω_c, broken above 1 (the
step does not resolve the contact and no error bound of its order holds).

The step that crosses a switch is not smooth: the force (s − θ)_+^n switches on inside it (θ the
fraction of the step before the touch) and its error is of order n + 1 in h, not q — the error
estimate of an adaptive method does not bound it. With δ ≈ v (t − t0) near the switch, the step
samples the force at its nodes c_i with weights b_i, and the velocity it gives is off by the
quadrature error of that sampling, at most κ F h with F = k (v h)^n the force at the step's end and

    κ = max_θ |Σ b_i (c_i − θ)_+^n − (1 − θ)^(n+1)/(n + 1)|       (:func:`onset_constant`)

(RK4 0.042 at n = 1, 0.014 at n = 1.5; DOP853 0.078 / 0.011; κ = 1 for the multistep and index-3
methods, whose weights are not fixed fractions of a step: |Q − I| ≤ F h there). The energy is then
off by v times that impulse, so the onsets add

    D_on = Σ_switches κ k v^(n+1) h_x^(n+1)

with h_x the step that crosses: dt for a fixed-step method; TOUCH_STEP · t_c where the run limits its
steps by the contacts (:meth:`.contacts.Contacts.step_limit`: half the time to the switch, not below
that floor, so the step that crosses is at most the floor); an adaptive run without that limit (the
compiled Radau loop) gets no such share — its error estimate is
all it has, and an onset it strides over is its error. The contact's elastic energy is about
(n + 1)-homogeneous in δ: its share of G_rel is (n + 1) |V| (2 |V| for a spring).

Step error (fixed step)
-----------------------
A fixed-step method has no error control: its only promise is its local error per step, C (h ω)^q on an
oscillation at ω, C the leading term of its amplification factor's error
(:attr:`.integrators.Integrator.error_constant`: RK4 1/120, the index-3 methods' phase error 1/12). Summed over
its N steps it is the accumulated relative error (the phase, in rad, of the oscillation) — the energy check,
whose allowance grows with the same sum and constant 1, does not see it: a stiff spring stepped over is a phase,
a damping or an explosion. ``steps.error`` is that sum,

    E_h = C ((N − N_c) (h ω)^q + Σ_contacts (h ω_c)^q),     broken above :data:`STEP_ERROR_ALLOWED` (0.1),

with the steps inside compliant contacts (N_c) charged at the contacts' rates as above, and ω the fastest motion the
run carries: the largest of ω_m (from the frames) and the fastest linearised mode of the force elements
(:func:`.stiffness.modes`, at up to :data:`MODE_FRAMES` frames out of contact, the first included) whose energy
½ η̇² + ½ ((η̈ + c η̇)/ω)², from the frame's velocities and accelerations (c the mode's damping), reaches
:data:`EXCITED_SHARE` of the run's largest kinetic energy. A stiff mode the motion does not excite (a stiff spring
in a chain moved as a whole) carries less and does not count: the step need not resolve it (an implicit method
steps over it), and charging it would flag right runs. Nor does an overdamped mode (ζ = c/2ω ≥ 1): it does not
oscillate at ω but creeps after the forces at its slow root ≈ k/c and sheds its fast root's transient at once, in the
exact flow and in an implicit method's; where the creep carries the motion, ω_m sees it in the frames, and an
explicit method that cannot step over the fast root blows up, which ω_m and the energy see (A05's spring-dampers:
ω = 408 1/s, ζ ≈ 16; generalized-α at 10 ms stays within 7e-4 m of DOP853 at rtol 1e-10, 1 m rods). With the
constant the sum is the error itself, not a bound loose by the constant: the van sample at RK4 1 ms over 5 s
carries a 201 1/s suspension mode (E_h = 0.014; 1.63 without C, a false alarm: its positions are within 2.8e-6 m of
DOP853 at rtol 1e-10).

Step count
----------
An adaptive method of error exponent q (``DOP853`` 8, ``RK45`` 5, ``Radau`` 4, ``RK23`` 3,
``BDF``/``LSODA`` 2, the lowest order they use) on a motion of rate ω_m needs about
span · ω_m · tol^(−1/q) steps for accuracy (tol = min(rtol, atol)); an explicit one also
needs the stability steps of :func:`.stiffness.stiffness_estimate` on a stiff model.
The compliant contacts add their need in each interval they may act in (its τ, ω_c and t_c, as
above): τ ω_c tol^(−1/q) for accuracy at their rate (≈ π tol^(−1/q) per impact, whatever the
stiffness) and, where the run limits its steps by the contacts, the steps that limit imposes:
τ · STEPS_PER_CONTACT / t_c inside and, per switch, the halvings that home in on it,
log₂(span / (TOUCH_STEP t_c)) + 1 (there the limit, not the motion, sets the steps: a glancing
impact at k = 1e9 between two frames of a free flight, a chain's rollers seated on their teeth).
A fixed-step method needs span / dt (plus one per output frame). The steps collapsed when
the run took more than :data:`STEP_FACTOR` (100: two orders of magnitude over an
order-of-magnitude estimate) times that plus the singular-configuration crossings' steps:
then the answer, even if it keeps its energy, cost what a singular passage, a discontinuity
or unresolved stiffness made it cost, and the run says so.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

import numpy as np

from ..motion import Event
from .integrators import REGISTRY, names
from .mass import cross, rotation

__all__ = ["Accuracy", "Bodies", "CompliantContact", "Invariant", "InvariantReport", "check_motion", "free_system",
           "onset_constant", "ORDERS", "FIXED_STEP", "EXPLICIT", "STEP_FACTOR", "EXCITED_SHARE", "MODE_FRAMES",
           "STEP_ERROR_ALLOWED"]

#: error exponent q of each integrator: the local error scales as h^q (see the module docstring)
ORDERS = {n: i.error_order for n, i in REGISTRY.items()}
#: the fixed-step methods' local error constants C (``steps.error``; :attr:`.integrators.Integrator.error_constant`)
ERROR_CONSTANTS = {n: i.error_constant for n, i in REGISTRY.items()}
#: integrators with a fixed step (no error control: the step's truncation error bounds a step)
FIXED_STEP = names(fixed_step=True)
#: explicit integrators (their step is also bounded by stability on stiff models)
EXPLICIT = names(explicit=True)
#: the steps collapsed when a run takes more than this many times the steps it needs
STEP_FACTOR = 100.0
#: ``steps.error``: the accumulated relative error (phase, rad) a fixed-step run may reach (10 % of its fastest motion)
STEP_ERROR_ALLOWED = 0.1
#: a linearised mode is part of the motion when its energy reaches this share of the largest kinetic energy
EXCITED_SHARE = 1e-6
#: frames (evenly spread, the first included) at which the modes are computed for ``steps.error``
MODE_FRAMES = 64
#: force element types that act as equal and opposite pairs conserving both momenta
INTERNAL_FORCES = ("spring-damper", "rotational-spring-damper", "torque", "force")

_EPS = np.finfo(float).eps


@dataclass(frozen=True)
class Accuracy:
    """What a run's integration promised, per step.

    Attributes
    ----------
    integrator : name of the integrator that ran (a key of :data:`ORDERS`)
    rtol, atol : the tolerances the integrator ran with (atol also: projection / Newton
        tolerance of the positions, m)
    nsteps : accepted steps, singular-configuration crossings included
    nstate : state size n (nq + nv + 1)
    ncon : number of constraint equations nc
    dt : s, the nominal step of a fixed-step method (None: min(output interval, 1 ms))
    crossing_steps : steps spent crossing singular configurations (part of nsteps)
    restarts : integrators made again at the switches of unilateral contacts (:mod:`.hybrid`); each may take
        log₂(1/TIME_TOL) + 1 steps to regain its step: from one as small as the events' resolution (TIME_TOL of
        the span), doubling at least (BDF also climbs back from order 1); added to the steps allowed
    contact_limit : True when the steps were limited so that no compliant contact is stepped over
        (:meth:`.contacts.Contacts.step_limit`: DOP853 and scipy's explicit and implicit one-step
        methods, BDF and LSODA; not the compiled Radau loop)
    """

    integrator: str
    rtol: float
    atol: float
    nsteps: int
    nstate: int
    ncon: int = 0
    dt: Optional[float] = None
    crossing_steps: int = 0
    contact_limit: bool = False
    restarts: int = 0

    @property
    def fixed_step(self):
        """True for a fixed-step integrator (RK4, generalised-α, HHT)."""
        return self.integrator in FIXED_STEP

    @property
    def order(self):
        """The integrator's order in the step-size error estimate (``ORDERS``; 2 when not listed)."""
        return ORDERS.get(self.integrator, 2)


@dataclass(frozen=True)
class Bodies:
    """Mass properties of the moving parts, by name (parts of the Motion).

    Attributes
    ----------
    names : part names, length k
    mass : ndarray (k,), kg
    com : ndarray (k, 3), m, centre of mass in the part frame
    inertia : ndarray (k, 3, 3), kg m², about the com, part axes
    """

    names: Tuple[str, ...]
    mass: np.ndarray
    com: np.ndarray
    inertia: np.ndarray

    @classmethod
    def of(cls, dyn):
        """The moving bodies of a :class:`~.equations.Dynamics`."""
        mp = dyn.mass
        return cls(tuple(dyn.model.body_names[: mp.nmov]), np.asarray(mp.body_mass), np.asarray(mp.body_com),
                   np.asarray(mp.body_inertia))


@dataclass(frozen=True)
class CompliantContact:
    """A compliant contact as the checks see it: its law and its gap at the output frames.

    Attributes
    ----------
    name : the contact's name
    mass : kg, its effective mass m (the smaller moving mass of the pair, :mod:`.contacts`)
    stiffness : k, N/m^n (the largest over its points)
    exponent : n of the force law k δ^n
    depth : ndarray (nt,), m, the penetration δ of its deepest point at each frame (< 0: the gap)
    speed : ndarray (nt,), m/s, the largest |δ̇| over its points at each frame
    """

    name: str
    mass: float
    stiffness: float
    exponent: float
    depth: np.ndarray
    speed: np.ndarray


@dataclass(frozen=True)
class Invariant:
    """One check: the largest drift over the frames against what the run's accuracy allows.

    Attributes
    ----------
    name : ``energy``, ``violation.position``, ``violation.velocity``, ``momentum.linear``,
        ``momentum.angular``, ``contacts.friction``, ``steps``, ``steps.resolution``, ``steps.error`` or
        ``motion.error`` (the global error, :mod:`.global_error`)
    description : what is compared, in words
    unit : unit of ``max_drift`` and ``allowed``
    max_drift : the largest |drift| (for ``steps``: the steps taken)
    time : s, the frame where it is largest
    allowed : the allowance (module docstring)
    first_time : s, the first frame beyond the allowance, or None
    scale : the quantity's own scale (e.g. the energy scale S_rel), for relative figures
    """

    name: str
    description: str
    unit: str
    max_drift: float
    time: float
    allowed: float
    first_time: Optional[float] = None
    scale: float = 0.0

    @property
    def broken(self):
        """True when the check went beyond its allowance at some frame."""
        return self.first_time is not None

    def to_dict(self):
        """The check as plain data (JSON): name, unit, drift, allowance, first time broken (s)."""
        return dict(name=self.name, description=self.description, unit=self.unit, max_drift=self.max_drift,
                    time=self.time, allowed=self.allowed, broken=self.broken, first_time=self.first_time,
                    scale=self.scale)

    def message(self):
        """One sentence: the break, its size and time, and what to do."""
        what = _ADVICE.get(self.name, "")
        if self.name == "steps":
            return (f"{self.description}: {self.max_drift:.3g} steps, more than the {self.allowed:.3g} the motion and "
                    f"the tolerance warrant — the step size collapsed (a singular configuration, a discontinuity in "
                    f"the forces or an unresolved stiff mode); {what}")
        if self.name == "steps.resolution":
            return (f"{self.description}: h ω_c = {self.max_drift:.3g} at t = {self.time:.6g} s, above 1 — the step "
                    f"does not resolve the contact, its error bound (h ω)^q does not hold and the energy check "
                    f"cannot judge it; {what}")
        if self.name == "steps.error":
            return (f"{self.description}: C N (h ω)^q = {self.max_drift:.3g}, above {self.allowed:.3g} — the step "
                    f"does not resolve the motion: its fastest part is off by about that share of its amplitude "
                    f"(in phase, damping or growth), which the energy check cannot judge; {what}")
        if self.name == "motion.error":
            return (f"{self.description}: {self.max_drift:.3g} m at t = {self.time:.6g} s, beyond the "
                    f"{self.allowed:.3g} m the tolerance warrants from t = {self.first_time:.6g} s — the motion "
                    f"amplifies the steps' errors, or the step does not resolve it; {what}")
        label = _SCALES.get(self.name, "scale")
        rel = (f" ({100 * self.max_drift / self.scale:.2g}% of the run's {label} {self.scale:.3g} {self.unit})"
               if self.scale > 0 and np.isfinite(self.max_drift) else "")
        return (f"{self.description} drifts by {self.max_drift:.3g} {self.unit}{rel} at t = {self.time:.6g} s, beyond "
                f"the {self.allowed:.3g} {self.unit} the tolerance warrants from t = {self.first_time:.6g} s; {what}")

    def line(self):
        """A short line for a summary: name, drift, allowance."""
        flag = "BROKEN" if self.broken else "ok"
        if self.name == "steps.resolution":
            return f"{self.name}: h ω_c {self.max_drift:.3g} (allowed {self.allowed:.3g}) {flag}"
        if self.name == "steps":
            return f"{self.name}: {self.max_drift:.0f} (collapse beyond {self.allowed:.3g}) {flag}"
        if self.name == "steps.error":
            return f"{self.name}: C N (h ω)^q {self.max_drift:.3g} (allowed {self.allowed:.3g}) {flag}"
        return f"{self.name}: {self.max_drift:.3g} {self.unit} (allowed {self.allowed:.3g}) {flag}"


_SCALES = {"energy": "energy scale max(2T + |V| + |W|)", "momentum.linear": "momentum scale max Σ m |v_c|",
           "momentum.angular": "angular momentum scale"}

_ADVICE = {
    "energy": "the motion gained or lost energy the forces do not account for — the answer is suspect: tighten "
              "rtol/atol or try another formulation or integrator (`cadmotion formulations`)",
    "violation.position": "the joints come apart — tighten atol, or use the projection formulation",
    "violation.velocity": "the velocities leave the joints — tighten atol, or use the projection formulation",
    "momentum.linear": "a free system's linear momentum changed — tighten rtol/atol",
    "momentum.angular": "a free system's angular momentum changed — tighten rtol/atol",
    "contacts.friction": "a contact was held sticking outside its friction cone where slipping would reverse at "
                         "once (rigid contacts with friction, redundant or coupled: Painlevé's paradox) — the "
                         "forces there are a choice, not Coulomb's law: use method = \"compliant\" for those "
                         "contacts, or change the friction",
    "steps.resolution": "take a step dt below a third of the contact's duration (a tenth resolves it to about 1e-3 of "
                        "its energy), or an error-controlled integrator, which limits its steps by the contacts",
    "steps.error": "take a smaller step dt (the description says which), or a variable-step method (DOP853; Radau "
                   "for a stiff model), whose error control resolves the motion",
    "motion.error": "the frames from that time on are not the equations' motion to the tolerance: tighten rtol/atol "
                    "(or the step dt) until the estimate falls within it; a chaotic motion (a tumbling arm, a "
                    "double pendulum) is determined for a while only, however tight: trust its statistics, not its "
                    "positions, beyond that time",
    "steps": "try an implicit integrator (Radau, BDF) or --formulation index3 for a stiff model, or look for a "
             "singular configuration near the time the run slowed down",
}


@dataclass
class InvariantReport:
    """The checks of one run (:func:`check_motion`).

    Attributes
    ----------
    checks : list of :class:`Invariant`
    skipped : list of str — what was not checked and why
    rate : 1/s, the motion's rate ω_m used by the allowances
    """

    checks: List[Invariant] = field(default_factory=list)
    skipped: List[str] = field(default_factory=list)
    rate: float = 0.0

    @property
    def broken(self):
        """The checks beyond their allowance."""
        return [c for c in self.checks if c.broken]

    @property
    def ok(self):
        """True when no check broke."""
        return not self.broken

    def events(self):
        """One Event of kind ``invariant`` per broken check (time: the first frame beyond it)."""
        return [Event("invariant", float(c.first_time), c.message(), (c.name,)) for c in self.broken]

    def summary(self):
        """One line: what was checked, and what broke."""
        names = ", ".join(c.name for c in self.checks) or "nothing"
        if not self.broken:
            return f"invariants kept: {names}"
        return f"INVARIANTS BROKEN: {', '.join(c.name for c in self.broken)} (checked {names})"

    def to_dict(self):
        """The report as plain data (JSON): ok, every check, the skipped ones, the sample rate."""
        return dict(ok=self.ok, checks=[c.to_dict() for c in self.checks], skipped=list(self.skipped),
                    rate=self.rate)


# ------------------------------------------------------------------------------ the checks
def free_system(spec):
    """(True, "") when both momenta of the mechanism are conserved exactly, else (False, why).

    Free: no fixed part, zero gravity, no drivers, every force element of a type in
    :data:`INTERNAL_FORCES` (see the module docstring).
    """
    fixed = [p.name for p in spec.parts if p.fixed]
    if fixed:
        return False, f"part {fixed[0]!r} is fixed"
    if np.any(np.asarray(spec.gravity, float) != 0.0):
        return False, "gravity acts"
    if spec.drivers:
        return False, f"driver {spec.drivers[0].name!r} moves it"
    for f in spec.forces:
        if f.type not in INTERNAL_FORCES:
            return False, f"force element {f.name!r} ({f.type}) need not be an equal and opposite pair"
    return True, ""


def _kinematics(motion, bodies, chunk=256):
    """Com positions, velocities, accelerations (nt, k, 3), ω, α and J ω, J α (world) of the
    bodies; computed ``chunk`` frames at a time (no (nt, k, 3, 3) array is kept)."""
    idx = [motion.part_index(n) for n in bodies.names]
    nt, k = motion.nt, len(idx)
    w = motion.angular_velocity[:, idx]
    al = motion.angular_acceleration[:, idx]
    rc, vc, ac, Jw, Ja = (np.empty((nt, k, 3)) for _ in range(5))
    for a in range(0, nt, chunk):
        sl = slice(a, min(a + chunk, nt))
        A = rotation(motion.quaternion[sl][:, idx])  # (n, k, 3, 3)
        rho = (A @ bodies.com[None, :, :, None])[..., 0]
        ws, als = w[sl], al[sl]
        rc[sl] = motion.position[sl][:, idx] + rho
        vc[sl] = motion.velocity[sl][:, idx] + cross(ws, rho)
        ac[sl] = motion.acceleration[sl][:, idx] + cross(als, rho) + cross(ws, cross(ws, rho))
        for out, vec in ((Jw, ws), (Ja, als)):  # J x = A J' Aᵀ x
            body = np.swapaxes(A, -1, -2) @ vec[..., None]
            out[sl] = (A @ (bodies.inertia[None] @ body))[..., 0]
    return rc, vc, ac, w, al, Jw, Ja


def _rate(motion, bodies, kin, frames=None):
    """ω_m (1/s): the motion's rate (module docstring), over the frames selected by the boolean
    mask ``frames`` (None: all; none selected: 0)."""
    if kin is not None:
        rc, vc, ac, w, al, Jw, Ja = kin
        m = bodies.mass[None, :]
        v2 = np.sum(m * np.sum(vc * vc, -1) + np.sum(w * Jw, -1), -1)
        a2 = np.sum(m * np.sum(ac * ac, -1) + np.sum(al * Ja, -1), -1)
        wn = np.linalg.norm(w, axis=-1) if w.size else np.zeros((motion.nt, 0))
    else:
        v = np.concatenate([motion.velocity, motion.angular_velocity], -1)
        a = np.concatenate([motion.acceleration, motion.angular_acceleration], -1)
        v2 = np.sum(v * v, axis=(-1, -2))
        a2 = np.sum(a * a, axis=(-1, -2))
        wn = np.linalg.norm(motion.angular_velocity, axis=-1)
    if frames is not None:
        v2, a2, wn = v2[frames], a2[frames], wn[frames]
    wmax = float(np.max(wn, initial=0.0))
    vmax, amax = math.sqrt(float(np.max(v2, initial=0.0))), math.sqrt(float(np.max(a2, initial=0.0)))
    rate = amax / vmax if vmax > 0 else 0.0
    return max(rate, wmax) if np.isfinite(rate) else wmax


#: (b, c) of the integrators whose step samples the forces at fixed fractions c of it with weights b
#: (the explicit Runge–Kutta tableaux; Radau IIA's collocation nodes); the others (multistep BDF and
#: LSODA, generalised-α, HHT) take κ = 1 (module docstring, "Compliant contacts")
_RADAU_C = np.array([(4 - math.sqrt(6)) / 10, (4 + math.sqrt(6)) / 10, 1.0])
_TABLEAUX = {"RK4": (np.array([1, 2, 2, 1]) / 6.0, np.array([0.0, 0.5, 0.5, 1.0])),
             "Radau": (np.array([(16 - math.sqrt(6)) / 36, (16 + math.sqrt(6)) / 36, 1 / 9]), _RADAU_C)}


@functools.lru_cache(maxsize=64)
def onset_constant(integrator, n):
    """κ: the largest error, per unit F h, of the integrator's step over a force F (s − θ)_+^n / (1 − θ)^n
    switched on at the fraction θ of a step of length 1 (F: the force at the step's end), over θ in [0, 1]."""
    if integrator in ("RK23", "RK45", "DOP853"):
        from scipy.integrate._ivp import rk

        cls = getattr(rk, integrator)
        b, c = np.asarray(cls.B, float), np.asarray(cls.C, float)[: len(cls.B)]
    elif integrator in _TABLEAUX:
        b, c = _TABLEAUX[integrator]
    else:
        return 1.0
    theta = np.linspace(0.0, 1.0, 2001)[:, None]
    sampled = (np.clip(c[None, :] - theta, 0.0, None) ** n) @ b
    exact = (1.0 - theta[:, 0]) ** (n + 1) / (n + 1)
    return float(np.max(np.abs(sampled - exact)))


@dataclass(frozen=True)
class _Touches:
    """Where the compliant contacts may act, per frame interval (module docstring, "Compliant contacts")."""

    need: float = 0.0         # steps the contacts need (accuracy inside them, and their step limit's)
    onset: float = 0.0        # J, the allowance of the steps that cross a switch
    smooth: float = 0.0       # Σ steps in contact · (h ω_c)^q (fixed step)
    contact_steps: float = 0.0  # steps in contact (fixed step)
    resolution: float = 0.0   # the largest h ω_c (fixed step)
    resolution_time: float = 0.0


def _touches(t, contacts, acc, accel, tol, rate_free=0.0):
    """The contacts' shares of the energy allowance and of the steps' need (module docstring). The steps
    of a frame interval are shared by the contacts acting in it: each interval counts its longest time in
    touch τ at its fastest ω_c (its shortest t_c); the switches' onsets and halvings add up."""
    from .contacts import STEPS_PER_CONTACT, TOUCH_STEP, compliant_step_limit

    dt = np.diff(t)
    span = float(t[-1] - t[0])
    h = span / max(acc.nsteps, 1)
    tau_k, omega_k, tc_k = np.zeros(len(dt)), np.zeros(len(dt)), np.full(len(dt), np.inf)
    halvings = onset = 0.0
    for c in contacts:
        d = np.nan_to_num(np.asarray(c.depth, float), nan=0.0)
        sp = np.abs(np.nan_to_num(np.asarray(c.speed, float), nan=0.0))
        a, b = d[:-1], d[1:]
        # |δ̇| at a switch between the frames: from a frame in contact by the energy k δ^(n+1)/(n + 1) stored
        # there, plus the contact-free acceleration over the interval
        stored = 2.0 * c.stiffness * np.maximum(d, 0.0) ** (c.exponent + 1) / ((c.exponent + 1) * c.mass)
        sw = np.sqrt(sp * sp + stored)
        v = np.maximum(sw[:-1], sw[1:]) + accel * dt
        closable = np.abs(a) + np.abs(b) <= v * dt
        switches = np.where((a > 0) != (b > 0), 1, np.where(closable, 2, 0))
        kappa = onset_constant(acc.integrator, c.exponent)
        m, kk, n = c.mass, c.stiffness, c.exponent
        for k in np.flatnonzero((a > 0) | (b > 0) | closable):
            t_c = STEPS_PER_CONTACT * compliant_step_limit(np.ones(1), np.zeros(1), np.array([v[k]]), m, kk, n)
            tau_k[k] = max(tau_k[k], dt[k] if (a[k] > 0 and b[k] > 0) else min(dt[k], t_c))
            omega_k[k] = max(omega_k[k], math.pi / t_c, rate_free)
            tc_k[k] = min(tc_k[k], t_c)
            h_x = h if acc.fixed_step else (TOUCH_STEP * t_c if acc.contact_limit else None)
            if h_x is not None:  # the step that crosses the switch
                onset += switches[k] * kappa * kk * v[k] ** (n + 1) * h_x ** (n + 1)
                if not acc.fixed_step:
                    halvings += switches[k] * (math.log2(max(span, t_c) / h_x) + 1.0)
    act = tau_k > 0
    if acc.fixed_step:
        inside = np.minimum(dt[act] / h, tau_k[act] / h + 1.0)
        hw = h * omega_k[act]
        worst = int(np.argmax(hw)) if hw.size else 0
        return _Touches(0.0, onset, float(np.sum(inside * hw ** acc.order)), float(np.sum(inside)),
                        float(hw[worst]) if hw.size else 0.0, float(t[1:][act][worst]) if hw.size else float(t[0]))
    need = float(np.sum(tau_k[act] * omega_k[act])) * tol ** (-1.0 / acc.order) + halvings
    if acc.contact_limit:
        need += float(np.sum(tau_k[act] * STEPS_PER_CONTACT / tc_k[act]))
    return _Touches(need, onset)


def _energy_gradient(motion, bodies, kin, g, V, W, power=2.0):
    """(G_rel, G_abs): max over the frames of ‖∇R ∘ |y|‖₂ (J) and ‖∇R‖₂ (J per state unit),
    R = E − W_nc, over the state's components (module docstring)."""
    rc, vc, ac, w, al, Jw, Ja = kin
    m = bodies.mass[None, :, None]
    r = motion.position[:, [motion.part_index(n) for n in bodies.names]]
    # ∂V/∂p of gravity about the frame origin: |2 m g·(∂(A c)/∂p)| ≤ 2 m |g| |c| per body
    quat = 2.0 * bodies.mass * float(np.linalg.norm(g)) * np.linalg.norm(bodies.com, axis=-1)
    V_grav = -np.einsum("k,tki,i->t", bodies.mass, rc, g)
    # springs: about quadratic, 2|V| per unit relative change; compliant contacts k δ^(n+1)/(n + 1): (n + 1)|V|
    V_rest = np.abs(np.asarray(V, float) - V_grav)
    rel = (np.sum((m * vc * vc) ** 2 + (Jw * w) ** 2 + (m * g * r) ** 2, axis=(1, 2)) + float(np.sum(quat ** 2))
           + np.asarray(W, float) ** 2 + (power * V_rest) ** 2)
    ab = np.sum((m * vc) ** 2 + Jw ** 2 + (m * g) ** 2, axis=(1, 2)) + float(np.sum(quat ** 2)) + 1.0
    return math.sqrt(float(np.nanmax(rel))), math.sqrt(float(np.nanmax(ab)))


def _per_step(acc, span, rate):
    """(e_r, e_a): what one step may change, relative and absolute (module docstring)."""
    if acc.fixed_step:
        h = span / max(acc.nsteps, 1)
        return (h * rate) ** acc.order, float(acc.atol)
    root = math.sqrt(max(acc.nstate, 1))
    return root * float(np.max(acc.rtol)), root * float(np.max(acc.atol))


def _drift_check(name, description, unit, times, drift, allowed, scale):
    drift = np.abs(np.asarray(drift, float))
    if not drift.size:
        return None
    if not np.all(np.isfinite(drift)):
        bad = int(np.argmax(~np.isfinite(drift)))
        return Invariant(name, description, unit, float("inf"), float(times[bad]), float(allowed), float(times[bad]),
                         float(scale))
    k = int(np.argmax(drift))
    over = np.flatnonzero(drift > allowed)
    first = float(times[over[0]]) if over.size else None
    return Invariant(name, description, unit, float(drift[k]), float(times[k]), float(allowed), first, float(scale))


def check_motion(motion, accuracy, *, bodies=None, gravity=(0.0, 0.0, 0.0), free=False, why_not_free="",
                 approximate_constraints=False, penalty=None, stability_steps=None, cones=(), contacts=(),
                 modes=None):
    """Check a dynamic Motion's invariants against what ``accuracy`` warrants.

    Parameters
    ----------
    motion : :class:`~cadmotion.kernel.motion.Motion` with the extra series ``energy.*``,
        ``work.nonconservative``, ``violation.*`` of :mod:`.outputs` (a missing one is skipped)
    accuracy : :class:`Accuracy` of the run
    bodies : :class:`Bodies` of the moving parts (for momentum and the energy's absolute
        scale); None: the energy's absolute share and momentum are left out
    gravity : (3,) m/s², the model's gravity
    free : True when momentum is conserved (:func:`free_system`); ``why_not_free`` says why not
    approximate_constraints : True for a formulation whose constraints hold only approximately
        (Baumgarte, penalty, augmented Lagrangian): the reactions' work through the velocity
        violation is allowed for
    penalty : (α kg, ω 1/s, ξ) of the penalty formulation (its violations O(Λ/α) are allowed), or None
    stability_steps : callable () -> float, the steps an explicit method needs for stability
        (:func:`.stiffness.stiffness_estimate`); called only when the step count is suspect
    cones : (contact name, μ_s) of the unilateral contacts with static friction (the friction cones' check)
    contacts : :class:`CompliantContact` of each compliant contact (their frequency, onsets and step limit
        in the energy allowance and the steps' need)
    modes : callable (k) -> (ω (m,) 1/s, c (m,) 1/s, P (m, 6 k_b)) or None: the linearised modes at frame k, their
        damping and the map from the bodies' [v_c, ω] to the modes' rates (:func:`.stiffness.modes`), for
        ``steps.error`` of a fixed-step run; None (or a None result at a frame): the motion's rate ω_m only

    Returns
    -------
    InvariantReport
    """
    report = InvariantReport()
    nt = motion.nt
    if nt < 2:
        report.skipped.append("everything: fewer than two frames")
        return report
    t = np.asarray(motion.time, float)
    span = float(t[-1] - t[0])
    kin = _kinematics(motion, bodies) if bodies is not None and len(bodies.names) else None
    rate = _rate(motion, bodies, kin)
    report.rate = rate
    e_r, e_a = _per_step(accuracy, span, rate)
    N = max(int(accuracy.nsteps), 1)
    ex = motion.extra
    # compliant contacts: the motion's rate outside them, their own inside (module docstring)
    touches, rate_free, power = _Touches(), rate, 2.0
    if contacts:
        touching = np.zeros(nt, bool)
        for c in contacts:
            touching |= np.nan_to_num(np.asarray(c.depth, float), nan=0.0) > 0
        # (every frame in touch: the motion out of the contacts cannot be told from theirs, all of it is kept)
        apart = ~touching if not np.all(touching) else np.ones(nt, bool)
        rate_free = _rate(motion, bodies, kin, apart)
        accel = (kin[2] if kin is not None else motion.acceleration)[apart]  # the pairs' approach
        accel = 2.0 * float(np.max(np.linalg.norm(np.nan_to_num(accel), axis=-1), initial=0.0))
        tol = max(min(float(np.min(accuracy.rtol)), float(np.min(accuracy.atol))), 100 * _EPS)
        touches = _touches(t, contacts, accuracy, accel, tol, rate_free)
        power = max(2.0, max(c.exponent for c in contacts) + 1.0)
    if accuracy.fixed_step:  # the steps outside the contacts at the motion's rate, those inside at theirs
        e_free = _per_step(accuracy, span, rate_free)[0]
        E_r = max(N - touches.contact_steps, 0.0) * e_free + touches.smooth
    else:
        E_r = N * e_r

    # reactions and efforts: the constraint forces that may work through Φ̇
    react = np.zeros(nt)
    for key, values in ex.items():
        if key.rsplit(".", 1)[-1] in ("fx", "fy", "fz", "tx", "ty", "tz", "effort"):
            react = react + np.abs(np.nan_to_num(values, nan=0.0, posinf=0.0, neginf=0.0))
    vviol = ex.get("violation.velocity")

    # ---- energy balance
    if all(k in ex for k in ("energy.total", "energy.kinetic", "energy.potential", "work.nonconservative")):
        E, T, V, W = (np.asarray(ex[k], float) for k in ("energy.total", "energy.kinetic", "energy.potential",
                                                         "work.nonconservative"))
        S_rel = float(np.nanmax(2 * T + np.abs(V) + np.abs(W)))
        if kin is not None:
            G_rel, G_abs = _energy_gradient(motion, bodies, kin, np.asarray(gravity, float), V, W, power)
        else:  # no mass data: the 1-norm bounds of the 2-norms
            G_rel, G_abs = power / 2.0 * S_rel, 1.0 + float(np.nanmax(np.abs(V) + np.abs(W)))
        W_c = 0.0
        if approximate_constraints and vviol is not None:
            p_c = react * np.nan_to_num(np.asarray(vviol, float), nan=0.0)
            W_c = float(np.sum(0.5 * (p_c[1:] + p_c[:-1]) * np.diff(t)))
        allowed = E_r * G_rel + N * e_a * G_abs + W_c + touches.onset + 1e3 * _EPS * S_rel
        c = _drift_check("energy", "the energy balance E − E0 − W_nc", "J", t, E - E[0] - W, allowed, S_rel)
        if c is not None:
            report.checks.append(c)
    else:
        report.skipped.append("energy: the motion has no energy series")

    # ---- constraint violations
    root_nc = math.sqrt(max(accuracy.ncon, 1))
    L = max(1.0, float(np.max(np.abs(motion.position))) if motion.position.size else 1.0)
    vmax = max(float(np.max(np.abs(motion.velocity), initial=0.0)), float(np.max(np.abs(motion.angular_velocity),
                                                                              initial=0.0)))
    slack_q = slack_v = 0.0
    if penalty is not None and penalty[0] > 0 and penalty[1] > 0:
        alpha, omega, xi = (float(x) for x in penalty)
        lam = float(np.max(react))
        slack_q = lam / (alpha * omega ** 2) * max(1.0, 1.0 / xi ** 2)
        slack_v = 2.0 * lam / (alpha * omega) * max(1.0, 1.0 / xi)
    for key, scale, slack, what in (("violation.position", L, slack_q, "the joints' position residual ‖Φ‖"),
                                    ("violation.velocity", vmax + L * rate, slack_v,
                                     "the joints' velocity residual ‖Jv v + Φt‖")):
        if key not in ex:
            continue
        allowed = root_nc * N * (e_r * scale + e_a) + slack + 1e3 * _EPS * scale
        series = np.asarray(ex[key], float)
        if key == "violation.position" and series.size:  # from the joint data's own residual at the start
            series = np.maximum(series - series[0], 0.0)
        c = _drift_check(key, what, "m" if key.endswith("position") else "m/s", t, series, allowed, 0.0)
        if c is not None:
            report.checks.append(c)

    # ---- momentum of a free system
    if free and kin is not None:
        rc, vc, ac, w, al, Jw, Ja = kin
        m = bodies.mass
        P = np.einsum("k,tki->ti", m, vc)
        Lm = np.sum(m[None, :, None] * cross(rc, vc) + Jw, axis=1)
        Jn = np.linalg.norm(bodies.inertia, ord=2, axis=(-2, -1))
        speed, reach, wn = np.linalg.norm(vc, axis=-1), np.linalg.norm(rc, axis=-1), np.linalg.norm(w, axis=-1)
        P_s = float(np.max(np.sum(m * speed, -1)))
        allowed = N * (e_r * P_s + e_a * float(np.sum(m))) + 1e3 * _EPS * max(P_s, 1.0)
        c = _drift_check("momentum.linear", "the linear momentum", "kg m/s", t, np.linalg.norm(P - P[0], axis=-1),
                         allowed, P_s)
        report.checks.append(c)
        L_s = float(np.max(np.sum(2 * m * reach * speed + Jn * wn, -1)))
        L_a = float(np.max(np.sum(m * (reach + speed) + Jn, -1)))
        allowed = N * (e_r * L_s + e_a * L_a) + 1e3 * _EPS * max(L_s, 1.0)
        c = _drift_check("momentum.angular", "the angular momentum about the origin", "kg m²/s", t,
                         np.linalg.norm(Lm - Lm[0], axis=-1), allowed, L_s)
        report.checks.append(c)
    elif not free:
        report.skipped.append(f"momentum: not conserved ({why_not_free})" if why_not_free else
                              "momentum: not a free system")

    # ---- friction cones of unilateral contacts
    excess, normals = [], []
    for name, mu_s in cones:
        N, F = ex.get(f"{name}.normal_force"), ex.get(f"{name}.friction_force")
        if N is not None and F is not None:
            N = np.nan_to_num(np.asarray(N, float))
            excess.append(np.maximum(np.nan_to_num(np.asarray(F, float)) - mu_s * N, 0.0))
            normals.append(float(np.max(np.abs(N))))
    if excess:
        report.checks.append(_drift_check("contacts.friction", "the friction beyond the static cones μ_s N", "N", t,
                                          np.max(excess, axis=0), 1e-9 * max(normals), max(normals)))

    # ---- step count
    report.checks.append(_steps_check(accuracy, t, rate_free, stability_steps, touches.need))
    if accuracy.fixed_step and contacts:
        h = span / N
        report.checks.append(Invariant(
            "steps.resolution", f"the step {h:.3g} s of {accuracy.integrator} against the compliant contacts' "
            f"durations (h ω_c, ω_c = π / t_c)", "", touches.resolution, touches.resolution_time, 1.0,
            touches.resolution_time if touches.resolution > 1.0 else None, 1.0))
    if accuracy.fixed_step:
        report.checks.append(_step_error_check(accuracy, t, N, touches, rate_free, kin, bodies, modes,
                                               apart if contacts else np.ones(nt, bool)))
    return report


def _excited_rate(modes, kin, bodies, frames):
    """(ω_e 1/s, t index): the fastest linearised mode whose energy reaches :data:`EXCITED_SHARE` of the largest
    kinetic energy, at up to :data:`MODE_FRAMES` of the selected frames (module docstring, "Step error")."""
    rc, vc, ac, w, al, Jw, Ja = kin
    with np.errstate(all="ignore"):
        T = 0.5 * (np.einsum("k,tki,tki->t", bodies.mass, vc, vc) + np.einsum("tki,tki->t", w, Jw))
    T_max = float(np.max(np.where(np.isfinite(T), T, 0.0), initial=0.0))
    idx = np.flatnonzero(frames)
    if len(idx) > MODE_FRAMES:
        idx = idx[np.unique(np.round(np.linspace(0, len(idx) - 1, MODE_FRAMES)).astype(int))]
    fastest, where = 0.0, 0
    if T_max <= 0.0:
        return fastest, where
    for k in idx:
        vel = np.concatenate([vc[k], w[k]], axis=1).ravel()
        acc = np.concatenate([ac[k], al[k]], axis=1).ravel()
        if not (np.all(np.isfinite(vel)) and np.all(np.isfinite(acc))):
            continue
        out = modes(k)
        if out is None:
            continue
        omega, c, P = out
        rate, accel = P @ vel, P @ acc
        energy = 0.5 * rate ** 2 + 0.5 * ((accel + c * rate) / np.where(omega > 0, omega, np.inf)) ** 2
        oscillates = c < 2.0 * omega  # ζ < 1 (module docstring: an overdamped mode creeps, its ω_m shows it)
        carried = omega[(energy >= EXCITED_SHARE * T_max) & oscillates]
        if carried.size and float(np.max(carried)) > fastest:
            fastest, where = float(np.max(carried)), int(k)
    return fastest, where


def _step_error_check(acc, t, N, touches, rate_free, kin, bodies, modes, frames):
    """``steps.error`` of a fixed-step run: C N (h ω)^q over the steps out of contact at the fastest motion the run
    carries, plus the contacts' share (module docstring, "Step error")."""
    span = float(t[-1] - t[0])
    h = span / N
    rate, what = rate_free, "the motion's rate from the frames"
    if modes is not None and kin is not None:
        excited, k = _excited_rate(modes, kin, bodies, frames)
        if excited > rate:
            rate, what = excited, f"a mode of the force elements carrying ≥ {EXCITED_SHARE:g} of the kinetic " \
                                  f"energy at t = {t[k]:.6g} s"
    C, q, allowed = ERROR_CONSTANTS.get(acc.integrator, 1.0), acc.order, STEP_ERROR_ALLOWED
    bound = C * (max(N - touches.contact_steps, 0.0) * (h * rate) ** q + touches.smooth)
    if not np.isfinite(bound):
        bound = float("inf")
    # C (span / h) (h ω)^q = allowed
    need = (allowed / (C * span * rate ** q)) ** (1.0 / (q - 1)) if rate > 0 and span > 0 else h
    description = (f"the accumulated error of {acc.integrator} (C = {C:.3g}) at h = {h:.3g} s against ω = {rate:.3g} "
                   f"1/s ({what}); dt ≤ {need:.2g} s keeps it below {allowed:g}")
    first = t[0] + span * allowed / bound if bound > allowed else None
    return Invariant("steps.error", description, "", bound, float(t[-1]), allowed,
                     float(first) if first is not None else None, 1.0)


def _restart_steps(acc):
    """Steps the restarts at unilateral switches may take (:attr:`Accuracy.restarts`)."""
    if not acc.restarts:
        return 0.0
    from .hybrid import TIME_TOL

    return acc.restarts * (math.log2(1.0 / TIME_TOL) + 1.0)


def _steps_check(acc, t, rate, stability_steps, contact_need=0.0):
    span = float(t[-1] - t[0])
    if acc.fixed_step:
        gaps = np.diff(t)
        h = acc.dt if acc.dt else min(float(np.max(gaps)), 1e-3)
        need = span / h + len(t)
        how = f"{acc.integrator} at dt = {h:.3g} s"
    else:
        tol = max(min(float(np.min(acc.rtol)), float(np.min(acc.atol))), 100 * _EPS)
        need = max(span * rate * tol ** (-1.0 / acc.order) + contact_need, 1.0)
        how = f"{acc.integrator} at tol {tol:.3g} on a motion of rate {rate:.3g} 1/s"
        if contact_need:
            how += f" and compliant contacts that need {contact_need:.3g} steps"
    def allowance(need):  # the crossings' and restarts' steps come on top of what the motion needs
        return STEP_FACTOR * (need + acc.crossing_steps) + acc.crossing_steps + _restart_steps(acc)

    allowed = allowance(need)
    if acc.nsteps > allowed and not acc.fixed_step and acc.integrator in EXPLICIT and stability_steps is not None:
        stab = float(stability_steps() or 0.0)
        if stab > need:
            need = stab
            how += f" (stiff: {stab:.3g} steps for stability)"
            allowed = allowance(need)
    first = float(t[-1]) if acc.nsteps > allowed else None
    return Invariant("steps", f"the step count of {how}", "steps", float(acc.nsteps), float(t[-1]), float(allowed),
                     first, float(need))
