"""The ``cadmotion`` command line.

    cadmotion run MODEL [--t-end T] [--steps N] [-o OUT ...]      kinematics (or --analysis dynamic)
                        [--json] [--report FILE] [--accept-violations] [--initial-pose file|series]
                        [--configuration JOINT=VALUE ...]                 (.urdf: the initial joint coordinates)
    cadmotion check MODEL [--t-end T] [--steps N] [--json] [--report FILE] [--clearance D] [--check-jointed]
    cadmotion equations MODEL [--joint NAME] [--latex]
    cadmotion inspect FILE [--json]
    cadmotion formulations                                        dynamics formulations and integrators
    cadmotion batch IN_DIR -o OUT_DIR --to glb,html,csv [--jobs N] [--force] [--scheduler tcp://...]
    cadmotion freecad-install [--dry-run] [--uninstall]

MODEL is any file the importers read (.toml, .step/.stp, .FCStd, .asmt). Errors print
one message (file, item, what to do) and exit non-zero; nothing is written half-way.

Exit codes of ``run``: 0 done; 1 an error (bad model, bad setting); 4 the run stopped early
(the frames before are written); 8 a run broke one of its invariants (a dynamic run: energy
balance, constraint violations, momentum of a free system, step count; a kinematic or inverse
run: its frames' continuity — the frames are written, the answer is suspect;
``--accept-violations`` makes it 0); 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import CadmotionError

__all__ = ["main", "build_parser", "EXIT_INVARIANT", "FORMULATION_NAMES", "INTEGRATOR_NAMES"]

#: ``run``'s exit codes (``check`` uses 3–7): a dynamic run broke an invariant 8, stopped 4, interrupted 130
from .run_analysis import EXIT_INTERRUPTED, EXIT_INVARIANT, EXIT_STOPPED  # noqa: E402,F401
#: the registries' names, for ``--help`` without importing the kernel (a test keeps them equal
#: to :data:`cadmotion.kernel.dynamics.FORMULATIONS` and the integrators the formulations run)
FORMULATION_NAMES = ("projection", "baumgarte", "penalty", "augmented-lagrangian", "index3", "partitioning",
                     "semi-recursive", "recursive")
INTEGRATOR_NAMES = ("DOP853", "RK45", "RK23", "Radau", "BDF", "LSODA", "RK4", "generalized-alpha", "HHT")
#: events a run may have many of (impacts and switches of unilateral contacts): the summary lists this
#: many of each kind and counts the rest (``--json`` and ``--report`` list them all)
_COUNTED_EVENTS = {"impact": 12, "contact": 12}


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _float(text):
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


def _pair(text):
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2 or not all(parts):
        raise CadmotionError(f"--ignore {text!r}: expected PART_A,PART_B")
    return tuple(parts)


def _vector(text):
    parts = text.split(",")
    if len(parts) != 3:
        raise argparse.ArgumentTypeError(f"expected three comma-separated numbers, got {text!r}")
    return tuple(_float(p) for p in parts)


def _setting(text):
    """``--configuration JOINT=VALUE``: (joint, value) with VALUE a number (rad or m; never evaluated)."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected JOINT=VALUE, got {text!r}")
    return name.strip(), _float(value.strip())


def _option(text):
    """``--option KEY=VALUE``: a formulation option; VALUE is true/false, a number or else a word
    (never evaluated)."""
    key, sep, value = text.partition("=")
    key, value = key.strip(), value.strip()
    if not sep or not key.isidentifier() or not value:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE (e.g. alpha=20), got {text!r}")
    if value.lower() in ("true", "false"):
        return key, value.lower() == "true"
    try:
        number = float(value)
    except ValueError:
        return key, value
    return key, int(number) if number.is_integer() and value.lstrip("+-").isdigit() else number


