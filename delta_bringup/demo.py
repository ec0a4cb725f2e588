"""The scripted session of ``delta-bringup --demo`` (what ``make run`` shows).

On the simulated robot, whose true parameters differ from the robot file (1.5 kg payload,
more friction, heavier arms: written to ``<out>/true_robot.yaml``):

0. load the robot's excitation trajectory (finite Fourier series, ``config/excitation/<robot>.yaml``;
   designed before the stack starts for a robot without one);
1. home to the start of the pick-and-place cycle;
2. pick-and-place cycles (25 mm up, 305 mm across, 25 mm down) with PD control only;
3. the same with the feedforward of the nominal model (dynamics node);
4. the excitation trajectory;
5. identification: the identification node refits the window, writes
   ``<out>/identified.yaml`` and pushes it to the dynamics node;
6. the same cycles with the identified feedforward;
7. the same door (``blend`` at its corners) retimed time-optimally: the hardware node's
   ``~/pick`` plans it with its current model (the identified one) under
   ``motion_limit_scale`` of the robot file's limits and runs it, with the identified
   feedforward; picks per minute of both timings and the tracking error. The momentum observer
   is on from here (``monitoring``) and ``~/calibrate_collision`` sets the collision thresholds
   from this motion;
8. monitoring: a push at the platform (``PUSH_FORCE``) during a time-optimal cycle, detected
   and stopped (the joint, the delay, the estimated force), the push removed and a reset; then,
   with detection off, time-optimal cycles with the simulated payload changed between them
   (``plant_payload_mass``; the controller's model unchanged) and the node's payload estimate
   and events after each.

It prints the RMS tracking error of each phase and writes plots (tracking error, torques,
identified against true parameters) and ``demo_summary.md`` into ``<out>`` (whose earlier
demo results are removed first, so it never mixes two runs).

The demo talks to the hardware node (its own process) over ROS only, and in simulated time
(the default of ``delta-bringup`` with the simulated drives) its figures do not depend on how
busy the host is. A run that was disturbed (a quick stop, a repeated phase, late control
cycles on the wall clock) says so in its summary; one whose result is not meaningful (the
identified feedforward not at least ``MIN_IMPROVEMENT`` times better than PD only) exits 1
with the reason.
"""
from __future__ import annotations

import json
import re
import time
from pathlib import Path

import numpy as np
from geometry_msgs.msg import Point, WrenchStamped
from rcl_interfaces.srv import GetParameters, SetParameters
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import SetBool, Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from delta_core.robot_file import load_robot, save_robot
from delta_core.ros.node_util import DEFAULT_ROBOT
from delta_core.ros.rclpy_adapter import share_time
from delta_core.ros.service_call import RESEND_PERIOD, NoAnswer, answer, waiting_by
from delta_dynamics.algorithms import (forward_kinematics, inverse_kinematics, joint_state, parameter_names,
                                       workspace_centre)
from delta_dynamics.identification.excitation import design_excitation as design
from delta_dynamics.identification.excitation import load_excitation, preset_excitation
from delta_dynamics.kinds import joint_units, kind_of, model_for
from delta_dynamics.motion.trajectories import pick_place
from delta_hardware.joint_plan import JointPlan
from delta_hardware.ros.messages import to_duration, to_time


#: sleep in 10 ms steps (the bringup's thread spins the demo's node) for up to ``seconds`` until ``done()``
_sleep_until = waiting_by(lambda: time.sleep(0.01))


def _with(obj, **changes):
    return obj.__class__(**{**obj.__dict__, **changes})


def _rotary_truth(m, f):
    """A 1.5 kg payload, arms 30 % more inertia, friction 1.4-1.6 x."""
    mass = _with(m, upper_arm=_with(m.upper_arm, inertia=m.upper_arm.inertia * 1.3), payload_mass=m.payload_mass + 1.5)
    fr = _with(f, viscous=tuple(v * 1.6 for v in f.viscous), coulomb=tuple(v * 1.4 for v in f.coulomb),
               static=tuple(v * 1.4 for v in f.static))
    return mass, fr


def _linear_truth(m, f):
    """A payload of 30 % of the platform, carriages 30 % heavier, and rail friction the robot
    file does not know of (viscous 2 N s/m, Coulomb 0.5 N per carriage, on top of its own)."""
    mass = _with(m, carriage=_with(m.carriage, mass=m.carriage.mass * 1.3),
                 payload_mass=m.payload_mass + 0.3 * m.platform_mass)
    fr = _with(f, viscous=tuple(v + 2.0 for v in f.viscous), coulomb=tuple(v + 0.5 for v in f.coulomb),
               static=tuple(v + 0.6 for v in f.static))
    return mass, fr


#: how the simulated robot differs from its robot file, per kind of robot
_TRUTH = {"rotary": _rotary_truth, "linear": _linear_truth}


def true_robot(nominal):
    """The simulated robot: the nominal robot file with a payload, more friction, heavier
    moving parts (the arms of a rotary Delta, the carriages of a linear one)."""
    mass, fr = _TRUTH[kind_of(nominal)](nominal.mass, nominal.friction)
    return nominal.replace(name=nominal.name + "_true", mass=mass, friction=fr, metadata={})


def pick_place_path(model):
    """(start, width, height) of the demo's pick-and-place cycle: on a rotary Delta the
    classic 305 mm stroke 780 mm below the base; elsewhere a stroke across half the gap
    between the chains and the platform joints, around the workspace centre."""
    if kind_of(model) == "rotary":
        return np.array([-0.1525, 0.0, -0.78]), 0.305, 0.025
    c = workspace_centre(model)
    g = model.robot.geometry
    width = 0.5 * (getattr(g, "rail_radius", 0.0) - g.platform_radius)
    return c - [0.5 * width, 0.0, 0.0], width, 0.1 * width


