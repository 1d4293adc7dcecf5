"""``cadmotion batch``: run every model in a folder and write the chosen outputs.

    cadmotion batch IN_DIR -o OUT_DIR [--to glb,html,csv] [--jobs N] [--force]
                    [--t-end T] [--steps N] [--parametrization P]
                    [--analysis kinematic|dynamic|inverse] [--drive NAME=EXPR ...]
                    [--gravity GX,GY,GZ] [--formulation F] [--integrator I]
                    [--rtol R] [--atol A] [--dt DT] [--no-error-estimate]
                    [--accept-violations] [--scheduler tcp://host:port] [--quiet]

Analysis
    Every item is solved as ``cadmotion run MODEL`` with the same flags solves it (one
    code path, :mod:`cadmotion.plugin.run_analysis`): ``--analysis``, ``--drive`` (applied
    to every model; a model without that joint fails, the others run), ``--gravity`` and,
    for ``dynamic``, ``--formulation``, ``--integrator``, ``--rtol``, ``--atol``, ``--dt``,
    ``--no-error-estimate``.
    A dynamic run that breaks an invariant (energy balance, constraint violation, ...)
    writes its outputs and is ``failed`` at stage ``check`` unless ``--accept-violations``
    is given; the report lists the broken invariants either way (``invariants_broken``).

Models
    Found recursively under IN_DIR (hidden files and folders, and OUT_DIR if it lies
    inside IN_DIR, are not searched): ``*.cadmotion.toml`` model files, ``*.FCStd``
    FreeCAD Assembly documents, ``*.asmt`` OndselSolver files, and STEP files
    (``.step``/``.stp``) that have a sidecar ``<name>.cadmotion.toml``. A STEP file and
    its sidecar are one item, run once (the sidecar names the STEP file with
    ``step = "..."``); a STEP file without a sidecar is reported as skipped, "no mates".

Outputs
    ``OUT_DIR/<name>.<ext>`` for every format of ``--to``, where ``<name>`` is the model's
    path under IN_DIR without its suffix: ``sub/arm.cadmotion.toml`` gives ``sub/arm.glb``.
    When a model file and a CAD file of one folder share a name (``arm.cadmotion.toml``,
    ``arm.FCStd``), the model file keeps it and the CAD file keeps its suffix
    (``arm.FCStd.glb``). Each file is written atomically (a temporary file renamed when
    complete), so no file that looks complete is ever half-written, and a failed or
    interrupted item leaves what was on disk before. ``OUT_DIR/report.json`` describes the
    run (see :func:`run_batch`); ``OUT_DIR/.cadmotion-batch.json`` keeps, per item, the
    input hash of its last run.

Item status
    ``ok``           the motion is complete and every output was written
    ``partial``      the motion stopped early (lock-up, singular position): the frames up
                     to there are written, marked incomplete in JSON, glTF and HTML
    ``failed``       reading, compiling, solving or writing raised an error (``message``,
                     ``stage``); the other items run on regardless
    ``skipped``      not run: ``reason`` is ``no mates`` (a STEP file without sidecar) or
                     ``unchanged`` (see Rerun; ``previous`` is the status it had then)
    ``interrupted``  not finished because the batch was interrupted; nothing written

Rerun
    An item's input hash covers the model file, the STEP files it uses (its ``step = ...``
    file and the STEP files the sidecar belongs to), the options that change results
    (``--t-end``, ``--steps``, ``--parametrization``) and the cadmotion version. An item
    whose hash equals the one of its last ``ok``/``partial`` run, and whose requested
    outputs were all written by that run and are still there, is skipped; ``--force`` runs
    every item. Failed and interrupted items always run again.

Parallel runs
    Locally, items run in a pool of ``--jobs`` processes (default: the number of CPUs).
    A worker process that dies (a crash in a native library) fails its own item only: the
    batch goes on in a new pool. With ``--scheduler tcp://host:port`` the items run on a
    Dask distributed cluster instead (``pip install "dask[distributed]"``); every worker
    must have cadmotion installed and see IN_DIR and OUT_DIR under the same paths (a
    shared file system), since workers read the models and write the outputs themselves.
    A worker process runs one item at a time, so start workers with one thread each and
    as many processes as cores: ``dask worker tcp://host:8786 --nworkers auto --nthreads 1``.

Progress and interruption
    On a terminal a progress bar counts finished models (tqdm, optional); in a pipe
    nothing is shown until the summary table, which goes to standard error (``--quiet``:
    no bar, no table). Ctrl-C (SIGINT) stops the batch: items not started do not run,
    running ones stop at their next output frame and write nothing (one already writing
    its files finishes them and counts as ok), finished ones keep their outputs; ``report.json``
    is written with ``"interrupted": true``. A second
    Ctrl-C stops the worker processes at once: an item that was being written may then
    have some of its outputs (each complete, never half-written) and is reported
    interrupted, so the next run does it again.

Exit code
    0 every item ok or skipped; 4 some item partial (as ``cadmotion run``), none failed;
    1 some item failed, or bad input (IN_DIR missing or without models, unknown format,
    OUT_DIR not writable): one message, nothing run; 130 interrupted.
    A skipped-as-unchanged item counts with the status of its last run.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import os
import signal
import sys
import threading
import time
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Tuple

from .. import __version__
from ..errors import CadmotionError, OutputError

__all__ = ["add_arguments", "run", "run_batch", "find_models", "run_item", "parse_formats",
           "input_hash", "summary", "BatchItem", "BatchOptions", "REPORT_FILE", "STATE_FILE"]

REPORT_FILE = "report.json"
STATE_FILE = ".cadmotion-batch.json"
STATE_VERSION = 1
MODEL_SUFFIX = ".cadmotion.toml"
STEP_SUFFIXES = (".step", ".stp")
CAD_SUFFIXES = (".fcstd", ".asmt", ".urdf")
STATUSES = ("ok", "partial", "failed", "skipped", "interrupted")
DEFAULT_FORMATS = "glb,html,csv"
EXIT_OK, EXIT_FAILED, EXIT_PARTIAL, EXIT_INTERRUPTED = 0, 1, 4, 130


@dataclass(frozen=True)
class BatchItem:
    """One model of a batch.

    Attributes
    ----------
    name : output name, the model's path under IN_DIR without suffix, '/'-separated.
    model : absolute path of the file given to :func:`cadmotion.importers.load`.
    inputs : absolute paths of every file the result depends on (the model first).
    """

    name: str
    model: str
    inputs: Tuple[str, ...]


@dataclass(frozen=True)
class BatchOptions:
    """What every item of a batch is run with.

    Attributes
    ----------
    formats : output extensions, lower case with the dot (``(".glb", ".csv")``).
    t_end : end time in s, or None for the model's ``[simulation] t_end`` (else 1 s).
    steps : output intervals, or None for the model's ``[simulation] steps`` (else 100).
    parametrization : orientation coordinates, as for ``cadmotion run``.
    analysis : ``kinematic``, ``dynamic`` or ``inverse``, as ``cadmotion run --analysis``.
    drive : ``NAME=EXPR`` texts, as ``--drive`` (applied to every model).
    gravity : (gx, gy, gz) m/s^2 replacing the models' own, or None.
    formulation, integrator, rtol, atol, dt : a dynamic run's settings (None: the kernel's).
    accept_violations : a broken invariant still counts the item ok.
    free_dof : ``refuse`` or ``minimal``, as ``cadmotion run --free-dof`` (kinematic runs).
    estimate_error : False: dynamic runs skip the companion run that estimates their global error
        (``cadmotion run --no-error-estimate``).
    """

    formats: Tuple[str, ...]
    t_end: Optional[float] = None
    steps: Optional[int] = None
    parametrization: str = "euler-parameters"
    analysis: str = "kinematic"
    drive: Tuple[str, ...] = ()
    gravity: Optional[Tuple[float, float, float]] = None
    formulation: Optional[str] = None
    integrator: Optional[str] = None
    rtol: Optional[float] = None
    atol: Optional[float] = None
    dt: Optional[float] = None
    accept_violations: bool = False
    free_dof: str = "refuse"
    estimate_error: bool = True

    def result_settings(self):
        """The settings beyond t_end, steps, parametrization that change an item's result or
        status, only those not at their default (so older state files keep their hashes)."""
        default = BatchOptions(formats=())
        names = ("analysis", "drive", "gravity", "formulation", "integrator", "rtol", "atol", "dt",
                 "accept_violations", "free_dof", "estimate_error")
        return {n: getattr(self, n) for n in names if getattr(self, n) != getattr(default, n)}


# ----------------------------------------------------------------------------- command line

def add_arguments(parser):
    """Add the ``batch`` arguments to an argparse (sub)parser."""
    from .cli import FORMULATION_NAMES, _float, _positive_int, _vector

    parser.add_argument("in_dir", metavar="IN_DIR", help="folder searched (recursively) for models")
    parser.add_argument("-o", "--output", dest="out_dir", metavar="OUT_DIR", required=True,
                        help="folder for the outputs and report.json (created if missing)")
    parser.add_argument("--to", default=DEFAULT_FORMATS, metavar="FORMATS",
                        help=f"output formats, comma separated (default: {DEFAULT_FORMATS}); "
                             "known: " + ", ".join(_known_formats()))
    parser.add_argument("-j", "--jobs", type=_positive_int, default=None,
                        help="parallel processes (default: the number of CPUs)")
    parser.add_argument("--force", action="store_true", help="run every item, also those whose inputs did not change")
    parser.add_argument("--t-end", type=_float, default=None, help="end time in s (default: each model's, else 1)")
    parser.add_argument("--steps", type=_positive_int, default=None,
                        help="output intervals (default: each model's, else 100)")
    parser.add_argument("--parametrization", default="euler-parameters", choices=["euler-parameters", "euler-313"],
                        help="orientation coordinates (default: euler-parameters)")
    parser.add_argument("--analysis", choices=["kinematic", "dynamic", "inverse"], default="kinematic",
                        help="as for `cadmotion run`: kinematic (driven motion), dynamic (under forces) or inverse "
                             "(driven motion plus driver efforts and joint reactions)")
    parser.add_argument("--drive", action="append", default=[], metavar="NAME=EXPR",
                        help="drive a joint or PART.x|y|z by an expression of t in every model, as for `cadmotion run` "
                             "(a model without that joint fails); repeatable")
    parser.add_argument("--gravity", type=_vector, default=None, metavar="GX,GY,GZ",
                        help="gravity in m/s^2, assembly frame (replaces each model's)")
    parser.add_argument("--formulation", default=None, metavar="NAME",
                        help="dynamics formulation: " + ", ".join(FORMULATION_NAMES) + " (default: chosen per model)")
    parser.add_argument("--integrator", default=None, metavar="NAME",
                        help="dynamics integrator, as for `cadmotion run` (default: the formulation's)")
    parser.add_argument("--rtol", type=_float, default=None, help="relative tolerance of the dynamics integrator")
    parser.add_argument("--atol", type=_float, default=None,
                        help="absolute tolerance of the dynamics integrator (m, m/s, rad/s)")
    parser.add_argument("--dt", type=_float, default=None, help="step of the fixed-step dynamics integrators, s")
    parser.add_argument("--accept-violations", action="store_true",
                        help="a dynamic run that breaks an invariant counts as ok (the report still lists them)")
    parser.add_argument("--no-error-estimate", dest="estimate_error", action="store_false",
                        help="as for `cadmotion run`: dynamic runs skip the second run at a tenth of the tolerances "
                             "(half the step) that estimates their global error")
    parser.add_argument("--free-dof", choices=["refuse", "minimal"], default="refuse",
                        help="as for `cadmotion run`: refuse models whose drivers leave degrees of freedom free "
                             "(default) or move the free coordinates minimally (kinematic runs)")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="run on a Dask distributed cluster at this address (tcp://host:port)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary table")


def run(args):
    """Run ``cadmotion batch`` for parsed ``args``; returns the exit code."""
    report = run_batch(args.in_dir, args.out_dir, args.to, jobs=args.jobs, force=args.force,
                       t_end=args.t_end, steps=args.steps, parametrization=args.parametrization,
                       scheduler=args.scheduler, progress=not args.quiet, analysis=args.analysis,
                       drive=args.drive, gravity=args.gravity, formulation=args.formulation,
                       integrator=args.integrator, rtol=args.rtol, atol=args.atol, dt=args.dt,
                       accept_violations=args.accept_violations, free_dof=args.free_dof,
                       estimate_error=args.estimate_error)
    if not args.quiet:
        print(summary(report), file=sys.stderr)
    return report["exit_code"]


# ----------------------------------------------------------------------------- inputs

def _known_formats():
    from .writers import WRITERS

    return [ext.lstrip(".") for ext in WRITERS]


def parse_formats(text):
    """``"glb,html,csv"`` -> ``(".glb", ".html", ".csv")``; OutputError for unknown ones.

    Case and a leading dot are ignored; repeated formats are kept once.
    """
    known = _known_formats()
    items = [text] if isinstance(text, str) else list(text)
    names = [n.strip().lower().lstrip(".") for part in items for n in str(part).split(",")]
    names = [n for n in names if n]
    if not names:
        raise OutputError("no output format given", where="--to",
                          hint="known formats: " + ", ".join(known))
    unknown = [n for n in names if n not in known]
    if unknown:
        raise OutputError(f"unknown output format{'s' if len(unknown) > 1 else ''} "
                          + ", ".join(repr(n) for n in unknown), where="--to",
                          hint="known formats: " + ", ".join(known))
    return tuple(dict.fromkeys("." + n for n in names))


def _model_kind(path):
    low = path.name.lower()
    if low.endswith(MODEL_SUFFIX) and len(low) > len(MODEL_SUFFIX):
        return "model"
    if path.suffix.lower() in CAD_SUFFIXES:
        return "cad"
    if path.suffix.lower() in STEP_SUFFIXES:
        return "step"
    return None


def _sidecar(step_path):
    # the same rule as cadmotion.importers.load
    return step_path.with_name(step_path.stem + MODEL_SUFFIX)


def _referenced_files(model_path):
    """Files a model file names (its ``step = ...``); [] if it cannot be parsed."""
    if not model_path.name.lower().endswith(".toml"):
        return []
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        import tomli as tomllib
    try:
        with open(model_path, "rb") as fh:
            data = tomllib.load(fh)
    except (OSError, ValueError):
        return []       # the loader reports it when the item runs
    step = data.get("step")
    return [model_path.parent / step] if isinstance(step, str) and step else []


def find_models(in_dir, *, exclude=()):
    """The models under ``in_dir`` and the files passed over.

    Parameters
    ----------
    in_dir : folder searched recursively (symbolic links to folders are not followed).
    exclude : folders not searched (e.g. the output folder).

    Returns
    -------
    items : list of :class:`BatchItem`, sorted by name.
    skipped : list of dict(name, model, status="skipped", reason, message) for STEP files
        without a sidecar.
    """
    in_dir = Path(in_dir).absolute()
    excluded = {Path(e).resolve() for e in exclude}
    found = []
    for root, dirs, names in os.walk(in_dir):
        here = Path(root)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and (here / d).resolve() not in excluded)
        for n in sorted(names):
            if n.startswith("."):
                continue
            path = here / n
            kind = _model_kind(path)
            if kind is not None and path.is_file():
                found.append((kind, path))
    steps_of = {}                                   # sidecar -> its STEP files
    skipped = []
    models = []
    for kind, path in found:
        if kind == "step":
            side = _sidecar(path)
            if side.is_file():
                steps_of.setdefault(side, []).append(path)
            else:
                rel = path.relative_to(in_dir)
                skipped.append(dict(name=rel.with_suffix("").as_posix(), model=str(path), status="skipped",
                                    reason="no mates",
                                    message=f"no sidecar {side.name} with joints and drivers beside it"))
        else:
            models.append((kind, path))
    # names: path under in_dir without suffix; a CAD file sharing its name keeps its suffix
    def stem(kind, path):
        rel = path.relative_to(in_dir)
        base = rel.name[: -len(MODEL_SUFFIX)] if kind == "model" else rel.stem
        return (rel.parent / base).as_posix()

    stems = [stem(k, p) for k, p in models]
    counts = {}
    for s in stems:
        counts[s.casefold()] = counts.get(s.casefold(), 0) + 1
    items = []
    for (kind, path), s in zip(models, stems):
        name = s
        if kind == "cad" and counts[s.casefold()] > 1:
            name = path.relative_to(in_dir).as_posix()
        inputs = [path] + steps_of.get(path, []) + _referenced_files(path)
        inputs = list(dict.fromkeys(Path(os.path.normpath(p)) for p in inputs))
        items.append(BatchItem(name=name, model=str(path), inputs=tuple(str(p) for p in inputs)))
    items.sort(key=lambda it: it.name)
    skipped.sort(key=lambda d: d["name"])
    return items, skipped


def _file_digest(path):
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    except OSError as err:
        return f"unreadable: {err.strerror or err}"
    return h.hexdigest()


def input_hash(item, options):
    """SHA-256 (hex) of an item's input files and the options that change its results.

    Files are identified by their path relative to the model's folder, so moving the
    whole input folder does not change the hash. The output formats are not part of it
    (outputs are checked one by one, see the module docstring).
    """
    base = Path(item.model).parent
    h = hashlib.sha256()
    head = dict(state=STATE_VERSION, cadmotion=__version__, t_end=options.t_end, steps=options.steps,
                parametrization=options.parametrization, **options.result_settings())
    h.update(json.dumps(head, sort_keys=True).encode())
    for p in item.inputs:
        rel = os.path.relpath(p, base)
        h.update(b"\0" + rel.encode("utf-8", "surrogateescape") + b"\0" + _file_digest(p).encode())
    return h.hexdigest()


def _output_paths(out_dir, item, options):
    return [Path(out_dir) / f"{item.name}{ext}" for ext in options.formats]


# ----------------------------------------------------------------------------- worker side

#: in a local pool worker: the multiprocessing.Event the main process sets on Ctrl-C
#: (set once per worker process by _init_worker; None elsewhere)
_WORKER_CANCEL = None


def _init_worker(cancel_event):
    global _WORKER_CANCEL
    signal.signal(signal.SIGINT, signal.SIG_IGN)    # the main process decides when to stop
    _WORKER_CANCEL = cancel_event


class _Stop(BaseException):
    """Raised inside a worker when the batch was interrupted (not an error of the model)."""


def _cancel_check(token):
    """A callable returning True once the batch is interrupted.

    token : None (never), ``"local"`` (the pool's Event) or ``"dask:<event name>"`` (a
    ``distributed.Event``, asked at most twice a second).
    """
    if token == "local":
        event = _WORKER_CANCEL
        return event.is_set if event is not None else (lambda: False)
    if isinstance(token, str) and token.startswith("dask:"):
        from distributed import Event

        event = Event(token[len("dask:"):])
        state = dict(last=-1.0, value=False)

        def check():
            now = time.monotonic()
            if not state["value"] and now - state["last"] >= 0.5:
                state["last"] = now
                try:
                    state["value"] = bool(event.is_set())
                except Exception:       # scheduler gone: keep working, the client decides
                    pass
            return state["value"]

        return check
    return lambda: False


def _mobility(model):
    """(dof, dof_driven) at the assembled initial pose, or (None, None) if it does not assemble."""
    from ..kernel import AngleState, assemble, mobility

    angles = AngleState(model, model.q0)
    asm = assemble(model, model.q0, 0.0, angles)
    if not asm.success:
        return None, None
    mob = mobility(model, asm.q, 0.0, angles)
    return int(mob.dof), int(mob.dof_driven)


#: one item at a time per process on Dask workers: their threads share one interpreter, and
#: the kernel's generated-code cache and warnings capture are not made for concurrent use
_DASK_LOCK = threading.Lock()


def run_item(item, options, out_dir, cancel=None):
    """Run one item: load, compile, kinematics, write its outputs. Never raises.

    Parameters
    ----------
    item : :class:`BatchItem`
    options : :class:`BatchOptions`
    out_dir : folder the outputs go to (``<out_dir>/<item.name><ext>``).
    cancel : interruption token (see :func:`_cancel_check`); None for never.

    Returns
    -------
    dict
        ``name, model, status`` (ok / partial / failed / interrupted), ``stage`` (where it
        failed or stopped), ``message``, ``timings`` (load, compile, solve, write, total;
        s), ``dof``, ``dof_driven``, ``frames``, ``t_end``, ``steps``, ``complete``,
        ``outputs`` (paths relative to out_dir), ``warnings``, ``events``, ``finished``.
    """
    if isinstance(cancel, str) and cancel.startswith("dask:"):
        with _DASK_LOCK:
            return _run_item(item, options, out_dir, cancel)
    return _run_item(item, options, out_dir, cancel)


def _run_item(item, options, out_dir, cancel):
    from ..importers import load
    from ..kernel import compile_model
    from .run_analysis import (DEFAULT_STEPS, DEFAULT_T_END, DYNAMICS_OPTIONS, broken_invariants, run_analysis,
                               run_invariants, time_span, with_overrides)
    from .writers import write_outputs

    cancelled = _cancel_check(cancel)
    out_dir = Path(out_dir)
    result = dict(name=item.name, model=item.model, status="failed", stage="start", message="",
                  timings={}, dof=None, dof_driven=None, frames=0, t_end=None, steps=None, complete=None,
                  outputs=[], warnings=[], events=[])
    timings = result["timings"]
    start = time.perf_counter()
    clock = [start]

    def lap(stage):
        now = time.perf_counter()
        timings[stage] = round(now - clock[0], 4)
        clock[0] = now

    def progress(k, nt):
        if cancelled():
            raise _Stop

    caught = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if cancelled():
                raise _Stop
            result["stage"] = "load"
            spec = with_overrides(load(item.model), options.drive, options.gravity)
            lap("load")
            result["stage"] = "compile"
            model = compile_model(spec, options.parametrization)
            lap("compile")
            result["stage"] = "solve"
            result["t_end"] = options.t_end if options.t_end is not None else spec.setting("t_end", DEFAULT_T_END)
            result["steps"] = options.steps if options.steps is not None else spec.setting("steps", DEFAULT_STEPS)
            t_end, steps = time_span(spec, options.t_end, options.steps)
            result["t_end"], result["steps"] = t_end, steps
            if cancelled():
                raise _Stop
            result["dof"], result["dof_driven"] = _mobility(model)
            motion, dyn = run_analysis(model, options.analysis, t_end, steps, progress=progress,
                                       free_dof=options.free_dof,
                                       solver_options=None if options.estimate_error else {"estimate_error": False},
                                       **{k: getattr(options, k) for k in DYNAMICS_OPTIONS})
            lap("solve")
            broken = broken_invariants(dyn, motion)
            result["invariants_broken"] = [c.name for c in broken]
            checked = run_invariants(motion, dyn)
            result["invariants_checked"] = [c.name for c in checked.checks] if checked is not None else []
            if dyn is not None:
                result.update(formulation=dyn.formulation, integrator=dyn.integrator)
            result.update(frames=int(motion.nt), complete=bool(motion.complete))
            result["events"] = [dict(kind=e.kind, time=float(e.time), message=e.message) for e in motion.events]
            if cancelled():             # interrupted while solving: write nothing
                raise _Stop
            result["stage"] = "write"
            paths = _output_paths(out_dir, item, options)
            paths[0].parent.mkdir(parents=True, exist_ok=True)
            written = write_outputs(motion, paths, partial=not motion.complete)
            lap("write")
            result["outputs"] = [Path(os.path.relpath(p, out_dir)).as_posix() for p in written]
            result["status"] = "ok" if motion.complete else "partial"
            result["stage"] = "done"
            result["message"] = "" if motion.complete else motion.message
            if broken and motion.complete and not options.accept_violations:
                result.update(status="failed", stage="check",
                              message=f"{item.model}: {len(broken)} invariant(s) broken "
                                      f"({', '.join(c.name for c in broken)}); outputs written, suspect "
                                      "(--accept-violations counts the run ok)")
    except _Stop:
        result.update(status="interrupted", message="interrupted before it finished; nothing written")
    except CadmotionError as exc:
        result["message"] = str(exc)
    except OSError as exc:
        result["message"] = f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc)
    except Exception as exc:           # a bug or a library error: keep the traceback for the report
        result["message"] = f"{type(exc).__name__}: {exc}"
        result["traceback"] = traceback.format_exc()
    finally:
        if result["stage"] in ("load", "compile", "solve", "write") and result["stage"] not in timings:
            lap(result["stage"])        # how long the stage ran before it failed or stopped
        result["warnings"] = list(dict.fromkeys(str(w.message) for w in caught))
        timings["total"] = round(time.perf_counter() - start, 4)
        result["finished"] = _now()
    return result


# ----------------------------------------------------------------------------- main side

def _now():
    return datetime.datetime.now(datetime.timezone.utc).astimezone().isoformat(timespec="seconds")


def _is_main_thread():
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def _sigint_ignored():
    """Ignore SIGINT while worker processes are started, so that they inherit SIG_IGN
    (a terminal's Ctrl-C goes to the whole process group; only the main process acts on it)."""
    if not _is_main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


@contextlib.contextmanager
def _sigint_deferred(flag):
    """Record a SIGINT in ``flag['interrupted']`` instead of raising, for the final writes."""
    if not _is_main_thread():
        yield
        return

    def handler(signum, frame):
        flag["interrupted"] = True

    old = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def _remove_temporaries(out_dir, item, options):
    """Remove temporary files a killed worker left beside the item's outputs."""
    for path in _output_paths(out_dir, item, options):
        if path.parent.is_dir():
            for tmp in path.parent.glob(f".{path.name}.*.tmp{path.suffix}"):
                with contextlib.suppress(OSError):
                    tmp.unlink()


def _interrupted_result(item, message):
    return dict(name=item.name, model=item.model, status="interrupted", stage="queued", message=message,
                timings={}, outputs=[], warnings=[], events=[])


def _crashed_result(item, message):
    return dict(name=item.name, model=item.model, status="failed", stage="worker", message=message,
                timings={}, outputs=[], warnings=[], events=[], finished=_now())


class _Runner:
    """Run items, report each result to ``on_result(item, result)``; remembers interruption."""

    def __init__(self, out_dir, options, on_result, notice):
        self.out_dir = str(out_dir)
        self.options = options
        self.on_result = on_result
        self.notice = notice
        self.interrupted = False

    # -- local process pool ---------------------------------------------------------------
    def local(self, items, jobs):
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")   # no fork of a process with threads
        cancel = ctx.Event()
        queue = list(items)
        while queue and not self.interrupted:
            broken = self._pool(queue, min(jobs, len(queue)), ctx, cancel)
            queue = []
            if not broken:
                break
            if len(broken) == 1 or jobs == 1:
                # with one worker, items run in submission order: the first broken one crashed
                self._crashed(broken[0])
                queue = broken[1:]
                continue
            # the items that may have been running: at most jobs + 1 are handed to the pool at
            # once, in submission order; run each of them alone to find the one that crashes
            suspects, queue = broken[: jobs + 1], broken[jobs + 1:]
            for k, item in enumerate(suspects):
                if self.interrupted:
                    queue = suspects[k:] + queue
                    break
                if self._pool([item], 1, ctx, cancel):
                    self._crashed(item)
        if self.interrupted:
            for item in queue:
                self.on_result(item, _interrupted_result(item, "not started: the batch was interrupted"))

    def _crashed(self, item):
        _remove_temporaries(self.out_dir, item, self.options)
        self.on_result(item, _crashed_result(
            item, "the worker process died while running this item (a crash in a native library, "
                  "or it was killed, e.g. for lack of memory)"))

    def _pool(self, items, jobs, ctx, cancel):
        """Run ``items`` in one pool; return the items whose pool broke, in submission order."""
        from concurrent.futures import ProcessPoolExecutor, as_completed
        from concurrent.futures.process import BrokenProcessPool

        broken = []
        executor = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_init_worker,
                                       initargs=(cancel,))
        futures = {}
        collected = set()
        killed = False
        try:
            with _sigint_ignored():
                for item in items:
                    futures[executor.submit(run_item, item, self.options, self.out_dir, "local")] = item
            try:
                for fut in as_completed(futures):
                    self._collect(fut, futures[fut], broken, BrokenProcessPool, collected)
            except KeyboardInterrupt:
                self.interrupted = True
                cancel.set()
                waiting = [f for f in futures if f not in collected and not f.cancel()]
                self.notice(f"interrupted: stopping the {len(waiting)} item(s) already handed to workers "
                            "(press Ctrl-C again to stop at once)")
                try:
                    for fut in as_completed(waiting):
                        self._collect(fut, futures[fut], broken, BrokenProcessPool, collected)
                except KeyboardInterrupt:
                    killed = True
                    for proc in list(getattr(executor, "_processes", {}).values()):
                        with contextlib.suppress(Exception):
                            proc.terminate()
            for fut, item in futures.items():     # cancelled, killed, or finished but not yet collected
                if fut in collected:
                    continue
                if fut.done() and not fut.cancelled():
                    self._collect(fut, item, broken, BrokenProcessPool, collected)
                    continue
                _remove_temporaries(self.out_dir, item, self.options)
                self.on_result(item, _interrupted_result(
                    item, "not started: the batch was interrupted" if fut.cancelled()
                    else "stopped at once by a second Ctrl-C: some of its outputs may have been written "
                         "(each complete, none half-way), the others were not"))
        finally:
            executor.shutdown(wait=not killed, cancel_futures=True)
        if self.interrupted:
            for item in broken:
                self.on_result(item, _interrupted_result(item, "stopped: the batch was interrupted"))
            return []
        order = {id(it): k for k, it in enumerate(items)}
        return sorted(broken, key=lambda it: order[id(it)])

    def _collect(self, fut, item, broken, broken_type, collected):
        collected.add(fut)
        if fut.cancelled():
            return
        exc = fut.exception()
        if exc is None:
            self.on_result(item, fut.result())
        elif isinstance(exc, broken_type):
            broken.append(item)
        else:   # run_item never raises; an exception here is a pickling problem or similar
            self.on_result(item, _crashed_result(item, f"{type(exc).__name__}: {exc}"))

    # -- Dask distributed -----------------------------------------------------------------
    def dask(self, items, client):
        """Run ``items`` on the cluster of ``client`` (a connected ``distributed.Client``)."""
        import uuid

        from distributed import Event, as_completed

        name = f"cadmotion-batch-{uuid.uuid4().hex}"
        event = Event(name, client=client)
        futures = {}
        for k, item in enumerate(items):
            fut = client.submit(run_item, item, self.options, self.out_dir, f"dask:{name}",
                                key=f"{name}-{k}", pure=False)
            futures[fut] = item
        pending = set(futures)
        try:
            for fut in as_completed(list(futures)):
                pending.discard(fut)
                self._collect_dask(fut, futures[fut])
        except KeyboardInterrupt:
            self.interrupted = True
            event.set()             # queued items return at once, running ones at their next frame
            self.notice(f"interrupted: stopping {len(pending)} item(s) on the cluster "
                        "(press Ctrl-C again to stop waiting)")
            try:
                for fut in as_completed(list(pending)):
                    pending.discard(fut)
                    self._collect_dask(fut, futures[fut])
            except KeyboardInterrupt:
                client.cancel(list(pending))
                for fut in pending:
                    self.on_result(futures[fut], _interrupted_result(
                        futures[fut], "stopped: the batch was interrupted; its outputs may still be "
                                      "written by the worker"))

    def _collect_dask(self, fut, item):
        try:
            result = fut.result()
        except Exception as exc:        # KilledWorker, lost worker, cancelled
            result = _crashed_result(item, f"{type(exc).__name__} on the Dask cluster: {exc}")
        self.on_result(item, result)