def build_parser(command=None):
    """The ``cadmotion`` argument parser with every sub-command (no heavy imports).

    ``command``: the sub-command about to be parsed (``""`` for none), where known. The
    sub-commands of :data:`EXTERNAL_COMMANDS` get their options from their own modules; those
    are imported only for that sub-command (or for all when ``command`` is None), so that
    ``run`` does not load the batch runner and the FreeCAD installer."""
    parser = argparse.ArgumentParser(prog="cadmotion", description="Mechanism simulation for CAD assemblies.")
    sub = parser.add_subparsers(dest="command", required=True)

    def span(p):
        p.add_argument("--t-end", type=_float, default=None, help="end time in s (default: the model's, else 1)")
        p.add_argument("--steps", type=_positive_int, default=None,
                       help="output intervals: N+1 frames from t=0 to t-end (default: the model's, else 100)")
        p.add_argument("--parametrization", default="euler-parameters", choices=["euler-parameters", "euler-313"],
                       help="orientation coordinates (default: euler-parameters)")
        p.add_argument("--drive", action="append", default=[], metavar="NAME=EXPR",
                       help="drive a joint (rad or m from the initial pose) or PART.x|y|z (m) by an expression of t, "
                            "e.g. \"crank_pivot=2*pi*t\"; replaces the file's driver of that coordinate; repeatable")
        p.add_argument("--initial-pose", choices=["file", "series"], default=None,
                       help=".asmt files: start where the part blocks put the parts (file, the default) or at the "
                            "first frame of the file's stored TimeSeries (series: what OndselSolver assembled)")
        p.add_argument("--configuration", action="append", type=_setting, default=[], metavar="JOINT=VALUE",
                       help=".urdf files: start with the joint turned (rad) or slid (m) that far from the file's "
                            "zero configuration (its limits and coordinates are then measured from there), e.g. "
                            "panda_joint4=-1.5; repeatable")

    def free_dof(p):
        p.add_argument("--free-dof", choices=["refuse", "minimal"], default="refuse",
                       help="kinematic runs whose drivers leave degrees of freedom free: refuse them (default) or "
                            "move the free coordinates minimally, each pose the closest to the last (OndselSolver's "
                            "quasi-kinematic mode)")

    run = sub.add_parser("run", help="simulate a mechanism and write outputs")
    run.add_argument("model")
    span(run)
    run.add_argument("-o", "--output", action="append", default=[],
                     help="output file; the extension picks the writer "
                          "(.csv .json .glb .gltf .html .step .png .svg); repeatable")
    run.add_argument("--analysis", choices=["kinematic", "dynamic", "inverse"], default="kinematic",
                     help="kinematic: driven motion; dynamic: motion under forces; inverse: driven motion plus "
                          "the driver efforts and joint reactions it takes (needs mass properties)")
    free_dof(run)
    run.add_argument("--gravity", type=_vector, default=None, metavar="GX,GY,GZ",
                     help="gravity in m/s^2, assembly frame (replaces the file's; FreeCAD documents store none)")
    run.add_argument("--formulation", default=None, metavar="NAME",
                     help="dynamics formulation: " + ", ".join(FORMULATION_NAMES) + " (default: chosen for the model: "
                          "projection / Radau compiled with the model when it is stiff for the output interval "
                          "(index3 without numba), else semi-recursive / DOP853 for joints that form an open tree "
                          "(recursive when over 64 joints deep) and projection / DOP853 for the rest); "
                          "one line each: `cadmotion formulations`")
    run.add_argument("--integrator", default=None, metavar="NAME",
                     help="dynamics integrator: DOP853 (default), RK45, RK23, Radau, BDF, LSODA, RK4 (fixed step); "
                          "with index3: generalized-alpha (default), HHT (fixed step)")
    run.add_argument("--rtol", type=_float, default=None,
                     help="relative tolerance of the dynamics integrator, in (0, 1) (default 1e-8)")
    run.add_argument("--atol", type=_float, default=None,
                     help="absolute tolerance of the dynamics integrator (m, m/s, rad/s), in (0, 1) (default 1e-10)")
    run.add_argument("--dt", type=_float, default=None,
                     help="step of the fixed-step integrators (RK4, generalized-alpha, HHT), s, in (0, t-end] "
                          "(default min(output interval, 1 ms))")
    run.add_argument("--option", type=_option, action="append", default=[], metavar="KEY=VALUE",
                     help="an option of the dynamics formulation that runs, e.g. --formulation recursive --option "
                          "alpha=20 --option beta=20 (its Baumgarte parameters, 1/s); repeatable; overrides the "
                          "model file's [formulation.<name>] table; `cadmotion formulations` lists each one's")
    run.add_argument("--no-error-estimate", dest="estimate_error", action="store_false",
                     help="dynamic runs: do not run the motion again at a tenth of the tolerances (half the step) "
                          "to estimate its global error (the invariant motion.error); saves that second run")
    run.add_argument("--resolve-penetration", action="store_true",
                     help="dynamic runs: move parts whose declared contacts start inside each other apart (the "
                          "least change of the pose, joints kept) and say so, instead of refusing the model")
    run.add_argument("--accept-violations", action="store_true",
                     help=f"exit 0 even when a run breaks an invariant (dynamic: energy balance, constraint "
                          f"violations, momentum, step count, the estimated global error; kinematic and inverse: "
                          f"the frames' continuity); "
                          f"the summary and report still say so "
                          f"(otherwise exit {EXIT_INVARIANT})")
    run.add_argument("--json", action="store_true",
                     help="print a JSON report on standard output (status, formulation and integrator that ran, "
                          "counters, invariants, events)")
    run.add_argument("--report", default=None, metavar="FILE", help="also write the JSON report to this file")
    run.add_argument("--at", type=_float, default=None, help="time of a .step output (default: the last frame)")
    run.add_argument("--plot", default=None, help="parts or joints to plot, comma separated")
    run.add_argument("-q", "--quiet", action="store_true", help="no progress or summary")

    chk = sub.add_parser("check", help="mobility, assembly and driven-motion checks")
    chk.add_argument("model")
    span(chk)
    chk.add_argument("--json", action="store_true", help="print the report as JSON on standard output")
    chk.add_argument("--report", default=None, help="also write the JSON report to this file")
    chk.add_argument("--no-interference", dest="interference", action="store_false",
                     help="skip the collision check of parts with geometry")
    chk.add_argument("--clearance", type=_float, default=None,
                     help="gap unjointed parts must keep, in metres (default: the model's [check], else 0: "
                          "report touching parts)")
    chk.add_argument("--near", type=_float, default=None,
                     help="list pairs closer than this (m) with their minimum distance (default clearance + 1 mm)")
    chk.add_argument("--check-jointed", action="store_true", default=None,
                     help="also check parts joined by a joint, against --joint-clearance")
    chk.add_argument("--ignore", action="append", default=[], metavar="PART_A,PART_B",
                     help="a pair whose contact is by design (names or globs, e.g. \"Link*,M3x20*\"); repeatable")
    free_dof(chk)
    chk.add_argument("--joint-clearance", type=_float, default=None,
                     help="gap jointed parts must keep, m; negative allows that much overlap (pins line-to-line)")

    eq = sub.add_parser("equations", help="print the generated constraint equations and Jacobian blocks")
    eq.add_argument("model")
    eq.add_argument("--joint", default=None, help="only this joint or driver")
    eq.add_argument("--latex", action="store_true")
    eq.add_argument("--parametrization", default="euler-parameters", choices=["euler-parameters", "euler-313"])

    ins = sub.add_parser("inspect", help="list the parts and joints a file holds")
    ins.add_argument("file")
    ins.add_argument("--json", action="store_true")

    frm = sub.add_parser("formulations", help="list the dynamics formulations and integrators, one line each")
    frm.add_argument("--json", action="store_true")

    for name, (module, help_text) in EXTERNAL_COMMANDS.items():
        cmd = sub.add_parser(name, help=help_text)
        if command is None or command == name:
            _external(module).add_arguments(cmd)
    return parser


