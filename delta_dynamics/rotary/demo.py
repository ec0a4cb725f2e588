"""The model demo behind ``make model-demo`` (``delta-dynamics demo --out out/model/``), no ROS.

1. Asadi & Heydari's evaluation circle (r = 250 mm, one turn in 2 pi s, with a 1 s speed ramp
   from rest) through inverse dynamics: joint torques over time, like their Fig. 4, with and
   without joint friction.
2. Two standard pick-and-place cycles (25 mm up, 305 mm across, 25 mm down) through inverse
   dynamics, then tracked on the fixed-step simulator at 1 kHz
   (:func:`delta_dynamics.algorithms.step`) by a joint PD controller, with and without the
   model's torques as feedforward. The simulated robot carries a payload the controller's
   model does not know, so feedforward is not perfect.
3. A 3-D view of the workspace, both paths and the robot.

PNG plots and the CSV files go to ``out/``; a short summary goes to stdout. The linear
kind's demo is :mod:`delta_dynamics.linear.demo`; ``delta-dynamics demo`` runs the one of the
robot file's kind.
"""
from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path

import numpy as np

from delta_core.robot_file import load_robot
from delta_dynamics.algorithms import inverse_dynamics, inverse_kinematics, joint_state, sample_workspace, step
from delta_dynamics.data_files.joint_data import write_joint_data
from delta_dynamics.data_files.trajectory import write_trajectory
from delta_dynamics.figures import save_figure
from delta_dynamics.kinds import model_for
from delta_dynamics.motion import trajectories as tr
from delta_dynamics.rotary.kinematics import passive_origins

#: Unknown payload (kg) on the simulated robot in the tracking demo.
PAYLOAD = 0.3
#: PD gains per joint at the arm: stiffness (N m/rad) and damping (N m s/rad).
KP, KD = 2500.0, 60.0
DT = 1e-3


def _robot_frame(m, X):
    """Line segments (list of (2, 3) arrays) drawing the robot with its platform at X."""
    q = inverse_kinematics(m, X)
    C = passive_origins(m, q)
    segs = []
    for i in range(3):
        u = np.array([m.cphi[i], m.sphi[i], 0.0])
        axis = np.array([-m.sphi[i], m.cphi[i], 0.0])          # motor axis direction
        B = m.R * u
        A = np.asarray(X) + m.r * u
        half = 0.5 * m.robot.geometry.forearm_spacing * axis
        segs.append(np.array([B, C[i]]))                         # upper arm
        segs.append(np.array([B - 1.2 * half, B + 1.2 * half]))  # motor axis
        segs.append(np.array([C[i] - half, C[i] + half]))        # elbow axle
        segs.append(np.array([A - half, A + half]))              # platform axle
        for s in (-1, 1):                                        # the two forearm bars
            segs.append(np.array([C[i] + s * half, A + s * half]))
    ang = np.linspace(0, 2 * math.pi, 61)
    ring = np.stack((m.R * 1.25 * np.cos(ang), m.R * 1.25 * np.sin(ang), 0 * ang), 1)
    plat = np.array([np.asarray(X) + m.r * np.array([m.cphi[i], m.sphi[i], 0.0]) for i in (0, 1, 2, 0)])
    return segs, ring, plat


def _track(plant, m, traj, tau_ff, q_ref, qd_ref, feedforward: bool):
    """Joint PD (+ feedforward) tracking on the plant at 1 kHz; returns joint errors (N, 3),
    platform errors (N, 3) and applied torques (N, 3)."""
    lim = np.asarray(plant.robot.limits.effort)
    X, V = tuple(traj.X[0].tolist()), (0.0, 0.0, 0.0)      # floats: step() is fastest on them
    n = len(traj)
    e_q = np.empty((n, 3))
    e_x = np.empty((n, 3))
    taus = np.empty((n, 3))
    for k in range(n):
        q, qd, _ = joint_state(plant, X, V)
        e = q_ref[k] - q
        tau = KP * e + KD * (qd_ref[k] - qd)
        if feedforward:
            tau = tau + tau_ff[k]
        tau = np.clip(tau, -lim, lim)
        e_q[k], e_x[k], taus[k] = e, np.asarray(X) - traj.X[k], tau
        X, V = step(plant, X, V, tau.tolist(), DT, "semi-implicit")
    return e_q, e_x, taus


