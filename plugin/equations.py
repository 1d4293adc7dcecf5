"""Show the constraint equations the kernel solves, symbolically (``cadmotion equations``).

For each joint (and driver) the template's equations are printed in marker-frame form
(P, X, Y, Z: world origin and axes of the joint markers on the first (i) and second
(j) part), then each with this joint's marker data substituted, and the Jacobian
blocks ∂Φ/∂r and ∂Φ/∂p of both parts in their coordinates r = (x, y, z),
p = (e0, e1, e2, e3).
"""

from __future__ import annotations

import sympy as sp

from ..kernel.symbolic.codegen import derive, full
from ..kernel.symbolic.templates import TEMPLATES

__all__ = ["describe_equations"]

_VEC = {"P": "P", "X": "X", "Y": "Y", "Z": "Z"}


def _readable(template, derived, model_par):
    """Substitutions from generated symbol names to readable ones."""
    n = template.n_slots
    labels = ["i", "j"] if n == 2 else (["a_i", "a_j", "b_i", "b_j"] if n == 4 else ["b"])
    subs = {}
    for s, _ in derived["definitions"]:
        name = s.name
        if name.startswith("a") and name[1] in _VEC and "_" in name and name.count("_") == 1:
            slot = int(name[2:name.index("_")])
            comp = "xyz"[int(name[name.index("_") + 1:])]
            subs[s] = sp.Symbol(f"{name[1]}_{labels[slot]}.{comp}")
    sym = derived["symbols"]
    coord_names = ["x", "y", "z"] + [f"e{k}" for k in range(model_par.n_p)]
    nqb = len(coord_names)
    for k, q in enumerate(sym.q):
        subs[q] = sp.Symbol(f"{coord_names[k % nqb]}_{labels[k // nqb]}")
    for k, w in enumerate(sym.w):
        subs[w] = sp.Symbol(f"w{k}")
    for name, s in sym.s.items():
        subs[s] = sp.Symbol(name)
    subs[sym.f[0]] = sp.Symbol("f(t)")
    return subs, labels, nqb


def _cam_text(model, g, inst, name):
    """The equation of a cam pair (:mod:`cadmotion.kernel.cams`) in words and numbers."""
    law = g.code.laws[int(g.params[inst, 0])]
    symbol, unit = ("s", "m") if g.code.follower == "disp" else ("φ", "rad")
    parts = ", ".join(model.body_names[b] for b in g.bodies[inst])
    return (f"== {name}: {g.template} (1 equation), bodies {parts} (the cam's joint, then the follower's)\n"
            f"  Φ0 = {symbol}_follower − L(θ_cam); L, the lift law, a periodic quintic spline through "
            f"{len(law.theta)} samples, from {law.value.min():.6g} to {law.value.max():.6g} {unit}\n"
            f"  Φq = J_follower − L′(θ) J_cam, Φt = 0, γ = γ_follower − L′(θ) γ_cam + L″(θ) θ̇²")


def describe_equations(model, joint=None, latex=False):
    """Text describing the equations of every group instance (or of one joint/driver)."""
    par = model.parametrization
    out = []
    found = False
    for g in model.groups:
        if g.kind == "normalize":
            continue
        for inst, name in enumerate(g.names):
            if joint is not None and name != joint:
                continue
            found = True
            template = TEMPLATES[g.template]
            if template.numeric:  # a cam: its law is data, not a symbolic expression
                out.append(_cam_text(model, g, inst, name))
                continue
            d = derive(g.template, par.name)
            subs, labels, nqb = _readable(template, d, par)
            show = (lambda e: sp.latex(e)) if latex else (lambda e: sp.sstr(e))
            out.append(f"== {name}: {g.template} ({g.neq} equation(s)), bodies "
                       + ", ".join(f"{lab}={model.body_names[b]}" for lab, b in zip(labels, g.bodies[inst])))
            for k, e in enumerate(d["phi"]):
                out.append(f"  Φ{k} = {show(e.xreplace(subs))}")
            numeric = {s: float(v) for s, v in zip(d["symbols"].m, g.markers[inst])}
            numeric.update({s: float(v) for s, v in zip(d["symbols"].s.values(), g.params[inst])})
            qf = model.q_full(model.q0)
            for slot, b in enumerate(g.bodies[inst]):
                if model.body_fixed[b]:  # a fixed part's coordinates are numbers
                    values = qf[model.body_qadr[b]: model.body_qadr[b] + nqb]
                    numeric.update({d["symbols"].q[slot * nqb + c]: float(v) for c, v in enumerate(values)})
            phi_q = full(d, "phi").xreplace(numeric)
            out.append("  with this joint's markers, in body coordinates:")
            for k, e in enumerate(phi_q):
                out.append(f"  Φ{k} = {show(sp.expand(e).xreplace(subs))}")
            jac = phi_q.jacobian(sp.Matrix(d["symbols"].q))
            for slot, lab in enumerate(labels):
                body = model.body_names[g.bodies[inst][slot]]
                if model.body_fixed[g.bodies[inst][slot]]:
                    out.append(f"  ∂Φ/∂q_{lab}: part {body} is fixed (no coordinates)")
                    continue
                for block, cols in (("r", range(0, 3)), ("p", range(3, nqb))):
                    B = jac[:, [slot * nqb + c for c in cols]].applyfunc(lambda e: sp.expand(e).xreplace(subs))
                    out.append(f"  ∂Φ/∂{block}_{lab} ({body}) =")
                    text = sp.latex(B) if latex else sp.pretty(B, use_unicode=True, wrap_line=False)
                    out.append("    " + (text if latex else text.replace("\n", "\n    ")))
    if joint is not None and not found:
        from ..errors import MechanismError

        names = [n for g in model.groups if g.kind != "normalize" for n in g.names]
        raise MechanismError(f"no joint or driver called {joint!r}", hint=f"known: {', '.join(names)}")
    if joint is None:
        from ..kernel.dynamics.tree import build_tree, describe_tree

        out.append("== relative coordinates (formulation semi-recursive): the tree joints' equations hold "
                   "identically, the cut joints' are the closure equations")
        out += ["  " + line for line in describe_tree(build_tree(model))]
    return "\n".join(out)
