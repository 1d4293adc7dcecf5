"""The compiled dynamics' packed arrays, by name: every constant of a model and every array of a run that
the compiled library (:mod:`.library`, :mod:`._kernels`) reads.

A model's arrays are packed into four flat arrays, as MuJoCo splits ``mjModel`` from ``mjData``:

* the **Model** (:class:`.packed.PackedModel`): kind ``"f"`` model floats (``df``) and kind ``"i"`` model
  integers (``di``, after the header that locates every array) — constants, written once when a model is
  packed;
* the **Data** (:class:`.packed.PackedData`): kind ``"d"`` per-call floats (``dd``) — what Python or the
  compiled loops change between evaluations (angle references, driver values, the kept rows, the contacts'
  impact speeds); a snapshot of ``dd`` is the run's state besides y — and kind ``"w"`` workspace (``ws``),
  written and read by compiled code within an evaluation (body kinematics, Φq, the factor of S, λ, forces).

:data:`COMMON` lists every model's arrays, :data:`GROUP` each constraint group's (one set per group, after
COMMON and any formulation's own, such as the semi-recursive tree's :data:`._tree_kernels.TREE`). A field
gives its name, kind, shape and meaning (units and frames). A shape is a tuple of sizes: an integer; a
size of the model named in lower case (:data:`MODEL_SIZES`); a constant of the compiled code named in
upper case (given by the packer, :func:`.packed.library_constants`); or a count ``n_*`` shared by the
arrays that name it (the springs' ``n_spring``: every ``sp_*`` array has as many rows), bound by the first
of them. :func:`.packed.check_shapes` holds the packed arrays to these shapes, so that an array added with
the wrong shape is an error naming it when a model is packed, not wrong numbers in compiled code.

Adding a force element: its arrays here (one field each, ``xx_*``), :meth:`.forces.ForceElements.compiled_arrays`
filling them, a kernel in :mod:`._kernels` called from ``applied_forces``, and its index (``I_XX``) there. A
model without the element gets empty arrays of the declared shapes.

Editing this module changes the compiled library (its indices are compiled in): the library's hash covers
it (:func:`.library.module_file`).
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Field", "COMMON", "GROUP", "MODEL_SIZES", "KINDS"]

#: what each kind of array is: model constants (floats, integers), per-call data, workspace
KINDS = {"f": "model floats (df)", "i": "model integers (di)", "d": "per-call data (dd)", "w": "workspace (ws)"}

#: the sizes of a model that shapes name: nq coordinates of the moving parts (7 each), nv = 6 nmov velocities,
#: nb bodies (the moving ones first), nmov moving, nq_fixed = 7 (nb − nmov) coordinates of the fixed ones,
#: nq_all = 7 nb, nc constraint rows, m kept rows (a planar mechanism's in-plane rows), ns body slots of a row,
#: bw1 = band width of S + 1, nmeas joint measures, naux = 3 + nmeas, ngroup constraint groups
MODEL_SIZES = ("nq", "nv", "nb", "nmov", "nq_fixed", "nq_all", "nc", "m", "ns", "bw1", "nmeas", "naux", "ngroup")


class Field(NamedTuple):
    """One packed array: ``name``, ``kind`` (a key of :data:`KINDS`), ``shape`` (sizes, see the module
    docstring) and ``doc`` (what it holds, with units and frames)."""

    name: str
    kind: str
    shape: tuple
    doc: str

    @property
    def ndim(self):
        """The array's number of dimensions."""
        return len(self.shape)


F = Field

