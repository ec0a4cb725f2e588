"""The hardware node: a lifecycle node that runs the control loop on the drives.

A thin adapter: the control (:class:`delta_hardware.control_loop.ControlLoop`), its threads
(:mod:`delta_hardware.loop_thread`), the trajectory intake
(:mod:`delta_hardware.ros.trajectory_intake`) and the drives (:mod:`delta_hardware.drives`)
are plain Python. Topics, services and parameters: ``docs/ros_interfaces.md``; the
parameters and their rules: :mod:`delta_hardware.ros.parameters`.

Time (``docs/conventions.md``): with the simulated drives and ``use_sim_time`` the node owns
simulated time: every control cycle advances the simulated robot by exactly one period and
publishes ``/clock``, paced to the wall clock by ``real_time_factor``; a busy or paused host
slows the simulation and changes no result. Real drives run on the steady clock, at
real-time priority where the process may (``thread_priority``, ``cpu_affinity``,
``lock_memory``); stamps are ROS time.

Lifecycle: ``configure`` checks the parameters, loads the robot file and opens the drives (a
bad value, a missing bus or drive leaves the node unconfigured with the reason logged);
``activate`` enables the drives, holds the current position and starts the loop thread;
``deactivate`` stops the loop and disables the drives; ``cleanup`` releases them. An
exception in the loop thread quick-stops the drives and takes the node through error
processing to unconfigured, with ERROR diagnostics naming it. A transition that is not
allowed from the current state is refused (the node keeps controlling). With ``autostart``
(default) the node walks itself to active at start-up. ``~/status``, ``~/events`` and
``/diagnostics`` work in every state.
"""
from __future__ import annotations

import json
import threading
import sys
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy._rclpy_pybind11 import RCLError
from rclpy.clock import Clock, ClockType
from rclpy.lifecycle import Node as LifecycleNode
from rclpy.lifecycle import State, TransitionCallbackReturn
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock as ClockMsg
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import SetBool, Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint, MultiDOFJointTrajectory

from delta_core.robot_file import RobotFileError, load_robot
from delta_core.ros.node_util import strip_prefix
from delta_dynamics.kinds import joint_units, model_for, same_kind_model
from delta_hardware.control_loop import ControlLoop, LoopConfig, gain_limits
from delta_hardware.drives import DriveError, make_drives
from delta_hardware.loop_thread import LoopThread, RealtimeSettings, SimTimeLoopThread
from delta_hardware.ros.messages import pick, to_sec, to_time
from delta_hardware.ros.parameters import PARAMETERS, check_parameters
from delta_hardware.ros.trajectory_intake import TrajectoryIntake
from delta_hardware.trajectory_plan import TrajectoryRejected, build_plan, match_joint_names

#: /joint_states kept for reliable subscribers that fall behind (10 s at 500 Hz): the
#: identification window and recorders lose no sample to a busy host
JOINT_STATES_DEPTH = 5000


