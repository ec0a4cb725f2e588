"""What the hardware node says about itself: ``~/status`` (hence ``delta-ctl status`` and
``delta-ctl where``) and ``/diagnostics``.

The status is built from the newest cycle of the control loop (shared memory: no round trip)
and the loop process's counters (one request, answered in well under a millisecond; when the
loop does not answer within :data:`LOOP_ANSWER` s the last counters are used and ``loop`` says
so): the lifecycle and stop state, the joints (position, velocity, effort, setpoint, tracking
error), the platform position (forward kinematics of the measured joints), the limits acting
now, the drives, the time base and the loop's timing. Floats are rounded (:func:`rounded`).
"""
from __future__ import annotations

import json

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

from delta_dynamics.algorithms import UnreachableError, forward_kinematics
from delta_hardware.loop_client import LoopUnavailable
from delta_hardware.loop_link import FLAG_RECOVERY, FLAG_SATURATED, FLAG_SETPOINT, FLAG_STOPPED

#: s ``~/status`` waits for the loop process's counters before it answers with the last ones
LOOP_ANSWER = 0.04
#: decimals of the floats in the status (µrad, µm, µs in ms)
DECIMALS = 6


def rounded(value, decimals: int = DECIMALS):
    """``value`` (nested dicts/lists) with every float rounded to ``decimals`` decimals.

    >>> rounded({"a": 20.000000000000018, "b": [2.0000000000000004, 1e-9], "c": "x"})
    {'a': 20.0, 'b': [2.0, 0.0], 'c': 'x'}
    """
    if isinstance(value, float):
        return round(value, decimals) if np.isfinite(value) else None
    if isinstance(value, dict):
        return {k: rounded(v, decimals) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [rounded(v, decimals) for v in value]
    if isinstance(value, np.generic):
        return rounded(value.item(), decimals)
    return value


def active_limits(model, rec, units) -> list:
    """Plain sentences for the limits acting in the cycle ``rec``: efforts at their limit, the
    slow way back into the position limits, joints at a position limit."""
    out = []
    flags = int(rec["flags"])
    names = model.joint_names
    effort = np.array(model.robot.limits.effort)
    for i in range(3):
        if flags & (FLAG_SATURATED << i):
            out.append(f"{names[i]} {units['effort_name']} at its limit {effort[i]:g} {units['effort']}")
    if flags & FLAG_RECOVERY:
        out.append("a joint is outside its position limits: only slow motion back toward them is accepted")
    lo, hi, q = rec["lo"], rec["hi"], rec["position"]
    margin = 1e-3 * (hi - lo)
    for i in range(3):
        if q[i] <= lo[i] + margin[i]:
            out.append(f"{names[i]} at its lower position limit {lo[i]:g} {units['position']}")
        elif q[i] >= hi[i] - margin[i]:
            out.append(f"{names[i]} at its upper position limit {hi[i]:g} {units['position']}")
    return out


def node_status(node) -> dict:
    """The status of the hardware ``node`` (module docstring)."""
    client = node.loop
    lifecycle = node.lifecycle()
    st = {"node": node.get_fully_qualified_name(), "lifecycle": lifecycle, "active": node.active(),
          "stopped": node.failure, "joint_names": node.joint_names,
          "clock": "sim" if node.owns_time else "wall", "time": node.now(),
          "monitoring": "on" if node.get_parameter("monitoring").value else "off"}
    if client is None:
        st["drives"] = "closed"
        return rounded(st)
    loop, answered = dict(node.loop_status), False
    try:
        reply = client.request("status", timeout=LOOP_ANSWER)
        if reply["ok"]:
            loop, answered = reply["status"], True
            node.loop_status = loop
            st["loop"] = "answering"
    except LoopUnavailable as e:
        st["loop"] = f"not answering ({e}); counters from its last answer, stop state from the newest cycle"
    st["drives"] = loop.get("drives", "unknown")
    rec = client.latest()
    stopped = loop.get("stopped", "") if answered or rec is None else (
        (loop.get("stopped") or "stopped") if int(rec["flags"]) & FLAG_STOPPED else "")
    st["stopped"] = node.failure or client.failure or stopped
    if rec is not None:
        flags = int(rec["flags"])
        u = node.units
        q = rec["position"]
        st["position"] = q.tolist()
        st["velocity"] = rec["velocity"].tolist()
        st["effort"] = rec["effort"].tolist()
        st["units"] = {"position": u["position"], "velocity": u["velocity"], "effort": u["effort"]}
        if flags & FLAG_SETPOINT:
            st["setpoint"] = rec["setpoint"][0].tolist()
            st["tracking_error"] = (rec["setpoint"][0] - q).tolist()
        try:
            st["platform_position"] = forward_kinematics(node.model, np.array(q)).tolist()
        except (UnreachableError, ValueError):
            st["platform_position"] = None
        st["active_limits"] = active_limits(node.model, rec, u)
        if np.isfinite(rec["residual"]).all():           # the momentum observer (delta_hardware.loop_monitor)
            st["residual"] = rec["residual"].tolist()
            st["external_force"] = rec["external_force"].tolist()
        if np.isfinite(rec["payload"]).all():
            st["payload"] = rec["payload"].tolist()        # kg: estimate, standard deviation
    st.update({k: v for k, v in loop.items() if k not in ("stopped", "drives", "running", "drive_diagnostics")})
    return rounded(st)


def diagnostics(node, st: dict) -> DiagnosticArray:
    """``/diagnostics`` from the status ``st``: one status named after the node."""
    robot = node.model.robot.name if node.model is not None else str(node.get_parameter("robot").value)
    d = DiagnosticStatus(name=f"{node.get_name()}: control loop", hardware_id=robot)
    period = st.get("period") or 0.0
    if st["stopped"]:
        d.level, d.message = DiagnosticStatus.ERROR, f"stopped: {st['stopped']}"
    elif st["lifecycle"] != "active":
        d.level, d.message = DiagnosticStatus.WARN, f"{st['lifecycle']}: not controlling"
    elif st.get("feedforward_topic_silent"):
        d.level, d.message = DiagnosticStatus.WARN, "feedforward topic silent: using the in-process model"
    elif st["clock"] == "wall" and period and st.get("period_p99_ms", 0) > 1.2e3 * period:
        d.level, d.message = DiagnosticStatus.WARN, "loop period p99 above 1.2 x nominal"
    else:
        d.level, d.message = DiagnosticStatus.OK, f"drives {st['drives']}"
    values = {"control_rate_hz": f"{1.0 / period:g}" if period else ""}
    for k, v in st.items():
        values[k] = json.dumps(v) if isinstance(v, (list, dict)) else f"{v:.4g}" if isinstance(v, float) else str(v)
    values.update((node.loop_status or {}).get("drive_diagnostics", {}))
    d.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
    arr = DiagnosticArray()
    arr.header.stamp = node.get_clock().now().to_msg()
    arr.status = [d]
    return arr
