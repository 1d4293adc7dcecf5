"""The Cadmotion workbench's commands and its simulation task panel (FreeCAD GUI only).

Commands
--------
``Cadmotion_Revolute``, ``_Prismatic``, ``_Cylindrical``, ``_Spherical``, ``_Planar``,
``_Fixed``: a joint between the two selected parts (or a part and the world), its axis
from the selected edge or face (:func:`cadmotion.plugin.freecad.joints.joint_from_selection`).
``Cadmotion_Ground``: fix the selected parts to the world.
``Cadmotion_Simulate``: the task panel.
``Cadmotion_Play``: the task panel, playing the motion stored in the document (active
only when the document holds one).

Task panel
----------
Drivers (one expression per joint coordinate: rad for angles, mm for displacements), end
time, output steps, analysis (kinematic, dynamic or inverse); *Run* computes the motion without
touching the document. Playback moves the parts' Placements from a QTimer: play/pause,
a time slider, speed. *Keep this frame* stores the motion in the document
(``CadmotionMotion``) and leaves the parts at the time shown; closing the panel without
keeping puts every part back where it was. *Export* writes the animation or tables
through cadmotion's writers, *Plot* opens plots of the chosen parts.

A document that holds a stored motion opens the panel with that motion loaded, ready to
play, at the time the document shows. The drivers, end time, steps and analysis typed
in the panel are saved in the document (:mod:`.settings`) when the panel is closed or a
frame is kept, if they differ from what the document had; they are read back the next
time the panel opens. A run that stops early (a lock-up, a singular position) is a
warning in the report view naming the one time it happened at.

Errors are printed to the report view (``FreeCAD.Console.PrintError``) and shown in a
dialog; the document is not changed by a failed command.
"""

from __future__ import annotations

import FreeCAD as App
import FreeCADGui as Gui

from ...errors import CadmotionError
from .document import report_error
from .joints import JointViewProvider, icon_path  # defined beside the joints, so joints never import the GUI
from .simulate import run_summary

__all__ = ["JOINT_COMMANDS", "RUN_COMMANDS", "SimulationPanel", "open_task_panel", "play_stored_motion",
           "report_error", "run_summary", "has_stored_motion", "icon_path", "JointViewProvider"]

JOINT_COMMANDS = ["Cadmotion_Revolute", "Cadmotion_Prismatic", "Cadmotion_Cylindrical",
                  "Cadmotion_Spherical", "Cadmotion_Planar", "Cadmotion_Fixed", "Cadmotion_Ground"]
RUN_COMMANDS = ["Cadmotion_Simulate", "Cadmotion_Play"]


def _qt():
    from PySide import QtCore, QtGui

    return QtCore, QtGui


# --------------------------------------------------------------------------- commands
class _JointCommand:
    def __init__(self, jtype, text):
        self.jtype = jtype
        self.text = text
        self.icon = icon_path(f"Cadmotion_{text}")

    def GetResources(self):
        return {"MenuText": f"{self.text} joint",
                "ToolTip": f"{self.text} joint between the two selected parts (or a part and the world); "
                           "the axis comes from the selected edge or face",
                "Pixmap": self.icon}

    def IsActive(self):
        return App.ActiveDocument is not None

    def Activated(self):
        from .joints import joint_from_selection

        doc = App.ActiveDocument
        selection = [(s.Object, list(s.SubElementNames) or [""]) for s in Gui.Selection.getSelectionEx("", 0)]
        doc.openTransaction(f"Add {self.jtype} joint")
        try:
            joint = joint_from_selection(doc, self.jtype, selection)
        except Exception as exc:
            doc.abortTransaction()
            report_error(exc)
            return
        doc.commitTransaction()
        App.Console.PrintMessage(f"cadmotion: added {joint.Label} ({self.jtype})\n")
        doc.recompute()


class _GroundCommand:
    icon = icon_path("Cadmotion_Ground")

    def GetResources(self):
        return {"MenuText": "Ground part", "ToolTip": "fix the selected parts to the world", "Pixmap": self.icon}

    def IsActive(self):
        return App.ActiveDocument is not None

    def Activated(self):
        from .joints import make_joint

        doc = App.ActiveDocument
        sel = Gui.Selection.getSelection()
        if not sel:
            report_error(CadmotionError("select the part(s) to ground"))
            return
        doc.openTransaction("Ground parts")
        try:
            for obj in sel:
                make_joint(doc, "fixed", None, obj, name=f"Ground_{obj.Name}")
        except Exception as exc:
            doc.abortTransaction()
            report_error(exc)
            return
        doc.commitTransaction()


