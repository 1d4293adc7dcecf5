"""Part poses along a motion for the interference check: at the output frames and between
them (cubic Hermite positions, slerp orientations), rigid groups, oriented-box separation."""

from __future__ import annotations

import numpy as np

from ...kernel.rotations import quat_to_matrix

class Poses:
    """Poses of the parts at the output frames (from the Motion) and between them (Motion.pose)."""

    def __init__(self, motion):
        self.motion = motion
        self.names = list(motion.parts)
        self.t = np.asarray(motion.time, float)
        q = np.asarray(motion.quaternion, float)
        self.q = q / np.linalg.norm(q, axis=-1, keepdims=True)
        self.R = quat_to_matrix(self.q)
        self.p = np.asarray(motion.position, float)
        self.v = np.asarray(motion.velocity, float)

    @property
    def nt(self):
        """Number of output frames."""
        return len(self.t)

    def rel(self, a, b, k):
        """Pose (R, p) of part b in part a's frame at frame k."""
        Ra = self.R[k, a]
        return Ra.T @ self.R[k, b], Ra.T @ (self.p[k, b] - self.p[k, a])

    def rel_t(self, a, b, t):
        """Pose (R, p) of part b in part a's frame at time t on the interpolated motion."""
        Xa = self.motion.pose(self.names[a], t)
        Xb = self.motion.pose(self.names[b], t)
        Ra = Xa[:3, :3]
        return Ra.T @ Xb[:3, :3], Ra.T @ (Xb[:3, 3] - Xa[:3, 3])

    def boxes(self, centre, half):
        """World boxes (lo, hi), shape (nt, nb, 3), of part boxes given in part frames."""
        C = np.einsum("kbij,bj->kbi", self.R, centre) + self.p
        H = np.einsum("kbij,bj->kbi", np.abs(self.R), half)
        return C - H, C + H

    def interval_bounds(self, centre, rho, r0):
        """Per frame interval and part: deviation of the interpolated motion from the chord
        (m, bounds how far the part leaves the union of its end boxes) and the largest
        speed of any point of the part (m/s). Shapes (nt-1, nb).

        Positions follow the cubic Hermite curve of Motion.pose: its deviation from the
        chord is at most max(|h v0 - dp|, |h v1 - dp|)/4, and its velocity lies in the
        convex hull of the Bezier control velocities v0, 3 dp/h - v0 - v1, v1. Orientations
        follow slerp, a rotation by theta about a fixed axis at constant rate theta/h.
        """
        t, p, v, q, R = self.t, self.p, self.v, self.q, self.R
        h = np.diff(t)[:, None]
        hs = np.where(h > 0, h, 1.0)
        dp = p[1:] - p[:-1]
        hv0 = v[:-1] * h[..., None]
        hv1 = v[1:] * h[..., None]
        dev_t = 0.25 * np.maximum(np.linalg.norm(hv0 - dp, axis=-1), np.linalg.norm(hv1 - dp, axis=-1))
        q0, q1 = q[:-1], q[1:]
        dots = np.clip(np.abs(np.sum(q0 * q1, axis=-1)), 0.0, 1.0)
        theta = 2.0 * np.arccos(dots)
        dev = dev_t + r0[None, :] * (1.0 - np.cos(0.5 * theta))
        # rotation axis of q0^-1 q1 in the body, then in the world
        w0, x0 = q0[..., :1], q0[..., 1:]
        w1, x1 = q1[..., :1], q1[..., 1:]
        vec = w0 * x1 - w1 * x0 - np.cross(x0, x1)   # vector part of conj(q0) * q1
        sgn = np.sign(np.sum(q0 * q1, axis=-1, keepdims=True))
        vec = vec * np.where(sgn == 0, 1.0, sgn)
        nv = np.linalg.norm(vec, axis=-1, keepdims=True)
        axis_b = np.divide(vec, nv, out=np.zeros_like(vec), where=nv > 1e-300)
        axis_w = np.einsum("kbij,kbj->kbi", R[:-1], axis_b)
        omega = axis_w * (theta / hs)[..., None]
        wc = np.einsum("kbij,bj->kbi", R[:-1], centre)
        k = np.cross(omega, wc)
        cv = (v[:-1], 3.0 * dp / hs[..., None] - v[:-1] - v[1:], v[1:])
        vmax = np.max([np.linalg.norm(c + k, axis=-1) for c in cv], axis=0)
        om = theta / hs
        speed = vmax + om * (np.linalg.norm(centre, axis=-1)[None, :] * theta + rho[None, :])
        return dev, np.where(h > 0, speed, 0.0)


def rigid_groups(poses, scale, tol):
    """Group index per part: parts with the same displacement X(t) X(t0)^-1 at every frame."""
    R, p = poses.R, poses.p
    Rd = np.einsum("kbij,blj->kbil", R, R[0])
    td = p - np.einsum("kbil,bl->kbi", Rd, p[0])
    nt, nb = p.shape[:2]
    feat = np.concatenate([Rd.reshape(nt, nb, 9) * scale, td], axis=-1).transpose(1, 0, 2).reshape(nb, -1)
    group = np.full(nb, -1, np.int64)
    reps = []
    for b in range(nb):
        if reps:
            diff = np.max(np.abs(feat[reps] - feat[b]), axis=1)
            j = int(np.argmin(diff))
            if diff[j] <= tol:
                group[b] = group[reps[j]]
                continue
        group[b] = len(reps)
        reps.append(b)
    return group


def obb_separated(Ra, ca, ha, Rb, cb, hb):
    """Separating-axis test of oriented boxes (world rotations R, centres c, half sizes h),
    vectorised over the first axis; True where they are certainly apart."""
    T = cb - ca
    t = np.einsum("eji,ej->ei", Ra, T)           # in A's axes
    M = np.einsum("eji,ejk->eik", Ra, Rb)        # B's axes in A's axes
    A = np.abs(M) + 1e-12
    sep = np.zeros(len(T), bool)
    for i in range(3):
        sep |= np.abs(t[:, i]) > ha[:, i] + np.sum(hb * A[:, i, :], axis=1)
    for j in range(3):
        sep |= np.abs(np.sum(t * M[:, :, j], axis=1)) > np.sum(ha * A[:, :, j], axis=1) + hb[:, j]
    for i in range(3):
        i1, i2 = (i + 1) % 3, (i + 2) % 3
        for j in range(3):
            j1, j2 = (j + 1) % 3, (j + 2) % 3
            ra = ha[:, i1] * A[:, i2, j] + ha[:, i2] * A[:, i1, j]
            rb = hb[:, j1] * A[:, i, j2] + hb[:, j2] * A[:, i, j1]
            tl = t[:, i2] * M[:, i1, j] - t[:, i1] * M[:, i2, j]
            sep |= np.abs(tl) > ra + rb
    return sep
