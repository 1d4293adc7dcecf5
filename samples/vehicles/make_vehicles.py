"""Write the vehicle samples: a 3.5 t van (IVECO-Daily-like) and a tractor with a semi-trailer.

Axes: x forward, y left, z up; the road is the plane z = 0 with cosine speed bumps (``tyre``
force elements, :mod:`cadmotion.kernel.dynamics.tyres`). Every part has its frame at its centre
of mass, assembly axes, and the whole vehicle starts at its design ride height: each tyre
deflected by its share of the weight (from the centre of mass of all parts), the springs
preloaded for it (the torsion bars by the load times their lever, the leaf-spring bushings by an
offset of their two points), moving forward at ``speed`` with the wheels rolling at V/ρ.

Van (``van.cadmotion.toml``): chassis; front double wishbones (lower and upper arms on revolute
pivots along x, an upright on two ball joints, a wheel on a revolute), torsion bars as rotational
spring-dampers at the lower arms' pivots, telescopic dampers, an anti-roll bar (two halves on one
axis along y, the left on the chassis, the right on the left with the bar's torsional rate
between them, drop links as distance constraints to the lower arms); rack-and-pinion steering: the
rack on a prismatic joint along y driven by a guided coordinate (``[[drivers]]``, 0 for a straight
run; the pinion is not a part: its angle is the rack's travel over its radius, and an 8 mm pinion
coupled by a ``rack-and-pinion`` joint reads as a near-singular configuration to the run's singularity
probe, so the run crosses it by index-3 steps), tie rods as distance constraints to the uprights'
steering arms; rear rigid axle on two leaf springs (6-D bushings) with telescopic dampers; four
tyres. 15 moving parts, 18 DOF.

Truck (``truck.cadmotion.toml``): a 4x2 tractor (chassis; front beam axle on leaf-spring bushings
with two knuckles on kingpins, the left one's steering angle driven by a sinusoid (the slalom), a
tie rod to the right; rear axle on bushings) and a two-axle semi-trailer on the fifth wheel (a
spherical joint), its axles on bushings; twin rear tyres as one. 16 moving parts, 41 DOF.

    python samples/vehicles/make_vehicles.py [--out-dir samples/vehicles]

The output is deterministic.
"""

from __future__ import annotations

import argparse
import os

__all__ = ["Vehicle", "van", "truck", "main"]

G = 9.81
#: van tyre 225/65 R16 C: unloaded radius (m), vertical rate (N/m), damping (N s/m), magic formula
#: [B, C, D, E] longitudinal (slip ratio) and lateral (slip angle, rad), rolling resistance
VAN_TYRE = dict(radius=0.35, stiffness=3.5e5, damping=300.0, longitudinal=[12.0, 1.65, 1.0, 0.1],
                lateral=[9.0, 1.35, 0.95, -0.5], rolling_resistance=0.008, low_speed=0.5)
#: truck tyre 315/80 R22.5 (twin rear tyres: one tyre of twice the rate)
TRUCK_TYRE = dict(radius=0.53, stiffness=8.0e5, damping=800.0, longitudinal=[10.0, 1.65, 0.8, 0.0],
                  lateral=[7.0, 1.4, 0.8, -0.5], rolling_resistance=0.006, low_speed=0.5)


def _f(x):
    x = float(x)
    return repr(0.0 if x == 0.0 else round(x, 12))


def _value(v):
    if isinstance(v, str):
        return '"' + v + '"'
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_value(x)}" for k, x in v.items()) + " }"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return _f(v)


