"""Numpy first, numba when ready (issue 15, item 1): which code a run starts on, per cache state.

Every case runs a fresh interpreter on its own cache folders, as a user's next command would.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("numba")

PROBE = textwrap.dedent("""
    import json, numpy as np
    from cadmotion.kernel.symbolic.codegen import generated
    code = generated("normalize")
    ref = generated("normalize", backend="numpy")
    Q = np.array([[0.1, 0.2, 0.3, 0.5, 0.5, 0.5, 0.4]])
    M = np.zeros((1, 12)); S = np.zeros((1, 0)); F = np.zeros((1, 3)); W = np.zeros((1, 0))
    print(json.dumps({"backend": code.backend, "phi": code.phi(Q, M, S, F, W).tolist(),
                      "ref": ref.phi(Q, M, S, F, W).tolist()}))
""")


def _env(tmp_path, **extra):
    env = dict(os.environ, CADMOTION_CACHE=str(tmp_path / "codegen"), NUMBA_CACHE_DIR=str(tmp_path / "numba"),
               CADMOTION_WARMUP="0")
    env.pop("CADMOTION_BACKEND", None)
    env.update(extra)
    return env


def _probe(tmp_path, **extra):
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=_env(tmp_path, **extra))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _warm(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "cadmotion.kernel.symbolic.warmup", "normalize:euler-parameters"],
                          capture_output=True, text=True, env=_env(tmp_path))
    assert proc.returncode == 0, proc.stderr


def test_an_empty_cache_runs_the_numpy_code_without_waiting_for_numba(tmp_path):
    out = _probe(tmp_path)
    assert out["backend"] == "numpy"
    # normalize: Φ = pᵀp − 1 for the Euler parameters p
    assert out["phi"][0][0] == pytest.approx(0.5**2 * 3 + 0.4**2 - 1, abs=1e-15)
    assert not list((tmp_path / "codegen").glob("*.ready"))


def test_after_the_warm_up_the_same_template_runs_compiled_with_the_same_numbers(tmp_path):
    _warm(tmp_path)
    assert len(list((tmp_path / "codegen").glob("normalize-*-numba-*.ready"))) == 1
    out = _probe(tmp_path)
    assert out["backend"] == "numba"
    assert out["phi"][0] == pytest.approx([0.5**2 * 3 + 0.4**2 - 1], abs=1e-15)


def test_a_marker_from_another_numba_version_or_garbage_is_not_trusted(tmp_path):
    _warm(tmp_path)
    (marker,) = (tmp_path / "codegen").glob("*.ready")
    marker.write_bytes(b"\xff\x00 not a version")
    assert _probe(tmp_path)["backend"] == "numpy"


def test_a_truncated_numba_cache_still_gives_the_right_numbers(tmp_path):
    _warm(tmp_path)
    for f in (tmp_path / "numba").rglob("*.nbc"):
        f.write_bytes(f.read_bytes()[:10])
    out = _probe(tmp_path)
    assert out["backend"] == "numba"
    assert out["phi"][0] == pytest.approx([0.5**2 * 3 + 0.4**2 - 1], abs=1e-15)


def test_a_forced_backend_is_that_backend(tmp_path):
    assert _probe(tmp_path, CADMOTION_BACKEND="numba")["backend"] == "numba"
    assert _probe(tmp_path, CADMOTION_BACKEND="numpy")["backend"] == "numpy"


def test_a_run_on_numpy_starts_one_background_warm_up_that_makes_the_next_run_compiled(tmp_path):
    env = _env(tmp_path, CADMOTION_WARMUP="1")
    proc = subprocess.run([sys.executable, "-c", "from cadmotion.kernel.symbolic.codegen import generated;"
                           "generated('normalize')"], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    import time

    deadline = time.monotonic() + 120
    while not list((tmp_path / "codegen").glob("normalize-*-numba-*.ready")) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _probe(tmp_path)["backend"] == "numba"


PROBE_WARNINGS = textwrap.dedent("""
    import json, warnings
    import numpy as np
    warnings.simplefilter("always")
    with warnings.catch_warnings(record=True) as caught:
        from cadmotion.kernel.symbolic.codegen import generated
        code = generated("normalize", backend="numpy")
        Q = np.array([[0.1, 0.2, 0.3, 0.5, 0.5, 0.5, 0.4]])
        phi = code.phi(Q, np.zeros((1, 12)), np.zeros((1, 0)), np.zeros((1, 3)), np.zeros((1, 0)))
    print(json.dumps({"phi": phi.tolist(), "warnings": [str(w.message) for w in caught]}))
