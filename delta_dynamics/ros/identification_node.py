"""The identification node ``delta_identification``: refits the dynamic parameters from the
robot's own ``/joint_states`` while it runs.

* A sliding window (``window`` s) of position, velocity and effort of the arm joints
  (matched by name; messages without all three arms or without effort are skipped).
* Online: recursive least squares with forgetting (``forgetting_factor``) on the explicit
  model's 14 lumped parameters (Kim et al. 2022 compare it in their Sec. 4), updated at
  ``rls_rate`` Hz from a local quadratic fit over the last ``rls_span`` s (position,
  velocity, acceleration at its middle).
* Batch: on ``~/refit`` (std_srvs/Trigger) or every ``refit_period`` s (0: on request only),
  the window (the last ``window`` s, or the ``window`` s up to ROS time ``window_end`` when
  it is set: a recorded run, e.g. an excitation trajectory, exactly) is split in time, the first part fitted (``method``, default bounded least
  squares, :func:`delta_dynamics.identification.pipeline.identify_data`; ``stribeck``: the
  Stribeck break-away efforts too), the last
  ``validation_fraction`` used for validation. If the validation fitness (Kim et al. eq. 41)
  of every joint reaches ``fitness_threshold``, the robot file is written atomically to
  ``output`` and pushed to the nodes in ``push_to`` (``node:parameter`` pairs, default
  ``delta_dynamics:robot`` and ``delta_hardware:feedforward_robot``) through their
  ``set_parameters`` services. Otherwise nothing is applied and the service says why.

Published: ``~/estimate`` (std_msgs/String, JSON: source (rls | batch method), names,
values, std (batch), fitness (validation, per joint), samples, applied (bool), output) and
``/diagnostics`` (one status ``delta_identification`` with the same as key/values).
"""
from __future__ import annotations

import json
import math
import threading
import time
from pathlib import Path

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rcl_interfaces.srv import SetParameters
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import Trigger

from delta_core.paths import PathError, check_output_file
from delta_core.rates import CONTROL_RATE_MAX
from delta_core.robot_file import RobotFileError
from delta_core.ros.node_util import DEFAULT_ROBOT, DropLog, add_prefix, declare_prefix, run
from delta_dynamics.algorithms import UnreachableError
from delta_dynamics.algorithms import parameter_names, regressor_joint
from delta_dynamics.data_files.joint_data import JointData
from delta_dynamics.identification import IdentificationError
from delta_dynamics.identification.estimators import RecursiveLeastSquares
from delta_dynamics.identification.pipeline import Options, identify_data
from delta_dynamics.identification.preprocess import Preprocessing
from delta_dynamics.identification.robot_update import identified_robot, write_robot_file
from delta_dynamics.ros.robot_param import load_model

NODE_NAME = "delta_identification"
#: s: the longest window (at the highest control rate, delta_core.rates.CONTROL_RATE_MAX = 2 kHz,
#: 1.2 million rows, 106 MB of buffer; longer runs: delta-identify on a bag)
MAX_WINDOW = 600.0


def window_qos(window: float) -> QoSProfile:
    """Reliable, as deep as the window: a process the host starves for a while (it takes each
    message in Python) finds the samples it has not taken yet queued, not dropped, when it
    catches up (a queue of 5000 lost a few hundred of a 16 s window on a saturated host)."""
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=int(window * CONTROL_RATE_MAX) + 1000,
                      reliability=ReliabilityPolicy.RELIABLE)


PARAMETERS = {
    "robot": DEFAULT_ROBOT,           # the nominal robot file (prior and template of the output)
    "window": 20.0,                   # s of /joint_states kept
    "window_end": 0.0,                # ROS time (s) the refit window ends at (0: the newest sample)
    "forgetting_factor": 0.999,       # RLS, per update
    "rls_rate": 50.0,                 # Hz of RLS updates (0: off)
    "rls_span": 0.06,                 # s of samples in the local fit behind each RLS update
    "refit_period": 0.0,              # s between automatic batch refits (0: on request only)
    "method": "bounded",              # ols | wls | bounded | tsvd | dls
    "stribeck": False,                # also fit the Stribeck break-away efforts (static_1..3)
    "validation_fraction": 0.25,      # last part of the window kept for validation
    "fitness_threshold": 0.95,        # validation fitness every joint must reach to apply
    "min_samples": 2000,
    "cutoff": 20.0,                   # Hz, low-pass of the differentiation
    "output": "out/identified.yaml",
    "push_to": ["delta_dynamics:robot", "delta_hardware:feedforward_robot"],
}


