"""Time to the first result: wall seconds of whole ``cadmotion`` commands, each a new process.

    python benchmarks/startup.py                 # 3 runs per cell, all commands
    python benchmarks/startup.py --repeat 5
    python benchmarks/startup.py --only help,slider-crank

Prints the table of issue 15: per command, the median wall time (s) — and, in brackets, the
median CPU time of the process (user + system, s) — with an **empty** code
cache (a fresh install, a CI runner: every run gets a new, empty cache folder) and with a
**warm** one (one folder, filled by a first run that is not counted). Nothing is asserted.

Which caches are redirected: the generated-code folder (``CADMOTION_CACHE``, default
``~/.cache/cadmotion/codegen``) and numba's machine-code cache (``NUMBA_CACHE_DIR``; without
it numba writes beside the package's own sources, in ``__pycache__``). Both point into a
temporary folder, so the user's caches are neither read nor changed. A run that starts on the
numpy code leaves a background process compiling the numba code for the next run
(``CADMOTION_WARMUP``): it is switched off for the counted runs, so it does not take a core
from the next measurement, and waited for while the warm cache is filled. Each command is run as
``python -m cadmotion.plugin.cli ...`` from the same interpreter as this script (with
``PYTHONPATH`` unchanged), outputs go to the temporary folder, and a command that fails is
reported with its exit code and the last line of its error output.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"

#: name -> (arguments after ``cadmotion``, output file names); outputs are put in the run's folder
COMMANDS = {
    "slider-crank": (["run", str(SAMPLES / "slider_crank.cadmotion.toml"), "-q", "-o", "{out}/sc.csv"],
                     "cadmotion run samples/slider_crank.cadmotion.toml -o sc.csv (201 frames)"),
    "slider-crank-3000": (["run", str(SAMPLES / "slider_crank.cadmotion.toml"), "-q", "--steps", "3000", "-o",
                           "{out}/sc3000.csv"],
                          "cadmotion run samples/slider_crank.cadmotion.toml --steps 3000 -o sc.csv (3,001 frames)"),
    "double-pendulum": (["run", str(SAMPLES / "dynamics" / "double_pendulum.cadmotion.toml"), "-q",
                         "--analysis", "dynamic", "-o", "{out}/dp.csv"],
                        "cadmotion run samples/dynamics/double_pendulum.cadmotion.toml --analysis dynamic -o dp.csv"),
    "governor": (["run", str(SAMPLES / "dynamics" / "flyball_governor.cadmotion.toml"), "-q",
                  "--analysis", "dynamic", "-o", "{out}/gov.csv"],
                 "cadmotion run samples/dynamics/flyball_governor.cadmotion.toml --analysis dynamic (stiff)"),
    "gripper-step": (["run", str(SAMPLES / "gripper" / "gripper.cadmotion.toml"), "-q", "-o", "{out}/gripper.csv"],
                     "cadmotion run samples/gripper/gripper.cadmotion.toml -o gripper.csv "
                     "(a 108-part STEP, 101 frames)"),
    "help": (["--help"], "cadmotion --help"),
}
#: commands whose work does not touch a code cache: only the warm column is measured
NO_CACHE = {"help"}


def _environment(cache, warmup):
    env = dict(os.environ)
    env["CADMOTION_CACHE"] = str(cache / "codegen")
    env["NUMBA_CACHE_DIR"] = str(cache / "numba")
    env["CADMOTION_WARMUP"] = "1" if warmup else "0"
    return env


def _wait_for_warmup(cache, limit=600.0):
    """Wait until no background warm-up holds a lock in ``cache`` (at most ``limit`` s)."""
    deadline = time.monotonic() + limit
    time.sleep(0.5)
    while list((cache / "codegen").glob("*.lock")) and time.monotonic() < deadline:
        time.sleep(0.5)


def run_once(name, cache, out, warmup=False):
    """Seconds of one command in a new process: ((wall, cpu), None) or ((wall, cpu), error text);
    cpu is the process's user + system time, which another job on the machine inflates less."""
    args = [a.format(out=out) for a in COMMANDS[name][0]]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "cadmotion.plugin.cli", *args], env=_environment(cache, warmup),
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        return (wall, cpu), f"exit {proc.returncode}: {lines[-1] if lines else '(no message)'}"
    return (wall, cpu), None


def _median(pairs):
    return statistics.median(w for w, _ in pairs), statistics.median(c for _, c in pairs)


def measure(name, repeat, work):
    """(median empty-cache seconds or None, median warm seconds, error or None) of one command."""
    errors = []
    empty = None
    if name not in NO_CACHE:
        times = []
        for k in range(repeat):
            cache = work / f"{name}-empty-{k}"
            wall, err = run_once(name, cache, work)
            shutil.rmtree(cache, ignore_errors=True)
            times.append(wall)
            if err:
                errors.append(err)
        empty = _median(times)
    cache = work / f"{name}-warm"
    for _ in range(2):                              # fill the cache, background warm-up included; not counted
        _, err = run_once(name, cache, work, warmup=True)
        _wait_for_warmup(cache)
        if err:
            errors.append(err)
    warm = _median([run_once(name, cache, work)[0] for _ in range(repeat)])
    return empty, warm, (errors[0] if errors else None)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per cell; the median is printed (default 3)")
    parser.add_argument("--only", default=None, help="comma separated: " + ", ".join(COMMANDS))
    args = parser.parse_args(argv)
    names = list(COMMANDS) if not args.only else [n.strip() for n in args.only.split(",")]
    unknown = [n for n in names if n not in COMMANDS]
    if unknown:
        parser.error(f"unknown command {', '.join(unknown)}; known: {', '.join(COMMANDS)}")

    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d %H:%M')}, load "
          f"{os.getloadavg()[0]:.1f}; wall s (cpu s), medians of {args.repeat} runs, each a new process")
    print("| command | empty cache | warm cache |")
    print("|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="cadmotion-startup-") as tmp:
        work = Path(tmp)
        for name in names:
            empty, warm, err = measure(name, args.repeat, work)
            cell = "" if empty is None else f"{empty[0]:.2f} s ({empty[1]:.2f})"
            note = f" (FAILED: {err})" if err else ""
            print(f"| `{COMMANDS[name][1]}`{note} | {cell} | {warm[0]:.2f} s ({warm[1]:.2f}) |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