#: subcommands implemented in their own modules: name -> (module under cadmotion.plugin, help).
#: Each module defines ``add_arguments(parser)`` and ``run(args) -> exit code``.
EXTERNAL_COMMANDS = {
    "batch": ("batch", "run every model in a folder and write the chosen outputs"),
    "freecad-install": ("freecad.install", "install the cadmotion macro and workbench into FreeCAD"),
}


def _external(module):
    import importlib

    return importlib.import_module(f"cadmotion.plugin.{module}")


def _load_spec(args):
    """The mechanism of ``args.model`` as the file holds it (``--drive`` and ``--gravity`` are
    applied by the run service, :mod:`.run_analysis`)."""
    from ..importers import load

    return load(args.model, **_reader_options(args))


def _reader_options(args):
    """Reader keywords from the command line: ``--initial-pose`` for .asmt files (an error
    naming the file for any other kind, which has no stored series to start from) and
    ``--configuration`` for .urdf files (an error naming the file for any other kind: they place their
    parts themselves)."""
    from pathlib import Path

    from ..errors import CadImportError

    options = {}
    suffix = Path(args.model).suffix.lower()
    pose = getattr(args, "initial_pose", None)
    if pose is not None:
        if suffix != ".asmt":
            raise CadImportError("--initial-pose applies to OndselSolver .asmt files only", where=str(args.model),
                                 hint="drop --initial-pose; other files start where they place the parts")
        options["initial_pose"] = pose
    configuration = getattr(args, "configuration", None)
    if configuration:
        if suffix != ".urdf":
            raise CadImportError("--configuration applies to URDF files only", where=str(args.model),
                                 hint="drop --configuration; other files start where they place the parts")
        options["configuration"] = dict(configuration)
    return options