METHODS = ("ols", "wls", "bounded", "tsvd", "dls")


def check_parameters(p: dict) -> None:
    """Raise ValueError naming the first parameter whose value is unusable: a number that is
    not finite or outside its range, an unknown method, an ``output`` that cannot be written (a
    directory, a FIFO, a device, a read-only file or folder: :func:`check_output_file`, which
    only looks at the path), a ``push_to`` entry that is not ``node:parameter``."""
    for name, v in p.items():
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError(f"{NODE_NAME} parameter {name} must be a finite number, got {v!r}")
    rules = [
        ("window", p["window"] > 0, "must be > 0 s"),
        ("window", p["window"] <= MAX_WINDOW, f"must be at most {MAX_WINDOW:g} s (the node keeps it in memory)"),
        ("window_end", p["window_end"] >= 0, "must be >= 0 s (0: the newest sample)"),
        ("forgetting_factor", 0 < p["forgetting_factor"] <= 1, "must be in (0, 1]"),
        ("rls_rate", p["rls_rate"] >= 0, "must be >= 0 Hz (0: off)"),
        ("rls_span", p["rls_span"] > 0, "must be > 0 s"),
        ("refit_period", p["refit_period"] >= 0, "must be >= 0 s (0: on request only)"),
        ("method", p["method"] in METHODS, f"must be one of {', '.join(METHODS)}"),
        ("validation_fraction", 0 < p["validation_fraction"] < 1, "must be in (0, 1)"),
        ("fitness_threshold", 0 < p["fitness_threshold"] <= 1, "must be in (0, 1]"),
        ("min_samples", p["min_samples"] >= 10, "must be >= 10"),
        ("cutoff", p["cutoff"] > 0, "must be > 0 Hz"),
        ("output", bool(str(p["output"]).strip()), "must be a file path"),
        ("rls_rate", p["rls_rate"] <= 1000, "must be at most 1000 Hz"),
        ("push_to", all(":" in t and all(t.partition(":")[::2]) for t in p["push_to"]),
         "entries must be node:parameter"),
    ]
    for name, ok, rule in rules:
        if not ok:
            raise ValueError(f"{NODE_NAME} parameter {name} {rule}, got {p[name]!r}")
    try:
        check_output_file(str(p["output"]), "the identified robot file")
    except PathError as e:
        raise ValueError(f"{NODE_NAME} parameter output: {e}") from None


def missing_samples(t: np.ndarray) -> tuple[int, float, float]:
    """Samples missing from evenly spaced stamps ``t`` (lost in delivery): (count, the largest
    gap in s, where it starts). The spacing is the median step; a step over 1.5 of it is a gap.

    >>> missing_samples(np.array([0.0, 0.002, 0.004, 0.010, 0.012]))
    (2, 0.006, 0.004)
    """
    if len(t) < 3:
        return 0, 0.0, 0.0
    d = np.diff(t)
    dt = float(np.median(d))
    gaps = d > 1.5 * dt
    if dt <= 0 or not gaps.any():
        return 0, 0.0, 0.0
    k = int(np.argmax(d))
    return int(np.sum(np.round(d[gaps] / dt) - 1)), round(float(d[k]), 9), float(t[k])