class Vehicle:
    """A model file under construction: parts with their frames at their centres of mass."""

    def __init__(self, title):
        self.title = title
        self.parts = {}          # name -> (position, mass, inertia)
        self.joints, self.forces, self.drivers = [], [], []

    def part(self, name, position, mass, inertia):
        self.parts[name] = (tuple(position), mass, tuple(inertia))

    def joint(self, name, type_, parts, origin, **kw):
        self.joints.append(dict(name=name, type=type_, parts=list(parts), origin=list(origin), **kw))

    def force(self, name, type_, **kw):
        self.forces.append(dict(name=name, type=type_, **kw))

    def driver(self, joint, expression):
        self.drivers.append(dict(joint=joint, expression=expression))

    def mass_centre(self):
        """(total mass kg, centre of mass (3,) m) of the moving parts."""
        m = sum(p[1] for p in self.parts.values())
        c = [sum(p[1] * p[0][i] for p in self.parts.values()) / m for i in range(3)]
        return m, c

    def toml(self, header, speed, spins, t_end, steps):
        """The model file text; every part moves at ``speed`` along x, ``spins`` {wheel: (ω, axis)}."""
        out = [f"# {line}" if line else "#" for line in header] + [
            "# Written by samples/vehicles/make_vehicles.py (edit that script, not this file).",
            "", 'units = "m"', f"gravity = [0, 0, {-G!r}]", "",
            "[simulation]", f"t_end = {t_end!r}", f"steps = {steps}", "", "[parts.ground]", "fixed = true"]
        for name, (pos, m, inertia) in self.parts.items():
            out += ["", f"[parts.{name}]", f"position = {_value(pos)}", f"mass = {_f(m)}",
                    f"inertia = {_value(inertia)}"]
        for table, items in (("joints", self.joints), ("forces", self.forces), ("drivers", self.drivers)):
            for item in items:
                out += ["", f"[[{table}]]"] + [f"{k} = {_value(v)}" for k, v in item.items()]
        for name in self.parts:
            out += ["", f"[initial_velocity.{name}]", f"velocity = {_value([speed, 0, 0])}"]
            if name in spins:
                w, axis = spins[name]
                out.append(f"angular_velocity = {_value([w * a for a in axis])}")
        return "\n".join(out) + "\n"


def _tyre(vehicle, name, wheel, centre, params, load, bumps):
    """A tyre on ``wheel`` at ``centre``; returns its loaded radius at ``load`` (N)."""
    vehicle.force(name, "tyre", parts=[wheel], center=list(centre), axis=[0, 1, 0],
                  road={"bumps": [list(b) for b in bumps]}, **params)
    return params["radius"] - load / params["stiffness"]


def _leaf_spring(vehicle, name, axle, frame, point, load, k, c, kr, cr):
    """A leaf spring as a 6-D bushing between an axle and a frame, preloaded by ``load`` (N, up on
    the frame): the frame's point sits load/k_z below the axle's, so F = −K d holds the frame up."""
    x, y, z = point
    vehicle.force(name, "bushing", parts=[axle, frame], points=[[x, y, z], [x, y, z - load / k[2]]],
                  stiffness=list(k), damping=list(c), rotational_stiffness=list(kr), rotational_damping=list(cr))