""")


def _probe_warnings(env):
    proc = subprocess.run([sys.executable, "-c", PROBE_WARNINGS], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_truncated_generated_file_is_derived_again_with_one_warning(tmp_path):
    env = _env(tmp_path)
    assert _probe_warnings(env)["warnings"] == []
    (source,) = (tmp_path / "codegen").glob("normalize-*-numpy-*.py")
    text = source.read_text()
    source.write_text(text[: len(text) // 2])       # cut in the middle of a statement
    out = _probe_warnings(env)
    assert out["phi"][0] == pytest.approx([0.5**2 * 3 + 0.4**2 - 1], abs=1e-15)
    assert len(out["warnings"]) == 1 and source.name in out["warnings"][0]
    assert source.read_text() == text               # and the cache holds the whole file again
    assert _probe_warnings(env)["warnings"] == []


def test_a_cache_folder_that_cannot_be_written_still_runs_and_says_so_once(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    env = _env(tmp_path, CADMOTION_CACHE=str(blocker / "codegen"))
    out = _probe_warnings(env)
    assert out["phi"][0] == pytest.approx([0.5**2 * 3 + 0.4**2 - 1], abs=1e-15)
    assert len(out["warnings"]) == 1 and "not writable" in out["warnings"][0] and "CADMOTION_CACHE" in out["warnings"][0]


# ---------------------------------------------------------------------------- compiled dynamics (issue 15, item 2)

PROBE_DYNAMICS = textwrap.dedent("""
    import json, sys, warnings
    import numpy as np
    from cadmotion.importers import load
    from cadmotion.kernel import compile_model
    from cadmotion.kernel.dynamics import library
    from cadmotion.kernel.dynamics.forward import run
    warnings.simplefilter("always")
    with warnings.catch_warnings(record=True) as caught:
        t_end = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0  # s
        m, res = run(compile_model(load(sys.argv[1])), t_end, 10, formulation="projection", rtol=1e-10, atol=1e-10)
    fns = [getattr(mod, f) for mod in library._MODULES.values() for f in ("rhs", "project", "dop853")]
    print(json.dumps({"compiled": bool(library._MODULES), "notes": res.notes,
                      "compiled_here": sum(len(f.stats.cache_misses) for f in fns),
                      "energy": m.extra["energy.total"].tolist(), "last": m.position[:, -1].tolist(),
                      "warnings": [str(w.message) for w in caught]}))
""")
DOUBLE_PENDULUM = Path(__file__).resolve().parents[2] / "samples" / "dynamics" / "double_pendulum.cadmotion.toml"


def _dynamics_env(tmp_path, **extra):
    env = _env(tmp_path, **extra)
    env.pop("CADMOTION_DYNAMICS_FAST", None)  # the session's "compile" (tests/conftest.py): a user's default here
    return env


def _probe_dynamics(env, program=None, *args):
    """The JSON a probe ``program`` (PROBE_DYNAMICS) prints in a new interpreter, given ``args``
    (the double pendulum)."""
    args = args or (DOUBLE_PENDULUM,)
    proc = subprocess.run([sys.executable, "-c", program or PROBE_DYNAMICS, *map(str, args)], capture_output=True,
                          text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _conserves_energy(out):
    # released from rest, no forces but gravity: E(t) = E(0) = 0 J (to the integrator's 1e-10)
    assert max(abs(e) for e in out["energy"]) < 1e-7


def test_dynamics_with_a_cache_folder_that_cannot_be_written_runs_numpy_without_compiling(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    out = _probe_dynamics(_dynamics_env(tmp_path, CADMOTION_CACHE=str(blocker / "codegen")))
    assert not out["compiled"]
    _conserves_energy(out)
    assert len(out["warnings"]) == 1 and "not writable" in out["warnings"][0]
    assert not list((tmp_path / "numba").rglob("*.nbi"))


PROBE_SEMI_RECURSIVE = textwrap.dedent("""
    import json, sys
    from cadmotion.importers import load
    from cadmotion.kernel import compile_model
    from cadmotion.kernel.dynamics import library
    from cadmotion.kernel.dynamics.forward import run
    m, res = run(compile_model(load(sys.argv[1])), 1.0, 10, formulation="semi-recursive", rtol=1e-10, atol=1e-10)
    trees = [mod for name, mod in library._MODULES.items() if name.startswith("cadmotion_tree_")]
    fns = [getattr(mod, f) for mod in trees for f in ("rhs", "project", "dop853")]
    print(json.dumps({"compiled": bool(trees), "notes": res.notes,
                      "compiled_here": sum(len(f.stats.cache_misses) for f in fns),
                      "energy": m.extra["energy.total"].tolist()}))
