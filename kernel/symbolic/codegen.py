"""Derive Φ, Φq, Φt and γ of a template with sympy and generate vectorised numpy code.

For a template with slots k = 0..n−1, each slot's coordinates q_k = [r_k, p_k] (the
parametrisation decides p), the generated functions take arrays whose first axis runs
over the instances of the type, so one numpy call evaluates every joint of that type:

    Q  : (n, n_slots*nqb)  coordinates of the slot bodies, slot-major
    QD : (n, n_slots*nqb)  their time derivatives
    M  : (n, n_slots*12)   marker of each slot: s (3) then R row-major (9), body frame
    S  : (n, n_params)     scalar parameters (template.params order)
    F  : (n, 3)            f(t), f'(t), f''(t) of a driver (zeros otherwise)
    W  : (n, n_angles)     winding offsets 2πn of the template's angle terms

and return

    phi(Q, M, S, F, W)        -> (n, neq)            Φ
    jac(Q, M, S, F, W)        -> (n, neq, nq_slots)  Φq
    phit(Q, M, S, F, W)       -> (n, neq)            Φt
    gamma(Q, QD, M, S, F, W)  -> (n, neq)            γ = −(Φq q̇)_q q̇ − 2 Φqt q̇ − Φtt
    angles(Q, M)              -> (n, n_angles)       raw atan2 of each angle term
    measures(Q, M)            -> (n, n_measures)     joint coordinates (raw angles, disp)

The numba backend also has ``<function>_into(..., out)`` for each: the same values written
into ``out`` of that shape (e.g. a workspace array) and returned. Only the entries that are not
identically zero are written, so ``out`` must hold zeros in the others — as an array that only
this function writes does once it has been zeroed (the compiled dynamics' workspace).

Time enters only through f: Φt = Φ_f f', Φtt = Φ_ff f'² + Φ_f f'', Φqt = Φq_f f'.

Generated source is cached on disk, keyed by a hash of the template library's source, this
module's source, the parametrisation and the sympy version, so editing any of them
invalidates the cache. ``CADMOTION_CACHE`` overrides the cache folder. Each file ends with a
hash of its text: a truncated or edited file is derived again (with one warning), and a
cache folder that cannot be written keeps the code in memory (one warning).

Which backend a run uses (``generated(name)`` without a backend): numba when its machine
code for the template was compiled before, else numpy at once while a background process
compiles numba's for the next runs (:mod:`.warmup`; ``CADMOTION_WARMUP=0`` turns it off). A
model's group of at most :data:`LOOP_MAX` joints of a type runs the numpy code, whose
functions loop over so few instances in Python floats (``*_loop``, ≈ 10 µs a call) rather
than in whole-array statements (``*_array``, ≈ 1 µs per statement whatever the size): that
is faster than loading numba for a small model. A process keeps the code it started on: a
long first run in an empty cache (thousands of frames) is faster with
``CADMOTION_BACKEND=numba``, which compiles in the run.
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
import threading
from pathlib import Path

import numpy

from ..cache_folder import cache_dir  # noqa: F401 (re-exported: callers import it from here)
from .lazy import lazy
from .parametrization import get_parametrization
from .templates import TEMPLATES

__all__ = ["GeneratedTemplate", "generated", "derive", "full", "cache_dir"]

sp = lazy("sympy")  # imported to derive code that is not cached, not to load what is

_LOCK = threading.Lock()
_MEMORY = {}


class Symbols:
    """The sympy symbols of one template instance, named like the generated code's inputs."""

    def __init__(self, template, par):
        n, nqb = template.n_slots, par.nqb
        self.q = [sp.Symbol(f"q{k}", real=True) for k in range(n * nqb)]
        self.qd = [sp.Symbol(f"qd{k}", real=True) for k in range(n * nqb)]
        self.m = [sp.Symbol(f"m{k}", real=True) for k in range(n * 12)]
        self.s = {name: sp.Symbol(f"s{k}", real=True) for k, name in enumerate(template.params)}
        self.f = [sp.Symbol(f"f{k}", real=True) for k in range(3)]
        self.w = [sp.Symbol(f"w{k}", real=True) for k in range(len(template.angle_terms))]


_ROTATIONS = {}


