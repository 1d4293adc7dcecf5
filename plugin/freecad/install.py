"""``cadmotion freecad-install``: put the cadmotion workbench and macro into FreeCAD.

What it makes (``MOD`` is FreeCAD's user Mod folder, ``MACRO`` its user macro folder)::

    MOD/cadmotion/Init.py, InitGui.py       copied from cadmotion/plugin/freecad
    MOD/cadmotion/cadmotion_mod.json        what was installed, from where (marker file)
    MOD/cadmotion/lib/cadmotion             a link to the installed cadmotion package
                                            (or a copy of it with --copy)
    MACRO/cadmotion_simulate.FCMacro        opens the simulation panel on the active document

The folders are asked from FreeCAD itself (``freecadcmd`` on PATH, or ``--freecad``):
``FreeCAD.getUserAppDataDir()`` and ``getUserMacroDir``. Without FreeCAD the usual
places are used: ``~/.local/share/FreeCAD`` (FreeCAD 0.20 and 1.0 on Linux; 1.1 and later
add ``v1-1`` etc.), ``%APPDATA%/FreeCAD`` on Windows, ``~/Library/Application
Support/FreeCAD`` on macOS. ``--mod-dir``/``--macro-dir`` override them.

``--dry-run`` prints what would be done and changes nothing; ``--uninstall`` removes
exactly what an earlier install made (a folder without the marker file is left alone).
Runs outside FreeCAD (the ``cadmotion`` command's Python).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["add_arguments", "run", "freecad_folders", "install", "uninstall", "MACRO_NAME"]

MACRO_NAME = "cadmotion_simulate.FCMacro"
MARKER = "cadmotion_mod.json"
_HERE = Path(__file__).resolve().parent
_SKIP = {"tests", "build", "benchmarks", ".git", "__pycache__", ".ci", ".pytest_cache"}

MACRO_TEXT = '''# cadmotion: simulate the active document (installed by `cadmotion freecad-install`)
import FreeCAD
try:
    from cadmotion.plugin.freecad import gui
except Exception as exc:
    FreeCAD.Console.PrintError("cadmotion is not importable in FreeCAD: %s\\n"
                               "Run `cadmotion freecad-install`.\\n" % exc)
    try:
        from PySide import QtGui
        QtGui.QMessageBox.critical(None, "Cadmotion", "cadmotion is not importable in FreeCAD:\\n%s" % exc)
    except Exception:
        pass
else:
    gui.open_task_panel()
'''


def add_arguments(parser):
    """Add ``cadmotion freecad-install``'s options to ``parser``."""
    parser.add_argument("--mod-dir", default=None, help="FreeCAD's user Mod folder (default: ask FreeCAD)")
    parser.add_argument("--macro-dir", default=None, help="FreeCAD's user macro folder (default: ask FreeCAD)")
    parser.add_argument("--freecad", default=None,
                        help="the freecadcmd executable to ask for its folders (default: freecadcmd on PATH)")
    parser.add_argument("--copy", action="store_true", help="copy the cadmotion package instead of linking it")
    parser.add_argument("--dry-run", action="store_true", help="print what would be done; change nothing")
    parser.add_argument("--uninstall", action="store_true", help="remove what an earlier install made")