class _SimulateCommand:
    def GetResources(self):
        return {"MenuText": "Simulate...", "ToolTip": "drivers, time span, run, playback, export, plots",
                "Pixmap": icon_path("Cadmotion_Simulate")}

    def IsActive(self):
        return App.ActiveDocument is not None

    def Activated(self):
        open_task_panel()


class _PlayCommand:
    """Play the motion stored in the active document (active only when it holds one)."""

    def GetResources(self):
        return {"MenuText": "Play stored motion",
                "ToolTip": "play the motion kept in this document (the simulation panel, playing)",
                "Pixmap": icon_path("Cadmotion_Play")}

    def IsActive(self):
        doc = App.ActiveDocument
        return doc is not None and has_stored_motion(doc)

    def Activated(self):
        play_stored_motion()


def has_stored_motion(doc):
    """True when ``doc`` holds a stored motion with at least one frame (cheap: no arrays read)."""
    from .simulate import motion_object

    obj = motion_object(doc)
    return obj is not None and len(obj.Time) > 0


def _register():
    for jtype, text in (("revolute", "Revolute"), ("prismatic", "Prismatic"), ("cylindrical", "Cylindrical"),
                        ("spherical", "Spherical"), ("planar", "Planar"), ("fixed", "Fixed")):
        Gui.addCommand(f"Cadmotion_{text}", _JointCommand(jtype, text))
    Gui.addCommand("Cadmotion_Ground", _GroundCommand())
    Gui.addCommand("Cadmotion_Simulate", _SimulateCommand())
    Gui.addCommand("Cadmotion_Play", _PlayCommand())


# --------------------------------------------------------------------------- task panel
SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0)