#: what the demo writes into its output folder (removed at the start of a run)
OUTPUTS = ("demo_tracking.png", "demo_parameters.png", "demo_summary.md", "demo_results.json",
           "identified.yaml", "true_robot.yaml")
#: the share of the robot file's limits the time-optimal cycles may use: the rest is the
#: feedback's (the hardware node's default, 0.99, leaves the PD no torque where the plan
#: touches a torque limit)
MOTION_LIMIT_SCALE = 0.9
#: N: the push at the platform in step 8, per kind of robot (the issue's detection targets)
PUSH_FORCE = {"rotary": 30.0, "linear": 10.0}
#: when in the cycle the push begins (share of the cycle time: moving across)
PUSH_AT = 0.2
#: kg added to the simulated robot's payload for each single cycle of step 8 (0: as identified)
PAYLOADS = (0.0, 0.5, 0.0)
#: time-optimal cycles per payload (the node's estimate after a motion is the fit of that motion alone)
PAYLOAD_CYCLES = 1
#: the phase label of the time-optimal cycles (step 7)
TIME_OPTIMAL = "time-optimal, identified feedforward"
#: the identified feedforward must cut the RMS tracking error at least this much against PD only
MIN_IMPROVEMENT = 5.0


def prepare(args):
    """Clear the earlier results, write the true robot file; the parameter overrides the demo needs."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name in OUTPUTS:
        (out / name).unlink(missing_ok=True)
    nominal = load_robot(args.robot or DEFAULT_ROBOT)
    path = save_robot(true_robot(nominal), out / "true_robot.yaml",
                      header="the simulated robot of delta-bringup --demo (unknown to the controller)")
    args.excitation = demo_excitation(model_for(nominal))
    return [("true_robot", str(path.resolve())), ("feedforward", "none"), ("start_paused", True),
            ("output", str((out / "identified.yaml").resolve())), ("window", 25.0),
            ("stribeck", True),    # the simulated robot's friction has a break-away hump
            ("motion_limit_scale", MOTION_LIMIT_SCALE)]


class RobotStopped(RuntimeError):
    """The hardware node quick-stopped the robot during a phase."""


class Unsupported(RuntimeError):
    """The simulated robot cannot do what a phase asks (a plant that takes no push)."""


#: the demo's excitation settings (two periods of 8 s at 60 % of the limits); for a robot
#: without a stored excitation file it is designed with these at start
EXCITATION = dict(period=8.0, harmonics=4, starts=1, maxiter=25, seed=1, scale=0.6)


def demo_excitation(model):
    """The excitation trajectory (finite Fourier series): the robot's stored one
    (``config/excitation/<robot>.yaml``, :func:`~delta_dynamics.identification.excitation.preset_excitation`),
    else one designed now (SLSQP: seconds of CPU, and a trajectory that depends on the machine's
    floating point, so the demo's identified figures do too: store one with
    ``tools/design_excitations.py`` for figures others can reproduce)."""
    path = preset_excitation(model.robot.name)
    if path is not None:
        ex = load_excitation(path, model, scale=EXCITATION["scale"])
        ex.source = f"config/excitation/{Path(path).name}"
        print(f"[demo] excitation trajectory from {ex.source}", flush=True)
    else:
        print(f"[demo] no stored excitation for robot {model.robot.name!r}: designing one (finite Fourier "
              f"series, SLSQP, ~5 s; the result depends on this machine's floating point) ...", flush=True)
        ex = design(model, **EXCITATION)
        ex.source = "designed at start"
    if ex.violations:
        raise ValueError(f"the excitation ({ex.source}) violates the limits: {ex.violations[:3]}")
    return ex


class Demo:
    """The demo session (module docstring): a node ``delta_demo`` that drives the stack's hardware and
    identification nodes over ROS and records the joint states. ``time_owner``: a node of this
    process whose clock the demo's node shares (one ``/clock`` subscription per process)."""

    def __init__(self, args, excitation, time_owner=None):
        import rclpy
        self.args = args
        self.excite = excitation
        self.out = Path(args.out)
        self.model = model_for(load_robot(args.robot or DEFAULT_ROBOT))
        self.units = joint_units(self.model)
        self.milli = "mrad" if self.units["position"] == "rad" else "mm"
        # joint names with the stack's prefix; every name below is relative to the stack's
        # namespace (delta-bringup --namespace), which this process's node shares
        self.names = [(args.prefix or "") + n for n in self.model.joint_names]
        if time_owner is None:
            self.node = rclpy.create_node("delta_demo")
        else:       # the time of time_owner, a node of this process: one /clock subscription per process
            self.node = rclpy.create_node("delta_demo", parameter_overrides=[Parameter("use_sim_time", value=False)])
            share_time(time_owner, self.node.get_clock())
        self.js = np.zeros((2_000_000, 7))             # t, q(3), effort(3): numpy rows, no GC load
        self.n_js = 0
        self.events = []
        self.disturbances = []                          # what disturbed the run (for the summary)
        deep = QoSProfile(depth=5000)
        # as deep as the longest motion at 1 kHz: a starved demo process catches up, loses nothing
        self.node.create_subscription(JointState, "joint_states", self._on_js, QoSProfile(depth=60000))
        self.node.create_subscription(String, "delta_hardware/events", lambda m: self.events.append(m.data), deep)
        self.pub = self.node.create_publisher(JointTrajectory, "delta_hardware/joint_trajectory", 10)
        self.set_params = self.node.create_client(SetParameters, "delta_hardware/set_parameters")
        self.get_params = self.node.create_client(GetParameters, "delta_hardware/get_parameters")
        self.ident_params = self.node.create_client(SetParameters, "delta_identification/set_parameters")
        self.refit = self.node.create_client(Trigger, "delta_identification/refit")
        self.reset = self.node.create_client(Trigger, "delta_hardware/reset")
        self.status = self.node.create_client(Trigger, "delta_hardware/status")
        self.pause_client = self.node.create_client(SetBool, "delta_hardware/pause")
        try:                                            # built at setup (interfaces/README.md)
            from delta_msgs.srv import Pick
            self.pick_client = self.node.create_client(Pick, "delta_hardware/pick")
        except ImportError:
            self.pick_client = None
        self.cycle_times = {}                           # phase -> one cycle (s)
        self.wrench_pub = self.node.create_publisher(WrenchStamped, "delta_hardware/plant/external_wrench", 10)
        self.calibrate = self.node.create_client(Trigger, "delta_hardware/calibrate_collision")
        self.watch = {}                                 # step 8's figures
        self.exit_code = 1
        self.meaningful = False
        self.t_next = None                              # ROS time the next motion starts
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
        """Print ``text`` as a ``[demo]`` line."""
        print(f"[demo] {text}", flush=True)

    def now(self) -> float:
        """ROS time of the demo node (simulated time when the stack runs in it)."""
        return self.node.get_clock().now().nanoseconds * 1e-9

    def _ask(self, client, request, timeout=60.0, resend=True):
        """The answer of ``client``'s service to ``request`` (RuntimeError after ``timeout`` s);
        ``resend``: safe to repeat (a query, a parameter, a pause), sent again every second while
        unanswered (:mod:`delta_core.ros.service_call`). The executor spins in its own thread."""
        try:
            return answer(client, request, timeout, _sleep_until, RESEND_PERIOD if resend else None)
        except NoAnswer as e:
            raise RuntimeError(str(e)) from None

    def set_feedforward(self, mode):
        """Set the hardware node's ``feedforward`` parameter (``none``, ``model`` or ``topic``)."""
        self.set_param(self.set_params, "feedforward", mode)

    def hardware_status(self) -> dict:
        """The hardware node's ``~/status`` (the JSON of its message, as a dict)."""
        return json.loads(self._ask(self.status, Trigger.Request()).message)

    #: s of simulated time from the end of one motion to the start of the next (the robot holds)
    GAP = 1.0
    #: s of simulated time the demo watches the robot settle after a motion
    SETTLE = 0.3
    #: simulated time of the first motion
    FIRST_START = 1.0
    #: s (wall) without any new /clock or /joint_states after which a wait fails
    NO_PROGRESS = 120.0
    #: set when the process stops (a signal, a node process that ended): waits end at once
    stop = None
    #: s the gripper rests at each end of a pick-and-place cycle
    DWELL = 0.05

    def set_param(self, client, name, value):
        """Set the parameter ``name`` to ``value`` through the SetParameters ``client``; RuntimeError if refused."""
        req = SetParameters.Request(parameters=[Parameter(name, value=value).to_parameter_msg()])
        res = self._ask(client, req).results[0]
        if not res.successful:
            raise RuntimeError(f"{client.srv_name} refused {name}={value!r}: {res.reason}")

    def get_param(self, name):
        """The value of the hardware node's parameter ``name``."""
        from rclpy.parameter import parameter_value_to_python
        res = self._ask(self.get_params, GetParameters.Request(names=[name]))
        return parameter_value_to_python(res.values[0])

    def pause(self, paused: bool):
        """Pause (True) or resume simulated time through the hardware node's ``~/pause``; RuntimeError if refused."""
        res = self._ask(self.pause_client, SetBool.Request(data=paused))
        if not res.success:
            raise RuntimeError(f"cannot {'pause' if paused else 'resume'} the simulation: {res.message}")

    def motion(self, t, q, qd=None, qdd=None):
        """Run joint points (t relative) as the next motion of the session's timeline: sent while
        the simulation is paused, to start ``GAP`` s after the previous motion ended (the robot
        holds meanwhile); the simulation is resumed and pauses again ``SETTLE`` s after the
        motion's end (``pause_at``). Every phase therefore starts from the same state at the
        same simulated time in every run, however slowly the host answers. The start time."""
        start = self.t_next
        end = start + float(t[-1])
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
        began = self.accepted(n0)
        if abs(began - start) > 1e-6:
            self.disturbances.append(f"a motion started at t = {began:.3f} s instead of {start:.3f} s")
        self.play_until(end)
        return began

    def accepted(self, n0: int) -> float:
        """The start time (ROS time) of the motion the hardware node accepted after its
        ``n0``-th event; RobotStopped / RuntimeError if it rejected it."""
        deadline = time.monotonic() + 120.0
        while not any("accepted" in e for e in self.events[n0:]):
            for e in self.events[n0:]:
                if "rejected" in e:
                    raise (RobotStopped if "robot is stopped" in e else RuntimeError)(e)
            if time.monotonic() > deadline:
                raise RuntimeError("the hardware node did not answer the trajectory")
            time.sleep(0.01)
        return float(re.search(r"from t = ([-0-9.e+]+) s", next(e for e in self.events[n0:] if "accepted" in e)).group(1))

    def play_until(self, end: float):
        """Resume the simulation until ``SETTLE`` s after ``end`` (it pauses there: ``pause_at``);
        the next motion starts ``GAP`` s after ``end``."""
        self.set_param(self.set_params, "pause_at", end + self.SETTLE)
        self.pause(False)
        self.wait_until(end + self.SETTLE)
        self.t_next = round((end + self.GAP) / self.period) * self.period

    def wait_until(self, t_abs, stops_ok: bool = False):
        """Wait until ROS time ``t_abs`` and until the joint states up to it have arrived (a
        busy host delivers them late, never loses them); fail at once if the hardware node
        stops the robot (unless ``stops_ok``)."""
        n0 = len(self.events)
        t_abs -= 1e-6                                   # stamps are rounded to nanoseconds
        progress, still_since = None, time.monotonic()
        while self.now() < t_abs or (self.n_js and self.js[self.n_js - 1, 0] < t_abs):
            for e in self.events[n0:]:
                if e.startswith(("quick stop", "fault")) and not stops_ok:
                    raise RobotStopped(f"the hardware node stopped the robot: {e}")
            if self.stop is not None and self.stop.is_set():
                raise RuntimeError("stopped (a signal, or a node process ended)")
            # however slow the host (a starved demo process takes the queued joint states
            # late, a minute and more behind the clock under a load of 20): some progress
            if (self.now(), self.n_js) != progress:
                progress, still_since = (self.now(), self.n_js), time.monotonic()
            elif time.monotonic() - still_since > self.NO_PROGRESS:
                raise RuntimeError(f"neither /clock nor /joint_states moved for {self.NO_PROGRESS:g} s while "
                                   f"waiting for t = {t_abs:.3f} s (the clock stands at {self.now():.3f} s)")
            time.sleep(0.02)

    def with_recovery(self, phase, *args, attempts: int = 3):
        """Run a motion phase; if the hardware node quick-stops the robot, reset through its
        service, home again and repeat the phase (reported as a disturbance)."""
        for k in range(attempts):
            try:
                return phase(*args)
            except RobotStopped as e:
                self.disturbances.append(f"{phase.__name__} repeated after: {e}")
                if k == attempts - 1:
                    raise
                self.say(f"{e}; resetting and repeating the phase")
                self.pause(True)
                self.t_next = round((self.now() + self.GAP) / self.period) * self.period
                res = self._ask(self.reset, Trigger.Request(), resend=False)
                if not res.success:
                    raise RuntimeError(f"reset failed: {res.message}") from None
                self.home(self.q_start)

    # ------------------------------------------------------------------ phases
    def home(self, q_goal, duration=2.0):
        """Move to the joint positions ``q_goal`` in ``duration`` s (the next motion of the timeline)."""
        self.motion([duration], [q_goal])

    def cycles(self, label):
        """Run the pick-and-place cycles (100 Hz knots) as phase ``label`` and keep its RMS tracking error at
        the joints and at the platform (forward kinematics of the measured joints, mm)."""
        tr = self.cycle_traj
        q, qd, qdd = joint_state(self.model, tr.X, tr.Xd, tr.Xdd)
        step = 10                                          # 100 Hz knots, quintic in between
        idx = np.arange(0, len(tr.t), step)
        if idx[-1] != len(tr.t) - 1:
            idx = np.append(idx, len(tr.t) - 1)
        t = tr.t[idx] + 0.01                               # the first knot just after the start
        k0 = self.n_js
        start = self.motion(t, q[idx], qd[idx], qdd[idx])
        self.cycle_times[label] = float(tr.t[-1]) / self.args.cycles
        self.record(label, k0, start, t[-1],
                    lambda ts: np.stack([np.interp(ts, tr.t + 0.01, q[:, i]) for i in range(3)], 1),
                    lambda ts: np.stack([np.interp(ts, tr.t + 0.01, tr.X[:, i]) for i in range(3)], 1))

    def record(self, label, k0, start, duration, q_ref, X_ref):
        """Keep phase ``label``'s joint states from the ``k0``-th on over ``[start, start +
        duration]`` and its RMS tracking error against ``q_ref(ts)`` at the joints and
        ``X_ref(ts)`` at the platform (forward kinematics of the measured joints, mm); ``ts``:
        time in the phase (s)."""
        rows = self.js[k0:self.n_js]
        rows = rows[(rows[:, 0] >= start) & (rows[:, 0] <= start + duration)]
        ts = rows[:, 0] - start
        qa = rows[:, 1:4]
        err = qa - q_ref(ts)
        rms = float(np.sqrt(np.mean(np.sum(err ** 2, axis=1))))
        Xa = forward_kinematics(self.model, qa)
        rms_mm = 1e3 * float(np.sqrt(np.mean(np.sum((Xa - X_ref(ts)) ** 2, axis=1))))
        self.results[label] = {"t": ts, "err": err, "tau": rows[:, 4:7], "rms": rms, "rms_mm": rms_mm}
        self.say(f"{label}: RMS tracking error {rms * 1e3:.3f} {self.milli}, {rms_mm:.3f} mm at the platform")

    def start_pick(self, cycles: int):
        """Ask ``~/pick`` for ``cycles`` time-optimal cycles from the pick to the place position
        (the simulation paused: the run starts when the loop takes it, the same time in every
        run); (its answer, the run's start time)."""
        a, b = self.start, self.place
        req = self.pick_client.srv_type.Request(from_point=Point(x=a[0], y=a[1], z=a[2]),
                                                to_point=Point(x=b[0], y=b[1], z=b[2]), height=self.height,
                                                blend=self.blend, dwell=self.DWELL, cycles=cycles)
        n0 = len(self.events)
        res = self._ask(self.pick_client, req, resend=False)          # a command: sent once
        if not res.success:
            raise (RobotStopped if "robot is stopped" in res.message else RuntimeError)(res.message)
        return res, self.accepted(n0)

    def event_after(self, n0: int, text: str, timeout: float = 60.0) -> str:
        """The first hardware-node event after its ``n0``-th that contains ``text`` (RuntimeError
        after ``timeout`` s of wall time: the node's broadcaster thread writes it)."""
        found = lambda: next((e for e in self.events[n0:] if text in e), None)      # noqa: E731
        if not _sleep_until(timeout, lambda: found() is not None):
            raise RuntimeError(f"the hardware node did not say {text!r} within {timeout:g} s")
        return found()

    def push_wrench(self, force) -> float:
        """Push the simulated platform with ``force`` (N, base_link; zeros: remove the push) while
        the simulation is paused; the time it applies from (the node's event)."""
        msg = WrenchStamped()
        msg.header.frame_id = (self.args.prefix or "") + "base_link"
        msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = (float(v) for v in force)
        n0 = len(self.events)
        self.wrench_pub.publish(msg)
        text = self.event_after(n0, "plant external wrench")
        m = re.search(r"(?:from|removed at) t = ([-0-9.e+]+) s", text)
        if m is None:
            raise Unsupported(text)
        return float(m.group(1))

    def monitoring(self):
        """Step 8 (module docstring): a push during a time-optimal cycle, detected and stopped;
        a reset; then single cycles with the simulated payload changed between them. The
        figures go into :attr:`watch`."""
        force = np.array([-PUSH_FORCE[kind_of(self.model)], 0.0, 0.0])
        res, start = self.start_pick(1)
        t_push = start + PUSH_AT * res.cycle_time
        self.set_param(self.set_params, "pause_at", t_push)
        self.pause(False)
        self.wait_until(t_push)
        n0 = len(self.events)
        try:
            applied = self.push_wrench(force)
        except Unsupported as e:                        # a plant that takes no force (multibody)
            self.say(f"no push: {e}")
            self.play_until(start + res.duration)
        else:
            self.collision(force, n0, applied)
        # the payload: detection off (a payload the model does not know is a platform force too)
        self.set_param(self.set_params, "collision_threshold", [0.0, 0.0, 0.0])
        try:
            self.payloads()
        except Unsupported as e:
            self.say(f"no payload change: {e}")

    def collision(self, force, n0: int, applied: float):
        """The push ``force`` applied from ``applied`` (s): run until the collision stops the robot,
        keep the figures, remove the push, reset and home."""
        self.set_param(self.set_params, "pause_at", applied + 0.5)
        self.pause(False)
        text = self.event_after(n0, "collision on", timeout=self.NO_PROGRESS)
        self.wait_until(applied + 0.5, stops_ok=True)
        m = re.search(r"collision on (\S+) at t = ([-0-9.e+]+) s.*estimated force ([0-9.]+) N", text)
        if m is None:
            raise RuntimeError(f"unexpected collision event: {text}")
        self.watch.update({"push_N": float(np.linalg.norm(force)), "joint": m.group(1),
                           "detected_ms": 1e3 * (float(m.group(2)) - applied), "estimated_N": float(m.group(3))})
        self.say(f"a {self.watch['push_N']:g} N push at the platform during a time-optimal cycle: {text}; "
                 f"detected {self.watch['detected_ms']:.0f} ms after the push began")
        self.push_wrench((0.0, 0.0, 0.0))
        self.t_next = round((self.now() + self.GAP) / self.period) * self.period
        reset = self._ask(self.reset, Trigger.Request(), resend=False)
        if not reset.success:
            raise RuntimeError(f"reset after the collision failed: {reset.message}")
        self.home(self.q_start)

    def payloads(self):
        """Time-optimal cycles with the simulated payload changed between them (``PAYLOADS``); the
        node's estimate and events after each run. Unsupported if the plant cannot change it."""
        self.watch["payload"] = []
        self.watch["payload_cycles"] = PAYLOAD_CYCLES
        base = load_robot(self.out / "true_robot.yaml").mass.payload_mass     # plant_payload_mass is the whole payload
        for extra in PAYLOADS:
            try:
                self.set_param(self.set_params, "plant_payload_mass", float(base + extra))
            except RuntimeError as e:
                raise Unsupported(str(e)) from None
            n0 = len(self.events)
            res, start = self.start_pick(PAYLOAD_CYCLES)
            self.play_until(start + res.duration)
            # two rests per cycle (the dwell at the place position, the end): the estimate at the end
            rests = lambda: [e for e in self.events[n0:] if e.startswith("payload after the motion")]  # noqa: E731
            if not _sleep_until(60.0, lambda: len(rests()) >= 2 * PAYLOAD_CYCLES):
                raise RuntimeError(f"the hardware node gave {len(rests())} payload estimates for "
                                   f"{PAYLOAD_CYCLES} cycles, not {2 * PAYLOAD_CYCLES}")
            text = rests()[-1]
            m = re.search(r"payload after the motion: ([-0-9.]+) ± ([0-9.]+) kg", text)
            change = next((e for e in self.events[n0:] if e.startswith(("payload picked", "payload lost"))), "")
            self.watch["payload"].append({"extra_kg": float(extra), "estimate_kg": float(m.group(1)),
                                          "std_kg": float(m.group(2)), "event": change})
            self.say(f"simulated payload +{extra:g} kg: {text}" + (f"; {change}" if change else ""))
        self.set_param(self.set_params, "plant_payload_mass", float(base))

    def time_optimal(self, label):
        """The cycles' door retimed time-optimally (module docstring, step 7) as phase ``label``:
        ``~/pick`` from the pick to the place position while the simulation is paused (the
        run starts when the loop takes it: the same time in every run); the reference is the
        same plan made here (:func:`delta_hardware.pick_run.plan_pick_run` with the node's
        planning model, its ``feedforward_robot``), checked against the node's cycle time."""
        from delta_hardware.pick_run import plan_pick_run      # in-function: scipy and toppra
        plan = plan_pick_run(self.planning_model, self.q_start, self.start, self.place, self.height, self.blend,
                             self.DWELL, self.args.cycles, limit_scale=self.limit_scale)
        k0 = self.n_js
        res, start = self.start_pick(self.args.cycles)
        if abs(res.cycle_time - plan.cycle_time) > 1e-9 or abs(res.duration - plan.duration) > 1e-9:
            raise RuntimeError(f"the node's pick plan ({res.cycle_time:.6f} s per cycle, {res.duration:.6f} s) "
                               f"is not the demo's ({plan.cycle_time:.6f} s, {plan.duration:.6f} s)")
        self.play_until(start + plan.duration)
        self.cycle_times[label] = plan.cycle_time
        ref = JointPlan(0.0, plan.knots.t, plan.knots.coefficients())     # the quintics the loop follows

        def q_ref(ts):
            return ref.sample_many(ts)[0]

        self.record(label, k0, start, plan.duration, q_ref, lambda ts: forward_kinematics(self.model, q_ref(ts)))

    def excitation(self):
        """Home to the excitation trajectory's start, then run it (two cycles, knots every 10 ms; the span
        kept for :meth:`identify`)."""
        ex = self.excite
        t, q, qd, qdd = ex.trajectory.sample(dt=0.01, cycles=2)
        self.home(q[0])
        tr = ex.trajectory
        self.say(f"excitation trajectory ({ex.source}): {round(t[-1] / tr.period)} periods of {tr.period:g} s, "
                 f"{tr.harmonics} harmonics, regressor condition number {ex.condition:.1f}")
        start = self.motion(t[1:], q[1:], qd[1:], qdd[1:])
        self.excite_span = (start, start + t[-1])

    def identify(self):
        """Refit on exactly the excitation run (window and window_end on the ROS clock)."""
        self.set_param(self.ident_params, "window", float(self.excite_span[1] - self.excite_span[0]))
        self.set_param(self.ident_params, "window_end", float(self.excite_span[1]))
        self.say("identification: refitting the excitation run ...")
        res = self._ask(self.refit, Trigger.Request(), resend=False)
        self.say(res.message)
        if not res.success:
            raise RuntimeError(f"identification failed: {res.message}")
        lost = re.search(r"\((\d+) missing[^)]*\)", res.message)
        if lost:       # samples lost in delivery: the fit saw another window than an undisturbed run
            self.disturbances.append(f"the identification window lost {lost.group(0)[1:-1]}")

    # ------------------------------------------------------------------ the session
    def run(self):
        """The session: home, cycles with PD only, with the nominal feedforward, the excitation, identification,
        home, cycles with the identified feedforward, then :meth:`report`. RuntimeError if a service is
        missing or the simulation did not start paused."""
        for c in (self.set_params, self.ident_params, self.refit, self.status, self.pause_client):
            if not c.wait_for_service(timeout_sec=30.0):
                raise RuntimeError(f"service {c.srv_name} is not available")
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot  # noqa: F401
        st = self.hardware_status()
        self.period = st["period"]
        if not st.get("paused"):
            raise RuntimeError("the simulation must start paused (start_paused) for the demo's timeline")
        self.t_next = max(self.FIRST_START, st["time"] + self.GAP)
        self.start, self.width, self.height = pick_place_path(self.model)
        self.blend = min(0.01, 0.4 * self.height)       # a rise holds one blend
        self.place = self.start + np.array([self.width, 0.0, 0.0])
        start = self.start
        self.cycle_traj = pick_place(start=tuple(start), width=self.width, height=self.height, lift_time=0.12,
                                     move_time=0.3, overlap=0.6,
                                     dwell=self.DWELL, cycles=self.args.cycles, dt=1e-3)
        self.q_start = inverse_kinematics(self.model, start)
        self.say("homing to the pick position")
        self.with_recovery(self.home, self.q_start)
        self.set_feedforward("none")
        self.with_recovery(self.cycles, "PD only")
        self.set_feedforward("model")          # the nominal model, in the loop's process
        self.with_recovery(self.cycles, "nominal feedforward")
        self.with_recovery(self.excitation)
        self.identify()
        self.with_recovery(self.home, self.q_start)
        self.with_recovery(self.cycles, "identified feedforward")
        if self.pick_client is None:
            self.say("no delta_msgs (make setup builds it): the time-optimal phase is left out")
        else:
            if not self.pick_client.wait_for_service(timeout_sec=30.0):
                raise RuntimeError(f"service {self.pick_client.srv_name} is not available")
            ff = self.get_param("feedforward_robot")        # the node plans with it (the identified robot)
            self.planning_model = model_for(load_robot(ff)) if ff else self.model
            self.limit_scale = float(self.get_param("motion_limit_scale"))
            # step 8's thresholds come from step 7's motion: the observer on, the next motion watched
            self.set_param(self.set_params, "monitoring", True)
            n0 = len(self.events)
            res = self._ask(self.calibrate, Trigger.Request(), resend=False)
            if not res.success:
                raise RuntimeError(f"calibrate_collision refused: {res.message}")
            self.with_recovery(self.time_optimal, TIME_OPTIMAL)
            text = self.event_after(n0, "collision thresholds calibrated")
            self.say(text)
            self.watch["thresholds"] = text.split(": ", 1)[1]
            self.monitoring()
        self.report()

    def run_and_report(self, stop):
        """Run the session; then set ``stop`` so that the main thread ends the process."""
        self.stop = stop
        try:
            self.run()
            self.exit_code = 0 if self.meaningful else 1
        except Exception as e:                            # reported, then the process exits 1
            self.say(f"FAILED: {e}")
        finally:
            stop.set()

    def report(self):
        """Write ``demo_summary.md``, ``demo_results.json`` and the plots into ``<out>``, print the verdict, and
        set :attr:`meaningful`: the identified feedforward at least ``MIN_IMPROVEMENT`` times better than PD
        only and better than the nominal one."""
        r = self.results
        pd, nom, idf = (r[k]["rms"] for k in ("PD only", "nominal feedforward", "identified feedforward"))
        st = self.hardware_status()
        if st.get("clock") == "sim":
            timing = (f"simulated time: {st['cycles']} control cycles of {st['period_p50_ms']:.3f} ms; the pacing "
                      f"restarted {st.get('pacing_restarts', 0)} times after the host fell behind (no effect on "
                      f"the results)")
        else:
            timing = (f"wall clock: {st['cycles']} cycles, period p50 {st['period_p50_ms']:.3f} ms, p99 "
                      f"{st['period_p99_ms']:.3f} ms, max {st['period_max_ms']:.2f} ms, {st['late_cycles']} late "
                      f"cycles, {st['overruns']} overruns")
            if st["late_cycles"]:
                self.disturbances.append(f"{st['late_cycles']} control cycles came more than 10 periods late")
        ratio = pd / idf
        self.meaningful = ratio >= MIN_IMPROVEMENT and idf < nom
        lines = ["# delta-bringup --demo", "",
                 f"| phase | RMS joint error ({self.milli}) | RMS platform error (mm) |", "|---|---|---|"]
        lines += [f"| {k} | {v['rms'] * 1e3:.3f} | {v['rms_mm']:.3f} |" for k, v in r.items()]
        lines += ["", f"Identified feedforward vs PD only: {ratio:.1f}x smaller RMS error; "
                      f"vs nominal feedforward: {nom / idf:.1f}x.", ""]
        speed, watch = self.speed_text(), self.watch_text()
        lines += [x for part in (speed, watch) if part for x in (part, "")]
        lines += [timing, ""]
        lines += (["Disturbed run:"] + [f"- {d}" for d in self.disturbances] if self.disturbances
                  else ["Undisturbed run: no quick stop, no repeated phase."])
        if not self.meaningful:
            lines += ["", f"NOT MEANINGFUL: the identified feedforward must be at least {MIN_IMPROVEMENT:g}x better "
                          f"than PD only and better than the nominal feedforward."]
        (self.out / "demo_summary.md").write_text("\n".join(lines) + "\n")
        (self.out / "demo_results.json").write_text(json.dumps(
            {**{k: {"rms_rad": v["rms"], "rms_mm": v["rms_mm"]} for k, v in r.items()},
             "cycle_time_s": self.cycle_times, "monitoring": self.watch,
             "improvement_vs_pd": ratio, "disturbances": self.disturbances, "clock": st.get("clock"),
             "meaningful": self.meaningful}, indent=2))
        self._plots()
        self.say(timing)
        for d in self.disturbances:
            self.say(f"disturbed: {d}")
        self.say(f"identified feedforward cuts the RMS tracking error {ratio:.1f}x against PD only "
                 f"({nom / idf:.1f}x against the nominal feedforward)")
        for part in (speed, watch):
            if part:
                self.say(part)
        if not self.meaningful:
            self.say(f"FAILED: result not meaningful: {ratio:.1f}x against PD only (at least {MIN_IMPROVEMENT:g}x "
                     f"needed) and {nom / idf:.2f}x against the nominal feedforward (more than 1x needed)")
        self.say(f"wrote {self.out}/demo_tracking.png, demo_parameters.png, demo_summary.md, identified.yaml")

    def speed_text(self) -> str:
        """The sentence comparing the cycles' fixed timing with the time-optimal one ("" without it)."""
        if TIME_OPTIMAL not in self.cycle_times:
            return ""
        fixed, best = self.cycle_times["identified feedforward"], self.cycle_times[TIME_OPTIMAL]
        r = self.results[TIME_OPTIMAL]
        return (f"time-optimal cycles (a door path between the same positions, {self.height * 1e3:g} mm up, corners "
                f"blended {self.blend * 1e3:g} mm, under {self.limit_scale:g} of the robot file's limits with the "
                f"identified model): {best:.3f} s per cycle, {60 / best:.1f} picks/min, "
                f"against {fixed:.3f} s, {60 / fixed:.1f} picks/min with the fixed timing ({100 * (1 - best / fixed):.0f} % "
                f"shorter); RMS tracking error {r['rms'] * 1e3:.3f} {self.milli}, {r['rms_mm']:.3f} mm at the platform")

    def watch_text(self) -> str:
        """The sentence of step 8 (collision and payload; "" without it)."""
        w = self.watch
        if "detected_ms" not in w:
            return ""
        loads = "; ".join(f"+{p['extra_kg']:g} kg: {p['estimate_kg']:.3f} ± {p['std_kg']:.3f} kg"
                          + (f" ({p['event'].split(':')[0]})" if p["event"] else "") for p in w.get("payload", []))
        return (f"monitoring (thresholds from the time-optimal cycles: {w['thresholds']}): a {w['push_N']:g} N push "
                f"during a cycle was detected {w['detected_ms']:.0f} ms after it began, on {w['joint']}, estimated "
                f"{w['estimated_N']:.1f} N, and stopped the robot; payload estimated after {PAYLOAD_CYCLES} cycle{'s' if PAYLOAD_CYCLES != 1 else ''} each with the "
                f"simulated payload changed (the controller's model unchanged): {loads}")

    def _plots(self):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        plot_tracking(self.results, self.units, self.milli, self.out / "demo_tracking.png")
        plot_parameters(self.model, load_robot(self.out / "true_robot.yaml"), load_robot(self.out / "identified.yaml"),
                        self.out / "demo_parameters.png")
        plt.close("all")


