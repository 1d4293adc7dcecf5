"""Does a step pass through a singular configuration? The probes of its measure, judged (numba optional).

The measure of a closed loop's constraint Jacobian (the square root of its smallest pivot ratio in the compiled
loops, of the smallest eigenvalue of the Jacobi-scaled J W Jᵀ in the Python ones) falls linearly to zero at a
singular configuration and rises after it, a V in time. A step is probed at :data:`PROBES` and
:func:`strided` tells from five numbers whether the bottom of a V lies inside it; :func:`clear_of_singular` when
the probes inside a step can be skipped. The compiled loops (:mod:`._dop853`, :mod:`._rk4`, the tree module) call
these compiled; the Python loops (:meth:`.contract.Formulation._strides_singular`) call them as Python, which
is all there is without numba (FreeCAD's interpreter), so nothing here may need it.
"""

import math

from ._frames import jit  # numba's njit (cached) where it is installed, else the function itself

__all__ = ["PROBES", "V_RATIO", "CLEAR", "v_ratio", "strided", "clear_of_singular", "next_step_probes",
           "python_function"]


def python_function(fn):
    """The Python function of a compiled one (numba's ``py_func``): a judgement of five numbers costs less as
    Python than a call into compiled code; the function itself without numba."""
    return getattr(fn, "py_func", fn)


#: fractions of a step at which the measure is probed (:func:`._dop853.strides_singular`,
#: :meth:`.contract.Formulation._strides_singular`)
PROBES = (0.0, 0.25, 0.5, 0.75, 1.0)
#: two neighbouring probes hold the bottom of a V between them when :func:`v_ratio` is below this:
#: 1 for a V that reaches zero between them (wherever it falls), larger for a rounded minimum;
#: 1.5 takes a V whose bottom is within a sixteenth of a step beyond the last probe (the next step
#: starts before it), and a rounded minimum (√ measure m at its bottom, midway between two probes)
#: with m below 0.45 times the measure's fall over a probe spacing, one the probes do not resolve
V_RATIO = 1.5
#: a step's interior probes are skipped when every constraint row's measure is, at both ends
#: of the step, more than CLEAR times its change over the step and over the step before (scaled
#: to this step's length): see :func:`clear_of_singular`
CLEAR = 4.0


@jit
def v_ratio(s_a, s_b, d_ab, s_out, d_out):
    """How far the probes s_a, s_b (d_ab apart) are from holding between them the bottom of a V
    s = a |t − t*| that falls into them from s_out (d_out beyond s_a; d in any one unit): their
    sum over d_ab against the fall (s_out − s_a) / d_out, which is the V's slope. 1 for such a V,
    larger for a rounded minimum or a bottom further away, inf where s_out is not above s_a."""
    fall = (s_out - s_a) / d_out
    if not fall > 0.0:
        return math.inf
    return (s_a + s_b) / d_ab / fall


@jit
def _probe(s, s_before, h_ratio, j):
    """(position, √ measure) of probe j of a step's probes preceded by the step before's last
    interior probe: j = 0 that one (``s_before``, the step before ``h_ratio`` times this one's
    length), j ≥ 1 ``s[j − 1]`` at ``PROBES[j − 1]``; positions in fractions of this step."""
    if j == 0:
        return -(1.0 - PROBES[len(PROBES) - 2]) * h_ratio, s_before
    return PROBES[j - 1], s[j - 1]


@jit
def strided(s, s_zone, s_before, h_ratio):
    """True if the square roots s of the measure at :data:`PROBES` of a step show a singular
    configuration: one below s_zone, or a V whose bottom lies between two neighbouring probes
    (:func:`v_ratio` below :data:`V_RATIO` with the probe beyond either of them) or just beyond
    the step's end. ``s_before`` is the step before's last interior probe (−1 if not known),
    that step ``h_ratio`` times this one's length.

    The measure falls linearly to 0 at a singular configuration and rises after it: a V whose
    bottom is anywhere between two probes, even midway, is seen, and one whose bottom is just
    beyond the end too, so that the crossing starts before the bottom (the next step would start
    after it)."""
    for j in range(s.shape[0]):
        if s[j] < s_zone:
            return True
    n = s.shape[0]  # the probes are j = first … n of :func:`_probe`
    first = 0 if s_before >= 0.0 else 1
    for j in range(first, n):  # the pair (j, j + 1)
        x_a, s_a = _probe(s, s_before, h_ratio, j)
        x_b, s_b = _probe(s, s_before, h_ratio, j + 1)
        if j > first:  # the probe before the pair
            x_o, s_o = _probe(s, s_before, h_ratio, j - 1)
            if v_ratio(s_a, s_b, x_b - x_a, s_o, x_a - x_o) < V_RATIO:
                return True
        if j + 2 <= n:  # the probe after it
            x_o, s_o = _probe(s, s_before, h_ratio, j + 2)
            if v_ratio(s_b, s_a, x_b - x_a, s_o, x_o - x_b) < V_RATIO:
                return True
    return False


@jit
def clear_of_singular(rows, h_before, h):
    """True when no constraint row's measure can reach the bottom of a V inside the step, so
    its interior probes would tell nothing the ends do not.

    ``rows`` (3, m): each row's measure (√ of its pivot ratio, :func:`._kernels.singularity_rows`)
    at the start of the step before (of length ``h_before`` s), at this step's start and at its
    end (this step of length ``h`` s); −1 where not known, ``inf`` for a row dropped as redundant.
    Near a singular configuration a row's measure falls linearly, s = a |t − t*|: a V whose
    bottom is inside the step has s_start + s_end = a·h, while the row changed by a·h over the
    step before (it was falling at that rate) and by up to a·h over this one. So the interior
    probes are needed unless every row has s_start + s_end > :data:`CLEAR` × (its change over
    this step, and over the step before scaled by h / h_before): far from every V, measured in
    the row's own rate of change. Anything not known, a row dropped at one of the three states
    and not at another, or a first step returns False (probe)."""
    if not (h_before > 0.0 and h > 0.0):
        return False
    scale = h / h_before
    for j in range(rows.shape[1]):
        a, b, c = rows[0, j], rows[1, j], rows[2, j]
        if a < 0.0 or b < 0.0 or c < 0.0:
            return False
        dropped = math.isinf(b)
        if math.isinf(a) != dropped or math.isinf(c) != dropped:
            return False
        if dropped:
            continue
        if not b + c > CLEAR * max(abs(c - b), abs(b - a) * scale):
            return False
    return True


@jit
def next_step_probes(s, rows):
    """After an accepted step: its end's measures are the next step's start (and its start
    the step before's). Returns the step's probe before its end (√ measure at PROBES[-2]), the next
    step's ``s_before`` for :func:`strided`."""
    last = s.shape[0] - 1
    before = s[last - 1]
    s[0] = s[last]
    for j in range(rows.shape[1]):
        rows[0, j] = rows[1, j]
        rows[1, j] = rows[2, j]
    return before
