"""Run Python scripts inside Debian's FreeCAD (``freecadcmd``) for the FreeCAD front-end tests.

A script gets two globals through the environment: ``CADMOTION_TEST_OUT`` (a JSON file
it must write its results to) and ``CADMOTION_TEST_ARGS`` (JSON arguments). The
prologue below wraps the script so an exception is written as ``{"error": traceback}``
instead of being swallowed by freecadcmd (which exits 0 either way).

``cadmotion`` is made importable in FreeCAD's own Python by a folder holding a
``cadmotion`` symlink to the package root, put on ``PYTHONPATH``.
"""

import json
import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import cadmotion

FREECADCMD = shutil.which("freecadcmd") or shutil.which("FreeCADCmd")
PACKAGE_ROOT = Path(cadmotion.__file__).resolve().parent

PROLOGUE = """
import json, os, sys, traceback
_OUT = os.environ["CADMOTION_TEST_OUT"]
ARGS = json.loads(os.environ.get("CADMOTION_TEST_ARGS", "{{}}"))
RESULT = {{}}
try:
{body}
except BaseException:
    RESULT["error"] = traceback.format_exc()
with open(_OUT, "w") as _fh:
    json.dump(RESULT, _fh, default=float)
if os.environ.get("CADMOTION_TEST_EXIT"):  # the GUI keeps running otherwise
    os._exit(0)
"""


def python_path(tmp):
    """A folder with ``cadmotion`` -> the package root, for FreeCAD's PYTHONPATH."""
    tmp = Path(tmp)
    tmp.mkdir(parents=True, exist_ok=True)
    link = tmp / "cadmotion"
    if not link.exists():
        link.symlink_to(PACKAGE_ROOT, target_is_directory=True)
    return tmp


def run_freecad(script, workdir, args=None, *, env=None, timeout=180, pythonpath=True, gui=False):
    """Run ``script`` (the body, any indentation) in freecadcmd; returns (result dict, output text)."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    body = textwrap.indent(textwrap.dedent(script), "    ")
    path = workdir / f"script_{abs(hash(script)) % 10**8}.py"
    path.write_text(PROLOGUE.format(body=body), encoding="utf-8")
    out = workdir / (path.stem + ".json")
    if out.exists():
        out.unlink()
    full_env = dict(os.environ)
    full_env.pop("PYTHONHOME", None)
    if pythonpath:
        full_env["PYTHONPATH"] = str(python_path(workdir / "pypath"))
    else:
        full_env.pop("PYTHONPATH", None)
    full_env["CADMOTION_TEST_OUT"] = str(out)
    full_env["CADMOTION_TEST_ARGS"] = json.dumps(args or {})
    full_env.update(env or {})
    cmd = gui if gui else [FREECADCMD, str(path)]
    if gui:
        cmd = list(gui) + [str(path)]
    proc = subprocess.run(cmd, cwd=workdir, env=full_env, capture_output=True, text=True, timeout=timeout)
    text = proc.stdout + proc.stderr
    if not out.exists():
        raise AssertionError(f"FreeCAD wrote no result (exit {proc.returncode}):\n{text[-4000:]}")
    result = json.loads(out.read_text())
    if "error" in result:
        raise AssertionError(f"the script failed inside FreeCAD:\n{result['error']}\n--- output ---\n{text[-3000:]}")
    return result, text