#: what each lumped parameter is, per kind of robot (the parameter plot's key)
PARAMETER_TEXT = {
    "rotary": [("m_x", "mass moving with the platform: platform + payload + 3 forearm-end point masses (kg)"),
               ("m_k", "point mass at each forearm's centre of mass (kg)"),
               ("arm_inertia_i", "inertia of arm i about its motor axis, rotor included (kg m^2)"),
               ("arm_moment_i", "first moment of mass of arm i (kg m)"),
               ("viscous_i, coulomb_i, static_i", "friction of joint i: viscous (N m s/rad), Coulomb and "
                                                  "break-away (N m)")],
    "linear": [("m_x", "mass moving with the platform: platform + payload + 3 rods (kg)"),
               ("m_r", "rods' rotational correction per rod pair (kg)"),
               ("carriage_inertia_i", "inertial mass along rail i, rotor included (kg)"),
               ("carriage_mass_i", "mass that weighs on rail i (kg)"),
               ("viscous_i, coulomb_i, static_i", "friction of carriage i: viscous (N s/m), Coulomb and "
                                                  "break-away (N)")],
}


def plot_tracking(results, units, milli, path):
    """The tracking figure: the error norm of each phase (top) and each joint's effort
    (one panel per joint), legend below the panels (off the data)."""
    import matplotlib.pyplot as plt
    joint = units["joint"]
    effort = units["effort_name"]
    fig = plt.figure(figsize=(11, 7.2))
    gs = fig.add_gridspec(2, 3, height_ratios=[1.15, 1.0], hspace=0.42, wspace=0.28)
    top = fig.add_subplot(gs[0, :])
    panels = [fig.add_subplot(gs[1, j], sharex=top) for j in range(3)]
    lines = []
    for label, v in results.items():
        ln, = top.plot(v["t"], 1e3 * np.linalg.norm(v["err"], axis=1),
                       label=f"{label} (RMS {1e3 * v['rms']:.3g} {milli}, {v['rms_mm']:.3g} mm at the platform)")
        lines.append(ln)
        for j, ax in enumerate(panels):
            ax.plot(v["t"], v["tau"][:, j], color=ln.get_color(), lw=1.0)
    top.set_yscale("log")
    top.set_ylabel(f"error norm ({milli})")
    top.set_xlabel("time in the phase (s)")
    top.set_title(f"Tracking error of the three {joint}s: Euclidean norm |q - q_ref| over {joint}s 1-3 "
                  f"({milli})", fontsize=10)
    for j, ax in enumerate(panels):
        ax.set_title(f"{joint} {j + 1}: measured {effort} ({units['effort']})", fontsize=10)
        ax.set_xlabel("time in the phase (s)")
        ax.grid(alpha=0.3)
    panels[0].set_ylabel(f"{effort} ({units['effort']})")
    top.grid(alpha=0.3, which="both")
    fig.suptitle("Pick-and-place cycles on the simulated robot: PD only, nominal and identified feedforward"
                 + (", then retimed time-optimally" if TIME_OPTIMAL in results else ""), fontsize=11)
    fig.legend(handles=lines, loc="lower center", ncol=1, frameon=False, fontsize=9)
    fig.subplots_adjust(left=0.07, right=0.98, top=0.9, bottom=0.2)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_parameters(model, truth_robot, identified_robot, path):
    """Each lumped parameter of the robot file and of the identification over the simulated
    robot's true value (break-away friction included), with a key to the symbols below."""
    import matplotlib.pyplot as plt
    names = list(parameter_names(model)) + [f"static_{j}" for j in (1, 2, 3)]

    def vector(robot):
        return np.concatenate((model_for(robot).params.as_vector(), robot.friction.static))

    nominal, truth, ident = vector(model.robot), vector(truth_robot), vector(identified_robot)
    x = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(11, 5.4))
    scale = np.where(np.abs(truth) > 0, np.abs(truth), 1.0)
    ax.bar(x - 0.2, nominal / scale, 0.4, label="robot file (nominal)")
    ax.bar(x + 0.2, ident / scale, 0.4, label="identified from the excitation run")
    ax.axhline(1.0, color="k", lw=0.8, label="true value (the simulated robot)")
    ax.set_xticks(x, names, rotation=60, ha="right")
    ax.set_ylabel("value / true value (1)")
    ax.set_title("Lumped dynamic parameters against the simulated robot's true values", fontsize=11, pad=26)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, frameon=False, fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    key = "\n".join(f"{sym}: {text}" for sym, text in PARAMETER_TEXT[kind_of(model)])
    fig.text(0.07, 0.02, key, fontsize=8.5, va="bottom", ha="left")
    fig.subplots_adjust(left=0.07, right=0.98, top=0.88, bottom=0.4)
    fig.savefig(path, dpi=110)
    plt.close(fig)
