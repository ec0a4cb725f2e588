"""A small simulated robot for the monitoring tests and bench: a computed-torque tracking
controller (the model's inverse dynamics plus a joint PD shaped by the joint-space inertia)
running at ``rate`` Hz on a real plant (explicit or MuJoCo), the momentum observer fed with
the efforts it applied, an optional push at the platform between two times and an optional
payload change at a time. Pure numpy; no ROS, no control-loop module (that is being reworked)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from delta_dynamics.algorithms import inverse_dynamics, joint_space_inertia, workspace_centre
from delta_dynamics.monitoring.observer import MomentumObserver


@dataclass
class Run:
    t: np.ndarray          # (N,) s, one sample per control cycle
    q: np.ndarray          # (N, 3)
    qd: np.ndarray
    tau: np.ndarray        # effort applied over (t[k-1], t[k]]
    r: np.ndarray          # observer residual (N, 3)
    F: np.ndarray          # platform force from the residual (N, 3), N
    X: np.ndarray          # platform position from the plant (N, 3)
    F_true: np.ndarray     # the force applied over (t[k-1], t[k]] (N, 3)
    q_ref: np.ndarray


def pick_motion(model, span=0.305, height=0.025, z=None, cycles=1, dwell=0.05):
    """A 25/305/25 mm pick cycle (span, height in m) at height ``z`` (the workspace centre's
    unless told) through :func:`delta_dynamics.motion.plan_pick`, sampled every 1 ms."""
    from delta_dynamics.motion import plan_pick
    c = workspace_centre(model)
    z = c[2] if z is None else z
    plan = plan_pick(model, [-span / 2, 0.0, z], [span / 2, 0.0, z], height=height, dwell=dwell, cycles=cycles)
    return plan.motion


def random_cycles(m, span, seed):
    """Endless random fast pick cycles (2 each): ends 0.3-1 x ``span`` apart in a random
    horizontal direction around a random point near the workspace centre (+-span/6
    horizontally, -span/3..+span/6 in height); unreachable doors are drawn again."""
    from delta_dynamics.motion import plan_pick
    rng = np.random.default_rng(seed)
    c = workspace_centre(m)
    while True:
        a = rng.uniform(0.0, 2.0 * math.pi)
        d = np.array([math.cos(a), math.sin(a), 0.0]) * rng.uniform(0.3, 1.0) * span
        mid = c + [rng.uniform(-span / 6, span / 6), rng.uniform(-span / 6, span / 6), rng.uniform(-span / 3, span / 6)]
        try:
            yield plan_pick(m, mid - 0.5 * d, mid + 0.5 * d, cycles=2).motion
        except Exception:                                  # noqa: BLE001  (a door out of reach: draw again)
            continue


def run(model, plant, motion, rate=500.0, gain=100.0, push=None, payload=None, omega=2 * np.pi * 12.0,
        observer_model=None, settle=0.1):
    """Track ``motion`` (sampled every 1 ms) on ``plant`` with a computed-torque controller
    built on ``model``; ``push`` = (t_on, t_off, F) applies F (N) at the platform between the
    two times; ``payload`` = (t, kg) changes the plant's payload at t. ``settle`` s of rest at
    the start pose first. The observer uses ``observer_model`` (``model``)."""
    dt = 1.0 / rate
    step_n = int(round(dt / 1e-3))
    X0 = motion.X[0]
    # hold at the start for `settle` s, then the motion
    n_hold = int(round(settle / 1e-3))
    Xr = np.vstack([np.repeat(X0[None], n_hold, 0), motion.X])
    Xdr = np.vstack([np.zeros((n_hold, 3)), motion.Xd])
    Xddr = np.vstack([np.zeros((n_hold, 3)), motion.Xdd])
    qr = np.vstack([np.repeat(motion.q[:1], n_hold, 0), motion.q])
    qdr = np.vstack([np.zeros((n_hold, 3)), motion.qd])
    idx = np.arange(0, len(Xr), step_n)
    tau_ff = inverse_dynamics(model, Xr[idx], Xdr[idx], Xddr[idx])
    Mq = joint_space_inertia(model, Xr[idx])
    plant.place(qr[0])
    obs = MomentumObserver(observer_model or model, gain)
    substeps = max(1, int(np.ceil(dt / plant.max_step - 1e-9)))
    q, qd = plant.joint_state()
    state = obs.start(q, qd)
    n = len(idx)
    out = {k: np.zeros((n, 3)) for k in ("q", "qd", "tau", "r", "F", "X", "F_true")}
    tau = np.zeros(3)
    F_now = np.zeros(3)
    for k in range(n):
        t = k * dt
        if k > 0:
            r = obs.update(state, q, qd, tau, dt)
        else:
            r = state.r
        out["q"][k], out["qd"][k], out["tau"][k], out["r"][k] = q, qd, tau, r
        out["F"][k] = obs.platform_force(state)
        out["X"][k] = plant.platform_position()
        out["F_true"][k] = F_now
        # next command, applied over (t, t + dt]
        e = qr[idx[k]] - np.asarray(q)
        ed = qdr[idx[k]] - np.asarray(qd)
        tau = tau_ff[k] + Mq[k] @ (omega ** 2 * e + 2.0 * omega * ed)
        F_next = np.zeros(3)
        if push is not None and push[0] <= t + 1e-9 < push[1]:
            F_next = np.asarray(push[2], float)
        if not np.array_equal(F_next, F_now):
            plant.set_external_force(F_next)
            F_now = F_next
        if payload is not None and abs(t - payload[0]) < dt / 2:
            plant.set_payload(payload[1])
        for _ in range(substeps):               # as the simulated drives do: steps of at most max_step
            plant.step(tau, dt / substeps)
        q, qd = plant.joint_state()
    return Run(idx * 1e-3, out["q"], out["qd"], out["tau"], out["r"], out["F"], out["X"], out["F_true"], qr[idx])