def _progress(enabled, total):
    if not enabled or not sys.stderr.isatty():
        return None, lambda: None
    try:
        from tqdm import tqdm
    except ImportError:
        return None, lambda: None
    bar = tqdm(total=total, unit="frame", leave=False)
    return (lambda k, nt: bar.update(1)), bar.close


def cmd_run(args):
    """``cadmotion run``: load, analyse, write the outputs; returns the exit code."""
    try:
        return _run(args)
    except CadmotionError as exc:
        if args.json or args.report:
            _emit_report(args, dict(model=args.model, analysis=args.analysis, status="error", message=str(exc),
                                    exit_code=1))
        raise


def _run(args):
    from .run_analysis import DYNAMICS_OPTIONS, run_spec, time_span

    if args.option and args.analysis != "dynamic":
        raise CadmotionError(f"--option sets a dynamics formulation's option; this is a {args.analysis} run",
                             hint="add --analysis dynamic")
    if not args.estimate_error and args.analysis != "dynamic":
        raise CadmotionError(f"--no-error-estimate applies to dynamic runs; this is a {args.analysis} run",
                             hint="add --analysis dynamic, or leave the flag out")
    solver_options = {}
    if args.option:
        solver_options["options"] = dict(args.option)
    if not args.estimate_error:
        solver_options["estimate_error"] = False
    spec = _load_spec(args)
    t_end, steps = time_span(spec, args.t_end, args.steps)
    if args.output:
        from .writers import check_outputs

        check_outputs(args.output)  # fail on a bad extension or folder before computing
    progress, close = _progress(not args.quiet, steps)
    try:
        run = run_spec(spec, args.analysis, t_end=t_end, steps=steps, parametrization=args.parametrization,
                       drive=args.drive, gravity=args.gravity, progress=progress, free_dof=args.free_dof,
                       resolve_penetration=args.resolve_penetration,
                       solver_options=solver_options or None,
                       **{k: getattr(args, k) for k in DYNAMICS_OPTIONS})
    finally:
        close()
    model, motion, result = run.model, run.motion, run.result
    written = []
    if args.output:
        from .writers import write_outputs

        written = write_outputs(motion, args.output, at=args.at, plot=args.plot, partial=not motion.complete)
    from .run_analysis import outcome, run_invariants

    invariants = run_invariants(motion, result)
    code, status = outcome(motion, result, args.accept_violations)
    if not args.quiet:
        _print_summary(args, model, motion, result, invariants, written, status, code)
    if args.json or args.report:
        _emit_report(args, _run_report(args, model, motion, result, written, status, code))
    return code


