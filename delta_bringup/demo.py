"""The scripted session of ``delta-bringup --demo`` (what ``make run`` shows).

On the simulated robot, whose true parameters differ from the robot file (1.5 kg payload,
more friction, heavier arms: written to ``<out>/true_robot.yaml``):

0. design an excitation trajectory (finite Fourier series) while the robot holds (the
   optimiser is CPU-heavy: no tracking phase runs beside it);
1. home to the start of the pick-and-place cycle;
2. pick-and-place cycles (25 mm up, 305 mm across, 25 mm down) with PD control only;
3. the same with the feedforward of the nominal model (dynamics node);
4. the excitation trajectory;
5. identification: the identification node refits the window, writes
   ``<out>/identified.yaml`` and pushes it to the dynamics node;
6. the same cycles with the identified feedforward.

It prints the RMS tracking error of each phase and writes plots (tracking error, torques,
identified against true parameters) and ``demo_summary.md`` into ``<out>``.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
from rcl_interfaces.srv import SetParameters
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from delta_core.robot_file import load_robot, save_robot
from delta_dynamics.dynamics import joint_state
from delta_dynamics.kinematics import forward_kinematics, inverse_kinematics
from delta_dynamics.model import PARAMETER_NAMES, DeltaModel
from delta_dynamics.trajectories import pick_place
from delta_hardware.ros.messages import to_duration, to_time


def true_robot(nominal):
    """The simulated robot: the nominal robot file with a payload, more friction, heavier arms."""
    m, f = nominal.mass, nominal.friction
    arm = m.upper_arm.__class__(**{**m.upper_arm.__dict__, "inertia": m.upper_arm.inertia * 1.3})
    mass = m.__class__(**{**m.__dict__, "upper_arm": arm, "payload_mass": m.payload_mass + 1.5})
    fr = f.__class__(**{**f.__dict__, "viscous": tuple(v * 1.6 for v in f.viscous),
                        "coulomb": tuple(v * 1.4 for v in f.coulomb),
                        "static": tuple(v * 1.4 for v in f.static)})
    return nominal.replace(name=nominal.name + "_true", mass=mass, friction=fr, metadata={})


def prepare(args):
    """Write the true robot file; the parameter overrides the demo needs."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    nominal = load_robot(args.robot or "nt_robot")
    path = save_robot(true_robot(nominal), out / "true_robot.yaml",
                      header="the simulated robot of delta-bringup --demo (unknown to the controller)")
    return [("true_robot", str(path.resolve())), ("feedforward", "none"),
            ("output", str((out / "identified.yaml").resolve())), ("window", 25.0)]


class RobotStopped(RuntimeError):
    """The hardware node quick-stopped the robot during a phase."""