def van(speed=8.0, bumps=((12.0, 0.06, 0.9), (28.0, 0.06, 0.9)), steer="0"):
    """The van's model file text (speed m/s; bumps (x_c, H, L) m; the rack's travel (m) as an expression of t)."""
    v = Vehicle("van")
    tyre = VAN_TYRE
    R = tyre["radius"]
    xf, xr, track = 0.0, -3.3, 1.70
    # masses (kg) and inertias about the com (kg m²)
    parts = dict(chassis=(3180.0, (-1.55, 0.0, 0.95), (1400.0, 6800.0, 7000.0)))
    m_lca, m_uca, m_upr, m_wf, m_arb, m_rack, m_axle, m_wr = 8.0, 5.0, 15.0, 30.0, 4.0, 5.0, 120.0, 35.0
    total = parts["chassis"][0] + 2 * (m_lca + m_uca + m_upr + m_wf + m_arb + m_wr) + m_rack + m_axle
    x_com = (parts["chassis"][0] * parts["chassis"][1][0] + 2 * xf * (m_lca + m_uca + m_upr + m_wf)
             + 2 * (xf + 0.15) * m_arb + (xf - 0.15) * m_rack + xr * (m_axle + 2 * m_wr)) / total
    f_front = total * G * (x_com - xr) / (xf - xr) / 2.0  # static load per front tyre, N
    f_rear = total * G / 2.0 - f_front
    zf = R - f_front / tyre["stiffness"]
    zr = R - f_rear / tyre["stiffness"]
    c = parts["chassis"]
    v.part("chassis", c[1], c[0], c[2])
    spins = {}
    k_tb, c_sh = 1.1e4, 3500.0
    for side, s in (("l", 1.0), ("r", -1.0)):
        y = lambda d: s * d  # noqa: E731 - mirror a lateral offset
        lca_in, lca_out = (xf, y(0.40), zf - 0.05), (xf, y(0.78), zf - 0.12)
        uca_in, uca_out = (xf, y(0.45), zf + 0.28), (xf, y(0.72), zf + 0.25)
        wc = (xf, y(track / 2), zf)
        v.part(f"lca_{side}", (xf, y(0.59), zf - 0.085), m_lca, (0.15, 0.02, 0.16))
        v.part(f"uca_{side}", (xf, y(0.585), zf + 0.265), m_uca, (0.06, 0.01, 0.065))
        v.part(f"upright_{side}", (xf - 0.02, y(0.75), zf + 0.05), m_upr, (0.12, 0.10, 0.04))
        v.part(f"wheel_f{side}", wc, m_wf, (1.0, 1.6, 1.0))
        v.joint(f"lca_pivot_{side}", "revolute", ["chassis", f"lca_{side}"], lca_in, axis=[1, 0, 0])
        v.joint(f"uca_pivot_{side}", "revolute", ["chassis", f"uca_{side}"], uca_in, axis=[1, 0, 0])
        v.joint(f"lower_ball_{side}", "spherical", [f"lca_{side}", f"upright_{side}"], lca_out)
        v.joint(f"upper_ball_{side}", "spherical", [f"uca_{side}", f"upright_{side}"], uca_out)
        v.joint(f"hub_f{side}", "revolute", [f"upright_{side}", f"wheel_f{side}"], wc, axis=[0, 1, 0])
        # torsion bar: its preload holds the wheel's load less the upright's and wheel's weight at the
        # ball's lever (the road pushes the left arm up: a positive moment about +x, so τ0 < 0 there)
        lever = abs(lca_out[1] - lca_in[1])
        tau0 = -s * (f_front - (m_upr + m_wf) * G) * lever
        v.force(f"torsion_bar_{side}", "rotational-spring-damper", joint=f"lca_pivot_{side}", stiffness=k_tb,
                damping=40.0, preload=tau0)
        v.force(f"damper_f{side}", "spring-damper", parts=[f"lca_{side}", "chassis"],
                points=[[xf, y(0.65), zf - 0.10], [xf + 0.05, y(0.60), zf + 0.45]], damping=c_sh)
        # steering: tie rod from the rack's end to the upright's steering arm
        v.joint(f"tie_rod_{side}", "distance", ["rack", f"upright_{side}"], (xf - 0.15, y(0.30), zf + 0.05),
                points=[[xf - 0.15, y(0.30), zf + 0.05], [xf - 0.15, y(0.70), zf + 0.02]])
        # anti-roll bar: a half bar along y with an arm back to a drop link on the lower arm
        v.part(f"arb_{side}", (xf + 0.15, y(0.35), zf + 0.11), m_arb, (0.02, 0.01, 0.02))
        v.joint(f"drop_link_{side}", "distance", [f"arb_{side}", f"lca_{side}"], (xf + 0.05, y(0.60), zf + 0.11),
                points=[[xf + 0.05, y(0.60), zf + 0.11], [xf + 0.05, y(0.60), zf - 0.09]])
        spins[f"wheel_f{side}"] = (speed / (R - f_front / tyre["stiffness"]), (0, 1, 0))
        _tyre(v, f"tyre_f{side}", f"wheel_f{side}", wc, tyre, f_front, bumps)
    v.part("rack", (xf - 0.15, 0.0, zf + 0.05), m_rack, (0.05, 0.001, 0.05))
    v.joint("rack_slide", "prismatic", ["chassis", "rack"], (xf - 0.15, 0.0, zf + 0.05), axis=[0, 1, 0])
    v.driver("rack_slide", steer)
    v.joint("arb_pivot", "revolute", ["chassis", "arb_l"], (xf + 0.25, 0.3, zf + 0.11), axis=[0, 1, 0])
    v.joint("arb_twist", "revolute", ["arb_l", "arb_r"], (xf + 0.25, 0.0, zf + 0.11), axis=[0, 1, 0])
    v.force("anti_roll_bar", "rotational-spring-damper", joint="arb_twist", stiffness=2.5e4, damping=20.0)
    # rear rigid axle on leaf springs, telescopic dampers
    v.part("rear_axle", (xr, 0.0, zr), m_axle, (40.0, 2.0, 40.0))
    axle_load = f_rear - m_wr * G - m_axle * G / 2.0
    for side, s in (("l", 1.0), ("r", -1.0)):
        wc = (xr, s * track / 2, zr)
        v.part(f"wheel_r{side}", wc, m_wr, (1.1, 1.8, 1.1))
        v.joint(f"hub_r{side}", "revolute", ["rear_axle", f"wheel_r{side}"], wc, axis=[0, 1, 0])
        _leaf_spring(v, f"leaf_spring_{side}", "rear_axle", "chassis", (xr, s * 0.55, zr + 0.10), axle_load,
                     k=(4e5, 3e5, 9e4), c=(2e3, 2e3, 1.5e3), kr=(6e3, 4e4, 3e4), cr=(50.0, 200.0, 200.0))
        v.force(f"damper_r{side}", "spring-damper", parts=["rear_axle", "chassis"],
                points=[[xr + 0.10, s * 0.60, zr - 0.05], [xr + 0.20, s * 0.65, zr + 0.45]], damping=4000.0)
        spins[f"wheel_r{side}"] = (speed / (R - f_rear / tyre["stiffness"]), (0, 1, 0))
        _tyre(v, f"tyre_r{side}", f"wheel_r{side}", wc, tyre, f_rear, bumps)
    m, com = v.mass_centre()
    header = [
        f"Van, IVECO-Daily-like: {m:.0f} kg, wheelbase {xf - xr:.2f} m, track {track:.2f} m, centre of mass",
        f"x = {com[0]:.3f} m (front axle at x = 0), static tyre loads {f_front:.0f} N front, {f_rear:.0f} N rear.",
        f"A straight run at {speed} m/s over speed bumps (x_c, height, length in m): {list(map(list, bumps))}.",
        "cadmotion run samples/vehicles/van.cadmotion.toml --analysis dynamic --integrator RK4 --dt 1e-3",
    ]
    return v.toml(header, speed, spins, t_end=5.0, steps=250)


