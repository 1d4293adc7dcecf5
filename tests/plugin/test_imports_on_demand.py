"""Imports on demand (issue 15, item 2): a command imports what it uses.

Each check runs a fresh interpreter and reads its ``sys.modules``: what a module list
says is imported is what a user's process pays for, whatever a timer on this machine shows.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SLIDER = ROOT / "samples" / "slider_crank.cadmotion.toml"

#: the packages that take most of the start-up time (each 0.1–0.5 s to import)
HEAVY = ("sympy", "scipy", "numba", "cadquery", "OCP", "matplotlib", "pygltflib", "imageio")


def _modules_after(code, env=None):
    """Top-level package names in ``sys.modules`` after running ``code`` in a new interpreter."""
    script = textwrap.dedent(code) + textwrap.dedent("""
        import json, sys
        print(json.dumps(sorted({name.split('.')[0] for name in sys.modules})))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_building_the_parser_imports_no_kernel_solver_or_cad_library():
    loaded = _modules_after("""
        from cadmotion.plugin.cli import build_parser
        build_parser().format_help()
    """)
    assert "cadmotion" in loaded
    assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))


def test_help_of_every_subcommand_imports_no_kernel_solver_or_cad_library():
    loaded = _modules_after("""
        import contextlib, io
        from cadmotion.plugin.cli import build_parser, main
        parser = build_parser()
        commands = parser._subparsers._group_actions[0].choices
        for name in commands:
            with contextlib.redirect_stdout(io.StringIO()):
                try:
                    main([name, "--help"])
                except SystemExit:
                    pass
    """)
    assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))


def test_writing_a_csv_does_not_import_the_cad_or_plotting_writers(tmp_path):
    loaded = _modules_after(f"""
        from cadmotion.plugin.cli import main
        assert main(["run", {str(SLIDER)!r}, "--steps", "4", "-q", "-o", {str(tmp_path / 'sc.csv')!r}]) == 0
    """)
    assert (tmp_path / "sc.csv").is_file()
    assert loaded.isdisjoint({"cadquery", "OCP", "matplotlib", "pygltflib", "imageio"}), loaded


def test_a_second_run_of_a_model_finds_its_code_cached_and_does_not_import_sympy(tmp_path):
    env = dict(os.environ, CADMOTION_CACHE=str(tmp_path / "codegen"), NUMBA_CACHE_DIR=str(tmp_path / "numba"),
               CADMOTION_WARMUP="0", CADMOTION_BACKEND="numpy")
    run = f"""
        from cadmotion.plugin.cli import main
        assert main(["run", {str(SLIDER)!r}, "--steps", "4", "-q", "-o", {str(tmp_path / 'sc.csv')!r}]) == 0
    """
    assert "sympy" in _modules_after(run, env)        # the first run derives the joints' code and f', f''
    assert "sympy" not in _modules_after(run, env)    # the second reads them from the cache


def test_a_small_model_runs_on_its_numpy_code_without_importing_numba_or_sympy_the_second_time(tmp_path):
    """The slider-crank's joint groups (at most LOOP_MAX joints of a type) run the numpy code's
    Python loop: cheaper than importing numba and loading machine code (issue 15, item 3)."""
    env = dict(os.environ, CADMOTION_CACHE=str(tmp_path / "codegen"), NUMBA_CACHE_DIR=str(tmp_path / "numba"),
               CADMOTION_WARMUP="0")
    env.pop("CADMOTION_BACKEND", None)
    run = f"""
        from cadmotion.plugin.cli import main
        assert main(["run", {str(SLIDER)!r}, "--steps", "4", "-q", "-o", {str(tmp_path / 'sc.csv')!r}]) == 0
    """
    assert "numba" not in _modules_after(run, env)
    assert _modules_after(run, env).isdisjoint({"numba", "sympy"})


def test_a_warm_kinematic_run_imports_no_scipy_sympy_numba_or_cad_library(tmp_path):
    """The warm slider-crank (issue 15 item 1: ≤ 0.4 s wall) must not pay for packages it does
    not use: ``import scipy.linalg`` alone is ≈ 0.3 s of CPU (its array-API layer loads numpy's
    f2py and testing), sympy ≈ 0.3 s, numba ≈ 0.15 s — each about the whole run. Its LAPACK
    routines come from scipy's ``_flapack`` loaded without scipy's packages
    (``kernel/lapack.py``); scipy.sparse is for large models. Nor does ``run`` import the batch
    runner or the FreeCAD installer, or importlib.metadata (the code cache's version keys)."""
    env = dict(os.environ, CADMOTION_CACHE=str(tmp_path / "codegen"), NUMBA_CACHE_DIR=str(tmp_path / "numba"),
               CADMOTION_WARMUP="0")
    env.pop("CADMOTION_BACKEND", None)
    out = tmp_path / "sc.csv"
    script = textwrap.dedent(f"""
        import json, sys
        from cadmotion.plugin.cli import main
        assert main(["run", {str(SLIDER)!r}, "-q", "-o", {str(out)!r}]) == 0
        print(json.dumps(sorted(sys.modules)))
    """)
    first = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert first.returncode == 0, first.stderr                    # fills the code cache
    warm = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert warm.returncode == 0, warm.stderr
    modules = set(json.loads(warm.stdout.strip().splitlines()[-1]))
    assert out.is_file()
    assert {m.split(".")[0] for m in modules}.isdisjoint(HEAVY), sorted(m for m in modules if m.split(".")[0] in HEAVY)
    unwanted = {"cadmotion.plugin.batch", "cadmotion.plugin.freecad.install", "importlib.metadata", "numpy.ma"}
    assert modules.isdisjoint(unwanted), sorted(modules & unwanted)