""")
SQUEEZER = DOUBLE_PENDULUM.parent / "andrews_squeezer.cadmotion.toml"


def test_dynamics_without_the_librarys_marker_runs_numpy_and_leaves_one_library_to_the_warm_up_for_every_model():
    """A dynamic run whose compiled library has no ready marker (a fresh install: an empty cache)
    does not wait for numba: it runs numpy, compiles nothing, and leaves the library
    (kernel/dynamics/library.py) and the semi-recursive tree module (fast_tree.py) to the warm-up.
    After it, runs load machine code — also for a model of another structure (Andrews'
    squeezer: other joints' counts, a spring, a torque law), which compiles nothing: the library
    is compiled once, for every model.

    The runs use the session's code cache with the two modules' markers taken away (and put
    back), not an empty one: an empty cache would compile the whole library again (≈ 5 minutes
    of the suite) for the same protocol — the warm-up's compile call is the same whether numba
    compiles or loads; compiling in an empty cache is checked on a template above."""
    from cadmotion.kernel.dynamics import fast_tree, library
    from cadmotion.kernel.numba_cache import numba_cache_folder
    from cadmotion.kernel.symbolic.codegen import write_marker

    env = dict(os.environ, CADMOTION_WARMUP="0")
    env.pop("CADMOTION_DYNAMICS_FAST", None)  # the session's "compile" (tests/conftest.py): a user's default here
    env.pop("CADMOTION_BACKEND", None)
    absolute, tree = library.module_file("euler-parameters")[0], fast_tree._module_file("euler-parameters")[0]
    markers = [absolute.with_suffix(".ready"), tree.with_suffix(".ready")]
    saved = {m: m.read_bytes() for m in markers if m.exists()}
    machine_code = numba_cache_folder()

    def probe(program, *args):
        return _probe_dynamics(env, program, *args)

    try:
        for m in markers:
            m.unlink(missing_ok=True)
        before = set(machine_code.rglob("*"))
        first, first_tree = probe(PROBE_DYNAMICS), probe(PROBE_SEMI_RECURSIVE)
        for out in (first, first_tree):
            assert not out["compiled"] and "DOP853 in the compiled loop" not in out["notes"]
            _conserves_energy(out)
        assert not any(m.exists() for m in markers)
        assert set(machine_code.rglob("*")) == before  # nothing was compiled by the runs
        # the warm-ups the runs would start at exit, run here in the foreground
        proc = subprocess.run([sys.executable, "-m", "cadmotion.kernel.symbolic.warmup", f"module:{absolute}",
                               f"module:{tree}"], capture_output=True, text=True, env=env)
        assert proc.returncode == 0, proc.stderr
        assert all(m.exists() for m in markers)
        second, second_tree = probe(PROBE_DYNAMICS), probe(PROBE_SEMI_RECURSIVE)
        for out in (second, second_tree):
            assert out["compiled"] and "DOP853 in the compiled loop" in out["notes"]
            assert out["compiled_here"] == 0  # loaded from numba's cache, compiled for the types the runs pass
            _conserves_energy(out)
        # the two paths integrate the same equations to 1e-10: the chaotic motion agrees at 1 s
        assert np.max(np.abs(np.subtract(first["last"], second["last"]))) < 1e-7
        other = probe(PROBE_DYNAMICS, SQUEEZER, 0.003)
        assert other["compiled"] and other["compiled_here"] == 0
        # a marker from another numba version (or garbage) is not trusted: numpy again
        markers[0].write_bytes(b"\xff\x00 not a version")
        assert not probe(PROBE_DYNAMICS)["compiled"]
        write_marker(markers[0])  # compiled by the warm-up above
    finally:
        for m, content in saved.items():
            m.write_bytes(content)


PROBE_INDEX3 = textwrap.dedent("""
    import json, sys
    from cadmotion.importers import load
    from cadmotion.kernel import compile_model
    from cadmotion.kernel.dynamics import force_jacobians, index3_kernels
    from cadmotion.kernel.dynamics.forward import run
    m, res = run(compile_model(load(sys.argv[1])), 0.2, 4, formulation="index3", dt=1e-2, estimate_error=False)
    fns = [getattr(mod, f) for mod in (index3_kernels, force_jacobians)
           for f in ("body_kinematics", "residual", "body_blocks", "element_blocks", "spring_tangent")
           if hasattr(mod, f)]
    print(json.dumps({"notes": res.notes, "compiled_here": sum(len(f.stats.cache_misses) for f in fns),
                      "loaded": sum(len(f.stats.cache_hits) for f in fns), "last": m.position[:, -1].tolist()}))
""")
GOVERNOR = DOUBLE_PENDULUM.parent / "flyball_governor.cadmotion.toml"


def test_index3_without_its_kernels_marker_runs_the_numpy_twins_and_the_warm_up_compiles_them():
    """A stiff run on index-3 whose kernels (kernel/dynamics/stiff_kernels.py) have no ready marker (a fresh
    install) does not wait ≈ 10 s for numba: it runs their numpy twins and says so, and compiles nothing. The
    warm-up (here in the foreground) compiles them and writes the marker; the next run loads their machine code
    (nothing compiled in it) and gives the same motion to round-off. As the library's test above, on the session's
    numba folder with the marker taken away and put back."""
    from cadmotion.kernel.dynamics import stiff_kernels
    from cadmotion.kernel.numba_cache import numba_cache_folder

    env = dict(os.environ, CADMOTION_WARMUP="0")
    env.pop("CADMOTION_DYNAMICS_FAST", None)  # the session's "compile" (tests/conftest.py): a user's default here
    env.pop("CADMOTION_BACKEND", None)
    module = stiff_kernels.marker_module()
    marker = module.with_suffix(".ready")
    saved = marker.read_bytes() if marker.exists() else None
    machine_code = numba_cache_folder()
    try:
        marker.unlink(missing_ok=True)

        def machine_code_files():  # (numba makes its modules' folders on import, empty)
            return {p for p in machine_code.rglob("*") if p.is_file()}

        before = machine_code_files()
        first = _probe_dynamics(env, PROBE_INDEX3, GOVERNOR)
        assert any(n.startswith("index3: residual and Newton matrix in numpy") for n in first["notes"])
        assert first["compiled_here"] == 0 and first["loaded"] == 0
        assert machine_code_files() == before  # nothing was compiled by the run
        proc = subprocess.run([sys.executable, "-m", "cadmotion.kernel.symbolic.warmup", f"module:{module}"],
                              capture_output=True, text=True, env=env)
        assert proc.returncode == 0, proc.stderr
        assert marker.exists()
        second = _probe_dynamics(env, PROBE_INDEX3, GOVERNOR)
        assert "index3: compiled residual and Newton matrix" in second["notes"]
        assert second["compiled_here"] == 0 and second["loaded"] > 0  # loaded for the types the run passes
        assert np.max(np.abs(np.subtract(first["last"], second["last"]))) < 1e-12
    finally:
        if saved is not None:
            marker.write_bytes(saved)
