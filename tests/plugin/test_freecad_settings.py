"""The panel's saved drivers and the headless document's view data, without FreeCAD.

``settings.apply_drivers`` is what a reopened document's drivers go through; it is
checked by running the kernel on the result against the drivers' closed forms.
``guidoc.add_gui_document`` is checked on the zip it writes (the real FreeCAD window
reading it is in test_freecad_gui.py).
"""

import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import numpy as np
from cadmotion.importers import load
from cadmotion.kernel import compile_model, kinematics
from cadmotion.plugin.freecad.guidoc import add_gui_document, read_gui_data
from cadmotion.plugin.freecad.settings import apply_drivers

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def _coordinate(motion, column):
    return next(jc.values for jc in motion.joint_coordinates if jc.column == column)


def test_a_stored_driver_replaces_the_files_driver_of_that_coordinate():
    spec = load(SAMPLES / "slider_crank.cadmotion.toml")           # drives crank_pivot with t**2
    spec, notes = apply_drivers(spec, [("crank_pivot", "angle", "pi*t")])
    assert notes == []
    assert [d.function.expression for d in spec.drivers if d.joint == "crank_pivot"] == ["pi*t"]
    motion = kinematics(compile_model(spec), t_end=0.4, steps=8)
    assert np.allclose(_coordinate(motion, "crank_pivot.angle"), np.pi * motion.time, atol=1e-9)


def test_an_empty_row_undrives_and_a_displacement_is_typed_in_mm():
    # (the slider of this sample starts at dead centre, so it cannot be driven here; the
    # mm driver moving a slider to its closed-form lock-up is in test_freecad_gui.py)
    spec = load(SAMPLES / "slider_crank.cadmotion.toml")
    rows = [("crank_pivot", "angle", ""), ("slide", "disp", "5*t")]   # mm, as the panel says
    spec, _ = apply_drivers(spec, rows)
    assert [(d.joint, d.coordinate) for d in spec.drivers] == [("slide", "disp")]
    assert spec.drivers[0].function.expression == "5*t" and spec.drivers[0].function.scale == 1e-3


def test_a_stored_driver_of_a_joint_the_mechanism_lost_is_left_out_with_a_note():
    spec = load(SAMPLES / "slider_crank.cadmotion.toml")
    new, notes = apply_drivers(spec, [("gone", "angle", "t"), ("slide", "angle", "t")])
    assert new.drivers == spec.drivers
    assert len(notes) == 2 and "gone.angle" in notes[0] and "slide.angle" in notes[1]


def _fcstd(path):
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("Document.xml", "<Document/>")
        zf.writestr("PartShape.brp", b"shape")
    return path


def test_a_headless_file_gets_view_data_with_each_objects_visibility(tmp_path):
    path = _fcstd(tmp_path / "doc.FCStd")
    assert add_gui_document(path, {"Solid": True, "CadmotionMotion": False, 'odd"<name>': True})
    with zipfile.ZipFile(path) as zf:
        assert zf.read("PartShape.brp") == b"shape"                 # the rest is kept
        root = ET.fromstring(zf.read("GuiDocument.xml"))
    shown = {vp.get("name"): vp.find("Properties/Property[@name='Visibility']/Bool").get("value")
             for vp in root.iter("ViewProvider")}
    assert shown == {"Solid": "true", "CadmotionMotion": "false", 'odd"<name>': "true"}
    assert root.find("ViewProviderData").get("Count") == "3"
    assert root.find("Camera") is not None                         # FreeCAD reads it after the data
    assert [p.name for p in tmp_path.iterdir()] == ["doc.FCStd"]    # no temporary left


def test_a_file_the_gui_saved_keeps_its_own_view_data(tmp_path):
    path = _fcstd(tmp_path / "doc.FCStd")
    with zipfile.ZipFile(path, "a") as zf:
        zf.writestr("GuiDocument.xml", "<Document>the GUI's</Document>")
    before = path.read_bytes()
    assert not add_gui_document(path, {"Solid": False})
    assert path.read_bytes() == before


def test_the_guis_view_data_survives_a_headless_save_and_new_objects_get_an_entry(tmp_path):
    gui_saved = _fcstd(tmp_path / "gui.FCStd")
    view = ('<?xml version=\'1.0\' encoding=\'utf-8\'?>\n<Document SchemaVersion="1" HasExpansion="1">\n'
            '    <ViewProviderData Count="1">\n        <ViewProvider name="Solid" expanded="0">\n'
            '            <Properties Count="1" TransientCount="0">\n'
            '                <Property name="DiffuseColor" type="App::PropertyColorList" status="1">\n'
            '                    <ColorList file="DiffuseColor"/>\n                </Property>\n'
            '            </Properties>\n        </ViewProvider>\n    </ViewProviderData>\n'
            '    <Camera settings="OrthographicCamera {}"/>\n</Document>\n')
    with zipfile.ZipFile(gui_saved, "a") as zf:
        zf.writestr("GuiDocument.xml", view)
        zf.writestr("DiffuseColor", b"\x01\x00\x00\x00red!")
    previous = read_gui_data(gui_saved)
    assert set(previous) == {"GuiDocument.xml", "DiffuseColor"}
    headless = _fcstd(tmp_path / "saved.FCStd")                      # what freecadcmd writes: no view data
    assert add_gui_document(headless, {"Solid": True, "CadmotionMotion": False}, previous=previous)
    with zipfile.ZipFile(headless) as zf:
        assert zf.read("DiffuseColor") == b"\x01\x00\x00\x00red!"
        root = ET.fromstring(zf.read("GuiDocument.xml"))
    vps = {vp.get("name"): vp for vp in root.iter("ViewProvider")}
    assert set(vps) == {"Solid", "CadmotionMotion"}
    assert root.find("ViewProviderData").get("Count") == "2"
    assert vps["Solid"].find("Properties/Property").get("name") == "DiffuseColor"   # the GUI's entry kept
    assert vps["CadmotionMotion"].find("Properties/Property/Bool").get("value") == "false"
    assert root.find("Camera").get("settings") == "OrthographicCamera {}"