class HardwareNode(LifecycleNode):
    def __init__(self, node_name: str = "delta_hardware", **kwargs):
        super().__init__(node_name, **kwargs)
        for name, prm in PARAMETERS.items():
            self.declare_parameter(name, prm.default, ParameterDescriptor(description=prm.meaning))
        self.loop: ControlLoop | None = None
        self.thread = None
        self.model = None
        self.drives = None
        self.intake: TrajectoryIntake | None = None
        self.owns_time = False
        self._sim_time = 0.0
        self._entities = []
        self.pub_clock = None                    # /clock, while the node owns simulated time
        self._action_server = None
        self._failure = ""                       # why the loop thread died (error processing)
        self._gains_max = None
        self.prefix = ""
        self.joint_names: list = []              # the arm joints as published (with the prefix)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        # always on, in every lifecycle state: events, diagnostics, status
        self.pub_events = self.create_publisher(String, "~/events", QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE))
        self.pub_diag = self.create_publisher(DiagnosticArray, "diagnostics", 10)
        self.create_service(Trigger, "~/status", self._on_status)
        # on the steady clock: diagnostics go on while simulated time is paused or stopped
        self.create_timer(1.0, self._publish_diagnostics, clock=Clock(clock_type=ClockType.STEADY_TIME))
        self._clock_sent = None                  # the last simulated time published on /clock
        self._clock_lock = threading.Lock()      # /clock from the loop and the hold timer, in order
        self._loop_failed = self.create_guard_condition(self._after_loop_error)

    # ------------------------------------------------------------------ parameters
    def params(self) -> dict:
        return {name: self.get_parameter(name).value for name in PARAMETERS}

    def _on_set_parameters(self, params):
        """Run-time changes of the control law; anything else needs a reconfigure."""
        if self.loop is None:
            return SetParametersResult(successful=True)
        changes = {}
        try:
            for p in params:
                if p.name not in PARAMETERS or not PARAMETERS[p.name].runtime:
                    if p.name in PARAMETERS and p.value != self.get_parameter(p.name).value:
                        return SetParametersResult(successful=False, reason=f"{p.name} can only change "
                                                   "while unconfigured (deactivate, cleanup, set, configure)")
                    continue
                if p.name == "pause_at":
                    check_parameters({**self.params(), "pause_at": p.value})
                    if not isinstance(self.thread, SimTimeLoopThread):
                        raise ValueError("pause_at needs the simulated robot in simulated time (use_sim_time)")
                    self.thread.pause_at = float(p.value) or None
                    continue
                if p.name == "feedforward":
                    check_parameters({**self.params(), "feedforward": p.value})
                    changes["feedforward"] = p.value
                elif p.name == "feedforward_robot":
                    changes["model"] = same_kind_model(p.value or self.get_parameter("robot").value, self.model,
                                                       "feedforward_robot")
                else:
                    check_parameters({**self.params(), p.name: p.value})
                    v = np.array([float(x) for x in p.value])
                    self._check_gain(p.name, v)
                    changes[p.name] = v
        except (RobotFileError, ValueError, TypeError) as e:
            return SetParametersResult(successful=False, reason=str(e))
        self.loop.reconfigure(**changes)
        if changes:
            self.event(f"control law updated: {', '.join(sorted(changes))}")
        return SetParametersResult(successful=True)

    def _check_gain(self, name, value):
        """Refuse gains the loop cannot run stably (:func:`~delta_hardware.control_loop.gain_limits`)."""
        bound = self._gains_max[0 if name == "kp" else 1]
        over = np.nonzero(np.asarray(value) > bound)[0]
        if len(over):
            i = int(over[0])
            raise ValueError(f"{name}[{i}] = {value[i]:g} is above {bound[i]:.4g}, the largest gain the "
                             f"{self._rate:g} Hz loop can run stably on this robot "
                             f"(docs/ros_interfaces.md, gain bounds)")

    # ------------------------------------------------------------------ lifecycle
    def _LifecycleNodeMixin__change_state(self, transition_id: int):
        """rclpy raises (and the executor dies) on a transition the state machine does not
        allow from the current state, e.g. ``configure`` while active: refuse it instead."""
        try:
            return super()._LifecycleNodeMixin__change_state(transition_id)
        except RCLError as e:
            state = self._state_machine.current_state[1]
            self.event(f"lifecycle transition {transition_id} not allowed from {state} ({e}); "
                       f"still {state}", warn=True)
            return TransitionCallbackReturn.FAILURE

    def on_configure(self, state: State) -> TransitionCallbackReturn:
        p = self.params()
        try:
            check_parameters(p)
            use_sim_time = bool(self.get_parameter("use_sim_time").value)
            robot = load_robot(p["robot"])
            self.model = model_for(robot)
            self.units = joint_units(self.model)
            rate = self._rate = float(p["control_rate"])
            self._gains_max = gain_limits(self.model, rate)
            for name in ("kp", "kd"):
                self._check_gain(name, np.array(p[name], dtype=float))
            self.drives = make_drives(p["hardware"], robot, p, rate=rate)     # the bus takes its own parameters
            # simulated drives (ours, or CiA 402 drives simulated on the bus: their physics
            # steps per SYNC) can run in simulated time; real drives run on the steady clock
            simulated = self.drives.simulated
            if use_sim_time and not simulated:
                raise ValueError("use_sim_time needs simulated drives (hardware sim, or delta-drive-sim on the "
                                 "bus): real drives run on the steady clock")
            max_stall = float(p["max_stall"]) or float(self.drives.max_stall or 0.25)
            cfg = LoopConfig(rate=rate, kp=tuple(p["kp"]), kd=tuple(p["kd"]),
                             command_timeout=float(p["command_timeout"]), feedforward=p["feedforward"],
                             max_stall=max_stall, feedforward_timeout=float(p["feedforward_timeout"]))
            self.loop = ControlLoop(self.model, self.drives, cfg)
            if p["feedforward_robot"]:
                self.loop.reconfigure(model=same_kind_model(p["feedforward_robot"], self.model, "feedforward_robot"))
        except (RobotFileError, DriveError, ValueError) as e:
            self.get_logger().error(f"configure failed, staying unconfigured: {e}")
            self.event(f"configure failed: {e}", warn=True)
            self._close_drives()
            self.loop = None
            return TransitionCallbackReturn.FAILURE
        self.owns_time = simulated and use_sim_time
        if self.owns_time:
            self.drives.lockstep()                # simulated drives on the bus: wait for their answers
        self.prefix = p["prefix"]
        self.joint_names = [self.prefix + n for n in self.model.joint_names]     # as published
        self.max_step = float(p["max_command_step"])
        self.publish_desired = bool(p["publish_desired_state"])
        self._failure = ""
        self._create_entities()
        clock = (f"simulated time (real_time_factor {p['real_time_factor']:g})" if self.owns_time
                 else f"steady clock, max_stall {cfg.max_stall * 1e3:.0f} ms")
        hw = f"{p['hardware']} ({self.drives.summary})" if self.drives.summary else p["hardware"]
        self.get_logger().info(f"configured: robot {robot.name} ({robot.source}), hardware {hw}, "
                               f"{cfg.rate:g} Hz, {clock}, feedforward {cfg.feedforward}")
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state: State) -> TransitionCallbackReturn:
        try:
            self.loop.activate()
        except DriveError as e:
            self.get_logger().error(f"activate failed: {e}")
            return TransitionCallbackReturn.FAILURE
        self._emit_notices()
        p = self.params()
        if self.owns_time:
            first = self._sim_time == 0.0
            self.thread = SimTimeLoopThread(self.loop, self._on_cycle, start=self._sim_time,
                                            real_time_factor=float(p["real_time_factor"]),
                                            paused=first and bool(p["start_paused"]))
            self.thread.pause_at = float(p["pause_at"]) or None
            self.thread.on_pause = lambda t: self.event(f"simulation paused at t = {t:.3f} s")
            with self._clock_lock:           # a simulation that starts paused has a time too
                if self._clock_sent is None:
                    self._clock_sent = self._sim_time
            if self.thread.paused:
                self.event("simulation paused at t = 0 (start_paused): resume with ~/pause false")
        else:
            rt = RealtimeSettings(thread_priority=int(p["thread_priority"]), cpu_affinity=int(p["cpu_affinity"]),
                                  lock_memory=bool(p["lock_memory"]))
            self.thread = LoopThread(self.loop, self._on_cycle, clock=time.time, realtime=rt)
        self.thread.on_error = self._on_loop_error
        self.thread.start()
        self.get_logger().info("active: holding position")
        return super().on_activate(state)

    def on_deactivate(self, state: State) -> TransitionCallbackReturn:
        self._stop_thread()
        try:
            self.loop.deactivate()
        except DriveError as e:
            self.get_logger().error(f"disabling the drives failed: {e}")
        if self._failure:
            return TransitionCallbackReturn.ERROR            # -> error processing -> on_error
        self.get_logger().info("inactive: drives disabled")
        return super().on_deactivate(state)

    def on_cleanup(self, state: State) -> TransitionCallbackReturn:
        self._destroy_entities()
        self._close_drives()
        self.loop = None
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state: State) -> TransitionCallbackReturn:
        self.release()
        self._destroy_entities()
        self._close_drives()
        return TransitionCallbackReturn.SUCCESS

    def on_error(self, state: State) -> TransitionCallbackReturn:
        """Error processing: stop everything, release the drives; the node ends unconfigured
        (``configure`` again once the cause is fixed)."""
        self._stop_thread()
        if self.drives is not None:
            try:
                self.drives.quick_stop(self._failure or "node error")
            except DriveError:
                pass
        self._destroy_entities()
        self._close_drives()
        self.get_logger().error(f"error processing done, unconfigured: {self._failure or 'node error'}")
        return TransitionCallbackReturn.SUCCESS

    def start(self) -> None:
        """Walk to active if ``autostart`` is set (as users of the simulated robot expect)."""
        if self.get_parameter("autostart").value:
            if self.trigger_configure() == TransitionCallbackReturn.SUCCESS:
                self.trigger_activate()

    def release(self) -> None:
        """Stop the loop and disable the drives (brakes hold) without lifecycle transitions,
        for a process that is shutting down."""
        self._stop_thread()
        if self.loop is not None:
            try:
                self.loop.deactivate()
            except DriveError:
                pass

    def destroy_node(self):
        self.release()
        self._destroy_entities()
        self._close_drives()
        super().destroy_node()

    # ------------------------------------------------------------------ loop errors
    def _on_loop_error(self, error: BaseException) -> None:
        """In the dying loop thread: quick-stop first (nobody writes the drives any more), then
        let the executor take the node through error processing."""
        self._failure = f"control loop error: {type(error).__name__}: {error}"
        try:
            self.loop.emergency_stop(self._failure)
        except Exception as e:  # noqa: BLE001 - the drives themselves may be what failed
            self._failure += f" (quick stop failed too: {e})"
        self._loop_failed.trigger()

    def _after_loop_error(self):
        self.event(self._failure, warn=True)
        self.get_logger().error(self._failure)
        if self._state_machine.current_state[1] == "active":
            self.trigger_deactivate()                    # returns ERROR -> on_error -> unconfigured

    # ------------------------------------------------------------------ entities
    def _create_entities(self):
        fast = QoSProfile(depth=10)
        # a deep history: a busy subscriber (identification, recording) catches up, loses nothing
        self.pub_js = self.create_publisher(JointState, "joint_states", QoSProfile(depth=JOINT_STATES_DEPTH))
        self.pub_desired = self.create_publisher(JointTrajectory, "delta/desired_state", fast)
        pubs = [self.pub_js, self.pub_desired]
        self.pub_clock = None
        if self.owns_time:
            # absolute; a namespaced stack remaps it to <ns>/clock for all its nodes (clock_remap)
            self.pub_clock = self.create_publisher(ClockMsg, "/clock", QoSProfile(depth=1))
            pubs.append(self.pub_clock)
        p = self.params()
        self.intake = TrajectoryIntake(lambda: self.model, self.submit_points, self._reject,
                                       lambda: (int(p["max_trajectory_points"]), float(p["max_trajectory_duration"])),
                                       prefix=self.prefix, now=self.now)
        subs = [
            self.create_subscription(JointTrajectory, "~/joint_trajectory",
                                     lambda raw: self._on_trajectory("joint trajectory", raw), 10, raw=True),
            self.create_subscription(MultiDOFJointTrajectory, "~/cartesian_trajectory",
                                     lambda raw: self._on_trajectory("cartesian trajectory", raw), 10, raw=True),
            self.create_subscription(JointState, "delta/joint_commands", self._on_joint_command, fast),
            self.create_subscription(JointState, "delta/feedforward", self._on_feedforward, fast),
        ]
        srvs = [self.create_service(Trigger, "~/emergency_stop", self._on_estop),
                self.create_service(Trigger, "~/reset", self._on_reset),
                self.create_service(SetBool, "~/pause", self._on_pause)]
        timers = []
        if self.pub_clock is not None:       # repeats /clock while simulated time stands still
            timers.append(self.create_timer(self.CLOCK_HOLD_PERIOD, self._hold_clock,
                                            clock=Clock(clock_type=ClockType.STEADY_TIME)))
        self._entities = ([(self.destroy_timer, e) for e in timers]
                          + [(self.destroy_publisher, e) for e in pubs]
                          + [(self.destroy_subscription, e) for e in subs]
                          + [(self.destroy_service, e) for e in srvs])
        self._create_action_server()

    def _create_action_server(self):
        try:
            from delta_hardware.ros.follow_joint_trajectory import FollowJointTrajectoryServer
        except ImportError:
            return                                             # control_msgs is not installed
        self._action_server = FollowJointTrajectoryServer(self)

    def _destroy_entities(self):
        if self._action_server is not None:
            self._action_server.destroy()
            self._action_server = None
        if self.intake is not None:
            self.intake.close()
            self.intake = None
        with self._clock_lock:
            self.pub_clock = None                          # the hold timer sees it gone
            self._clock_sent = None
        for destroy, entity in self._entities:
            destroy(entity)
        self._entities = []

    def _stop_thread(self):
        if self.thread is not None:
            if isinstance(self.thread, SimTimeLoopThread):
                self._sim_time = self.thread.time            # simulated time goes on from here
            self.thread.stop()
            self.thread = None

    def _close_drives(self):
        if self.drives is not None:
            try:
                self.drives.close()
            finally:
                self.drives = None

    # ------------------------------------------------------------------ the loop's output
    #: s (steady clock) between repeats of /clock while simulated time stands still
    CLOCK_HOLD_PERIOD = 0.1

    def _hold_clock(self):
        """While simulated time stands still (paused, or the loop stopped), publish the last
        /clock again: a node that joined late or lost that message (rclpy's clock subscription
        is best effort) would otherwise wait for ever for a time that has come, as Gazebo's
        paused clock keeps publishing too. Only the value already sent: never backwards."""
        if not getattr(self.thread, "paused", True):
            return
        with self._clock_lock:
            if self.pub_clock is not None and self._clock_sent is not None:
                self.pub_clock.publish(ClockMsg(clock=to_time(self._clock_sent)))

    def _on_cycle(self, out):
        if self.pub_clock is not None:
            with self._clock_lock:
                if self.pub_clock is not None:
                    self.pub_clock.publish(ClockMsg(clock=to_time(out.time)))
                    self._clock_sent = out.time
        names = self.joint_names
        if out.preview is not None and self.publish_desired:
            d = JointTrajectory()
            d.header.stamp = to_time(out.time + self.loop.period)
            d.joint_names = names
            pt = JointTrajectoryPoint()
            pt.positions = out.preview.q.tolist()
            pt.velocities = out.preview.qd.tolist()
            pt.accelerations = out.preview.qdd.tolist()
            d.points = [pt]
            self.pub_desired.publish(d)                 # first: the dynamics node is waiting
        js = JointState()
        js.header.stamp = to_time(out.time)
        js.name = names
        js.position = list(out.position)
        js.velocity = list(out.velocity)
        js.effort = list(out.effort)
        self.pub_js.publish(js)
        server = self._action_server
        if server is not None:
            server.on_cycle(out.time, out.position, out.velocity)
        for e in out.events:
            self.event(e, warn=not e.startswith(("trajectory finished", "back within", "feedforward topic back")))

    def event(self, text: str, warn: bool = False) -> None:
        if warn:     # rclpy wants one severity per call site
            self.get_logger().warning(text)
        else:
            self.get_logger().info(text)
        self.pub_events.publish(String(data=text))

    def _emit_notices(self):
        while self.loop is not None and self.loop.notices:
            self.event(self.loop.notices.pop(0), warn=True)

    # ------------------------------------------------------------------ commands
    def _active(self) -> bool:
        return self.thread is not None and self.thread.running

    def now(self) -> float:
        """The node's time in seconds: simulated time when it owns it, else ROS (wall) time."""
        if self.owns_time:
            return self.thread.time if isinstance(self.thread, SimTimeLoopThread) else self._sim_time
        return time.time()

    def submit_points(self, source, start, times, q, qd, qdd):
        """Build, validate and submit a plan from joint-space points (times relative to
        ``start``, 0: now); the plan. Raises TrajectoryRejected / DriveError with the reason."""
        if not self._active():
            raise TrajectoryRejected("the hardware node is not active")
        now = self.now()
        plan = build_plan(self.model, now, self.loop.current_setpoint(), start or now, times, q, qd, qdd,
                          limits=self.loop.limits())
        self.loop.submit_plan(plan)
        self.event(f"{source} accepted: {len(times)} points, {plan.end_time - now:.3f} s, "
                   f"from t = {plan.start_time:.3f} s")
        return plan

    def _reject(self, source, reason):
        self.event(f"{source} rejected: {reason}", warn=True)

    def _on_trajectory(self, source, raw):
        if not self._active():
            self._reject(source, "the hardware node is not active")
        elif self.intake is not None:
            self.intake.put(source, raw)

    def _on_joint_command(self, msg: JointState):
        try:
            if not self._active():
                raise TrajectoryRejected("the hardware node is not active")
            kind, order = match_joint_names(self.model, strip_prefix(self.prefix, msg.name))
            if kind != "joint":
                raise TrajectoryRejected(f"joint commands must name the actuated joints "
                                         f"{self.joint_names}")
            q = pick(msg.position, order, "position", msg.name)
            tau = pick(msg.effort, order, "effort", msg.name)
            if q is None and tau is None:
                raise TrajectoryRejected("a joint command needs position or effort")
            for what, v in (("position", q), ("effort", tau)):
                if v is not None and not np.isfinite(v).all():
                    raise TrajectoryRejected(f"{what} must be finite numbers, got {v}")
            if q is not None:
                lo, hi, _ = self.loop.limits()
                for i, v in enumerate(q):
                    if not lo[i] <= v <= hi[i]:
                        raise TrajectoryRejected(f"{self.model.joint_names[i]} position {v:.4f} {self.units['position']} "
                                                 f"is outside its limits [{lo[i]:g}, {hi[i]:g}]")
                step = np.abs(np.array(q) - self.loop.current_setpoint().q).max()
                if step > self.max_step:
                    raise TrajectoryRejected(f"too far: the command is {step:.3f} {self.units['position']} from the "
                                             f"setpoint (max_command_step {self.max_step:g} {self.units['position']})")
            if tau is not None:
                lim = np.array(self.model.robot.limits.effort)
                if (np.abs(tau) > lim).any():
                    what = "torque" if self.units["effort"] == "N m" else "force"
                    raise TrajectoryRejected(f"effort {tau} exceeds the {what} limits {lim.tolist()} {self.units['effort']}")
            self.loop.submit_command(self.now(), q=q, tau=tau)
        except (TrajectoryRejected, DriveError, ValueError) as e:
            self.event(f"joint command rejected: {e}", warn=True)

    def _on_feedforward(self, msg: JointState):
        if self.loop is None:
            return
        try:
            kind, order = match_joint_names(self.model, strip_prefix(self.prefix, msg.name))
            tau = pick(msg.effort, order, "effort", msg.name)
        except (TrajectoryRejected, ValueError):
            return
        if tau is not None and kind == "joint" and np.isfinite(tau).all():
            self.loop.set_feedforward(to_sec(msg.header.stamp), tau, received=self.now())

    def _on_estop(self, request, response):
        if self.loop is None:
            response.success, response.message = False, "not configured"
            return response
        self.loop.emergency_stop("emergency stop service")
        self.event("emergency stop: every axis quick-stopped, holding", warn=True)
        response.success, response.message = True, "stopped"
        return response

    def _on_pause(self, request, response):
        """Pause (true) or resume (false) simulated time."""
        if not isinstance(self.thread, SimTimeLoopThread):
            response.success = False
            response.message = "only the simulated robot in simulated time (use_sim_time) can pause"
            return response
        if request.data:
            self.thread.pause()
        else:
            self.thread.resume()
        response.success = True
        response.message = f"{'paused' if request.data else 'running'} at t = {self.thread.time:.3f} s"
        return response

    def _on_reset(self, request, response):
        if self.loop is None or not self._active():
            response.success, response.message = False, "the hardware node is not active"
            return response
        try:
            self.loop.reset()
        except DriveError as e:
            response.success, response.message = False, f"reset failed: {e}"
            return response
        self.event("reset: holding position")
        self._emit_notices()
        response.success, response.message = True, "reset"
        return response

    # ------------------------------------------------------------------ status and diagnostics
    def status(self) -> dict:
        """What a user asks for first: lifecycle state, whether the robot is stopped and why,
        the drives, the time base and the loop's counters."""
        lifecycle = self._state_machine.current_state[1]
        loop = self.loop
        st = {"node": self.get_fully_qualified_name(), "joint_names": self.joint_names,
              "lifecycle": lifecycle, "active": self._active(),
              "stopped": (loop.stopped_reason if loop is not None else "") or self._failure,
              "drives": self.drives.state.value if self.drives is not None else "closed",
              "time": self.now(), "clock": "sim" if self.owns_time else "wall"}
        if loop is not None:
            st.update({"period": loop.period, "late_cycles": loop.late.total, "feedforward": loop.cfg.feedforward,
                       "feedforward_topic_silent": loop.ff_silent, **loop.stats.summary()})
        if isinstance(self.thread, SimTimeLoopThread):
            st["pacing_restarts"] = self.thread.restarts
            st["paused"] = self.thread.paused
        return st

    def _on_status(self, request, response):
        st = self.status()
        response.success = not st["stopped"] and st["active"]
        response.message = json.dumps(st)
        return response

    def _publish_diagnostics(self):
        s = self.status()
        robot = self.model.robot.name if self.model is not None else str(self.get_parameter("robot").value)
        st = DiagnosticStatus(name=f"{self.get_name()}: control loop", hardware_id=robot)
        if s["stopped"]:
            st.level, st.message = DiagnosticStatus.ERROR, f"stopped: {s['stopped']}"
        elif s["lifecycle"] != "active":
            st.level, st.message = DiagnosticStatus.WARN, f"{s['lifecycle']}: not controlling"
        elif s.get("feedforward_topic_silent"):
            st.level, st.message = DiagnosticStatus.WARN, "feedforward topic silent: using the in-process model"
        elif not self.owns_time and s.get("period_p99_ms", 0) > 1.2e3 * self.loop.period:
            st.level, st.message = DiagnosticStatus.WARN, "loop period p99 above 1.2 x nominal"
        else:
            st.level, st.message = DiagnosticStatus.OK, f"drives {s['drives']}"
        values = {"control_rate_hz": f"{self.loop.cfg.rate:g}" if self.loop is not None else "",
                  **{k: json.dumps(v) if isinstance(v, list) else f"{v:.4g}" if isinstance(v, float) else str(v)
                     for k, v in s.items()}}
        if isinstance(self.thread, SimTimeLoopThread):
            values["real_time_factor_achieved"] = f"{self.thread.achieved_factor():.3f}"
        if self.drives is not None and hasattr(self.drives, "diagnostics"):
            values.update(self.drives.diagnostics())      # per axis: state, heartbeat age, late frames
        st.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
        arr = DiagnosticArray()
        arr.header.stamp = self.get_clock().now().to_msg()
        arr.status = [st]
        self.pub_diag.publish(arr)


def _started() -> "HardwareNode":
    import gc
    node = HardwareNode()
    node.start()
    # the objects of the start-up (modules, the model, the drives) leave the collector's view:
    # a full collection then walks only what the loop and the callbacks allocate since
    gc.collect()
    gc.freeze()
    return node


def main(args=None) -> int:
    """Spin the node on a single-threaded executor: its callbacks are short (the loop and the
    trajectory checks have threads of their own), and rclpy's multi-threaded executor would
    add milliseconds of latency to the 500 Hz feedforward topic."""
    from delta_core.ros.node_util import run
    return run(_started, "delta_hardware", args)


if __name__ == "__main__":
    sys.exit(main())