def _rotation(par, sym, k):
    """Slot k's rotation A(p) and its derivatives, as symbols with their definitions.

    Returns (A, dA, Ad, As, definitions): 3x3 matrices of symbols (or numbers where an entry
    is constant) for A, ∂A/∂p_j (one per parameter), Ȧ = Σ_j ∂A/∂p_j ṗ_j and
    Σ_jl ∂²A/∂p_j∂p_l ṗ_j ṗ_l (Ä at p̈ = 0), and the (symbol, expression in p, ṗ) pairs.
    Every marker vector of the slot is A times a column of marker data, so the rotation is
    differentiated once per slot and parametrisation (cached), not once per vector.
    """
    key = (par.name, k)
    if key in _ROTATIONS:
        return _ROTATIONS[key]
    nqb = par.nqb
    p, pd = sym.q[k * nqb + 3:(k + 1) * nqb], sym.qd[k * nqb + 3:(k + 1) * nqb]
    A = par.rotation_symbolic(p)
    dA = [A.diff(pj) for pj in p]
    Ad = sp.zeros(3, 3)
    As = sp.zeros(3, 3)
    for j, pj in enumerate(p):
        Ad += dA[j] * pd[j]
        for m, pm in enumerate(p):
            As += dA[j].diff(pm) * (pd[j] * pd[m])
    definitions = []

    def named(matrix, label):
        out = sp.zeros(3, 3)
        for r in range(3):
            for c in range(3):
                e = sp.expand(matrix[r, c])
                if e.is_number:
                    out[r, c] = e
                else:
                    s = sp.Symbol(f"Rot{k}{label}_{r}{c}", real=True)
                    definitions.append((s, e))
                    out[r, c] = s
        return out

    result = (named(A, ""), [named(d, f"p{j}") for j, d in enumerate(dA)], named(Ad, "d"), named(As, "s"),
              definitions)
    _ROTATIONS[key] = result
    return result


def _context(template, par, sym):
    """Marker vectors as *intermediate symbols* ``a``, with their definitions.

    Returns (ctx, definitions, frames): definitions are ordered (symbol, expression) pairs, the
    rotation symbols of each slot first, then each marker vector a = r + A s (P) or A R[:, c]
    (X, Y, Z); ``frames`` maps each ``a`` to (slot, column of marker data, index of its r
    coordinate or None), which is all its derivatives need.
    """
    from .templates import Context

    nqb = par.nqb
    P, X, Y, Z, p = [], [], [], [], []
    definitions, frames = [], {}
    for k in range(template.n_slots):
        qk = sym.q[k * nqb:(k + 1) * nqb]
        A, _, _, _, rot_defs = _rotation(par, sym, k)
        definitions += rot_defs
        mk = sym.m[k * 12:(k + 1) * 12]
        R = sp.Matrix(3, 3, mk[3:])
        columns = {"P": sp.Matrix(mk[:3]), "X": R[:, 0], "Y": R[:, 1], "Z": R[:, 2]}
        vectors = {}
        for label, v in columns.items():
            names = [sp.Symbol(f"a{label}{k}_{c}", real=True) for c in range(3)]
            e = A * v
            for c, name in enumerate(names):
                base = k * nqb + c if label == "P" else None
                definitions.append((name, e[c] + (qk[c] if base is not None else 0)))
                frames[name] = (k, v, c, base)
            vectors[label] = sp.Matrix(names)
        P.append(vectors["P"])
        X.append(vectors["X"])
        Y.append(vectors["Y"])
        Z.append(vectors["Z"])
        p.append(qk[3:])
    return Context(P, X, Y, Z, p, sym.s, sym.f[0], sym.w), definitions, frames


def _vector_derivatives(par, sym, frame):
    """Gradient [(coordinate index, ∂a/∂q)], rate ȧ and curvature (ȧ)_q q̇ of one marker vector
    component a = [r_c +] (A v)_c of slot k, from the slot's rotation derivatives."""
    k, v, c, base = frame
    _, dA, Ad, As, _ = _rotation(par, sym, k)
    nqb = par.nqb
    grads = [(base, sp.Integer(1))] if base is not None else []
    for j, dAj in enumerate(dA):
        g = (dAj[c, :] * v)[0]
        if g != 0:
            grads.append((k * nqb + 3 + j, g))
    rate = (Ad[c, :] * v)[0] + (sym.qd[base] if base is not None else 0)
    curv = (As[c, :] * v)[0]
    return grads, rate, curv