def _connect_dask(address):
    """A ``distributed.Client`` connected to ``address``; CadmotionError if that cannot be."""
    try:
        from distributed import Client
    except ImportError:
        raise CadmotionError("--scheduler needs Dask's distributed scheduler, which is not installed",
                             where=address, hint='pip install "dask[distributed]"') from None
    try:
        return Client(address, timeout="10s")
    except (OSError, TimeoutError, ValueError) as err:
        raise CadmotionError(f"cannot reach the Dask scheduler: {err}", where=address,
                             hint="start it with `dask scheduler` (and workers with `dask worker ADDRESS`), "
                                  "or check the address") from None


def _load_state(path):
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as err:
        warnings.warn(f"{path}: ignoring an unreadable batch state ({err}); every item runs")
        return {}
    if not isinstance(data, dict) or data.get("version") != STATE_VERSION or not isinstance(data.get("items"), dict):
        return {}
    return data["items"]


def _write_json(path, data):
    from .writers.atomic import atomic_write

    with atomic_write(path, "w") as fh:
        json.dump(data, fh, indent=2, default=float)
        fh.write("\n")


def _prepare_out_dir(out_dir):
    from .writers.atomic import check_writable_dir

    if out_dir.exists() and not out_dir.is_dir():
        raise OutputError(f"{str(out_dir)!r} is not a folder", where="-o",
                          hint="choose a folder for the outputs (it is created if missing)")
    if not out_dir.exists():
        try:
            out_dir.mkdir(parents=True)
        except OSError as err:
            raise OutputError(f"cannot create the output folder {str(out_dir)!r}: {err.strerror or err}",
                              where="-o", hint="check the path and the parent folder's permissions") from None
    check_writable_dir(out_dir)