def _print_summary(args, model, motion, result, invariants, written, status, code):
    """The run's summary on standard error: frames, what ran, what was checked, what broke."""
    err = sys.stderr
    if status == "stopped":
        state = f"STOPPED EARLY: {motion.message}"
    elif status == "invariant-broken":
        state = (f"complete but SUSPECT: {len(invariants.broken)} invariant(s) broken "
                 f"({', '.join(c.name for c in invariants.broken)})")
    else:
        state = "complete" if motion.complete else motion.message
    print(f"{model.spec.name}: {motion.nt} frames, t = {motion.time[0]:.6g} .. {motion.time[-1]:.6g} s, {state}",
          file=err)
    if result is not None:
        print(f"  ran: {_ran_line(result, args, motion)}", file=err)
        for note in _notes(result.notes):
            print(f"  note: {note}", file=err)
    shown = {}
    for e in motion.events:
        if e.kind == "stats" and result is not None:
            continue  # said by "ran"
        if e.kind in _COUNTED_EVENTS:
            shown[e.kind] = shown.get(e.kind, 0) + 1
            if shown[e.kind] > _COUNTED_EVENTS[e.kind]:
                continue
        label = "INVARIANT BROKEN" if e.kind == "invariant" else e.kind
        print(f"  {label} at t = {e.time:.6g} s: {e.message}", file=err)
    for kind, count in shown.items():
        if count > _COUNTED_EVENTS[kind]:
            print(f"  ... {count - _COUNTED_EVENTS[kind]} more {kind} event(s) ({count} in all; every one in --json)",
                  file=err)
    if invariants is not None:
        checked = "; ".join(c.line() for c in invariants.checks)
        print(f"  checked: {checked}", file=err)
        for why in invariants.skipped:
            print(f"  not checked: {why}", file=err)
    for path in written:
        print(f"  wrote {path}{' (suspect: see above)' if status == 'invariant-broken' else ''}", file=err)
    if status == "invariant-broken":
        print(f"  exit {code}: " + ("accepted (--accept-violations)" if code == 0 else
                                    "an invariant is broken; --accept-violations to accept the run"), file=err)


def _ran_line(result, args, motion):
    """``projection / DOP853 (compiled loop), rtol 1e-08, atol 1e-10: 582 steps, ...``."""
    how = result.integrator
    if result.compiled_loop:
        how += " (compiled loop)"
    if result.dt is not None:
        how += f", dt {result.dt:.3g} s"
    else:
        how += f", rtol {_tolerance(result, args, 'rtol'):.3g}, atol {_tolerance(result, args, 'atol'):.3g}"
    return (f"{result.formulation} / {how}: {result.nsteps} steps, {result.nfev} evaluations, "
            f"{result.nfactor} factorisations, {result.nproject} projections")


def _notes(notes):
    """The run's notes, the singular-configuration crossings counted in one line."""
    crossings = [n for n in notes if n.startswith("singular configuration crossed")]
    out = [n for n in notes if n not in crossings and "compiled loop" not in n]
    if crossings:
        out.append(f"{len(crossings)} singular-configuration crossing(s) by index-3 generalised-α steps "
                   f"(first: {crossings[0][len('singular configuration crossed '):]})")
    return out