def _ask_freecad(exe):
    code = ("import FreeCAD,sys;"
            "m=FreeCAD.getUserMacroDir(True) if hasattr(FreeCAD,'getUserMacroDir') else '';"
            "sys.stdout.write('\\nCADMOTION|'+FreeCAD.getUserAppDataDir()+'|'+m+'|'+'.'.join(FreeCAD.Version()[:2])+'\\n')")
    try:
        out = subprocess.run([exe, "-c", code], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        if line.startswith("CADMOTION|"):
            _, data, macro, version = line.split("|")
            return Path(data), Path(macro) if macro else Path(data) / "Macro", version
    return None


def _default_data_dir():
    home = Path.home()
    if sys.platform.startswith("win"):
        return Path(os.environ.get("APPDATA", home / "AppData" / "Roaming")) / "FreeCAD"
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "FreeCAD"
    return Path(os.environ.get("XDG_DATA_HOME", home / ".local" / "share")) / "FreeCAD"


def freecad_folders(mod_dir=None, macro_dir=None, freecad=None):
    """(Mod folder, macro folder, how they were found)."""
    found, how = None, "the usual user folder (FreeCAD not asked)"
    if mod_dir is None or macro_dir is None:
        exe = freecad or shutil.which("freecadcmd") or shutil.which("FreeCADCmd")
        if exe:
            found = _ask_freecad(exe)
            if found:
                how = f"asked {exe} (FreeCAD {found[2]})"
    data = found[0] if found else _default_data_dir()
    mod = Path(mod_dir) if mod_dir else data / "Mod"
    macro = Path(macro_dir) if macro_dir else (found[1] if found else data / "Macro")
    if mod_dir:
        how = "given with --mod-dir"
    return mod, macro, how


def _package_root():
    import cadmotion

    return Path(cadmotion.__file__).resolve().parent


def _plan_install(mod, macro, copy):
    target = mod / "cadmotion"
    pkg = _package_root()
    actions = []
    if target.exists() and not (target / MARKER).is_file():
        raise SystemExit(f"cadmotion: error: {target} exists and was not made by cadmotion; "
                         "move it away or choose --mod-dir")
    if target.exists():
        actions.append(("remove", target, None))
    actions.append(("mkdir", target / "lib", None))
    for name in ("Init.py", "InitGui.py"):
        actions.append(("copy", target / name, _HERE / name))
    actions.append(("copytree" if copy else "symlink", target / "lib" / "cadmotion", pkg))
    actions.append(("marker", target / MARKER, pkg))
    actions.append(("macro", macro / MACRO_NAME, None))
    return actions


def _describe(action):
    kind, path, src = action
    return {"remove": f"remove the earlier install {path}",
            "mkdir": f"create {path}",
            "copy": f"copy {src} -> {path}",
            "copytree": f"copy the package {src} -> {path}",
            "symlink": f"link {path} -> {src}",
            "marker": f"write {path}",
            "macro": f"write the macro {path}",
            "unlink": f"remove {path}"}[kind]


def _ignore(_, names):
    return [n for n in names if n in _SKIP or n.endswith((".egg-info", ".pyc"))]


def _do(action, copy):
    kind, path, src = action
    if kind == "remove":
        shutil.rmtree(path) if not path.is_symlink() else path.unlink()
    elif kind == "mkdir":
        path.mkdir(parents=True, exist_ok=True)
    elif kind == "copy":
        shutil.copy2(src, path)
    elif kind == "copytree":
        shutil.copytree(src, path, ignore=_ignore, symlinks=False)
    elif kind == "symlink":
        try:
            path.symlink_to(src, target_is_directory=True)
        except OSError:  # no symlinks (Windows without the privilege): copy instead
            shutil.copytree(src, path, ignore=_ignore)
    elif kind == "marker":
        path.write_text(json.dumps({"package": str(src), "mode": "copy" if copy else "link",
                                    "macro": MACRO_NAME}, indent=2) + "\n", encoding="utf-8")
    elif kind == "macro":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(MACRO_TEXT, encoding="utf-8")
    elif kind == "unlink":
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()


def install(mod, macro, *, copy=False, dry_run=False, out=print):
    """Install into ``mod``/``macro``; returns the list of action descriptions."""
    actions = _plan_install(Path(mod), Path(macro), copy)
    done = []
    for a in actions:
        text = _describe(a)
        out(("would " if dry_run else "") + text)
        if not dry_run:
            _do(a, copy)
        done.append(text)
    return done


def uninstall(mod, macro, *, dry_run=False, out=print):
    """Remove an earlier install; returns the list of action descriptions."""
    target = Path(mod) / "cadmotion"
    actions = []
    if target.exists() or target.is_symlink():
        if not (target / MARKER).is_file():
            raise SystemExit(f"cadmotion: error: {target} was not made by cadmotion; not removing it")
        actions.append(("unlink", target, None))
    m = Path(macro) / MACRO_NAME
    if m.is_file() and m.read_text(encoding="utf-8", errors="replace").startswith("# cadmotion:"):
        actions.append(("unlink", m, None))
    if not actions:
        out(f"nothing to remove: no cadmotion install in {target} or {m}")
    done = []
    for a in actions:
        text = _describe(a)
        out(("would " if dry_run else "") + text)
        if not dry_run:
            _do(a, False)
        done.append(text)
    return done


def run(args):
    """``cadmotion freecad-install``: copy the workbench and the macro into FreeCAD's user folders."""
    mod, macro, how = freecad_folders(args.mod_dir, args.macro_dir, args.freecad)
    print(f"FreeCAD folders ({how}):\n  Mod:   {mod}\n  Macro: {macro}")
    try:
        if args.uninstall:
            uninstall(mod, macro, dry_run=args.dry_run)
        else:
            install(mod, macro, copy=args.copy, dry_run=args.dry_run)
    except OSError as exc:
        print(f"cadmotion: error: {exc}", file=sys.stderr)
        return 1
    if not args.dry_run and not args.uninstall:
        print("done: restart FreeCAD and choose the 'Cadmotion' workbench "
              f"(or run the macro {MACRO_NAME}).")
    return 0
