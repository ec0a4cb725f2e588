"""``delta-dynamics demo --model multibody [--robot d3s800]``: Elshami et al.'s figures on the
multibody model, and the model as a 1 kHz plant.

1. Elshami's test (Sec. 4): the end effector moves at 100 mm/s at 45 degrees in the XY plane
   with the platform 847 mm below the base, for 5 s (here centred on the axis), without
   joint friction (the paper's model has none). The motor torques come from the multibody
   inverse dynamics; the DAE is then simulated from the moving start under them (RK4 at
   1 kHz, projection). Plots like their Fig. 3 (constraint
   violation: projection against Baumgarte and no stabilisation, with the plant's
   semi-implicit step; the platform position) and Fig. 4 (reaction force and moment of the
   revolute joint of arm 1, with the ground's reaction on the fixed base: Table 2's 30 kg
   base for the D3S-800), and their Fig. 6 quantity (the speed of motor 1).
2. Ten seconds of pick and place tracked by a joint PD with inverse-dynamics feedforward on
   :class:`~delta_dynamics.reference.multibody.plant.MultibodyPlant` at 1 kHz: the constraint
   violation, the platform-joint reaction forces (their sum against m_p (X_dd - g)) and the
   plant's speed (simulated seconds per CPU second).

PNG plots go to ``out/``; a summary to stdout.
"""
from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from delta_core.robot_file import load_robot
from delta_dynamics.algorithms import inverse_kinematics, joint_state, workspace_centre
from delta_dynamics.algorithms import inverse_dynamics as explicit_id
from delta_dynamics.common.trajectory import Trajectory
from delta_dynamics.figures import save_figure
from delta_dynamics.kinds import model_for
from delta_dynamics.motion import trajectories as tr
from delta_dynamics.reference.bodies import RigidBody
from delta_dynamics.reference.multibody.dynamics import Evaluation, Friction, place_platform, residuals, violation
from delta_dynamics.reference.multibody.integrate import step_semi_implicit
from delta_dynamics.reference.multibody.plant import MultibodyPlant
from delta_dynamics.reference.multibody.reactions import inverse_dynamics
from delta_dynamics.reference.multibody.simulation import simulate
from delta_dynamics.reference.multibody.system import MultibodySystem

#: Elshami et al. Table 2: the D3S-800's fixed base (R = 125 mm, 30 kg).
ELSHAMI_BASE = RigidBody(mass=30.0, inertia=(0.52202, 0.52202, 0.88497), com=0.0, length=0.0)
SPEED = 0.1            # m/s (Sec. 4: "an initial motion of 100 mm/s with 45 deg in XY-plane")
DEPTH = -0.847         # m  ("the distance between the fixed frame and end-effector 847 mm")
KP, KD = 2500.0, 60.0  # joint PD of the pick-and-place run (N m/rad, N m s/rad)
DT = 1e-3


def _line(duration, dt, depth):
    """The constant-velocity 45-degree line, centred on the z axis."""
    t = np.arange(0.0, duration + 0.5 * dt, dt)
    d = np.array([1.0, 1.0, 0.0]) / math.sqrt(2.0)
    s = SPEED * (t - 0.5 * duration)
    X = np.array([0.0, 0.0, depth]) + s[:, None] * d
    Xd = np.tile(SPEED * d, (len(t), 1))
    return Trajectory(t, X, Xd, np.zeros_like(X))