def _run_report(args, model, motion, result, written, status, code):
    """The JSON report of ``run`` (``--json``, ``--report``)."""
    data = dict(model=args.model, name=model.spec.name, analysis=args.analysis, status=status, exit_code=code,
                complete=motion.complete, message=motion.message, frames=motion.nt,
                t_start=float(motion.time[0]) if motion.nt else None,
                t_end=float(motion.time[-1]) if motion.nt else None)
    if result is not None:
        data.update(formulation=result.formulation, integrator=result.integrator,
                    compiled_loop=bool(result.compiled_loop),
                    rtol=_tolerance(result, args, "rtol"), atol=_tolerance(result, args, "atol"), dt=args.dt,
                    accept_violations=bool(args.accept_violations),
                    counters=dict(steps=int(result.nsteps), evaluations=int(result.nfev),
                                  factorisations=int(result.nfactor), projections=int(result.nproject)),
                    notes=list(result.notes))
    from .run_analysis import run_invariants

    inv = run_invariants(motion, result)
    if inv is not None:
        data["invariants"] = inv.to_dict()
    data["events"] = [dict(kind=e.kind, time=float(e.time), message=e.message, items=list(e.items))
                      for e in motion.events]
    data["outputs"] = [str(p) for p in written]
    return data


def _tolerance(result, args, name):
    """The tolerance ``rtol`` or ``atol`` the run went at: the result's (the automatic choice may
    pick its own), else the flag's, else the kernel's default."""
    from ..kernel.dynamics import forward

    if getattr(result, name, None) is not None:
        return getattr(result, name)
    if getattr(args, name) is not None:
        return getattr(args, name)
    return {"rtol": forward.DEFAULT_RTOL, "atol": forward.DEFAULT_ATOL}[name]


def _emit_report(args, data):
    text = json.dumps(data, indent=2, default=_json_default)
    if args.report:
        from .writers.atomic import atomic_write

        with atomic_write(args.report, "w") as fh:
            fh.write(text + "\n")
    if args.json:
        print(text)


def _json_default(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)


def cmd_formulations(args):
    """``cadmotion formulations``: every formulation and integrator, one line each."""
    from ..kernel.dynamics.formulations import FORMULATIONS
    from ..kernel.dynamics.forward import (DEEP_TREE, DEEP_TREE_FORMULATION, DEFAULT_FORMULATION, TREE_FORMULATION,
                                           describe_methods)

    forms, integrators = describe_methods()
    if args.json:
        print(json.dumps(dict(default=DEFAULT_FORMULATION, open_tree_default=TREE_FORMULATION,
                              deep_tree_default=DEEP_TREE_FORMULATION, deep_tree_depth=DEEP_TREE,
                              formulations=[dict(name=n, summary=s, default_integrator=d, integrators=list(i),
                                                 options=dict(FORMULATIONS[n].defaults))
                                            for n, s, d, i in forms],
                              integrators=[dict(name=n, summary=s) for n, s in integrators]), indent=2))
        return 0
    width = max(len(n) for n, *_ in forms + [(n,) for n, _ in integrators])
    print(f"formulations (--formulation NAME, --option KEY=VALUE; * the default, {TREE_FORMULATION} where the joints "
          f"form an open tree, {DEEP_TREE_FORMULATION} where it is over {DEEP_TREE} joints deep):")
    for name, summary, default, names in forms:
        mark = "*" if name == DEFAULT_FORMULATION else " "
        runs = ", ".join(f"{n}*" if n == default else n for n in names)
        options = ", ".join(f"{k}={v}" for k, v in FORMULATIONS[name].defaults.items())
        print(f"  {name:<{width}} {mark} {summary}; integrators: {runs}" + (f"; options: {options}" if options else ""))
    print("integrators (--integrator NAME; * the formulation's default):")
    for name, summary in integrators:
        print(f"  {name:<{width}}   {summary}")
    return 0