def truck(speed=15.0, amplitude=0.03, period=4.0, bumps=()):
    """The tractor and semi-trailer's model file text: slalom with the left kingpin's angle
    amplitude·sin(2π t/period) (rad) at ``speed`` (m/s)."""
    v = Vehicle("truck")
    tyre = TRUCK_TYRE
    twin = dict(tyre, stiffness=2 * tyre["stiffness"], damping=2 * tyre["damping"])
    R = tyre["radius"]
    x1, x2, x_king = 0.0, -3.8, -3.2          # tractor axles, fifth wheel
    xt1, xt2 = -3.2 - 7.0, -3.2 - 8.3         # trailer axles
    track = 2.05
    m_trac, m_trl, m_beam, m_knuckle, m_axle, m_tr_axle = 5200.0, 24000.0, 450.0, 60.0, 900.0, 650.0
    m_wf, m_wr, m_wt = 80.0, 160.0, 140.0
    # loads: the trailer rests on its axles and the fifth wheel; the tractor on its two axles
    c_trl = (-3.2 - 5.5, 0.0, 2.2)
    t_mass = m_trl + 2 * m_tr_axle + 4 * m_wt
    xt_mid = 0.5 * (xt1 + xt2)
    king_load = m_trl * G * (c_trl[0] - xt_mid) / (x_king - xt_mid)
    f_trailer = (t_mass * G - king_load) / 4.0       # per trailer tyre
    c_trac = (-1.4, 0.0, 1.1)
    trac_mass = m_trac + m_beam + 2 * m_knuckle + m_axle + 2 * (m_wf + m_wr)
    x_tc = (m_trac * c_trac[0] + (m_beam + 2 * m_knuckle + 2 * m_wf) * x1 + (m_axle + 2 * m_wr) * x2) / trac_mass
    f_front = (trac_mass * G * (x_tc - x2) + king_load * (x_king - x2)) / (x1 - x2) / 2.0
    f_rear = (trac_mass * G + king_load) / 2.0 - f_front
    z1 = R - f_front / tyre["stiffness"]
    z2 = R - f_rear / twin["stiffness"]
    zt = R - f_trailer / twin["stiffness"]
    v.part("tractor", c_trac, m_trac, (3000.0, 14000.0, 14000.0))
    spins = {}
    # leaf springs 0.8 m either side of the middle: their vertical rate gives the roll stiffness that keeps
    # the high trailer upright (the fifth wheel's ball joint takes no roll moment)
    leaf = dict(k=(1.5e6, 1.0e6, 1.0e6), c=(8e3, 8e3, 1.2e4), kr=(4e4, 2e5, 1.5e5), cr=(500.0, 2e3, 2e3))
    # front beam axle, knuckles on kingpins (axis z, 0.8 m apart either side), tie rod behind the axle
    v.part("front_axle", (x1, 0.0, z1), m_beam, (120.0, 5.0, 120.0))
    beam_load = f_front - (m_knuckle + m_wf) * G - m_beam * G / 2.0
    for side, s in (("l", 1.0), ("r", -1.0)):
        kp = (x1, s * 0.80, z1)
        wc = (x1, s * track / 2, z1)
        v.part(f"knuckle_{side}", (x1, s * 0.88, z1), m_knuckle, (1.0, 0.6, 1.0))
        v.part(f"wheel_f{side}", wc, m_wf, (4.0, 7.0, 4.0))
        v.joint(f"kingpin_{side}", "revolute", ["front_axle", f"knuckle_{side}"], kp, axis=[0, 0, 1])
        v.joint(f"hub_f{side}", "revolute", [f"knuckle_{side}", f"wheel_f{side}"], wc, axis=[0, 1, 0])
        _leaf_spring(v, f"front_spring_{side}", "front_axle", "tractor", (x1, s * 0.70, z1 + 0.15), beam_load,
                     **leaf)
        v.force(f"front_damper_{side}", "spring-damper", parts=["front_axle", "tractor"],
                points=[[x1 + 0.1, s * 0.50, z1], [x1 + 0.15, s * 0.50, z1 + 0.55]], damping=1.2e4)
        spins[f"wheel_f{side}"] = (speed / (R - f_front / tyre["stiffness"]), (0, 1, 0))
        _tyre(v, f"tyre_f{side}", f"wheel_f{side}", wc, tyre, f_front, bumps)
    v.joint("tie_rod", "distance", ["knuckle_l", "knuckle_r"], (x1 - 0.25, 0.72, z1),
            points=[[x1 - 0.25, 0.72, z1], [x1 - 0.25, -0.72, z1]])
    v.driver("kingpin_l", f"{amplitude!r}*sin(2*pi*t/{period!r})")
    # tractor drive axle and the trailer's tandem: rigid axles on leaf-spring bushings
    axles = [("drive_axle", "tractor", x2, z2, m_axle, m_wr, f_rear, "wheel_d"),
             ("trailer_axle_1", "trailer", xt1, zt, m_tr_axle, m_wt, f_trailer, "wheel_t1"),
             ("trailer_axle_2", "trailer", xt2, zt, m_tr_axle, m_wt, f_trailer, "wheel_t2")]
    v.part("trailer", c_trl, m_trl, (25000.0, 250000.0, 250000.0))
    v.joint("fifth_wheel", "spherical", ["tractor", "trailer"], (x_king, 0.0, 1.15))
    for axle, frame, x, z, m_a, m_w, load, wheel in axles:
        v.part(axle, (x, 0.0, z), m_a, (300.0, 10.0, 300.0))
        spring_load = load - m_w * G - m_a * G / 2.0
        for side, s in (("l", 1.0), ("r", -1.0)):
            wc = (x, s * track / 2 * 0.9, z)
            v.part(f"{wheel}{side}", wc, m_w, (8.0, 14.0, 8.0))
            v.joint(f"hub_{wheel[6:]}{side}", "revolute", [axle, f"{wheel}{side}"], wc, axis=[0, 1, 0])
            _leaf_spring(v, f"{axle}_spring_{side}", axle, frame, (x, s * 0.8, z + 0.15), spring_load, **leaf)
            v.force(f"{axle}_damper_{side}", "spring-damper", parts=[axle, frame],
                    points=[[x + 0.1, s * 0.55, z], [x + 0.15, s * 0.55, z + 0.5]], damping=1.5e4)
            spins[f"{wheel}{side}"] = (speed / (R - load / twin["stiffness"]), (0, 1, 0))
            _tyre(v, f"tyre_{wheel[6:]}{side}", f"{wheel}{side}", wc, twin, load, bumps)
    m, _ = v.mass_centre()
    header = [
        f"Tractor (4x2) with a two-axle semi-trailer on the fifth wheel (a spherical joint): {m:.0f} kg, 41 DOF.",
        f"Slalom at {speed} m/s: the left kingpin steered by {amplitude} sin(2 pi t / {period}) rad, the tie rod",
        "steering the right one. Twin rear tyres modelled as one tyre of twice the rate.",
        "cadmotion run samples/vehicles/truck.cadmotion.toml --analysis dynamic --integrator RK4 --dt 1e-3",
    ]
    return v.toml(header, speed, spins, t_end=8.0, steps=400)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", default=os.path.dirname(os.path.abspath(__file__)))
    args = parser.parse_args(argv)
    for name, text in (("van", van()), ("truck", truck())):
        path = os.path.join(args.out_dir, f"{name}.cadmotion.toml")
        with open(path, "w") as fh:
            fh.write(text)
        print(path)


if __name__ == "__main__":
    main()