def run(robot: str = "d3s800", out: str = "out", quick: bool = False) -> dict:
    """Run the demo for ``robot`` and write its plots to ``out``; ``quick`` shortens the runs
    (for tests). Returns the summary figures."""
    import matplotlib            # optional and heavy: only the demo draws
    matplotlib.use("Agg")
    # matplotlib is optional and heavy: only what draws loads it
    import matplotlib.pyplot as plt

    t_start = time.perf_counter()
    outdir = Path(out)
    outdir.mkdir(parents=True, exist_ok=True)
    params = load_robot(robot)
    name = params.name
    base = ELSHAMI_BASE if name == "d3s800" else None
    s = MultibodySystem(params, base=base)
    kin = s.kinematics
    written = []
    summary = {"robot": name, "bodies": s.n_bodies, "constraints": s.n_constraints}

    # 1. Elshami's test: 100 mm/s at 45 deg ---------------------------------------------
    duration = 1.0 if quick else 5.0
    depth = DEPTH if name == "d3s800" else float(workspace_centre(kin)[2])
    line = _line(duration, DT, depth)
    inverse_kinematics(kin, line.X, check_limits=True)
    idyn = inverse_dynamics(s, line.X, line.Xd, line.Xdd, friction=False)
    sim = simulate(s, idyn.q[0], idyn.qd[0], line.t, idyn.tau, method="rk4", hold="linear",
                   reactions=True, friction=False)
    viol = {"projection (RK4)": sim.violation}
    fr = Friction(params, enabled=False)
    for stab in ("projection", "baumgarte", "none"):
        ev = Evaluation(s)
        st = place_platform(s, line.X[0], line.Xd[0])
        v = np.empty(len(line.t))
        for k in range(len(line.t)):
            v[k] = violation(s, residuals(s, st))
            if k < len(line.t) - 1:
                st = step_semi_implicit(s, ev, st, idyn.tau[k], DT, fr, stab)
        viol[f"{stab} (semi-implicit)"] = v
    summary["line_max_violation"] = {k: float(np.max(v)) for k, v in viol.items()}
    summary["line_max_position_error_mm"] = 1e3 * float(np.abs(sim.X - line.X).max())

    fig, ax = plt.subplots(2, 1, figsize=(8, 7), sharex=True)
    styles = {"projection (RK4)": ("k", 2.0), "projection (semi-implicit)": ("tab:blue", 1.2),
              "baumgarte (semi-implicit)": ("tab:orange", 1.2), "none (semi-implicit)": ("tab:red", 1.2)}
    for k, v in viol.items():
        c, lw = styles[k]
        ax[0].semilogy(line.t, np.maximum(v, 1e-17), color=c, lw=lw, label=k)
    ax[0].set_ylabel("constraint violation (m)")
    ax[0].set_title(f"{name}: Elshami's test, 100 mm/s at 45$^\\circ$ in XY, z = {1e3 * depth:.0f} mm "
                    f"(cf. their Fig. 3)", fontsize=11)
    ax[0].legend(fontsize=8, ncol=2, loc="upper left")
    ax[0].set_ylim(1e-17, 1e-1)
    for i, a in enumerate("xyz"):
        ax[1].plot(line.t, 1e3 * sim.X[:, i], label=f"{a} (simulated)")
        ax[1].plot(line.t, 1e3 * line.X[:, i], "k:", lw=1)
    ax[1].plot([], [], "k:", lw=1, label="prescribed")
    ax[1].set_ylabel("platform position (mm)")
    ax[1].set_xlabel("time (s)")
    ax[1].legend(fontsize=8, ncol=4)
    for a in ax:
        a.grid(alpha=0.3)
    written.append(save_figure(fig, outdir / "multibody_violation_position.png", dpi=90))

    r = sim.reactions
    fig, ax = plt.subplots(3, 1, figsize=(8, 8), sharex=True)
    for i, a in enumerate("xyz"):
        ax[0].plot(line.t, r.shoulder_force[:, 0, i], label=f"$F_{a}$")
        ax[1].plot(line.t, r.shoulder_moment[:, 0, i], label=f"$M_{a}$")
        if r.base_force is not None:
            ax[0].plot(line.t, r.base_force[:, i], ls="--", lw=1, label=f"base $F_{a}$")
    gear = params.mass.motor.gear_ratio
    ax[2].plot(line.t, sim.qd[:, 0] * gear * 60 / (2 * math.pi), label="motor 1")
    ax[0].set_title(f"{name}: reactions of the revolute joint of arm 1 on the arm (world; cf. Elshami "
                    f"Fig. 4)", fontsize=11)
    ax[0].set_ylabel("force (N)")
    ax[1].set_ylabel("moment (N m)")
    ax[2].set_ylabel("motor speed (rpm)\n(cf. their Fig. 6)")
    ax[2].set_xlabel("time (s)")
    for a in ax:
        a.grid(alpha=0.3)
        a.legend(fontsize=8, ncol=6)
    written.append(save_figure(fig, outdir / "multibody_reactions.png", dpi=90))
    if r.base_force is not None:
        summary["base_reaction_z_N"] = float(r.base_force[0, 2])
        summary["total_weight_N"] = float(-(s.mass.sum()) * s.gravity[2])

    # 2. pick and place on the plant at 1 kHz -------------------------------------------
    cycles = 1 if quick else 8
    centre = workspace_centre(kin)
    start = (centre[0] - 0.1525, centre[1], centre[2] + 0.05)
    pick = tr.pick_place(start=start, cycles=cycles, dt=DT)
    inverse_kinematics(kin, pick.X, check_limits=True)
    m = model_for(params)
    q_ref, qd_ref, _ = joint_state(m, pick.X, pick.Xd, pick.Xdd)
    tau_ff = explicit_id(m, pick.X, pick.Xd, pick.Xdd)
    plant = MultibodyPlant(params)
    plant.place(q_ref[0])
    lim = np.asarray(params.limits.torque)
    n = len(pick)
    pv, Xs = np.empty(n), np.empty((n, 3))
    cpu = 0.0
    for k in range(n):
        q, qd = plant.joint_state()
        pv[k] = plant.violation()
        Xs[k] = plant.platform_position()
        tau = np.clip(KP * (q_ref[k] - q) + KD * (qd_ref[k] - qd) + tau_ff[k], -lim, lim)
        c0 = time.process_time()
        plant.step(tau.tolist(), DT)
        cpu += time.process_time() - c0
    every = 5
    sub = slice(None, None, every)
    rid = inverse_dynamics(plant.system, pick.X[sub], pick.Xd[sub], pick.Xdd[sub])
    fsum = rid.reactions.platform_force.sum(1)
    inertial = s.platform_mass * (pick.Xdd[sub] - s.gravity)
    summary.update({
        "pick_place_seconds": float(pick.t[-1]),
        "pick_place_max_violation": float(pv.max()),
        "pick_place_tracking_error_mm": 1e3 * float(np.linalg.norm(Xs - pick.X, axis=1).max()),
        "reaction_sum_error_N": float(np.abs(fsum - inertial).max()),
        "plant_realtime_factor": float(pick.t[-1] / cpu) if cpu > 0 else float("inf"),
    })
    fig, ax = plt.subplots(3, 1, figsize=(8, 8), sharex=True)
    ax[0].semilogy(pick.t, np.maximum(pv, 1e-17), "k")
    ax[0].set_ylabel("constraint\nviolation (m)")
    ax[0].set_title(f"{name}: {pick.t[-1]:.0f} s of pick and place on the multibody plant at 1 kHz "
                    f"(PD + feedforward)\n{summary['plant_realtime_factor']:.1f}x real time on this machine",
                    fontsize=11)
    cols = ("tab:blue", "tab:orange", "tab:green")
    for i in range(3):
        ax[1].plot(pick.t[sub], np.linalg.norm(rid.reactions.platform_force[:, i], axis=1), color=cols[i],
                   label=f"|f{i + 1}|: forearm {i + 1} on the platform")
    for i, a in enumerate("xyz"):
        ax[2].plot(pick.t[sub], fsum[:, i], label=f"$\\Sigma f_{a}$")
        ax[2].plot(pick.t[sub], inertial[:, i], "k:", lw=1)
    ax[2].plot([], [], "k:", lw=1, label="$m_p(\\ddot X - g)$")
    ax[1].set_ylabel("platform joint\nforce (N)")
    ax[2].set_ylabel("sum of the platform\nreactions (N)")
    ax[2].set_xlabel("time (s)")
    for a in ax:
        a.grid(alpha=0.3)
    ax[1].legend(fontsize=8)
    ax[2].legend(fontsize=8, ncol=4)
    written.append(save_figure(fig, outdir / "multibody_pick_place.png", dpi=90))

    summary["files"] = [str(w) for w in written]
    summary["seconds"] = time.perf_counter() - t_start
    mv = summary["line_max_violation"]
    print(f"delta-dynamics demo --model multibody ({name}: {s.n_bodies} bodies, {s.n_constraints} constraints)")
    print(f"  Elshami's test, {duration:g} s at 100 mm/s: max violation " +
          ", ".join(f"{k} {v:.1e} m" for k, v in mv.items()))
    print(f"  platform within {summary['line_max_position_error_mm']:.3f} mm of the prescribed line "
          f"under the inverse-dynamics torques")
    if "base_reaction_z_N" in summary:
        print(f"  ground reaction on the fixed base at t = 0: {summary['base_reaction_z_N']:.1f} N up "
              f"(total weight {summary['total_weight_N']:.1f} N)")
    print(f"  pick and place {summary['pick_place_seconds']:.1f} s on the plant: max violation "
          f"{summary['pick_place_max_violation']:.1e} m, tracking error {summary['pick_place_tracking_error_mm']:.2f} mm, "
          f"sum of platform reactions - m_p (X_dd - g) <= {summary['reaction_sum_error_N']:.1e} N, "
          f"plant {summary['plant_realtime_factor']:.1f}x real time")
    print(f"  wrote {len(written)} files to {outdir}/ in {summary['seconds']:.1f} s: "
          + ", ".join(Path(w).name for w in written))
    return summary
