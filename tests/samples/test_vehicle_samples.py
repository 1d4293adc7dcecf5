"""samples/vehicles: the van (double wishbones, rigid rear axle on leaf springs, rack-and-pinion
steering, four Pacejka tyres) and the tractor with a semi-trailer doing a slalom.

References: statics (the tyre loads of a vehicle at rest sum to m g and split front/rear by the
moment balance about the centre of mass of all its parts), the run's own invariants (energy
balance with the dampers' and tyres' work, constraint violations), the bump's timing (front then
rear axle, a wheelbase apart at the vehicle's speed) and the sign of the yaw rate under a steering
input (a vehicle steered left turns left).
"""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from cadmotion.importers.modelfile import read_model_file
from cadmotion.kernel import compile_model
from cadmotion.kernel.dynamics.forward import run

FOLDER = Path(__file__).resolve().parents[2] / "samples" / "vehicles"
G = 9.81
TYRES = ("fl", "fr", "rl", "rr")


def generator():
    spec = importlib.util.spec_from_file_location("make_vehicles", FOLDER / "make_vehicles.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def model(tmp_path, text):
    path = tmp_path / "vehicle.cadmotion.toml"
    path.write_text(text)
    return compile_model(read_model_file(path))


def test_the_sample_files_are_the_generators_output():
    mv = generator()
    assert (FOLDER / "van.cadmotion.toml").read_text() == mv.van()
    assert (FOLDER / "truck.cadmotion.toml").read_text() == mv.truck()


def test_the_van_at_rest_carries_its_weight_on_the_tyres_split_by_its_centre_of_mass(tmp_path):
    """At rest the four tyres carry m g; the front axle m g (x_c − x_r)/(x_f − x_r), x_c the centre of
    mass of all 15 parts (from the model file's masses), x_f = 0 and x_r = −3.3 m the axles."""
    spec = read_model_file(FOLDER / "van.cadmotion.toml")
    parts = [p for p in spec.parts if p.mass]
    m = sum(p.mass for p in parts)
    x_c = sum(p.mass * p.position[0] for p in parts) / m
    assert m == pytest.approx(3500.0, rel=0.01)
    mdl = model(tmp_path, generator().van(speed=0.0, bumps=()))
    motion, result = run(mdl, t_end=2.0, steps=20, integrator="DOP853", rtol=1e-7, atol=1e-9)
    assert not result.invariants.broken
    load = {w: motion.extra[f"tyre_{w}.normal_force"][-1] for w in TYRES}
    assert sum(load.values()) == pytest.approx(m * G, rel=1e-5)  # what is left of the settling: < 1 N
    front = load["fl"] + load["fr"]
    assert front == pytest.approx(m * G * (x_c + 3.3) / 3.3, rel=1e-4)
    assert load["fl"] == pytest.approx(load["fr"], rel=1e-6)  # symmetric
    chassis = motion.velocity[-1, motion.part_index("chassis")]
    assert np.linalg.norm(chassis) < 1e-4  # settled


def test_the_van_goes_over_a_bump_front_then_rear_axle_with_its_energy_balanced(tmp_path):
    """At 8 m/s over a 6 cm bump at x = 4 m, RK4 at 1 ms: the front tyres' load peaks as the front wheels
    cross it (t ≈ 0.5 s), the rear's a wheelbase later (3.3 m / 8 m/s ≈ 0.41 s); the chassis rises and
    pitches; the run's self-checks hold (energy balance, no constraint drift)."""
    V, xc = 8.0, 4.0
    mdl = model(tmp_path, generator().van(speed=V, bumps=((xc, 0.06, 0.9),)))
    motion, result = run(mdl, t_end=1.4, steps=280, integrator="RK4", dt=1e-3)
    assert motion.complete and not result.invariants.broken
    checks = {c.name: c for c in result.invariants.checks}
    assert checks["violation.position"].max_drift < 1e-8
    t = motion.time
    front = motion.extra["tyre_fl.normal_force"]
    rear = motion.extra["tyre_rl.normal_force"]
    t_front, t_rear = t[np.argmax(front)], t[np.argmax(rear)]
    assert t_front == pytest.approx(xc / V, abs=0.06)
    assert t_rear - t_front == pytest.approx(3.3 / V, abs=0.06)
    assert front.max() > 1.5 * front[0]
    z = motion.position[:, motion.part_index("chassis"), 2]
    assert z.max() - z[0] > 0.01
    assert np.allclose(motion.extra["tyre_fl.normal_force"], motion.extra["tyre_fr.normal_force"], rtol=1e-6)


def test_the_trucks_yaw_follows_its_steering(tmp_path):
    """The slalom's first 3 s (RK4, 1 ms): wherever the left kingpin is steered by more than half the
    amplitude, the tractor's yaw rate has its sign (left steer, positive yaw about +z), and the trailer
    follows the tractor with a lag; the run's self-checks hold."""
    mdl = compile_model(read_model_file(FOLDER / "truck.cadmotion.toml"))
    motion, result = run(mdl, t_end=3.0, steps=60, integrator="RK4", dt=1e-3)
    assert motion.complete and not result.invariants.broken
    steer = motion.coordinate("kingpin_l.angle")
    yaw_rate = motion.angular_velocity[:, motion.part_index("tractor"), 2]
    big = np.abs(steer) > 0.5 * np.abs(steer).max()
    assert big.sum() > 20
    assert np.all(np.sign(yaw_rate[big]) == np.sign(steer[big]))
    trailer = motion.angular_velocity[:, motion.part_index("trailer"), 2]
    assert motion.time[np.argmax(trailer)] > motion.time[np.argmax(yaw_rate)]