def derive(template_name, parametrization="euler-parameters"):
    """Symbolic Φ, Φq, Φt, γ, angles and measures of a template.

    Φ is written in intermediate variables u: the world marker vectors a(q) (and the raw
    coordinates a template reads directly). With u̇ = u_q q̇ and σ_u = (u_q q̇)_q q̇,

        Φq   = Φ_u u_q
        γ    = −(u̇ᵀ Φ_uu u̇ + Φ_u σ_u) − 2 f' Φ_uf u̇ − (Φ_ff f'² + Φ_f f'')

    which is exactly −(Φq q̇)_q q̇ − 2Φqt q̇ − Φtt, at a fraction of the symbolic cost. A marker
    vector is r + A v or A v with v marker data, so u_q, u̇ and σ_u follow from ∂A/∂p, Ȧ and
    Σ ∂²A/∂p∂p ṗṗ of its slot (:func:`_rotation`), never from differentiating u itself.

    Returns a dict: ``phi, jac, phit, gamma, angles, measures`` (sympy Matrices in u, q,
    q̇), ``definitions`` (ordered (symbol, expression) pairs for the rotations, u, u_q, u̇, σ)
    and ``symbols``. ``full`` substitutes the definitions (for display).
    """
    template = TEMPLATES[template_name]
    if template.numeric:
        raise ValueError(f"template {template_name!r} has no symbolic equations (its code is built by the model)")
    par = get_parametrization(parametrization)
    sym = Symbols(template, par)
    ctx, adef, frames = _context(template, par, sym)
    phi = sp.Matrix(template.build(ctx))
    f0, f1, f2 = sym.f
    angles = sp.Matrix(
        [sp.atan2(ctx.Y[i].dot(ctx.X[j]), ctx.X[i].dot(ctx.X[j])) for i, j in template.angle_terms]
    )
    meas = []
    for name in template.measures:
        if name == "angle":
            meas.append(sp.atan2(ctx.Y[0].dot(ctx.X[1]), ctx.X[0].dot(ctx.X[1])))
        elif name == "disp":
            meas.append(ctx.disp())
    meas = sp.Matrix(meas)

    free = phi.free_symbols | angles.free_symbols | meas.free_symbols
    u = [a for a in frames if a in free] + [qk for qk in sym.q if qk in phi.free_symbols]
    definitions = [(s, e) for s, e in adef if s not in frames] + [(a, e) for a, e in adef if a in free]
    grads, rates, curvs = {}, {}, {}
    derivative_defs = []
    for a in u:
        if a in frames:
            grads[a], rate, curv = _vector_derivatives(par, sym, frames[a])
        else:  # a raw coordinate q_k
            k = sym.q.index(a)
            grads[a], rate, curv = [(k, sp.Integer(1))], sym.qd[k], sp.Integer(0)
        rates[a] = sp.Symbol(f"{a.name}_d", real=True)
        curvs[a] = sp.Symbol(f"{a.name}_s", real=True)
        derivative_defs.append((rates[a], rate))
        derivative_defs.append((curvs[a], curv))
    grad_syms = {}
    for a in u:
        for k, gk in grads[a]:
            if gk.is_number:
                grad_syms[(a, k)] = gk
                continue
            gs = sp.Symbol(f"{a.name}_q{k}", real=True)
            grad_syms[(a, k)] = gs
            derivative_defs.append((gs, gk))
    definitions += derivative_defs

    # Φ_u and the second derivatives of γ, differentiating each entry only by the u it contains
    neq, nq = phi.shape[0], len(sym.q)
    phi_u = [_gradient(phi[e], u) for e in range(neq)]
    jac = sp.zeros(neq, nq)
    gamma = sp.zeros(neq, 1)
    for e in range(neq):
        terms = []
        for a, d in phi_u[e]:
            for k, _ in grads[a]:
                jac[e, k] += d * grad_syms[(a, k)]
            # (Φ_u u̇)_u u̇ + Φ_u σ_u for this column
            terms.append(rates[a] * sp.Add(*[dd * rates[b] for b, dd in _gradient(d, u)]) + d * curvs[a])
        gamma[e] = -sp.Add(*terms)
    if template.timed:
        vel = sp.Matrix([sp.Add(*[d * rates[a] for a, d in row]) for row in phi_u])  # Φq q̇ written in u̇
        gamma -= 2 * vel.diff(f0) * f1
        gamma -= phi.diff(f0, 2) * f1**2 + phi.diff(f0) * f2
    phit = phi.diff(f0) * f1
    return dict(phi=phi, jac=jac, phit=phit, gamma=gamma, angles=angles, measures=meas,
                definitions=definitions, symbols=sym)