def cmd_check(args):
    """``cadmotion check``: mobility, assembly, motion, limits and interference; returns the status's exit code."""
    from .check import EXIT_CODES, CheckReport, check

    try:
        report = check(_load_spec(args), drive=args.drive, t_end=args.t_end, steps=args.steps,
                       parametrization=args.parametrization,
                       interference=args.interference, clearance=args.clearance, near=args.near,
                       exclude_jointed=None if args.check_jointed is None else not args.check_jointed,
                       joint_clearance=args.joint_clearance, ignore=[_pair(text) for text in args.ignore],
                       free_dof=args.free_dof)
    except CadmotionError as exc:
        report = CheckReport(model=args.model, status="error", messages=[str(exc)])
    data = report.to_dict()
    data["exit_code"] = EXIT_CODES[report.status]
    _emit_report(args, data)
    if not args.json:
        print(report.summary())
    return report.exit_code


def cmd_equations(args):
    """``cadmotion equations``: print the generated constraint equations of a model."""
    from .equations import describe_equations

    from ..importers import load
    from ..kernel import compile_model

    model = compile_model(load(args.model), args.parametrization)
    print(describe_equations(model, joint=args.joint, latex=args.latex))
    return 0


def cmd_inspect(args):
    """``cadmotion inspect``: list the parts, joints and drivers a file holds."""
    from ..importers import load

    spec = load(args.file)
    parts = [dict(name=p.name, path=p.path, fixed=p.fixed, mass=p.mass, com=list(p.com),
                  position=list(p.position), orientation=list(p.orientation),
                  color=list(p.color) if p.color else None) for p in spec.parts]
    joints = [dict(name=j.name, type=j.type, parts=list(j.parts), joints=list(j.joints), params=dict(j.params),
                   limits={k: list(v) for k, v in j.limits}, **({"stop": dict(j.stop)} if j.stop else {}))
              for j in spec.joints]
    drivers = [dict(name=d.name, joint=d.joint, part=d.part, coordinate=d.coordinate,
                    expression=d.function.expression) for d in spec.drivers]
    if args.json:
        print(json.dumps(dict(parts=parts, joints=joints, drivers=drivers), indent=2))
        return 0
    print(f"{spec.name}: {len(parts)} parts, {len(joints)} joints, {len(drivers)} drivers")
    for p in parts:
        mass = f"{p['mass']:.6g} kg" if p["mass"] is not None else "mass unknown"
        com = ", ".join(f"{c:.4g}" for c in p["com"])
        print(f"  part  {p['name']:<30} {'fixed ' if p['fixed'] else ''}{mass}, com ({com}) m")
    for j in joints:
        print(f"  joint {j['name']:<30} {j['type']} {' - '.join(j['parts'] or j['joints'])}")
    for d in drivers:
        print(f"  driver {d['name']:<29} {d['joint'] or d['part']} = {d['expression']}")
    return 0


COMMANDS = {"run": cmd_run, "check": cmd_check, "equations": cmd_equations, "inspect": cmd_inspect,
            "formulations": cmd_formulations}


def _show_warning(message, category, filename, lineno, file=None, line=None):
    print(f"cadmotion: warning: {message}", file=sys.stderr)


def main(argv=None):
    """Entry point of the ``cadmotion`` command; returns the process exit code."""
    import warnings

    warnings.showwarning = _show_warning
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(next((a for a in argv if not a.startswith("-")), ""))
    args = parser.parse_args(argv)
    try:
        if args.command in EXTERNAL_COMMANDS:
            return _external(EXTERNAL_COMMANDS[args.command][0]).run(args)
        return COMMANDS[args.command](args)
    except CadmotionError as exc:
        print(f"cadmotion: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("cadmotion: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and closed: not an error
        sys.stderr.close()
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
