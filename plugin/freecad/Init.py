# cadmotion workbench, run by FreeCAD at start-up (GUI and freecadcmd).
#
# `cadmotion freecad-install` puts this file in <FreeCAD user data>/Mod/cadmotion/ next to
# `cadmotion_mod.json` and `lib/cadmotion` (a link to, or a copy of, the cadmotion
# package). FreeCAD puts every Mod folder on sys.path but does not always define
# __file__ here, so the folder is found by its marker file.
import os
import sys


def _cadmotion_lib():
    for entry in list(sys.path):
        if os.path.isfile(os.path.join(entry, "cadmotion_mod.json")):
            return os.path.join(entry, "lib")
    return None


_lib = _cadmotion_lib()
if _lib and _lib not in sys.path:
    sys.path.append(_lib)
