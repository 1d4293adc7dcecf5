# cadmotion workbench: registered with FreeCAD's GUI at start-up.
#
# The workbench itself lives in cadmotion.plugin.freecad.gui; if cadmotion or its
# solver's modules (numpy, scipy, sympy) cannot be imported, the workbench still appears
# and says what is missing in the report view and in a dialog when it is activated.
import FreeCAD
import FreeCADGui


class CadmotionWorkbench(FreeCADGui.Workbench):
    """The Cadmotion workbench: joint and run toolbars; loads cadmotion only when activated."""
    MenuText = "Cadmotion"
    ToolTip = "Mechanism simulation: joints, drivers, kinematics and dynamics, playback"
    Icon = """
/* XPM */
static char * cadmotion_xpm[] = {
"16 16 3 1",
" 	c None",
".	c #2060C0",
"+	c #D04020",
"                ",
"   ...          ",
"  .....         ",
"  .. ..+++      ",
"  .....  +++    ",
"   ...     ++   ",
"            ++  ",
"            ++  ",
"           ...  ",
"          ..... ",
"          .. .. ",
"          ..... ",
"           ...  ",
"                ",
"                ",
"                "};
"""

    def __init__(self):
        # the SVG icon in the cadmotion package, found without importing it (FreeCAD runs
        # this file with separate globals and locals: no module-level helpers here)
        import importlib.util
        import os

        try:
            spec = importlib.util.find_spec("cadmotion")
        except Exception:
            spec = None
        if spec is not None and spec.origin:
            path = os.path.join(os.path.dirname(spec.origin), "plugin", "freecad", "icons",
                                "Cadmotion_Workbench.svg")
            if os.path.isfile(path):
                self.__class__.Icon = path

    def Initialize(self):
        """FreeCAD callback: build the toolbars and menu (an error is reported, FreeCAD keeps running)."""
        try:
            from cadmotion.plugin.freecad import gui
        except Exception as exc:  # cadmotion missing or broken: say so, keep FreeCAD running
            self._error = str(exc)
            FreeCAD.Console.PrintError(f"cadmotion: the workbench cannot load: {exc}\n"
                                       "Run `cadmotion freecad-install` again, and check that FreeCAD's "
                                       "Python has numpy, scipy and sympy.\n")
            return
        self._error = None
        self.appendToolbar("Cadmotion joints", gui.JOINT_COMMANDS)
        self.appendToolbar("Cadmotion", gui.RUN_COMMANDS)
        self.appendMenu("Cadmotion", gui.JOINT_COMMANDS + ["Separator"] + gui.RUN_COMMANDS)

    def Activated(self):
        """FreeCAD callback: show why the workbench could not load, if it could not."""
        if getattr(self, "_error", None):
            try:
                from PySide import QtGui

                QtGui.QMessageBox.critical(None, "Cadmotion", "The workbench cannot load:\n" + self._error)
            except Exception:
                pass

    def Deactivated(self):
        """FreeCAD callback: nothing to undo."""
        pass

    def GetClassName(self):
        """FreeCAD callback: the C++ workbench class this Python workbench is."""
        return "Gui::PythonWorkbench"


FreeCADGui.addWorkbench(CadmotionWorkbench())
