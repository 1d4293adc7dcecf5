"""Energy of a mechanism: kinetic, potential, and the balance with non-conservative work.

    T = ½ Σ_b (m_b |v_c,b|² + ω_bᵀ J_b ω_b)                    (J_b = A J' Aᵀ, about the com)
    V = −Σ_b m_b g·r_c,b + Σ springs ½ k (l − l0)² − F0 (l − l0) + rotational and bushing terms
    E = T + V,     E(t) − E(t0) = W_nc(t)                      (W_nc: dampers, applied
                                                                forces/torques, drivers)

``energy_balance(motion)`` returns max |E − E0 − W_nc| / max(|E0|, max T): a check on the
integration that needs no reference solution.
"""

from __future__ import annotations

import numpy as np

from .mass import body_state, kinetic_energy

__all__ = ["kinetic", "potential", "total", "energy_balance"]


def kinetic(dyn, q, v):
    """Kinetic energy (J) at coordinates q and velocities v."""
    return kinetic_energy(dyn.mass, body_state(dyn.model, dyn.mass, q, v))


def potential(dyn, q, refs=None):
    """Potential energy (J) of gravity and the springs at q (``refs``: force angle references)."""
    bs = body_state(dyn.model, dyn.mass, q, np.zeros(dyn.nv))
    if refs is None:
        refs = dyn.forces.initial_refs(bs)
    return dyn.forces.potential(bs, refs)


def total(dyn, q, v, refs=None):
    """T + V (J)."""
    return kinetic(dyn, q, v) + potential(dyn, q, refs)


def energy_balance(motion):
    """Largest relative error of E(t) − E(t0) − W_nc(t) over a dynamic Motion."""
    E = motion.extra["energy.total"]
    W = motion.extra["work.nonconservative"]
    T = motion.extra["energy.kinetic"]
    scale = max(abs(float(E[0])), float(np.max(np.abs(T))), 1e-300)
    return float(np.max(np.abs(E - E[0] - W)) / scale)