class SimulationPanel:
    """Task panel: drivers, time span, analysis; run; playback; keep; export; plots."""

    def __init__(self, doc):
        QtCore, QtGui = _qt()
        from .document import check_dependencies, document_spec

        self.doc = doc
        self.motion = None
        self.bindings = {}
        self.kept = False
        self.speed = 1.0
        self.t = 0.0
        self._wall = None
        check_dependencies()
        self.model = document_spec(doc)
        self.saved = {n: App.Placement(b.obj.Placement) for n, b in self.model.bindings.items()}

        self.form = QtGui.QWidget()
        self.form.setWindowTitle("Cadmotion simulation")
        layout = QtGui.QVBoxLayout(self.form)
        layout.addWidget(QtGui.QLabel(f"{len(self.model.spec.parts)} parts, {len(self.model.spec.joints)} joints "
                                      f"(from {self.model.origin})"))
        self.table = QtGui.QTableWidget(0, 3)
        self.table.setHorizontalHeaderLabels(["joint", "coordinate", "driver f(t): rad / mm"])
        self._fill_drivers()
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.resizeColumnsToContents()
        self.table.verticalHeader().setVisible(False)
        layout.addWidget(self.table)
        form = QtGui.QFormLayout()
        self.t_end = QtGui.QDoubleSpinBox()
        self.t_end.setRange(1e-3, 1e6)
        self.t_end.setDecimals(3)
        self.t_end.setValue(float(self.model.spec.setting("t_end", 1.0)))
        self.steps = QtGui.QSpinBox()
        self.steps.setRange(1, 100000)
        self.steps.setValue(int(self.model.spec.setting("steps", 100)))
        self.analysis = QtGui.QComboBox()
        from ..run_analysis import ANALYSES

        self.analysis.addItems(list(ANALYSES))
        form.addRow("end time (s)", self.t_end)
        form.addRow("output steps", self.steps)
        form.addRow("analysis", self.analysis)
        layout.addLayout(form)
        self.run_button = QtGui.QPushButton("Run")
        self.run_button.clicked.connect(self.run)
        layout.addWidget(self.run_button)
        self.status = QtGui.QLabel("")
        self.status.setWordWrap(True)
        layout.addWidget(self.status)

        play = QtGui.QHBoxLayout()
        self.play_button = QtGui.QPushButton("Play")
        self.play_button.clicked.connect(self.toggle)
        self.slider = QtGui.QSlider(QtCore.Qt.Horizontal)
        self.slider.setRange(0, 1000)
        self.slider.valueChanged.connect(self._scrub)
        self.speed_box = QtGui.QComboBox()
        self.speed_box.addItems([f"{s:g}x" for s in SPEEDS])
        self.speed_box.setCurrentIndex(SPEEDS.index(1.0))
        self.speed_box.currentIndexChanged.connect(lambda i: setattr(self, "speed", SPEEDS[i]))
        play.addWidget(self.play_button)
        play.addWidget(self.slider)
        play.addWidget(self.speed_box)
        layout.addLayout(play)
        self.time_label = QtGui.QLabel("t = -")
        layout.addWidget(self.time_label)
        buttons = QtGui.QHBoxLayout()
        self.keep_button = QtGui.QPushButton("Keep this frame")
        self.keep_button.clicked.connect(self.keep)
        self.export_button = QtGui.QPushButton("Export...")
        self.export_button.clicked.connect(self.export)
        self.plot_button = QtGui.QPushButton("Plot...")
        self.plot_button.clicked.connect(self.plot)
        for b in (self.keep_button, self.export_button, self.plot_button):
            buttons.addWidget(b)
        layout.addLayout(buttons)
        self._enable(False)
        self.timer = QtCore.QTimer()
        self.timer.setInterval(33)
        self.timer.timeout.connect(self._tick)
        self._use_stored_settings()
        self._opened_with = self.settings()
        self._shown = self._stored_shown_time()
        self._load_stored_motion()

    def _stored_shown_time(self):
        from .simulate import motion_object

        stored = motion_object(self.doc)
        return float(stored.ShownTime) if stored is not None else None

    def _use_stored_settings(self):
        """End time, steps and analysis as the document stored them (the drivers are in the spec)."""
        from .settings import read_settings

        stored = read_settings(self.doc)
        if stored is None:
            return
        if stored.t_end:
            self.t_end.setValue(stored.t_end)
        if stored.steps:
            self.steps.setValue(stored.steps)
        if stored.analysis and self.analysis.findText(stored.analysis) >= 0:
            self.analysis.setCurrentIndex(self.analysis.findText(stored.analysis))

    def _load_stored_motion(self):
        """Make the motion stored in the document (if any) the panel's, at the time it shows."""
        from .simulate import load_motion, motion_object

        try:
            motion, bindings = load_motion(self.doc)
        except Exception as exc:       # a damaged stored motion: say so, the panel still runs
            report_error(exc, dialog=False)
            return
        if motion is None or not bindings:
            return
        if {p.name for p in self.model.spec.parts} >= set(motion.parts):
            motion.spec = self.model.spec   # shapes and names for exports and plots
        self.motion, self.bindings = motion, bindings
        text, warnings = run_summary(motion)
        self.status.setText("\n".join(["stored in the document: " + text] + warnings))
        self._enable(True)
        shown = float(getattr(motion_object(self.doc), "ShownTime", motion.time[0]))
        # the parts are already there: mark the time without moving them
        self._mark(min(max(shown, motion.time[0]), motion.time[-1]))

    # -- drivers ---------------------------------------------------------------------
    def _fill_drivers(self):
        _, QtGui = _qt()
        from ...kernel.symbolic.templates import TEMPLATES

        given = {(d.joint, d.coordinate): d for d in self.model.spec.drivers if d.joint}
        rows = []
        for j in self.model.spec.joints:
            for coord in (TEMPLATES[j.type].measures if j.type in TEMPLATES else ()):
                d = given.get((j.name, coord))
                rows.append((j.name, coord, d.function.expression if d and d.function.expression else ""))
        self.table.setRowCount(len(rows))
        for r, (jn, coord, expr) in enumerate(rows):
            for c, text in enumerate((jn, coord, expr)):
                item = QtGui.QTableWidgetItem(text)
                if c < 2:
                    item.setFlags(item.flags() & ~_qt()[0].Qt.ItemIsEditable)
                self.table.setItem(r, c, item)

    def drivers(self):
        """The table's drivers as DriverSpecs (joint coordinates with an expression)."""
        from .settings import driver_spec

        return [driver_spec(jn, coord, expr) for jn, coord, expr in self.driver_rows() if expr]

    def driver_rows(self):
        """The table as (joint, coordinate, expression) rows; expressions in rad / mm."""
        return tuple(tuple(self.table.item(r, c).text().strip() for c in range(3))
                     for r in range(self.table.rowCount()))

    def settings(self):
        """What the panel shows, as the document stores it (:class:`.settings.PanelSettings`)."""
        from .settings import PanelSettings

        return PanelSettings(drivers=self.driver_rows(), t_end=float(self.t_end.value()),
                             steps=int(self.steps.value()), analysis=self.analysis.currentText())

    def save_settings(self):
        """Store the panel's settings in the document if they changed; True if stored."""
        from .settings import write_settings

        current = self.settings()
        if current == self._opened_with:
            return False
        self.doc.openTransaction("Cadmotion simulation settings")
        try:
            write_settings(self.doc, current)
        except Exception as exc:
            self.doc.abortTransaction()
            report_error(exc)
            return False
        self.doc.commitTransaction()
        self._opened_with = current
        return True

    # -- run ------------------------------------------------------------------------
    def run(self):
        """Run the analysis chosen in the panel with the drivers typed in it, then show the first frame."""
        from dataclasses import replace

        from .simulate import run_model

        self.pause()
        self._restore()
        spec = replace(self.model.spec, drivers=tuple(self.drivers()))
        _, QtGui = _qt()
        QtGui.QApplication.setOverrideCursor(_qt()[0].Qt.WaitCursor)
        try:
            self.motion = run_model(spec, t_end=self.t_end.value(), steps=self.steps.value(),
                                    analysis=self.analysis.currentText())
        except Exception as exc:
            self.motion = None
            self.status.setText("failed: " + report_error(exc))
            self._enable(False)
            return
        finally:
            QtGui.QApplication.restoreOverrideCursor()
        self.bindings = self.model.bindings
        text, warnings = run_summary(self.motion)
        self.status.setText("\n".join([text] + warnings))
        App.Console.PrintMessage(f"cadmotion: {text}\n")
        for w in warnings:
            App.Console.PrintWarning(f"cadmotion: {w}\n")
        self._enable(True)
        self.show(self.motion.time[0])

    def _enable(self, on):
        for w in (self.play_button, self.slider, self.speed_box, self.keep_button, self.export_button,
                  self.plot_button):
            w.setEnabled(on)

    # -- playback -------------------------------------------------------------------
    def show(self, t):
        """Move the parts to time ``t`` (s) of the motion."""
        from .simulate import show_time

        if self.motion is None:
            return
        self._mark(show_time(self.doc, t, self.motion, self.bindings))
        Gui.updateGui()

    def _mark(self, t):
        """Show time ``t`` (s) on the slider and the label (the parts are not moved)."""
        self.t = t
        t0, t1 = self.motion.time[0], self.motion.time[-1]
        self.slider.blockSignals(True)
        self.slider.setValue(int(round(1000 * (self.t - t0) / (t1 - t0))) if t1 > t0 else 0)
        self.slider.blockSignals(False)
        self.time_label.setText(f"t = {self.t:.4f} s")

    def _scrub(self, value):
        if self.motion is not None:
            t0, t1 = self.motion.time[0], self.motion.time[-1]
            self.show(t0 + (t1 - t0) * value / 1000.0)

    def toggle(self):
        """Play or pause."""
        if self.timer.isActive():
            self.pause()
        else:
            self.play()

    def play(self):
        """Play the motion from the current time in real time."""
        import time

        if self.motion is None:
            return
        if self.t >= self.motion.time[-1]:
            self.t = self.motion.time[0]
        self._wall = (time.perf_counter(), self.t)
        self.timer.start()
        self.play_button.setText("Pause")

    def pause(self):
        """Stop playing at the current time."""
        if getattr(self, "timer", None) is not None and self.timer.isActive():
            self.timer.stop()
        if hasattr(self, "play_button"):
            self.play_button.setText("Play")

    def _tick(self):
        import time

        w0, t0 = self._wall
        t = t0 + (time.perf_counter() - w0) * self.speed
        if t >= self.motion.time[-1]:
            t = self.motion.time[-1]
            self.pause()
        self.show(t)

    # -- results --------------------------------------------------------------------
    def keep(self):
        """Store the motion in the document and keep the parts at the current frame (one undo step)."""
        from .simulate import store_motion

        if self.motion is None:
            return
        self.pause()
        self.doc.openTransaction("Keep simulation frame")
        try:
            store_motion(self.doc, self.motion, self.model, analysis=self.analysis.currentText())
            self.show(self.t)
            from .simulate import motion_object

            motion_object(self.doc).ShownTime = self.t
        except Exception as exc:
            self.doc.abortTransaction()
            report_error(exc)
            return
        self.doc.commitTransaction()
        self.kept = True
        self.saved = {n: App.Placement(b.obj.Placement) for n, b in self.model.bindings.items()}
        self._shown = self._stored_shown_time()
        self.save_settings()
        App.Console.PrintMessage(f"cadmotion: kept the frame at t = {self.t:.4f} s\n")

    def export(self):
        """Write the motion to files chosen in a dialog (the extension picks the writer)."""
        _, QtGui = _qt()
        from .simulate import export_motion

        if self.motion is None:
            return
        path, _ = QtGui.QFileDialog.getSaveFileName(
            Gui.getMainWindow(), "Export the motion", "",
            "Animation (*.html *.glb *.gltf);;Table (*.csv *.json);;Plots (*.png *.svg);;"
            "STEP at the shown time (*.step)")
        if not path:
            return
        try:
            written = export_motion(self.motion, [path], at=self.t, doc=self.doc, bindings=self.bindings)
        except Exception as exc:
            report_error(exc)
            return
        finally:
            self.show(self.t)
        App.Console.PrintMessage("cadmotion: wrote " + ", ".join(map(str, written)) + "\n")

    def plot(self, selection=None):
        """Plot the selected parts' or joints' coordinates (default: those that move most)."""
        _, QtGui = _qt()
        if self.motion is None:
            return None
        if selection is None:
            moving = [p for p in self.motion.parts if p in self.bindings]
            text, ok = QtGui.QInputDialog.getText(Gui.getMainWindow(), "Plot",
                                                  "parts or joints, comma separated:", text=",".join(moving[:3]))
            if not ok:
                return None
            selection = text
        try:
            from matplotlib.backends.backend_qtagg import FigureCanvasQTAgg

            from ..writers.plots import make_figure

            fig = make_figure(self.motion, selection or None)
        except Exception as exc:
            report_error(exc)
            return None
        dialog = QtGui.QDialog(Gui.getMainWindow())
        dialog.setWindowTitle(f"cadmotion plots: {selection}")
        lay = QtGui.QVBoxLayout(dialog)
        canvas = FigureCanvasQTAgg(fig)
        lay.addWidget(canvas)
        dialog.resize(900, 700)
        dialog.show()
        self._plot_dialog = dialog
        return dialog

    # -- task panel protocol --------------------------------------------------------
    def _restore(self):
        for n, b in self.model.bindings.items():
            if n in self.saved:
                b.obj.Placement = self.saved[n]      # exactly what was there
        from .simulate import motion_object

        stored = motion_object(self.doc)           # and the time the stored motion says they show
        if stored is not None and self._shown is not None and stored.ShownTime != self._shown:
            stored.ShownTime = self._shown

    def getStandardButtons(self):
        """FreeCAD task-panel callback: a Close button only."""
        _, QtGui = _qt()
        return int(QtGui.QDialogButtonBox.Close)

    def reject(self):
        """Close: put the parts back where they were unless a frame was kept, save the settings."""
        self.pause()
        self._restore()
        self.save_settings()
        Gui.Control.closeDialog()
        return True

    def accept(self):
        """Close (as :meth:`reject`)."""
        return self.reject()


def open_task_panel(doc=None):
    """Open the simulation panel for ``doc`` (default: the active document); None on error."""
    doc = doc or App.ActiveDocument
    if doc is None:
        report_error(CadmotionError("no document is open"))
        return None
    try:
        panel = SimulationPanel(doc)
    except Exception as exc:
        report_error(exc)
        return None
    if Gui.Control.activeDialog():
        Gui.Control.closeDialog()
    Gui.Control.showDialog(panel)
    return panel


def play_stored_motion(doc=None):
    """Open the panel on the document's stored motion and start playing it; the panel or None."""
    panel = open_task_panel(doc)
    if panel is not None and panel.motion is not None:
        panel.play()
    return panel


_register()
