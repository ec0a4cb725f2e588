"""``delta-dynamics demo --robot colombo2020``: the paper's Figs. 4 and 5 for a linear Delta.

Colombo & Lentini (2020), Sec. 5: the nozzle follows the Lissajous path of eq. (18)
(omega_x = 6 pi, omega_y = 4 pi, phi_x = pi/2, phi_y = 0) on the bed (z = 0, the platform
centre ``tool_offset`` above) at constant speed (eq. 19) of 10, 50 and 200 mm/s. The paper
does not give the amplitudes x0, y0: 50 mm each here (inside a Kossel Mini's bed).

* ``lissajous_forces.png`` (Fig. 4): force f_1 on carriage 1 (the paper's Q_1) and the sum of the three forces
  along the path at the three speeds; at low speed the sum is the suspended weight (eq. 17).
* ``lissajous_energy.png`` (Fig. 5): the time rate of the total energy d/dt (K + U), by
  numerical differentiation of :func:`~delta_dynamics.linear.dynamics.energy` along the
  samples, against the input power sum_i Q_i q_dot_i (eq. 20) at 200 mm/s.
* ``lissajous_200.csv`` / ``lissajous_200_forces.csv``: the 200 mm/s trajectory (platform
  centre) and its carriage data (``t,q1..,qd1..,qdd1..,f1,f2,f3``).

The forces come from the paper's lumped model (rods split half and half, Fig. 2); the
summary also gives the difference to the full-body model (rigid rods with their inertia).
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from delta_dynamics.data_files.joint_data import write_joint_data
from delta_dynamics.data_files.trajectory import write_trajectory
from delta_dynamics.figures import save_figure
from delta_dynamics.linear.dynamics import energy, inverse_dynamics, joint_state
from delta_dynamics.linear.kinematics import inverse_kinematics
from delta_dynamics.linear.model import LinearModel
from delta_dynamics.motion import trajectories as tr

#: Printing speeds of Fig. 4 (m/s) and the amplitudes used (m; the paper does not give them).
SPEEDS = (0.01, 0.05, 0.2)
AMPLITUDE = 0.05


def _path(m, speed):
    """The Lissajous path of eq. (18) at ``speed`` (m/s), the nozzle on the bed."""
    dt = 1e-3 if speed >= 0.05 else 5e-3
    return tr.lissajous(speed=speed, x0=AMPLITUDE, y0=AMPLITUDE, depth=m.tool_offset, dt=dt,
                        timing="arc-length")


def run(robot: str = "colombo2020", out: str = "out") -> dict:
    """Compute Figs. 4 and 5 for ``robot`` (a linear Delta: preset name, file or loaded robot
    file), write PNGs and CSVs to ``out``; returns a summary (files written, figures)."""
    import matplotlib            # optional and heavy: only the demo draws
    matplotlib.use("Agg")
    # matplotlib is optional and heavy: only what draws loads it
    import matplotlib.pyplot as plt

    t_start = time.perf_counter()
    outdir = Path(out)
    outdir.mkdir(parents=True, exist_ok=True)
    full = LinearModel.from_robot(robot).without_friction()
    m = full.lumped_rods()
    name = m.robot.name
    runs = {}
    for v in SPEEDS:
        traj = _path(m, v)
        inverse_kinematics(m, traj.X, check_limits=True)
        Q = inverse_dynamics(m, traj.X, traj.Xd, traj.Xdd)
        Qf = inverse_dynamics(full, traj.X, traj.Xd, traj.Xdd)
        runs[v] = (traj, Q, Qf)
    written = []

    # Fig. 4: Q_1 and sum Q along the path ----------------------------------------------
    colors = {0.01: "tab:blue", 0.05: "tab:orange", 0.2: "tab:red"}
    fig, ax = plt.subplots(2, 1, figsize=(10, 6.5), sharex=True)
    for v, (traj, Q, _) in runs.items():
        s = v * traj.t / (v * traj.t[-1])                # fraction of the path travelled
        label = f"v = {v * 1e3:.0f} mm/s"
        ax[0].plot(s, Q[:, 0], color=colors.get(v), lw=1.2, label=label)
        ax[1].plot(s, Q.sum(axis=1), color=colors.get(v), lw=1.2, label=label)
    weight = (m.m_x + sum(m.carriage_mass)) * m.g
    ax[1].axhline(weight, color="k", ls="--", lw=1, label=f"suspended weight\n{weight:.2f} N (eq. 17)")
    ax[0].set_ylabel("$f_1$ (N)")
    ax[1].set_ylabel("$f_1 + f_2 + f_3$ (N)")
    ax[0].set_title("carriage 1: actuator force $f_1$ (N) (CSV column f1; Q_1 in the paper)", fontsize=9)
    ax[1].set_title("all carriages: sum of the actuator forces $f_1 + f_2 + f_3$ (N)", fontsize=9)
    ax[1].set_xlabel("fraction of the Lissajous path travelled (arc length)")
    fig.suptitle(f"{name}: carriage forces along the Lissajous path (Colombo & Lentini Fig. 4); "
                 f"nozzle on the bed, x0 = y0 = {AMPLITUDE * 1e3:.0f} mm, lumped rods", fontsize=10)
    for a in ax:
        a.grid(alpha=0.3)
        a.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    written.append(save_figure(fig, outdir / "lissajous_forces.png", dpi=100))

    # Fig. 5: d/dt (K + U) against the input power at 200 mm/s ---------------------------
    vmax = max(SPEEDS)
    traj, Q, _ = runs[vmax]
    _, qd, qdd = joint_state(m, traj.X, traj.Xd, traj.Xdd)
    power = np.einsum("ni,ni->n", Q, qd)
    kin, pot = energy(m, traj.X, traj.Xd)
    rate = np.gradient(kin + pot, traj.t, edge_order=2)
    fig, ax = plt.subplots(figsize=(10, 4))
    ax.plot(traj.t, power, color="tab:blue", lw=2.5, label="input power\n" + r"$\sum_i f_i \dot q_i$")
    ax.plot(traj.t, rate, color="tab:orange", lw=1, ls="--", label=r"$\frac{d}{dt}(K + U)$ (numerical;" "\n" "K kinetic, U potential energy)")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("power (W)")
    ax.set_title(f"{name}: energy balance at v = {vmax * 1e3:.0f} mm/s (Colombo & Lentini eq. 20, Fig. 5)",
                 fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=9, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    written.append(save_figure(fig, outdir / "lissajous_energy.png", dpi=100))

    q, qd, qdd = joint_state(m, traj.X, traj.Xd, traj.Xdd)
    written += [write_trajectory(outdir / "lissajous_200.csv", traj),
                write_joint_data(outdir / "lissajous_200_forces.csv", traj.t, q, Q, qd=qd, qdd=qdd, effort="f")]

    inner = slice(2, -2)                                  # np.gradient's ends are one-sided
    summary = {
        "robot": name,
        "weight": weight,
        "sum_range": {v: (float(Q.sum(1).min()), float(Q.sum(1).max())) for v, (_, Q, _) in runs.items()},
        "q1_range": {v: (float(Q[:, 0].min()), float(Q[:, 0].max())) for v, (_, Q, _) in runs.items()},
        "lumping_error": {v: float(np.abs(Qf - Q).max()) for v, (_, Q, Qf) in runs.items()},
        "energy_balance_error": float(np.abs(rate - power)[inner].max()),
        "peak_power": float(np.abs(power).max()),
        "files": [str(w) for w in written],
        "seconds": time.perf_counter() - t_start,
    }
    print(f"delta-dynamics demo ({name}, linear Delta): Lissajous x0 = y0 = {AMPLITUDE * 1e3:.0f} mm, "
          f"nozzle on the bed")
    for v in SPEEDS:
        lo, hi = summary["sum_range"][v]
        a, b = summary["q1_range"][v]
        print(f"  {v * 1e3:3.0f} mm/s: f_1 {a:.3f} .. {b:.3f} N, sum f {lo:.3f} .. {hi:.3f} N "
              f"(weight {weight:.3f} N); full-body rods differ by up to {summary['lumping_error'][v]:.4f} N")
    print(f"  energy balance at {vmax * 1e3:.0f} mm/s: |d/dt(K+U) - sum Q q_dot| <= "
          f"{summary['energy_balance_error']:.2e} W (peak power {summary['peak_power']:.3f} W)")
    print(f"  wrote {len(written)} files to {outdir}/ in {summary['seconds']:.1f} s: "
          + ", ".join(Path(w).name for w in written))
    return summary