def _gradient(expr, variables):
    """[(v, ∂expr/∂v)] for the ``variables`` that occur in ``expr`` (in their order), nonzero only."""
    free = expr.free_symbols
    out = []
    for v in variables:
        if v in free:
            d = expr.diff(v)
            if d != 0:
                out.append((v, d))
    return out


def full(derived, key):
    """A derived matrix with every intermediate replaced by its expression in q, q̇, m."""
    expr = derived[key]
    for s, e in reversed(derived["definitions"]):
        expr = expr.subs(s, e)
    return expr


@functools.lru_cache(maxsize=None)
def _printer(scalar):
    """sympy's printer of numpy (array statements) or of plain Python (numba's scalar loop).

    Terms are printed in sympy's stored order (``order="none"``): sorting them for display
    was a third of the printing time and changes nothing but the order of additions."""
    from sympy.printing.numpy import NumPyPrinter
    from sympy.printing.pycode import PythonCodePrinter

    cls = PythonCodePrinter if scalar else NumPyPrinter
    return cls({"fully_qualified_modules": True, "inline": True, "allow_unknown_functions": False, "order": "none"})


@functools.lru_cache(maxsize=None)
def _printed(expr, scalar):
    """Code text of one expression (a definition is printed once, not once per function)."""
    return _printer(scalar).doprint(expr)


def _needed(exprs, definitions):
    """The definitions that ``exprs`` depend on, in definition order."""
    by_sym = dict(definitions)
    need, stack = set(), [s for e in exprs for s in e.free_symbols]
    while stack:
        s = stack.pop()
        if s in by_sym and s not in need:
            need.add(s)
            stack.extend(by_sym[s].free_symbols)
    return [(s, e) for s, e in definitions if s in need]


def _plan(exprs, definitions):
    """What one function computes: (nonzero entries [(flat index, expression)], the definitions
    they need, the common subexpressions and the reduced entries, the symbols used)."""
    nonzero = [(k, e) for k, e in enumerate(exprs) if e != 0]
    defs = _needed([e for _, e in nonzero], definitions)
    reps, reduced = sp.cse([e for _, e in nonzero], symbols=sp.numbered_symbols("c"))
    used = set()
    for e in [e for _, e in nonzero] + [e for _, e in defs]:
        used |= e.free_symbols
    return nonzero, defs, reps, reduced, used


#: instances up to which the numpy backend runs a Python loop of float statements (≈ 50 ns
#: each) instead of whole-array statements (≈ 1 µs each however short the arrays)
LOOP_MAX = 16


def _emit(name, args, shape, sym_groups, plan, style):
    """Source of one function computing the entries of ``plan`` (:func:`_plan`), C order of ``shape``.

    style ``array``: whole-array numpy statements over the instance axis;
    style ``loop``: a Python loop over instances of float statements (few instances);
    style ``numba``: a loop over instances of scalar statements, compiled by numba.
    """
    nonzero, defs, reps, reduced, used = plan
    scalar = style != "array"
    body = []
    read = {"array": "{a}[:, {k}]", "loop": "{a}[i][{k}]", "numba": "{a}[i, {k}]"}[style]
    arrays = []
    for arr, symbols in sym_groups:
        for k, s in enumerate(symbols):
            if s in used:
                body.append(f"{s.name} = " + read.format(a=arr, k=k))
                if arr not in arrays:
                    arrays.append(arr)
    # the definitions are already factored (rotation, marker vectors, their derivatives)
    body += [f"{s.name} = {_printed(e, scalar)}" for s, e in defs]
    body += [f"{s.name} = {_printed(e, scalar)}" for s, e in reps]
    size = int(numpy.prod(shape))
    for (k, _), e in zip(nonzero, reduced):
        if style == "loop":
            body.append(f"r[{k}] = {_printed(e, scalar)}")
        else:
            idx = ", ".join(str(int(i)) for i in numpy.unravel_index(k, shape))
            body.append(f"out[{'i' if scalar else ':'}, {idx}] = {_printed(e, scalar)}")
    head = [f"def {name}({', '.join(args)}):", f"    n = {args[0]}.shape[0]"]
    if style == "array":
        lines = head + [f"    out = numpy.zeros((n,) + {tuple(shape)!r})"] + ["    " + b for b in body]
        lines.append("    return out")
    elif style == "numba":  # the loop writes into a given array; the function itself allocates it
        jit = "@numba.njit(cache=True, fastmath=False)"
        lines = [jit, f"def {name}_into({', '.join(args)}, out):", f"    n = {args[0]}.shape[0]",
                 "    for i in range(n):"]
        lines += (["        " + b for b in body] or ["        pass"]) + ["    return out", "", "", jit] + head
        lines.append(f"    return {name}_into({', '.join(args)}, numpy.zeros((n,) + {tuple(shape)!r}))")
    else:
        lines = head + [f"    {a} = {a}.tolist()" for a in arrays] + ["    rows = []", "    for i in range(n):",
                                                                        f"        r = [0.0] * {size}"]
        lines += ["        " + b for b in body] + ["        rows.append(r)",
                                                   f"    return numpy.array(rows).reshape((n,) + {tuple(shape)!r})"]
    return "\n".join(lines)