def run(robot: str = "nt_robot", out: str = "out") -> dict:
    """Run the demo for the rotary ``robot`` (preset name, file or loaded robot file), write
    plots and CSVs to ``out``; returns a summary (files written, figures)."""
    import matplotlib            # optional and heavy: only the demo draws
    matplotlib.use("Agg")
    # matplotlib is optional and heavy: only what draws loads it
    import matplotlib.pyplot as plt

    params = load_robot(robot)
    t_start = time.perf_counter()
    outdir = Path(out)
    outdir.mkdir(parents=True, exist_ok=True)
    m = model_for(params)
    name = params.name
    written = []

    # 1. Asadi's circle: torques with and without friction ------------------------------
    depth = -0.75
    circle = tr.circle(radius=0.25, depth=depth, period=2 * math.pi, ramp=1.0, dt=DT)
    inverse_kinematics(m, circle.X, check_limits=True)
    q_c, qd_c, qdd_c = joint_state(m, circle.X, circle.Xd, circle.Xdd)
    tau_c = inverse_dynamics(m, circle.X, circle.Xd, circle.Xdd)
    tau_c0 = inverse_dynamics(m.without_friction(), circle.X, circle.Xd, circle.Xdd)
    written += [write_trajectory(outdir / "circle.csv", circle),
                write_joint_data(outdir / "circle_torques.csv", circle.t, q_c, tau_c, qd=qd_c, qdd=qdd_c)]

    colors = ("tab:blue", "tab:orange", "tab:green")
    fig, ax = plt.subplots(2, 1, figsize=(9.5, 6), sharex=True, height_ratios=(2, 1))
    for i in range(3):
        ax[0].plot(circle.t, tau_c[:, i], color=colors[i], label=f"$\\tau_{i + 1}$")
        ax[0].plot(circle.t, tau_c0[:, i], color=colors[i], ls="--", lw=1)
        ax[1].plot(circle.t, np.degrees(q_c[:, i]), color=colors[i], label=f"$q_{i + 1}$")
    ax[0].plot([], [], "k--", lw=1, label="without friction")
    ax[0].set_ylabel("joint torque (N m)")
    fig.suptitle(f"{name}: circle r = 250 mm at z = {depth * 1000:.0f} mm, one turn in 2$\\pi$ s "
                 f"after a 1 s ramp", fontsize=11)
    ax[0].set_title("arm joints 1-3: torque $\\tau_i$ at the arm (N m), with and without joint friction", fontsize=9)
    out_legend = dict(fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    ax[0].legend(**out_legend)
    ax[0].grid(alpha=0.3)
    ax[1].set_title("arm joints 1-3: angle $q_i$ (deg)", fontsize=9)
    ax[1].set_ylabel("joint angle (deg)")
    ax[1].set_xlabel("time (s)")
    ax[1].legend(**out_legend)
    ax[1].grid(alpha=0.3)
    written.append(save_figure(fig, outdir / "circle_torques.png", dpi=100))

    # 2. Pick and place: inverse dynamics and PD(+FF) tracking ---------------------------
    pick = tr.pick_place(start=(-0.1525, 0.0, -0.8), cycles=2, dt=DT)
    inverse_kinematics(m, pick.X, check_limits=True)
    q_p, qd_p, qdd_p = joint_state(m, pick.X, pick.Xd, pick.Xdd)
    tau_p = inverse_dynamics(m, pick.X, pick.Xd, pick.Xdd)
    written += [write_trajectory(outdir / "pick_place.csv", pick),
                write_joint_data(outdir / "pick_place_torques.csv", pick.t, q_p, tau_p, qd=qd_p, qdd=qdd_p)]
    plant = model_for(params.replace(mass=dataclasses.replace(
        params.mass, payload_mass=params.mass.payload_mass + PAYLOAD)))
    runs = {}
    for ff in (False, True):
        runs[ff] = _track(plant, m, pick, tau_p, q_p, qd_p, feedforward=ff)

    fig, ax = plt.subplots(3, 1, figsize=(9.5, 7.5), sharex=True)
    for i in range(3):
        ax[0].plot(pick.t, tau_p[:, i], color=colors[i], lw=2.5 if i == 0 else 1.5,
                   label=f"$\\tau_{{ff,{i + 1}}}$" + (" (= $\\tau_{ff,3}$: path along x)" if i == 0 else ""))
        ax[1].plot(pick.t, 1e3 * runs[False][0][:, i], color=colors[i], ls="--", lw=1)
        ax[1].plot(pick.t, 1e3 * runs[True][0][:, i], color=colors[i],
                   label="joint 1 (= 3)" if i == 0 else f"joint {i + 1}")
    ax[1].plot([], [], "k--", lw=1, label="PD only")
    ax[1].plot([], [], "k-", label="PD + feedforward")
    for ff, style in ((False, "--"), (True, "-")):
        ax[2].plot(pick.t, 1e3 * np.linalg.norm(runs[ff][1], axis=1), "k" + style,
                   lw=1 if not ff else 1.5, label="PD + feedforward" if ff else "PD only")
    fig.suptitle(f"{name}: pick and place 25/305/25 mm, PD tracking at 1 kHz; "
                 f"simulated robot with a {PAYLOAD:g} kg payload the model does not know", fontsize=10)
    ax[0].set_title("arm joints 1-3: feedforward torque $\\tau_{ff,i}$ of the model (N m)", fontsize=9)
    ax[1].set_title("arm joints 1-3: tracking error $q_i - q_{ref,i}$ (mrad)", fontsize=9)
    ax[2].set_title("platform: position error $|p - p_{ref}|$ (Euclidean norm, mm)", fontsize=9)
    ax[0].set_ylabel("feedforward\ntorque (N m)")
    ax[1].set_ylabel("joint error\n(mrad)")
    ax[2].set_ylabel("platform error\n(mm)")
    ax[2].set_yscale("log")
    ax[2].set_xlabel("time (s)")
    for a in ax:
        a.grid(alpha=0.3)
        a.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
        if a.get_yscale() == "log":
            lo, hi = a.get_ylim()
            a.set_ylim(max(lo, 1e-3), hi)
    written.append(save_figure(fig, outdir / "pick_place_tracking.png", dpi=90, pil_kwargs={"optimize": True}))

    # 3. Workspace, paths and the robot in 3-D ------------------------------------------
    ws = sample_workspace(m, 3000, seed=1, min_measure=0.05)
    fig = plt.figure(figsize=(8.5, 7))
    ax3 = fig.add_subplot(projection="3d")
    pts = ax3.scatter(ws[:, 0], ws[:, 1], ws[:, 2], s=2, c=ws[:, 2], cmap="viridis", alpha=0.35,
                      depthshade=False, label="reachable within the joint limits\n(3000 sampled points)")
    ax3.plot(*circle.X.T, color="tab:red", lw=2.5, label="circle r = 250 mm (Asadi)")
    ax3.plot(*pick.X.T, color="tab:orange", lw=2.5, label="pick and place 25/305/25 mm")
    segs, ring, plat = _robot_frame(m, pick.X[len(pick) // 4])
    for s in segs:
        ax3.plot(*s.T, color="k", lw=1.5)
    ax3.plot(*ring.T, color="k", lw=1)
    ax3.plot(*plat.T, color="k", lw=2)
    ax3.set_xlabel("x (m)")
    ax3.set_ylabel("y (m)")
    ax3.set_zlabel("z (m)")
    lim = 0.6
    ax3.set_xlim(-lim, lim)
    ax3.set_ylim(-lim, lim)
    ax3.set_zlim(ws[:, 2].min(), 0.05)
    ax3.set_box_aspect((1, 1, (0.05 - ws[:, 2].min()) / (2 * lim)))
    ax3.view_init(elev=18, azim=-60)
    ax3.set_title(f"{name}: workspace, demo paths and the robot (base_link frame)")
    cb = fig.colorbar(pts, ax=ax3, shrink=0.55, pad=0.08)
    cb.solids.set_alpha(1.0)
    cb.set_label("height z of the sampled platform position (m)")
    ax3.legend(loc="upper left", fontsize=8, bbox_to_anchor=(0.0, 0.0), ncol=3)
    written.append(save_figure(fig, outdir / "workspace_3d.png", dpi=90))

    # summary ---------------------------------------------------------------------------
    def rms(a):
        return float(np.sqrt(np.mean(np.sum(a * a, axis=1))))

    summary = {
        "robot": name,
        "circle_peak_torque": np.abs(tau_c).max(axis=0),
        "circle_peak_friction_share": float(np.abs(tau_c - tau_c0).max() / np.abs(tau_c).max()),
        "pick_place_peak_torque": np.abs(tau_p).max(axis=0),
        "rms_error_pd_mm": 1e3 * rms(runs[False][1]),
        "rms_error_pdff_mm": 1e3 * rms(runs[True][1]),
        "max_error_pd_mm": 1e3 * float(np.linalg.norm(runs[False][1], axis=1).max()),
        "max_error_pdff_mm": 1e3 * float(np.linalg.norm(runs[True][1], axis=1).max()),
        "files": [str(w) for w in written],
        "seconds": time.perf_counter() - t_start,
    }
    print(f"delta-dynamics demo ({name})")
    print(f"  circle r=250 mm, 2 pi s/turn: peak |tau| = "
          f"{' '.join(f'{v:.1f}' for v in summary['circle_peak_torque'])} N m "
          f"(friction up to {100 * summary['circle_peak_friction_share']:.0f} % of it)")
    print(f"  pick and place 25/305/25 mm:  peak |tau| = "
          f"{' '.join(f'{v:.1f}' for v in summary['pick_place_peak_torque'])} N m")
    print(f"  tracking at 1 kHz with {PAYLOAD:g} kg unmodelled payload: platform error "
          f"RMS / max = {summary['rms_error_pd_mm']:.2f} / {summary['max_error_pd_mm']:.2f} mm (PD), "
          f"{summary['rms_error_pdff_mm']:.3f} / {summary['max_error_pdff_mm']:.3f} mm (PD + feedforward)")
    print(f"  wrote {len(written)} files to {outdir}/ in {summary['seconds']:.1f} s: "
          + ", ".join(Path(w).name for w in written))
    return summary