def _skip_reason(prev, digest, item, options, out_dir):
    """'unchanged' if the item's last run had the same hash and all requested outputs."""
    if not isinstance(prev, dict) or prev.get("input_hash") != digest or prev.get("status") not in ("ok", "partial"):
        return None
    written = set(prev.get("outputs") or ())
    for path in _output_paths(out_dir, item, options):
        rel = Path(os.path.relpath(path, out_dir)).as_posix()
        if rel not in written or not path.is_file():
            return None
    return "unchanged"


def _exit_code(items, interrupted):
    if interrupted:
        return EXIT_INTERRUPTED
    effective = [it.get("previous") if it["status"] == "skipped" else it["status"] for it in items]
    if "failed" in effective:
        return EXIT_FAILED
    if "partial" in effective:
        return EXIT_PARTIAL
    return EXIT_OK


def _check_analysis_options(options):
    """Refuse, before anything runs, what would fail every item alike."""
    from .run_analysis import ANALYSES

    if options.analysis not in ANALYSES:
        raise CadmotionError(f"unknown analysis {options.analysis!r}", where="--analysis",
                             hint="use one of " + ", ".join(ANALYSES))
    for text in options.drive:
        if "=" not in str(text) or not str(text).split("=", 1)[0].strip():
            raise CadmotionError(f"--drive {text!r}: expected NAME=EXPRESSION", where="--drive",
                                 hint='e.g. --drive "crank_pivot=2*pi*t"')
    if options.analysis == "dynamic" and (options.formulation or options.integrator):
        from ..kernel.dynamics.formulations import get_formulation

        cls = get_formulation(options.formulation) if options.formulation else None
        if cls is not None and options.integrator:
            cls.check_integrator(options.integrator)
    if options.free_dof not in ("refuse", "minimal"):
        raise CadmotionError(f"--free-dof {options.free_dof!r}: expected refuse or minimal", where="--free-dof")
    if not options.estimate_error and options.analysis != "dynamic":
        raise CadmotionError(f"--no-error-estimate applies to dynamic runs; this is a {options.analysis} batch",
                             where="--no-error-estimate", hint="add --analysis dynamic, or leave the flag out")
    if options.free_dof != "refuse" and options.analysis != "kinematic":
        raise CadmotionError(f"--free-dof {options.free_dof} applies to the kinematic analysis, not to "
                             f"{options.analysis}", where="--free-dof")
    for name in ("rtol", "atol", "dt"):
        value = getattr(options, name)
        if value is not None and not value > 0:
            raise CadmotionError(f"--{name} must be positive, got {value}", where=f"--{name}")