def _dispatch(name, args):
    """The numpy backend's entry point: the loop for few instances, whole arrays for many."""
    call = f"({', '.join(args)})"
    return (f"def {name}{call}:\n"
            f"    return ({name}_loop if {args[0]}.shape[0] <= LOOP_MAX else {name}_array){call}")


_DERIVED = {}
#: the functions a template's row variant has (``<name>_r<j>_into``, numba only): those whose entries are per row
ROW_FUNCTIONS = ("phi", "jac", "gamma")


def _source(template_name, parametrization, backend):
    key = (template_name, parametrization)
    if key not in _DERIVED:  # a staged template derives once for its numpy and numba code
        _DERIVED[key] = derive(template_name, parametrization)
    d = _DERIVED[key]
    sym, defs = d["symbols"], d["definitions"]
    neq = d["phi"].shape[0]
    nqs = len(sym.q)
    groups = [("Q", sym.q), ("M", sym.m), ("S", list(sym.s.values())), ("F", sym.f), ("W", sym.w)]
    groups_qd = groups[:1] + [("QD", sym.qd)] + groups[1:]
    args = ["Q", "M", "S", "F", "W"]
    functions = [
        ("phi", args, "phi", (neq,), groups),
        ("jac", args, "jac", (neq, nqs), groups),
        ("phit", args, "phit", (neq,), groups),
        ("gamma", ["Q", "QD", "M", "S", "F", "W"], "gamma", (neq,), groups_qd),
        ("angles", ["Q", "M"], "angles", (d["angles"].shape[0],), groups),
        ("measures", ["Q", "M"], "measures", (d["measures"].shape[0],), groups),
    ]
    parts = [
        '"""Generated by cadmotion.kernel.symbolic.codegen for template '
        f'{template_name!r}, parametrisation {parametrization!r}, backend {backend!r}. Do not edit."""',
        "import math\nimport numpy" + ("\nimport numba" if backend == "numba" else ""),
        f"NEQ = {neq}",
        f"NQ_SLOTS = {nqs}",
    ]
    if backend == "numpy":
        parts.append(f"LOOP_MAX = {LOOP_MAX}")
    for name, fargs, key_, shape, sym_groups in functions:
        plan = _plan(list(d[key_]), defs)
        if backend == "numba":
            parts.append(_emit(name, fargs, shape, sym_groups, plan, "numba"))
        else:
            parts += [_emit(f"{name}_array", fargs, shape, sym_groups, plan, "array"),
                      _emit(f"{name}_loop", fargs, shape, sym_groups, plan, "loop"), _dispatch(name, fargs)]
    if backend == "numba":  # the compiled dynamics' row variants: the same entries, of the variant's rows only
        variants = TEMPLATES[template_name].row_variants
        parts.append(f"ROW_VARIANTS = {variants!r}")
        for j, rows in enumerate(variants):
            for name, fargs, key_, shape, sym_groups in functions:
                if name in ROW_FUNCTIONS:
                    width = int(numpy.prod(shape[1:]))
                    kept = [e if k // width in rows else 0 for k, e in enumerate(d[key_])]
                    parts.append(_emit(f"{name}_r{j}", fargs, shape, sym_groups, _plan(kept, defs), "numba"))
    return "\n\n\n".join(parts) + "\n"


@functools.lru_cache(maxsize=None)
def _key(template_name, parametrization):
    """Hash of everything a template's generated code depends on: its name and sizes, the
    parametrisation, sympy's version and the text of the template library, the
    parametrisations and this module (whole files: ``inspect.getsource`` of a class parses its
    file, ≈ 30 ms a call on every run)."""
    template = TEMPLATES[template_name]
    from . import parametrization as par_module, templates as tpl_module

    h = hashlib.sha256()
    for text in (
        template_name,
        parametrization,
        sympy_version(),
        repr((template.n_slots, template.params, template.angle_terms, template.measures, template.row_variants)),
        Path(tpl_module.__file__).read_text(),
        Path(par_module.__file__).read_text(),
        Path(__file__).read_text(),
    ):
        h.update(text.encode())
    return h.hexdigest()[:20]


@functools.lru_cache(maxsize=None)
def installed_version(dist):
    """The version of the installed distribution ``dist`` (e.g. ``"sympy"``), or None when it has
    no package metadata.

    Read from the ``Version:`` line of the one ``<dist>-<version>.dist-info/METADATA`` beside the
    package, as pip installs it: neither the package nor :mod:`importlib.metadata` is imported
    (the latter and its e-mail parser cost a warm run about 0.05 s). Anywhere else (an egg, a
    development install, several dist-info folders) :mod:`importlib.metadata` decides."""
    from importlib.util import find_spec

    try:
        spec = find_spec(dist)
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        found = list(Path(next(iter(spec.submodule_search_locations))).parent.glob(f"{dist}-[0-9]*.dist-info"))
        if len(found) == 1:
            try:
                with open(found[0] / "METADATA", encoding="utf-8") as fh:
                    for line in fh:
                        if not line.strip():
                            break  # end of the header
                        if line.startswith("Version:"):
                            return line.partition(":")[2].strip()
            except OSError:
                pass
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def sympy_version():
    """sympy's version, from its package metadata when it has some (no 0.3 s import)."""
    found = installed_version("sympy")
    return found if found is not None else sp.__version__  # a distribution's sympy without metadata


def _numba_available():
    """numba is installed (found, not imported: its import is 0.15 s that a run on numpy code
    does not need; a broken installation fails where the numba code is first built)."""
    from importlib.util import find_spec

    try:
        return find_spec("numba") is not None
    except (ImportError, ValueError):
        return False


#: code generation backends, fastest first; ``CADMOTION_BACKEND`` forces one
BACKENDS = {"numba": _numba_available, "numpy": lambda: True}


def default_backend():
    """``$CADMOTION_BACKEND`` if set, else the first available of :data:`BACKENDS`."""
    forced = os.environ.get("CADMOTION_BACKEND")
    if forced:
        if forced not in BACKENDS:
            raise ValueError(f"CADMOTION_BACKEND={forced!r}: use one of {', '.join(BACKENDS)}")
        return forced
    return next(name for name, available in BACKENDS.items() if available())


class GeneratedTemplate:
    """Compiled numeric functions of one template (see the module docstring for signatures)."""

    def __init__(self, template_name, parametrization, backend, source, path=None):
        import importlib.util

        self.name = template_name
        self.parametrization = parametrization
        self.backend = backend
        self.source = source
        self.path = path
        if path is not None:
            # a real module from a file, so numba can cache the machine code beside it
            import sys

            if backend == "numba":
                from ..numba_cache import configure

                configure()  # the machine code goes to the folder named by the kernel sources
            name = f"cadmotion_generated_{path.stem.replace('-', '_')}"
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module  # numba's cache finds the module again by this name
            spec.loader.exec_module(module)  # our own generated code, never text from a user file
            namespace = vars(module)
        else:  # numba keeps no machine code for source without a file
            namespace = {}
            exec(compile(source.replace("cache=True", "cache=False"), f"<cadmotion:{template_name}>", "exec"),
                 namespace)
        self.neq = namespace["NEQ"]
        self.nq_slots = namespace["NQ_SLOTS"]
        for fn in ("phi", "jac", "phit", "gamma", "angles", "measures"):
            setattr(self, fn, namespace[fn])
            if backend == "numba":
                setattr(self, f"{fn}_into", namespace[f"{fn}_into"])
        #: the row variants' functions by name (``jac_r0_into`` …; numba only, :data:`ROW_FUNCTIONS`)
        self.row_variants = {f"{fn}_r{j}_into": namespace[f"{fn}_r{j}_into"]
                             for j in range(len(namespace.get("ROW_VARIANTS", ()))) for fn in ROW_FUNCTIONS}


def generated(template_name, parametrization="euler-parameters", backend=None, instances=None):
    """The generated code of a template, from memory, the disk cache, or sympy (in that order).

    ``backend`` None (the default) with numba available and ``$CADMOTION_BACKEND`` unset: the
    numba code when it has been compiled before (its ``.ready`` marker is in the cache folder),
    else a :class:`StagedTemplate` that runs the numpy code now, without waiting for numba, and
    has the numba code compiled by a background process when this one exits (:mod:`.warmup`),
    for the next run — except for a group of at most :data:`LOOP_MAX` ``instances`` (the joints
    of this type in the model), which gets the numpy code: its Python loop over so few
    instances costs less than importing numba and loading its machine code (≈ 0.5 s for the
    slider-crank's four templates). An explicit backend is that backend, compiled in this
    process if need be.
    """
    if backend is None:
        backend = default_backend()
        if backend == "numba" and not os.environ.get("CADMOTION_BACKEND"):
            if instances is not None and instances <= LOOP_MAX:
                backend = "numpy"
            elif not numba_ready(template_name, parametrization):
                return _staged(template_name, parametrization)
    key = (template_name, parametrization, backend)
    with _LOCK:
        if key in _MEMORY:
            return _MEMORY[key]
        digest = _key(template_name, parametrization)
        folder = cache_dir()
        path = folder / f"{template_name}-{parametrization}-{backend}-{digest}.py"
        source = None
        if path.is_file():
            try:
                source = _checked(path.read_text())
            except (OSError, UnicodeDecodeError):
                source = None
            if source is None:
                warn_once(f"{path.name} in the code cache is damaged or incomplete; deriving it again")
        if source is None:
            source = _sealed(_source(template_name, parametrization, backend))
            try:
                folder.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
                with os.fdopen(fd, "w") as fh:
                    fh.write(source)
                os.replace(tmp, path)
            except OSError as exc:
                warn_once(f"the code cache {folder} is not writable ({exc.strerror or exc}); generated code is "
                          f"kept in memory and derived again by every run: set CADMOTION_CACHE to a writable folder")
                path = None  # read-only home: keep the code in memory only
        gen = GeneratedTemplate(template_name, parametrization, backend, source, path)
        _MEMORY[key] = gen
        return gen


_SEAL = "# sha256 "
_WARNED = set()


def warn_once(message):
    """A RuntimeWarning about the code cache, once per message and process."""
    import warnings

    if message not in _WARNED:
        _WARNED.add(message)
        warnings.warn(f"cadmotion: {message}", RuntimeWarning, stacklevel=3)


def _sealed(source):
    """``source`` with a last line holding the hash of the rest, so a truncated or edited
    file in the cache is told from a complete one without running it."""
    return source + _SEAL + hashlib.sha256(source.encode()).hexdigest() + "\n"


def _checked(text):
    """The sealed source read from the cache if its hash line matches, else None."""
    body, sep, last = text.rstrip("\n").rpartition("\n" + _SEAL)
    if not sep:
        return None
    body += "\n"
    return text if hashlib.sha256(body.encode()).hexdigest() == last.strip() else None


# ----------------------------------------------------------------------------- numpy first, numba when ready

def numba_path(template_name, parametrization):
    """Where the numba source of a template is (or will be) in the cache folder."""
    digest = _key(template_name, parametrization)
    return cache_dir() / f"{template_name}-{parametrization}-numba-{digest}.py"


def _numba_version():
    return installed_version("numba") or "unknown"


def ready_marker(template_name, parametrization):
    """The file that says the numba code of a template was compiled into numba's cache."""
    return numba_path(template_name, parametrization).with_suffix(".ready")


def numba_ready(template_name, parametrization):
    """True when the template's numba code was compiled (by :mod:`.warmup` or a run) with this numba.

    The marker only decides which backend to start on: numba itself checks its cached
    machine code against the source file and recompiles stale or damaged entries.
    """
    return marker_ready(ready_marker(template_name, parametrization))


def marker_ready(marker):
    """True when the ready ``marker`` file holds this numba's version (garbage or another version: False)."""
    try:
        return marker.read_text().strip() == _numba_version()
    except (OSError, UnicodeDecodeError):
        return False


def mark_ready(template_name, parametrization):
    """Write the ready marker (atomically); False when the cache folder is not writable."""
    return write_marker(ready_marker(template_name, parametrization))


def write_marker(marker):
    """Write a ready marker holding this numba's version (atomically); False when it cannot be written."""
    try:
        fd, tmp = tempfile.mkstemp(dir=marker.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            fh.write(_numba_version() + "\n")
        os.replace(tmp, marker)
        return True
    except OSError:
        return False


#: seconds after which a warm-up's lock file is taken for a crashed process's leftover
WARMUP_LOCK_AGE = 600


def warming(template_name, parametrization):
    """True while a warm-up process holds the template's lock (younger than WARMUP_LOCK_AGE)."""
    return marker_busy(ready_marker(template_name, parametrization))


def marker_busy(marker):
    """True while a warm-up process holds the lock beside ``marker`` (younger than WARMUP_LOCK_AGE)."""
    import time

    try:
        age = time.time() - marker.with_suffix(".lock").stat().st_mtime
    except OSError:
        return False
    return age < WARMUP_LOCK_AGE


class StagedTemplate:
    """The numpy functions of a template, run while its numba code is compiled in the background.

    Same attributes and signatures as :class:`GeneratedTemplate`, so the kinematic solvers
    run on it unchanged (the two backends agree to rounding). Compiled dynamics binds the
    numba code itself (:mod:`cadmotion.kernel.dynamics.fast`), once it has been compiled.
    """

    backend = "numpy"

    def __init__(self, numpy_code, template_name, parametrization):
        self.name = template_name
        self.parametrization = parametrization
        self._numpy = numpy_code
        self.source = numpy_code.source
        self.path = numpy_code.path
        self.neq = numpy_code.neq
        self.nq_slots = numpy_code.nq_slots
        for fn in ("phi", "jac", "phit", "gamma", "angles", "measures"):
            setattr(self, fn, getattr(numpy_code, fn))


_PENDING = set()
_PENDING_MODULES = set()
_FIRST_MODULES = set()


def _request_warmup():
    """Start the background warm-up when this process exits (once; under _LOCK)."""
    if not _PENDING and not _PENDING_MODULES:
        import atexit

        atexit.register(_start_warmup)


def _staged(template_name, parametrization):
    key = (template_name, parametrization, "staged")
    with _LOCK:
        staged = _MEMORY.get(key)
    if staged is None:
        staged = StagedTemplate(generated(template_name, parametrization, "numpy"), template_name, parametrization)
        with _LOCK:
            staged = _MEMORY.setdefault(key, staged)
    if os.environ.get("CADMOTION_WARMUP", "1") != "0":
        with _LOCK:
            _request_warmup()
            _PENDING.add((template_name, parametrization))
    return staged


def request_module_warmup(path, first=False):
    """Have the background warm-up compile the generated module at ``path`` (a compiled
    right-hand side of :mod:`cadmotion.kernel.dynamics.fast`, which this run did not wait for);
    its ready marker is ``path`` with the suffix ``.ready``. ``first``: before the modules asked for
    without it (one that compiles in seconds, which a run may switch to, before the library's minutes).
    Off with ``CADMOTION_WARMUP=0``."""
    if os.environ.get("CADMOTION_WARMUP", "1") != "0":
        with _LOCK:
            _request_warmup()
            _PENDING_MODULES.add(str(path))
            if first:
                _FIRST_MODULES.add(str(path))


def start_warmup_now():
    """Start the background warm-up now, not when this process exits: for a run long enough to
    switch to the compiled code once it is ready (:mod:`cadmotion.kernel.dynamics.late_compiled`).
    What it takes is no longer pending (the exit finds nothing left to start); returns True if
    anything was pending."""
    with _LOCK:
        pending = bool(_PENDING or _PENDING_MODULES)
        if pending:
            _start_warmup()
            _PENDING.clear()
            _PENDING_MODULES.clear()
            _FIRST_MODULES.clear()
    return pending


def _start_warmup():
    """Start one background process compiling the numba code of the templates this process
    ran on numpy, then the compiled right-hand sides it did not wait for (:mod:`.warmup`); it
    outlives this process and writes only to the cache."""
    import subprocess
    import sys

    items = [f"{n}:{p}" for n, p in sorted(_PENDING) if not numba_ready(n, p) and not warming(n, p)]
    markers = [(path, Path(path).with_suffix(".ready"))
               for path in sorted(_PENDING_MODULES, key=lambda path: (path not in _FIRST_MODULES, path))]
    items += [f"module:{path}" for path, marker in markers if not marker_ready(marker) and not marker_busy(marker)]
    if not items:
        return
    args = [sys.executable, "-m", "cadmotion.kernel.symbolic.warmup"] + items
    try:
        subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, close_fds=True)
    except OSError:
        pass  # no process to spare: the next run starts on numpy again