COMMON = (
    # ---- bodies and masses
    F("q_fixed", "f", ("nq_fixed",), "the fixed bodies' coordinates (7 each: position m, Euler parameters), world"),
    F("com_all", "f", ("nb", 3), "each body's centre of mass in its part frame (m)"),
    F("Jb", "f", ("nb", 3, 3), "each body's inertia about its com, part axes (kg m²; identity for fixed bodies)"),
    F("Jbinv", "f", ("nb", 3, 3), "its inverse (1/(kg m²)); of a planar mechanism n nᵀ/(nᵀ J n) (:mod:`.planar`)"),
    F("mass", "f", ("nmov",), "each moving body's mass (kg)"),
    F("gravf", "f", ("nmov", 3), "each moving body's weight m g (N, world)"),
    F("imt", "f", ("nmov", 3, 3), "each moving body's inverse mass for the translations, I/m or P/m in a plane (1/kg)"),
    # ---- the kept constraint rows and the band of S
    F("row_map", "i", ("nc",), "each constraint row's position among the kept rows (−1: not kept)"),
    F("rb", "i", ("m", "ns"), "per kept row the moving body of each slot (−1: fixed or unused)"),
    F("pair_i", "i", ("n_row_pair",), "the row pairs acting on a common body (i ≥ j) whose products fill S: row i"),
    F("pair_j", "i", ("n_row_pair",), "row j"),
    F("pair_si", "i", ("n_row_pair",), "row i's slot of the common body"),
    F("pair_sj", "i", ("n_row_pair",), "row j's slot of the common body"),
    F("sizes", "i", (6,), "nq, nmov, nb, m, band width of S, nmeas"),
    # ---- force elements (:mod:`.forces`); an element type the model has not: no rows
    F("sp_ia", "i", ("n_spring",), "spring-dampers: first body"),
    F("sp_ib", "i", ("n_spring",), "second body"),
    F("sp_da", "f", ("n_spring", 3), "point on the first body (m, its axes from its com)"),
    F("sp_db", "f", ("n_spring", 3), "point on the second body (m, its axes from its com)"),
    F("sp_k", "f", ("n_spring",), "stiffness (N/m)"),
    F("sp_c", "f", ("n_spring",), "damping (N s/m)"),
    F("sp_l0", "f", ("n_spring",), "free length (m)"),
    F("sp_F0", "f", ("n_spring",), "preload at the free length (N, > 0 pushes apart)"),
    F("ax_ia", "i", ("n_axis",), "torques about joint axes (rotational springs first, then expressions): first body"),
    F("ax_ib", "i", ("n_axis",), "second body"),
    F("ax_Ri", "f", ("n_axis", 3, 3), "the joint's first marker axes in the first body (rows: part axes)"),
    F("ax_Rj", "f", ("n_axis", 3, 3), "the joint's second marker axes in the second body"),
    F("ax_k", "f", ("n_axis",), "rotational stiffness (N m/rad; 0 for expressions)"),
    F("ax_c", "f", ("n_axis",), "rotational damping (N m s/rad)"),
    F("ax_tau0", "f", ("n_axis",), "preload torque at the zero angle (N m)"),
    F("ax_expr", "i", ("n_axis",), "1 for a torque expression, 0 for a spring-damper law"),
    F("ax_ref", "d", ("n_axis",), "the joint angle's continuity reference (rad, over turns), at accepted steps"),
    F("tau", "d", ("n_axis",), "a torque expression's value written by Python before a call (N m; compiled programs: "
                               "unused)"),
    F("bl_ia", "i", ("n_ball",), "3-D rotational springs on ball joints: first body"),
    F("bl_ib", "i", ("n_ball",), "second body"),
    F("bl_Ri", "f", ("n_ball", 3, 3), "first marker axes in the first body"),
    F("bl_Rj", "f", ("n_ball", 3, 3), "second marker axes in the second body"),
    F("bl_k", "f", ("n_ball",), "stiffness (N m/rad)"),
    F("bl_c", "f", ("n_ball",), "damping (N m s/rad)"),
    # ---- the formulation's numbers and the rows it drops
    F("stab", "d", ("N_STAB",), "Baumgarte α, β (1/s), the redundant rows' drop tolerance, the penalty ε, "
                                "its iterations and tolerance, the model's length scale (m)"),
    F("redundant", "d", ("m",), "1.0 for the redundant rows the factor of S drops until the next accepted state"),
    # ---- constraint groups (their own arrays: GROUP)
    F("grp", "i", ("ngroup", "N_GRP"), "per group: library entry (template or row variant), first row, equations per "
                                       "instance, timed, angled, measured (0/1), header index of its first array"),
    # ---- expressions as programs (:mod:`..expression_programs`)
    F("pg_ops", "i", ("n_op", 2), "the programs' opcodes and operands"),
    F("pg_val", "f", ("n_literal",), "their literals"),
    F("pg_start", "i", ("n_program",), "each program's first opcode"),
    F("pg_x", "w", (3,), "the interpreter's variables t (s), q (rad or m), qd (rad/s or m/s)"),
    F("ax_prog", "i", ("n_axis",), "each axis element's torque program (−1: none)"),
    F("ln_prog", "i", ("n_line",), "each line element's force program (−1: none)"),
    # ---- body kinematics of the evaluation (workspace)
    F("qf", "w", ("nq_all",), "every body's coordinates (7 each), world"),
    F("qdf", "w", ("nq_all",), "their rates"),
    F("A", "w", ("nb", 3, 3), "each body's rotation matrix (part axes to world)"),
    F("rho", "w", ("nb", 3), "each body's com offset A c (m, world)"),
    F("rc", "w", ("nb", 3), "each body's centre of mass (m, world)"),
    F("E", "w", ("nb", 3, 4), "the Euler parameters' E matrix (ω = 2 E ṗ, world)"),
    F("Jw", "w", ("nb", 3, 3), "each body's inertia about its com, world axes (kg m²)"),
    F("Jwinv", "w", ("nb", 3, 3), "its inverse (1/(kg m²))"),
    F("B", "w", ("nb", 7, 6), "q̇ = B [v_c, ω] per body"),
    F("bdot", "w", ("nb", 7), "Ḃ [v_c, ω] per body"),
    F("w", "w", ("nb", 3), "angular velocity (rad/s, world)"),
    F("vc", "w", ("nb", 3), "com velocity (m/s, world)"),
    F("Jc", "w", ("m", "ns", 6), "per kept row and slot the entries of Jv = Φq B on that body's [v_c, ω]"),
    F("gam", "w", ("m",), "γ of each kept row (then γ̂ with the stabilisation)"),
    F("pt", "w", ("m",), "Φt of each kept row"),
    F("ph", "w", ("m",), "Φ of each kept row"),
    F("aux", "w", ("naux",), "max |Jv v + Φt|, max |Φ|, smallest pivot ratio of S, then the raw joint measures"),
    # ---- joint measures' continuity
    F("is_angle", "i", ("nmeas",), "1 for a joint measure that is an angle (followed over turns)"),
    F("mref", "d", ("nmeas",), "the joint measures' continuity references (rad or m)"),
    F("ax_const", "f", ("n_axis", "n_axis_const"), "each torque program's constants c_k"),
    # ---- forces along joint axes
    F("ln_ia", "i", ("n_line",), "forces along joint axes: first body"),
    F("ln_ib", "i", ("n_line",), "second body"),
    F("ln_di", "f", ("n_line", 3), "the first marker's origin in the first body (m, from its com)"),
    F("ln_Ri", "f", ("n_line", 3, 3), "the first marker's axes in the first body"),
    F("ln_dj", "f", ("n_line", 3), "the second marker's origin in the second body (m, from its com)"),
    F("ln_F", "d", ("n_line",), "a force expression's value written by Python before a call (N; compiled: unused)"),
    F("ln_const", "f", ("n_line", "n_line_const"), "each force program's constants c_k"),
    # ---- bushings
    F("bu_ia", "i", ("n_bushing",), "bushings: first body"),
    F("bu_ib", "i", ("n_bushing",), "second body"),
    F("bu_da", "f", ("n_bushing", 3), "the frame's origin on the first body (m, its axes from its com)"),
    F("bu_db", "f", ("n_bushing", 3), "on the second body"),
    F("bu_Ra", "f", ("n_bushing", 3, 3), "the frame's axes in the first body"),
    F("bu_Rb", "f", ("n_bushing", 3, 3), "in the second body"),
    F("bu_Kt", "f", ("n_bushing", 3), "translational stiffness per axis (N/m)"),
    F("bu_Ct", "f", ("n_bushing", 3), "translational damping per axis (N s/m)"),
    F("bu_Kr", "f", ("n_bushing", 3), "rotational stiffness per axis (N m/rad)"),
    F("bu_Cr", "f", ("n_bushing", 3), "rotational damping per axis (N m s/rad)"),
    # ---- tyres (:mod:`.tyres`)
    F("ty_b", "i", ("n_tyre",), "tyres: the wheel's body"),
    F("ty_dc", "f", ("n_tyre", 3), "the wheel centre (m, the body's axes from its com)"),
    F("ty_ax", "f", ("n_tyre", 3), "the wheel's spin axis (unit, the body's axes)"),
    F("ty_par", "f", ("n_tyre", "N_TYRE_PAR"), "radius, stiffness, damping, magic-formula coefficients, rolling "
                                               "resistance (:data:`.tyres.TYRE_PARAMS`)"),
    F("ty_bump", "f", ("n_tyre", "n_bump", 3), "the road's bumps: position (m), height (m), length (m)"),
    F("ty_nb", "i", ("n_tyre",), "the bumps each tyre has"),
    F("ty_out", "w", ("n_tyre", "N_TYRE_OUT"), "the last evaluation's outputs (:data:`.tyres.TYRE_OUTPUTS`)"),
    # ---- compliant contacts (:mod:`._contact_kernels`: the columns of par, pair, pc, ft and bx are named there)
    F("ct_s", "i", ("n_point",), "contact points, sorted by body pair: the body of shape S"),
    F("ct_o", "i", ("n_point",), "the body of shape O"),
    F("ct_ds", "f", ("n_point", 3), "S's shape centre (m, its body's axes from the com)"),
    F("ct_do", "f", ("n_point", 3), "O's shape centre (m, its body's axes from the com)"),
    F("ct_no", "f", ("n_point", 3), "O's plane normal or axis (unit, its body's axes)"),
    F("ct_half", "f", ("n_point", 6), "O's box half lengths (m) and S's"),
    F("ct_axis", "f", ("n_point", 3), "S's edge or rim axis (unit, its body's axes)"),
    F("ct_kind", "i", ("n_point",), "the point's shape pair (sphere–plane, corner–box, ...)"),
    F("ct_par", "f", ("n_point", "N_CT_PAR"), "radii, the normal law (k, λ, ξ, exponent), friction, masses"),
    F("ct_pair", "i", ("n_body_pair", "N_CT_PAIR"), "per body pair: S, O, first and end point, never skipped"),
    F("ct_pc", "f", ("n_body_pair", "N_CT_PC"), "per body pair: the bounding spheres (m)"),
    F("ct_feat", "i", ("n_point", 2), "per point its features tested against a box (−1: none)"),
    F("ct_ft", "f", ("n_feature", "N_CT_FT"), "the features: swept segment and box (m)"),
    F("ct_bp", "i", ("n_point",), "per point its box pair (−1: none)"),
    F("ct_bx", "f", ("n_box_pair", "N_CT_BX"), "the box pairs: centres and half lengths (m)"),
    F("ct_state", "d", ("n_point",), "each point's impact speed (m/s), recorded at accepted steps"),
    F("ct_opt", "i", (1,), "1: the broad phase is on (activation)"),
    F("ct_stats", "w", ("N_CT_STATS",), "counters summed over evaluations (evaluations, points evaluated, ...)"),
    # ---- the evaluation's intermediates (an evaluation allocates nothing but ẏ)
    F("X", "w", ("m", "ns", 6), "X = Jc M⁻¹"),
    F("Lb", "w", ("m", "bw1"), "the band Cholesky factor of S, Lb[i, d] = L[i, i − d]"),
    F("dropped", "w", ("m",), "1.0 for the rows the factor dropped"),
    F("ratio", "w", ("m",), "each row's pivot ratio"),
    F("X_kin", "w", ("m", "ns", 6), "the singular measure's X (length-weighted)"),
    F("L_kin", "w", ("m", "bw1"), "its factor"),
    F("drop_kin", "w", ("m",), "its dropped rows"),
    F("ratio_kin", "w", ("m",), "its pivot ratios"),
    F("vres", "w", ("m",), "Jv v + Φt per row"),
    F("rhs_c", "w", ("m",), "Jv M⁻¹ f − γ̂ per row"),
    F("lam", "w", ("m",), "λ per row"),
    F("lam_new", "w", ("m",), "the augmented Lagrangian's next λ"),
    F("Fo", "w", ("nb", 3), "the applied forces per body (N, world)"),
    F("No", "w", ("nb", 3), "the applied moments about each com (N m, world)"),
    F("fv", "w", ("nv",), "the generalised applied forces per velocity"),
    F("vd", "w", ("nv",), "the accelerations v̇ (m/s², rad/s², world)"),
)