def run_batch(in_dir, out_dir, formats=DEFAULT_FORMATS, *, jobs=None, force=False, t_end=None, steps=None,
              parametrization="euler-parameters", scheduler=None, progress=True, analysis="kinematic",
              drive=(), gravity=None, formulation=None, integrator=None, rtol=None, atol=None, dt=None,
              accept_violations=False, free_dof="refuse", estimate_error=True):
    """Run every model under ``in_dir``; write outputs, ``report.json`` and the state file.

    Parameters
    ----------
    in_dir : folder searched recursively for models (see the module docstring).
    out_dir : output folder, created if missing.
    formats : ``"glb,html,csv"`` or a sequence of format names / extensions.
    jobs : local worker processes (default ``os.cpu_count()``); ignored with ``scheduler``.
    force : run items whose inputs did not change as well.
    t_end, steps : override every model's ``[simulation]`` settings (s; output intervals).
    parametrization : orientation coordinates.
    analysis, drive, gravity, formulation, integrator, rtol, atol, dt, accept_violations, free_dof, estimate_error :
        as the flags of ``cadmotion run`` (see :class:`BatchOptions`).
    scheduler : address of a Dask distributed scheduler (``tcp://host:port``), or None.
    progress : show a progress bar when standard error is a terminal.

    Returns
    -------
    dict
        The content of ``report.json``: ``cadmotion`` (version), ``in_dir``, ``out_dir``,
        ``formats``, ``options``, ``scheduler``, ``jobs``, ``started``, ``finished``,
        ``elapsed`` (s), ``interrupted``, ``counts`` (per status), ``exit_code`` and
        ``items``: one dict per model and per skipped file, sorted by name, with ``name``,
        ``model``, ``inputs`` (relative to in_dir), ``input_hash``, ``status``, and as they
        apply ``reason``, ``previous``, ``stage``, ``message``, ``timings``, ``dof``,
        ``dof_driven``, ``frames``, ``t_end``, ``steps``, ``complete``, ``outputs``
        (relative to out_dir), ``warnings``, ``events``, ``invariants_broken``,
        ``invariants_checked`` (the names of the checks the run made of itself),
        ``formulation`` and ``integrator`` (dynamic runs), ``finished``.

    Local runs start worker processes with the "spawn" method, so a script that calls
    this function must do so under ``if __name__ == "__main__":``.

    Raises
    ------
    CadmotionError
        Before anything is run or written: in_dir missing or without models, an unknown
        format, an output folder that cannot be created or written, an output that would
        replace an input file, an unreachable or missing Dask scheduler.
    """
    started, t0 = _now(), time.perf_counter()
    options = BatchOptions(formats=parse_formats(formats), t_end=None if t_end is None else float(t_end),
                           steps=None if steps is None else int(steps), parametrization=parametrization,
                           analysis=analysis, drive=tuple(drive or ()),
                           gravity=None if gravity is None else tuple(float(g) for g in gravity),
                           formulation=formulation, integrator=integrator, rtol=rtol, atol=atol, dt=dt,
                           accept_violations=bool(accept_violations), free_dof=free_dof,
                           estimate_error=bool(estimate_error))
    _check_analysis_options(options)
    if options.t_end is not None and options.t_end <= 0:
        raise CadmotionError(f"--t-end must be positive, got {options.t_end}")
    if options.steps is not None and options.steps < 1:
        raise CadmotionError(f"--steps must be at least 1, got {options.steps}")
    in_path = Path(in_dir)
    if not in_path.is_dir():
        what = "is not a folder" if in_path.exists() else "does not exist"
        raise CadmotionError(f"input folder {str(in_dir)!r} {what}", where="IN_DIR",
                             hint="give the folder that holds the models")
    in_path = in_path.absolute()
    out_path = Path(out_dir).absolute()
    items, skipped = find_models(in_path, exclude=[out_path])
    if not items:
        found = f"; {len(skipped)} STEP file(s) without a sidecar <name>{MODEL_SUFFIX}" if skipped else ""
        raise CadmotionError(f"no models in {str(in_dir)!r}{found}", where="IN_DIR",
                             hint=f"batch runs *{MODEL_SUFFIX} model files, *.FCStd and *.asmt files, and "
                                  f"STEP files with a sidecar <name>{MODEL_SUFFIX} that names their joints")
    all_inputs = {Path(p).resolve() for it in items for p in it.inputs} | {Path(s["model"]).resolve()
                                                                          for s in skipped}
    for item in items:
        for path in _output_paths(out_path, item, options):
            if path.resolve() in all_inputs:
                raise OutputError(f"the output {str(path)!r} would replace an input file", where="-o",
                                  hint="choose an output folder apart from the models")
    client = _connect_dask(scheduler) if scheduler is not None else None
    try:
        _prepare_out_dir(out_path)
    except CadmotionError:
        if client is not None:
            client.close()
        raise
    if scheduler is None:
        jobs = int(jobs or os.cpu_count() or 1)

    state_path = out_path / STATE_FILE
    state = _load_state(state_path)
    digests = {it.name: input_hash(it, options) for it in items}
    results = {}
    todo = []
    for item in items:
        prev = state.get(item.name)
        reason = None if force else _skip_reason(prev, digests[item.name], item, options, out_path)
        if reason:
            results[item.name] = dict({k: prev.get(k) for k in ("dof", "dof_driven", "frames", "t_end", "steps",
                                                                 "complete", "outputs", "finished")},
                                      name=item.name, model=item.model, status="skipped", reason=reason,
                                      previous=prev["status"], message=f"unchanged since {prev.get('finished')}")
        else:
            todo.append(item)

    bar = None
    try:
        from .progress import ProgressBar

        bar = ProgressBar(len(todo), unit="model", desc="batch", enabled=progress)

        def notice(line):
            if progress:
                bar.write(f"cadmotion: {line}")

        last_save = [float("-inf")]

        def on_result(item, result):
            results[item.name] = result
            bar.update(f"{item.name}: {result['status']}")
            if result["status"] in ("ok", "partial", "failed"):
                state[item.name] = dict(result, input_hash=digests[item.name])
                state[item.name].pop("traceback", None)
                if time.monotonic() - last_save[0] >= 1.0:      # at most once a second; again at the end
                    with contextlib.suppress(CadmotionError):
                        _write_json(state_path, dict(version=STATE_VERSION, items=state))
                    last_save[0] = time.monotonic()

        runner = _Runner(out_path, options, on_result, notice)
        if todo:
            if client is not None:
                runner.dask(todo, client)
            else:
                runner.local(todo, jobs)
        interrupted = runner.interrupted
    except KeyboardInterrupt:      # before the pool was running, or while recording a result
        interrupted = True
    finally:
        if bar is not None:
            bar.close()
        if client is not None:
            client.close()

    flag = dict(interrupted=interrupted)
    with _sigint_deferred(flag):
        rows = []
        for item in items:
            row = results.get(item.name) or _interrupted_result(item, "not started: the batch was interrupted")
            row = dict(row, inputs=[Path(os.path.relpath(p, in_path)).as_posix() for p in item.inputs],
                       input_hash=digests[item.name])
            rows.append(row)
        rows.extend(dict(s) for s in skipped)
        for row in rows:
            with contextlib.suppress(ValueError):
                row["model"] = Path(os.path.relpath(row["model"], in_path)).as_posix()
        rows.sort(key=lambda r: r["name"])
        counts = {s: sum(r["status"] == s for r in rows) for s in STATUSES}
        report = dict(cadmotion=__version__, in_dir=str(in_path), out_dir=str(out_path),
                      formats=[f.lstrip(".") for f in options.formats],
                      options=dict(t_end=options.t_end, steps=options.steps, parametrization=parametrization,
                                   force=bool(force), analysis=options.analysis, drive=list(options.drive),
                                   **{k: v for k, v in options.result_settings().items()
                                      if k not in ("analysis", "drive")}),
                      scheduler=scheduler or "local", jobs=jobs if scheduler is None else None,
                      started=started, finished=_now(), elapsed=round(time.perf_counter() - t0, 3),
                      interrupted=bool(flag["interrupted"]), counts=counts,
                      exit_code=_exit_code(rows, flag["interrupted"]), items=rows)
        _write_json(state_path, dict(version=STATE_VERSION, items=state))
        _write_json(out_path / REPORT_FILE, report)
    return report