class IdentificationNode(Node):
    """The identification node (module docstring): buffers ``/joint_states``, refits the dynamic
    parameters on request and writes the identified robot file."""
    def __init__(self, **kwargs):
        super().__init__(NODE_NAME, **kwargs)
        for name, default in PARAMETERS.items():
            self.declare_parameter(name, default, ParameterDescriptor(description=name))
        p = self.params()
        check_parameters(p)
        self.model = load_model(p["robot"])
        self.names = add_prefix(declare_prefix(self), self.model.joint_names)   # as on joint_states
        self._lock = threading.Lock()
        # ring buffer, one row per message: t, q(3), qd(3), tau(3), has_qd. Plain numpy rows,
        # not per-message Python objects: a full garbage collection over hundreds of
        # thousands of small lists would pause every thread of the process (the control loop
        # too when composed in delta-bringup).
        self._rows = np.zeros((int(p["window"] * CONTROL_RATE_MAX) + 1000, 11))
        self._kept = float(p["window"])          # s the buffer and the queue are sized for
        self._n = 0                              # rows written in total
        self._drops = DropLog(self.get_logger())
        nominal = self.model.params.as_vector()
        # prior: the robot file's values, with a standard deviation as large as each value
        self.parameter_names = list(parameter_names(self.model))
        self.rls = RecursiveLeastSquares(len(self.parameter_names), forgetting=p["forgetting_factor"],
                                         P0=np.maximum(np.abs(nominal), 1e-3) ** 2, theta0=nominal)
        self.last_result = None
        self._refit_lock = threading.Lock()
        self.pub = self.create_publisher(String, "~/estimate", 10)
        self.pub_diag = self.create_publisher(DiagnosticArray, "diagnostics", 10)
        self.create_subscription(JointState, "joint_states", self._on_joint_states, window_qos(p["window"]))
        slow = MutuallyExclusiveCallbackGroup()
        self.create_service(Trigger, "~/refit", self._on_refit, callback_group=slow)
        self._push_group = ReentrantCallbackGroup()
        if p["rls_rate"] > 0:
            self.create_timer(1.0 / p["rls_rate"], self._rls_step)
        if p["refit_period"] > 0:
            self.create_timer(p["refit_period"], self._periodic_refit, callback_group=slow)
        self.create_timer(1.0, self._publish_diagnostics)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self.get_logger().info(f"identifying {self.model.robot.name}: window {p['window']:g} s, "
                               f"method {p['method']}, threshold {p['fitness_threshold']:g}")

    def params(self) -> dict:
        """The node's parameters, {name: value}."""
        return {n: self.get_parameter(n).value for n in PARAMETERS}

    def _on_set_parameters(self, params) -> SetParametersResult:
        """Check a change when it is set (not at the next refit): every rule of
        :func:`check_parameters` on the values it would leave, a ``window`` no longer than the
        buffer sized at start, and ``robot`` only at start (the model and the RLS prior are
        built from it). Only looks at paths, never opens one: the executor never blocks."""
        new = {p.name: p.value for p in params if p.name in PARAMETERS}
        if not new:
            return SetParametersResult(successful=True)
        try:
            if "robot" in new and new["robot"] != self.get_parameter("robot").value:
                raise ValueError(f"{NODE_NAME} parameter robot is read at start only (the model and the "
                                 f"RLS prior are built from it): restart the node with robot:={new['robot']}")
            check_parameters({**self.params(), **new})
            if "window" in new and new["window"] > self._kept:
                raise ValueError(f"{NODE_NAME} parameter window {new['window']:g} s is longer than the "
                                 f"{self._kept:g} s this node keeps (sized at start: restart it with the longer "
                                 f"window)")
        except (ValueError, TypeError) as e:
            return SetParametersResult(successful=False, reason=str(e))
        return SetParametersResult(successful=True)

    # ------------------------------------------------------------------ data in
    def _on_joint_states(self, msg: JointState):
        names = list(msg.name)
        try:
            idx = [names.index(n) for n in self.names]
        except ValueError:
            return                                          # not this robot's arm joints
        if len(msg.effort) != len(names) or len(msg.position) != len(names):
            self._drops.warn("effort", "/joint_states without effort for every joint: skipped "
                                       "(identification needs the joint torques)")
            return
        q = [msg.position[k] for k in idx]
        tau = [msg.effort[k] for k in idx]
        qd = [msg.velocity[k] for k in idx] if len(msg.velocity) == len(names) else None
        vals = q + tau + (qd or [])
        if not all(math.isfinite(v) for v in vals):
            self._drops.warn("nan", f"/joint_states with non-finite values skipped: {vals}")
            return
        t = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        if t == 0.0:                                        # unstamped: the time of arrival (ROS time)
            t = self.get_clock().now().nanoseconds * 1e-9
        with self._lock:
            size = len(self._rows)
            if self._n and t <= self._rows[(self._n - 1) % size, 0]:
                return                                      # duplicate or out of order
            row = self._rows[self._n % size]
            row[0] = t
            row[1:4] = q
            row[4:7] = qd if qd is not None else 0.0
            row[7:10] = tau
            row[10] = qd is not None
            self._n += 1

    def _recent(self, seconds: float, end: float = 0.0) -> np.ndarray:
        """The rows of the ``seconds`` s up to ROS time ``end`` (0: the newest sample), oldest
        first (a copy)."""
        with self._lock:
            n, size = self._n, len(self._rows)
            if n == 0:
                return self._rows[:0].copy()
            k = min(n, size)
            idx = np.arange(n - k, n) % size
            rows = self._rows[idx]
        end = end or rows[-1, 0]
        return rows[(rows[:, 0] >= end - seconds) & (rows[:, 0] <= end)]

    #: s (wall) a refit waits for the samples up to ``window_end`` to arrive (a busy host delivers late)
    WAIT_FOR_WINDOW = 60.0

    def _newest(self) -> float:
        with self._lock:
            return self._rows[(self._n - 1) % len(self._rows), 0] if self._n else -math.inf

    def window(self) -> JointData:
        """The joint data of the configured window (waiting a little for ``window_end`` to arrive);
        IdentificationError without data."""
        end = self.get_parameter("window_end").value
        deadline = time.monotonic() + self.WAIT_FOR_WINDOW
        while end and self._newest() < end and time.monotonic() < deadline:
            time.sleep(0.05)
        rows = self._recent(self.get_parameter("window").value, end)
        if not len(rows):
            raise IdentificationError("no /joint_states received yet")
        qd = rows[:, 4:7] if rows[:, 10].all() else None
        return JointData(t=rows[:, 0].copy(), q=rows[:, 1:4].copy(), tau=rows[:, 7:10].copy(), qd=qd,
                         source="/joint_states window", unit="message")

    # ------------------------------------------------------------------ online RLS
    def _rls_step(self):
        span = self.get_parameter("rls_span").value
        rows = self._recent(span)
        if len(rows) < 8:
            return
        t = rows[:, 0]
        mid = len(t) // 2
        coef = np.polyfit(t - t[mid], rows[:, 1:4], 2)     # local quadratic per joint
        qm, qdm, qddm = coef[2], coef[1], 2.0 * coef[0]
        tau = rows[mid, 7:10]
        try:
            Y = regressor_joint(self.model, qm, qdm, qddm)
        except (UnreachableError, ValueError):
            return
        self.rls.update(Y, tau)

    # ------------------------------------------------------------------ batch refit
    def _periodic_refit(self):
        ok, text = self.refit()
        self._log_refit(ok, f"periodic refit: {text}")

    def _log_refit(self, ok, text):
        if ok:
            self.get_logger().info(text)
        else:
            self.get_logger().warning(text)

    def _on_refit(self, request, response):
        response.success, response.message = self.refit()
        self._log_refit(response.success, response.message)
        return response

    def refit(self) -> tuple[bool, str]:
        """Fit the window, validate on its last part, apply if good enough: (applied, message)."""
        if not self._refit_lock.acquire(blocking=False):
            return False, "a refit is already running"
        try:
            return self._refit()
        finally:
            self._refit_lock.release()

    def _refit(self):
        p = self.params()
        lost = ""
        try:
            check_parameters(p)
            if p["window"] > self._kept:
                raise ValueError(f"window {p['window']:g} s is longer than the {self._kept:g} s this node keeps "
                                 f"(sized at start: restart it with the longer window)")
            data = self.window()
            n = len(data)
            missing = missing_samples(data.t)
            if missing[0]:       # lost in delivery: said in every answer, the fit saw another window
                lost = (f" ({missing[0]} missing: the largest gap {missing[1]:.3f} s at "
                        f"t = {missing[2]:.3f} s)")
            if n < p["min_samples"]:
                raise IdentificationError(f"only {n} samples{lost} in the window, need {p['min_samples']} "
                                          f"(move the robot, e.g. on an excitation trajectory)")
            k = int(round(n * (1.0 - p["validation_fraction"])))
            part = lambda a, s: None if a is None else a[s]
            fit = JointData(data.t[:k], data.q[:k], data.tau[:k], part(data.qd, slice(None, k)),
                            source=data.source, unit=data.unit)
            val = JointData(data.t[k:], data.q[k:], data.tau[k:], part(data.qd, slice(k, None)),
                            source=data.source, unit=data.unit, first=k)
            t0 = time.perf_counter()
            res = identify_data(self.model, fit, p["method"], Options(stribeck=bool(p["stribeck"])),
                                Preprocessing(cutoff=p["cutoff"]), validation=val)
            seconds = time.perf_counter() - t0
        except (IdentificationError, UnreachableError, ValueError) as e:
            return False, f"refit failed: {e}" + (lost if lost and lost not in str(e) else "")
        fitness = [float(v) for v in res.validation["fitness"]] if res.validation else []
        applied = bool(fitness) and min(fitness) >= p["fitness_threshold"]
        out = str(Path(p["output"]).resolve())
        self.last_result = {"source": res.method, "names": list(res.names),
                            "values": [float(v) for v in res.values],
                            "std": [float(v) for v in res.estimate.std], "fitness": fitness,
                            "samples": n, "missing": missing[0], "seconds": seconds, "applied": applied,
                            "output": out if applied else ""}
        self.pub.publish(String(data=json.dumps(self.last_result)))
        fit_txt = ", ".join(f"{v:.4f}" for v in fitness)
        if not applied:
            return False, (f"validation fitness [{fit_txt}] from {n} samples{lost} below the threshold "
                           f"{p['fitness_threshold']:g}: parameters not applied")
        try:
            robot = identified_robot(self.model.robot, res, self.model, "/joint_states (online window)",
                                     "/joint_states (online window, last part)")
            write_robot_file(out, robot, header="identified online by delta_identification")
        except (RobotFileError, OSError, IdentificationError) as e:
            return False, f"could not write {out}: {e}"
        pushed = self._push(out, p["push_to"])
        return True, (f"validation fitness [{fit_txt}] from {n} samples{lost} in {seconds:.2f} s; "
                      f"wrote {out}; pushed to {', '.join(pushed) or 'no node'}")

    def _push(self, path, targets):
        done = []
        for target in targets:
            node, _, param = target.partition(":")
            # relative: the node of that name in this node's namespace ("/name" for an absolute one)
            client = self.create_client(SetParameters, f"{node}/set_parameters", callback_group=self._push_group)
            try:
                if not client.wait_for_service(timeout_sec=1.0):
                    self.get_logger().warning(f"cannot push parameters: {node} is not running")
                    continue
                req = SetParameters.Request(parameters=[Parameter(param, value=path).to_parameter_msg()])
                future = client.call_async(req)
                deadline = time.monotonic() + 5.0
                while not future.done() and time.monotonic() < deadline:
                    time.sleep(0.01)
                result = future.result().results[0] if future.done() else None
                if result is not None and result.successful:
                    done.append(f"{node}.{param}")
                else:
                    why = result.reason if result is not None else "no answer"
                    self.get_logger().warning(f"{node} refused {param}={path}: {why}")
            finally:
                self.destroy_client(client)
        return done

    # ------------------------------------------------------------------ outputs
    def _publish_diagnostics(self):
        st = DiagnosticStatus(name=NODE_NAME, hardware_id=self.model.robot.name)
        n = len(self._recent(self.get_parameter("window").value))
        values = {"samples_in_window": str(n), "rls_updates": str(self.rls.count)}
        values.update({f"rls.{k}": f"{v:.6g}" for k, v in zip(self.parameter_names, self.rls.theta)})
        r = self.last_result
        if r:
            values.update({"last_refit_method": r["source"], "last_refit_applied": str(r["applied"]),
                           "last_refit_fitness": json.dumps([round(f, 5) for f in r["fitness"]])})
        st.level = DiagnosticStatus.OK
        st.message = "refit applied" if r and r["applied"] else "collecting"
        st.values = [KeyValue(key=k, value=v) for k, v in values.items()]
        arr = DiagnosticArray(status=[st])
        arr.header.stamp = self.get_clock().now().to_msg()
        self.pub_diag.publish(arr)
        self.pub.publish(String(data=json.dumps({"source": "rls", "names": self.parameter_names,
                                                 "values": [float(v) for v in self.rls.theta],
                                                 "samples": n, "updates": self.rls.count})))


def main(args=None) -> int:
    """Run the identification node until shut down; the exit status."""
    return run(IdentificationNode, NODE_NAME, args, multithreaded=True)


if __name__ == "__main__":
    raise SystemExit(main())