#: each constraint group's arrays (n instances of one template), after COMMON (header index grp[g, G_BASE])
GROUP = (
    F("gather", "i", ("n", "n_gather"), "per instance the addresses of its slots' coordinates in qf"),
    F("markers", "f", ("n", "n_marker"), "per instance its markers: origin (m) and axes in their bodies, 12 a slot"),
    F("params", "f", ("n", "n_param"), "per instance the template's parameters"),
    F("bodies", "i", ("n", "n_slot"), "per instance the body of each slot"),
    F("F", "d", ("n", 3), "drivers: f, f', f'' at t (written by Python for a callback, else by compiled code)"),
    F("ref", "d", ("n", "n_angle"), "the angles' continuity references (rad, over turns)"),
    F("mpos", "i", ("n", "n_measure_col"), "per instance and joint measure its position in the model's measures (−1)"),
    F("fn_kind", "i", ("n",), "how compiled code evaluates the time function (_kernels.FN_*)"),
    F("fn_prog", "i", ("n", 3), "the programs of f, f', f''"),
    F("fn_const", "f", ("n", "n_fn_const"), "their constants c_k"),
    F("spl_x", "f", ("n", "n_knot"), "a table's knots (s)"),
    F("spl_c", "f", ("n", 4, "n_span"), "its cubic spline's coefficients"),
    F("spl_n", "i", ("n",), "its knots' count"),
    F("Q", "w", ("n", "n_gather"), "the gathered coordinates"),
    F("QD", "w", ("n", "n_gather"), "their rates"),
    F("W", "w", ("n", "n_angle"), "the angles' windings (turns)"),
    F("Jg", "w", ("n", "neq", "n_gather"), "Φq per instance"),
    F("Gg", "w", ("n", "neq"), "γ per instance"),
    F("Ph", "w", ("n", "neq"), "Φ per instance"),
    F("Pt", "w", ("n", "neq"), "Φt per instance"),
    F("An", "w", ("n", "n_angle"), "raw angles (rad)"),
    F("Ms", "w", ("n", "n_measure"), "joint measures (rad or m)"),
)
