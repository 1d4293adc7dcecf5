"""numba's machine-code cache of cadmotion lives in a folder named after the kernel sources.

numba keys a cached function on its own file only, so a function that calls a changed kernel of
another file kept the old machine code (the compiled right-hand side computed the old contact forces
after only the contact kernels changed). The reference here is the definition in
:mod:`cadmotion.kernel.numba_cache`: any change of a source that uses numba names a new folder.
"""

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("numba")

from cadmotion.kernel import numba_cache  # noqa: E402

KERNEL = Path(numba_cache.__file__).resolve().parent


def test_a_change_to_any_numba_source_names_a_new_folder_and_other_files_do_not(tmp_path, monkeypatch):
    copy = tmp_path / "kernel"
    shutil.copytree(KERNEL, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(numba_cache, "_KERNEL", copy)
    before = numba_cache.sources_digest()
    with open(copy / "spec.py", "a") as fh:  # no numba in it: the compiled code cannot depend on it
        fh.write("\n# an edit\n")
    assert numba_cache.sources_digest() == before
    with open(copy / "dynamics" / "_contact_kernels.py", "a") as fh:
        fh.write("\n# an edit\n")
    assert numba_cache.sources_digest() != before


def _cache_dir_of_a_new_process(env):
    code = ("import numba, cadmotion.kernel.dynamics._kernels; "
            "print(repr(numba.config.CACHE_DIR)); "
            "from cadmotion.kernel.numba_cache import sources_digest; print(sources_digest())")
    out = subprocess.run([sys.executable, "-W", "always", "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    folder, digest = out.stdout.splitlines()
    return ast.literal_eval(folder), digest, out.stderr  # the repr of the child's string


def test_a_run_caches_machine_code_under_the_code_cache_or_numbas_own_folder(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["CADMOTION_CACHE"] = str(tmp_path / "codegen")
    folder, digest, _ = _cache_dir_of_a_new_process(env)
    assert Path(folder) == tmp_path / "codegen" / "numba" / digest and Path(folder).is_dir()
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "numba")
    folder, digest, _ = _cache_dir_of_a_new_process(env)
    assert Path(folder) == tmp_path / "numba" / f"cadmotion-{digest}"


def test_an_unwritable_cache_leaves_numba_its_default_places_and_says_so(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["CADMOTION_CACHE"] = str(blocker / "codegen")  # below a file: cannot be created, even by root
    folder, _, err = _cache_dir_of_a_new_process(env)
    assert not folder.startswith(str(blocker)) and "cannot be written" in err