# ----------------------------------------------------------------------------- summary

def _fmt_time(timings, key):
    value = (timings or {}).get(key)
    return "-" if value is None else f"{value:.2f}"


def summary(report, width=None):
    """The summary table of a batch report, as text (one line per item)."""
    rows = report["items"]
    counts = ", ".join(f"{n} {s}" for s, n in report["counts"].items() if n)
    where = report["scheduler"] if report["scheduler"] != "local" else f"{report['jobs']} process(es)"
    head = (f"cadmotion batch: {len(rows)} item(s): {counts} in {report['elapsed']:.1f} s on {where}"
            + ("; INTERRUPTED" if report["interrupted"] else ""))
    name_w = max([len("item")] + [len(r["name"]) for r in rows])
    name_w = min(name_w, 40)
    lines = [head, f"  {'status':<11} {'item':<{name_w}} {'DOF':>3} {'frames':>6} {'load':>6} {'compile':>7} "
                   f"{'solve':>6} {'write':>6}  note"]
    for r in rows:
        status = r["status"]
        note = r.get("reason") or ""
        if status == "skipped" and r.get("previous"):
            note = f"{note} (last run: {r['previous']})"
        elif status == "skipped" and r.get("message"):
            note = f"{note}: {r['message']}"
        message = (r.get("message") or "").strip()
        model = str(Path(report["in_dir"]) / r.get("model", "")) + ": "
        if message.startswith(model):           # the row names the item already
            message = message[len(model):]
        if status in ("failed", "partial", "interrupted") and message:
            note = message.splitlines()[0]
        if len(note) > 120:
            note = note[:117] + "..."
        dof = "-" if r.get("dof") is None else str(r["dof"])
        frames = "-" if not r.get("frames") else str(r["frames"])
        t = r.get("timings") if status != "skipped" else None
        name = r["name"] if len(r["name"]) <= name_w else "..." + r["name"][-(name_w - 3):]
        lines.append(f"  {status:<11} {name:<{name_w}} {dof:>3} {frames:>6} {_fmt_time(t, 'load'):>6} "
                     f"{_fmt_time(t, 'compile'):>7} {_fmt_time(t, 'solve'):>6} {_fmt_time(t, 'write'):>6}  {note}")
    lines.append(f"  report: {Path(report['out_dir']) / REPORT_FILE}")
    return "\n".join(lines)