class Demo:
    def __init__(self, args, hardware):
        import rclpy
        self.args = args
        self.out = Path(args.out)
        self.hw = hardware
        self.model: DeltaModel = hardware.model
        self.names = list(self.model.joint_names)
        self.node = rclpy.create_node("delta_demo")
        self.js = np.zeros((600_000, 7))               # t, q(3), effort(3): numpy rows, no GC load
        self.n_js = 0
        self.events = []
        self.node.create_subscription(JointState, "/joint_states", self._on_js, 100)
        self.node.create_subscription(String, "/delta_hardware/events", lambda m: self.events.append(m.data), 50)
        self.pub = self.node.create_publisher(JointTrajectory, "/delta_hardware/joint_trajectory", 10)
        self.set_params = self.node.create_client(SetParameters, "/delta_hardware/set_parameters")
        self.refit = self.node.create_client(Trigger, "/delta_identification/refit")
        self.reset = self.node.create_client(Trigger, "/delta_hardware/reset")
        self.exit_code = 1
        self.results = {}

    def _on_js(self, m):
        if list(m.name) == self.names and self.n_js < len(self.js):
            row = self.js[self.n_js]
            row[0] = m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec
            row[1:4] = m.position
            row[4:7] = m.effort
            self.n_js += 1

    # ------------------------------------------------------------------ plumbing
    def say(self, text):
        print(f"[demo] {text}", flush=True)

    def _wait(self, future, timeout=30.0):
        deadline = time.monotonic() + timeout
        while not future.done():
            if time.monotonic() > deadline:
                raise RuntimeError("no answer in time")
            time.sleep(0.01)
        return future.result()

    def set_feedforward(self, mode):
        req = SetParameters.Request(parameters=[Parameter("feedforward", value=mode).to_parameter_msg()])
        res = self._wait(self.set_params.call_async(req)).results[0]
        if not res.successful:
            raise RuntimeError(f"hardware node refused feedforward={mode}: {res.reason}")

    def send(self, t, q, qd=None, qdd=None, lead=0.3):
        """Send joint points (t relative) to start ``lead`` s from now; the absolute start time."""
        start = time.time() + lead
        msg = JointTrajectory(joint_names=self.names)
        msg.header.stamp = to_time(start)
        for k in range(len(t)):
            p = JointTrajectoryPoint(positions=[float(v) for v in q[k]])
            if qd is not None:
                p.velocities = [float(v) for v in qd[k]]
                p.accelerations = [float(v) for v in qdd[k]]
            p.time_from_start = to_duration(float(t[k]))
            msg.points.append(p)
        n0 = len(self.events)
        self.pub.publish(msg)
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            for e in self.events[n0:]:
                if "rejected" in e:
                    raise (RobotStopped if "robot is stopped" in e else RuntimeError)(e)
                if "accepted" in e:
                    return start
            time.sleep(0.01)
        raise RuntimeError("the hardware node did not answer the trajectory")

    def wait_until(self, t_abs):
        """Sleep until ``t_abs``; fail at once if the hardware node stops the robot meanwhile."""
        n0 = len(self.events)
        while time.time() < t_abs:
            for e in self.events[n0:]:
                if e.startswith(("quick stop", "fault")):
                    raise RobotStopped(f"the hardware node stopped the robot: {e}")
            time.sleep(0.02)

    def with_recovery(self, phase, *args, attempts: int = 3):
        """Run a motion phase; if the hardware node quick-stops the robot (e.g. the process
        stalled while a large PD torque was applied: the drives hold it, as real ones do),
        reset through its service, home again and repeat the phase."""
        for k in range(attempts):
            try:
                return phase(*args)
            except RobotStopped as e:
                if k == attempts - 1:
                    raise
                self.say(f"{e}; resetting and repeating the phase")
                res = self._wait(self.reset.call_async(Trigger.Request()))
                if not res.success:
                    raise RuntimeError(f"reset failed: {res.message}") from None
                self.home(self.q_start)

    # ------------------------------------------------------------------ phases
    def home(self, q_goal, duration=2.0):
        start = self.send([duration], [q_goal])
        self.wait_until(start + duration + 0.3)

    def cycles(self, label):
        tr = self.cycle_traj
        q, qd, qdd = joint_state(self.model, tr.X, tr.Xd, tr.Xdd)
        step = 10                                          # 100 Hz knots, quintic in between
        idx = np.arange(0, len(tr.t), step)
        if idx[-1] != len(tr.t) - 1:
            idx = np.append(idx, len(tr.t) - 1)
        t = tr.t[idx] + 0.01                               # the first knot just after the start
        k0 = self.n_js
        start = self.send(t, q[idx], qd[idx], qdd[idx])
        self.wait_until(start + t[-1] + 0.3)
        rows = self.js[k0:self.n_js]
        rows = rows[(rows[:, 0] >= start) & (rows[:, 0] <= start + t[-1])]
        ts = rows[:, 0] - start
        qa = rows[:, 1:4]
        tau = rows[:, 4:7]
        self.samples = getattr(self, "samples", {})
        self.samples[label] = (len(ts), t[-1])
        ref = np.stack([np.interp(ts, tr.t + 0.01, q[:, i]) for i in range(3)], 1)
        err = qa - ref
        rms = float(np.sqrt(np.mean(np.sum(err ** 2, axis=1))))
        Xa = forward_kinematics(self.model, qa)
        Xr = np.stack([np.interp(ts, tr.t + 0.01, tr.X[:, i]) for i in range(3)], 1)
        rms_mm = 1e3 * float(np.sqrt(np.mean(np.sum((Xa - Xr) ** 2, axis=1))))
        self.results[label] = {"t": ts, "err": err, "tau": tau, "rms": rms, "rms_mm": rms_mm}
        self.say(f"{label}: RMS tracking error {rms * 1e3:.3f} mrad, {rms_mm:.3f} mm at the platform")

    def design_excitation(self):
        """Design the excitation first, while the robot holds: the optimiser keeps the GIL
        busy for tens of milliseconds at a time, which a tracking phase would feel."""
        from delta_dynamics.identification.excitation import design_excitation
        self.say("designing an excitation trajectory (finite Fourier series, ~5 s) ...")
        ex = design_excitation(self.model, period=8.0, harmonics=4, starts=1, maxiter=25, seed=1, scale=0.6)
        if ex.violations:
            raise RuntimeError(f"excitation violates limits: {ex.violations[:3]}")
        self.excite = ex

    def excitation(self):
        ex = self.excite
        t, q, qd, qdd = ex.trajectory.sample(dt=0.01, cycles=2)
        self.home(q[0])
        self.say(f"excitation: {t[-1]:.0f} s, regressor condition number {ex.condition:.1f}")
        start = self.send(t[1:], q[1:], qd[1:], qdd[1:])
        self.wait_until(start + t[-1] + 0.5)

    def identify(self):
        self.say("identification: refitting the window ...")
        res = self._wait(self.refit.call_async(Trigger.Request()), timeout=60.0)
        self.say(res.message)
        if not res.success:
            raise RuntimeError(f"identification failed: {res.message}")

    # ------------------------------------------------------------------ the session
    def run(self):
        deadline = time.monotonic() + 20
        while not self.n_js and time.monotonic() < deadline:
            time.sleep(0.05)
        if not self.n_js:
            raise RuntimeError("no /joint_states from the hardware node")
        for c in (self.set_params, self.refit):
            if not c.wait_for_service(timeout_sec=10.0):
                raise RuntimeError(f"service {c.srv_name} is not available")
        self.design_excitation()
        import matplotlib                                   # loaded now, not while tracking
        matplotlib.use("Agg")
        import matplotlib.pyplot  # noqa: F401
        import gc
        gc.collect()
        self.start = start = np.array([-0.1525, 0.0, -0.78])
        self.cycle_traj = pick_place(start=tuple(start), lift_time=0.12, move_time=0.3, overlap=0.6,
                                     dwell=0.05, cycles=self.args.cycles, dt=1e-3)
        self.q_start = inverse_kinematics(self.model, start)
        self.say("homing to the pick position")
        self.with_recovery(self.home, self.q_start)
        self.set_feedforward("none")
        self.with_recovery(self.cycles, "PD only")
        self.set_feedforward("model")          # composed: the dynamics node's model, in-process
        self.with_recovery(self.cycles, "nominal feedforward")
        self.with_recovery(self.excitation)
        self.identify()
        self.with_recovery(self.home, self.q_start)
        self.with_recovery(self.cycles, "identified feedforward")
        self.report()

    def run_and_report(self, stop):
        """Run the session; then set ``stop`` so that the main thread ends the process."""
        try:
            self.run()
            self.exit_code = 0
        except Exception as e:                            # reported, then the process exits 1
            self.say(f"FAILED: {e}")
        finally:
            stop.set()

    def report(self):
        r = self.results
        pd, nom, idf = (r[k]["rms"] for k in ("PD only", "nominal feedforward", "identified feedforward"))
        lines = ["# delta-bringup --demo", "",
                 "| phase | RMS joint error (mrad) | RMS platform error (mm) |", "|---|---|---|"]
        lines += [f"| {k} | {v['rms'] * 1e3:.3f} | {v['rms_mm']:.3f} |" for k, v in r.items()]
        lines += ["", f"Identified feedforward vs PD only: {pd / idf:.1f}x smaller RMS error; "
                      f"vs nominal feedforward: {nom / idf:.1f}x."]
        st = self.hw.loop.stats.summary()
        loop = (f"control loop: {st['cycles']} cycles, period p50 {st['period_p50_ms']:.3f} ms, "
                f"p99 {st['period_p99_ms']:.3f} ms, max {st['period_max_ms']:.2f} ms, overruns {st['overruns']}")
        lines += ["", loop]
        self.say(loop)
        (self.out / "demo_summary.md").write_text("\n".join(lines) + "\n")
        self._plots()
        self.say(f"identified feedforward cuts the RMS tracking error {pd / idf:.1f}x against PD only "
                 f"({nom / idf:.1f}x against the nominal feedforward)")
        self.say(f"wrote {self.out}/demo_tracking.png, demo_parameters.png, demo_summary.md, identified.yaml")
        (self.out / "demo_results.json").write_text(json.dumps(
            {k: {"rms_rad": v["rms"], "rms_mm": v["rms_mm"]} for k, v in r.items()}, indent=2))

    def _plots(self):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(2, 1, figsize=(9, 6.5), sharex=True)
        for label, v in self.results.items():
            axes[0].plot(v["t"], 1e3 * np.linalg.norm(v["err"], axis=1), label=f"{label} (RMS {1e3 * v['rms']:.2f} mrad)")
            axes[1].plot(v["t"], v["tau"][:, 0], label=label)
        axes[0].set_ylabel("|q - q_ref| (mrad)")
        axes[0].set_yscale("log")
        axes[0].legend()
        axes[0].set_title("Pick-and-place tracking on the simulated robot")
        axes[1].set_ylabel("arm 1 torque (N m)")
        axes[1].set_xlabel("time (s)")
        fig.tight_layout()
        fig.savefig(self.out / "demo_tracking.png", dpi=110)
        plt.close(fig)
        nominal = DeltaModel(load_robot(self.args.robot or "nt_robot")).params.as_vector()
        truth = DeltaModel(load_robot(self.out / "true_robot.yaml")).params.as_vector()
        ident = DeltaModel(load_robot(self.out / "identified.yaml")).params.as_vector()
        x = np.arange(len(PARAMETER_NAMES))
        fig, ax = plt.subplots(figsize=(10, 4))
        scale = np.where(np.abs(truth) > 0, np.abs(truth), 1.0)
        ax.bar(x - 0.2, nominal / scale, 0.4, label="robot file (nominal)")
        ax.bar(x + 0.2, ident / scale, 0.4, label="identified")
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_xticks(x, PARAMETER_NAMES, rotation=60, ha="right")
        ax.set_ylabel("value / true value")
        ax.set_title("Dynamic parameters against the simulated robot's true values")
        ax.legend()
        fig.tight_layout()
        fig.savefig(self.out / "demo_parameters.png", dpi=110)
        plt.close(fig)
