"""The ``cadmotion`` command line.

    cadmotion run MODEL [--t-end T] [--steps N] [-o OUT ...]      kinematics (or --analysis dynamic)
    cadmotion check MODEL [--t-end T] [--steps N] [--json] [--report FILE] [--clearance D] [--check-jointed]
    cadmotion equations MODEL [--joint NAME] [--latex]
    cadmotion inspect FILE [--json]
    cadmotion batch IN_DIR -o OUT_DIR --to glb,html,csv [--jobs N] [--force] [--scheduler tcp://...]
    cadmotion freecad-install [--dry-run] [--uninstall]

MODEL is any file the importers read (.toml, .step/.stp, .FCStd, .asmt). Errors print
one message (file, item, what to do) and exit non-zero; nothing is written half-way.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import CadmotionError

__all__ = ["main", "build_parser"]


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


def build_parser():
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

    run = sub.add_parser("run", help="simulate a mechanism and write outputs")
    run.add_argument("model")
    span(run)
    run.add_argument("-o", "--output", action="append", default=[],
                     help="output file; the extension picks the writer (.csv .json .glb .gltf .html .step .png .svg); repeatable")
    run.add_argument("--analysis", choices=["kinematic", "dynamic", "inverse"], default="kinematic",
                     help="kinematic: driven motion; dynamic: motion under forces; inverse: driven motion plus "
                          "the driver efforts and joint reactions it takes (needs mass properties)")
    run.add_argument("--gravity", type=_vector, default=None, metavar="GX,GY,GZ",
                     help="gravity in m/s^2, assembly frame (replaces the file's; FreeCAD documents store none)")
    run.add_argument("--formulation", default=None, help="dynamics formulation (see --help-formulations)")
    run.add_argument("--integrator", default=None, help="dynamics integrator: RK45, DOP853, Radau, BDF, LSODA, RK4")
    run.add_argument("--rtol", type=_float, default=None)
    run.add_argument("--atol", type=_float, default=None)
    run.add_argument("--dt", type=_float, default=None, help="step of fixed-step integrators, s")
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

    for name, (module, help_text) in EXTERNAL_COMMANDS.items():
        cmd = sub.add_parser(name, help=help_text)
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
    """The mechanism of ``args.model`` with the command line's drivers and gravity."""
    from ..importers import load
    from ..importers.drive_option import with_drivers, with_gravity

    spec = with_drivers(load(args.model), args.drive)
    return with_gravity(spec, getattr(args, "gravity", None))


def _load_model(args):
    from ..kernel import compile_model

    spec = _load_spec(args)
    return spec, compile_model(spec, args.parametrization)


def _span(args, spec):
    t_end = args.t_end if args.t_end is not None else spec.setting("t_end", 1.0)
    steps = args.steps if args.steps is not None else int(spec.setting("steps", 100))
    if t_end <= 0:
        raise CadmotionError(f"--t-end must be positive, got {t_end}")
    return float(t_end), int(steps)


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
    spec, model = _load_model(args)
    t_end, steps = _span(args, spec)
    if args.output:
        from .writers import check_outputs

        check_outputs(args.output)  # fail on a bad extension or folder before computing
    progress, close = _progress(not args.quiet, steps)
    try:
        if args.analysis == "dynamic":
            from ..kernel.dynamics import simulate

            options = {k: getattr(args, k) for k in ("formulation", "integrator", "rtol", "atol", "dt")
                       if getattr(args, k) is not None}
            motion = simulate(model, t_end, steps, **options)
        else:
            from ..kernel import kinematics

            motion = kinematics(model, t_end=t_end, steps=steps, progress=progress)
            if args.analysis == "inverse":
                from ..kernel.dynamics import inverse_dynamics

                motion = inverse_dynamics(model, motion)
    finally:
        close()
    written = []
    if args.output:
        from .writers import write_outputs

        written = write_outputs(motion, args.output, at=args.at, plot=args.plot, partial=not motion.complete)
    if not args.quiet:
        status = "complete" if motion.complete else f"STOPPED EARLY: {motion.message}"
        print(f"{model.spec.name}: {motion.nt} frames, t = {motion.time[0]:.6g} .. {motion.time[-1]:.6g} s, {status}",
              file=sys.stderr)
        for e in motion.events:
            print(f"  {e.kind} at t = {e.time:.6g} s: {e.message}", file=sys.stderr)
        for path in written:
            print(f"  wrote {path}", file=sys.stderr)
    if any(e.kind == "interrupted" for e in motion.events):
        return 130
    return 0 if motion.complete else 4


def cmd_check(args):
    from .check import EXIT_CODES, CheckReport, check

    try:
        report = check(_load_spec(args), t_end=args.t_end, steps=args.steps, parametrization=args.parametrization,
                       interference=args.interference, clearance=args.clearance, near=args.near,
                       exclude_jointed=None if args.check_jointed is None else not args.check_jointed,
                       joint_clearance=args.joint_clearance, ignore=[_pair(text) for text in args.ignore])
    except CadmotionError as exc:
        report = CheckReport(model=args.model, status="error", messages=[str(exc)])
    data = report.to_dict()
    data["exit_code"] = EXIT_CODES[report.status]
    text = json.dumps(data, indent=2, default=float)
    if args.report:
        from .writers.atomic import atomic_write

        with atomic_write(args.report, "w") as fh:
            fh.write(text + "\n")
    if args.json:
        print(text)
    else:
        print(report.summary())
    return report.exit_code


def cmd_equations(args):
    from .equations import describe_equations

    from ..importers import load
    from ..kernel import compile_model

    model = compile_model(load(args.model), args.parametrization)
    print(describe_equations(model, joint=args.joint, latex=args.latex))
    return 0


def cmd_inspect(args):
    from ..importers import load

    spec = load(args.file)
    parts = [dict(name=p.name, path=p.path, fixed=p.fixed, mass=p.mass, com=list(p.com),
                  position=list(p.position), orientation=list(p.orientation),
                  color=list(p.color) if p.color else None) for p in spec.parts]
    joints = [dict(name=j.name, type=j.type, parts=list(j.parts), joints=list(j.joints), params=dict(j.params),
                   limits={k: list(v) for k, v in j.limits}) for j in spec.joints]
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


COMMANDS = {"run": cmd_run, "check": cmd_check, "equations": cmd_equations, "inspect": cmd_inspect}


def _show_warning(message, category, filename, lineno, file=None, line=None):
    print(f"cadmotion: warning: {message}", file=sys.stderr)


def main(argv=None):
    """Entry point of the ``cadmotion`` command; returns the process exit code."""
    import warnings

    warnings.showwarning = _show_warning
    parser = build_parser()
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
