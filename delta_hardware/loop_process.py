"""The control loop in a process of its own: the drives, :class:`~delta_hardware.control_loop.ControlLoop`
and its loop thread, and nothing of ROS.

The hardware node (:mod:`delta_hardware.loop_client`) starts ``python -m delta_hardware.loop_process``
with the file descriptors of the link (:mod:`delta_hardware.loop_link`) and sends it a
:class:`~delta_hardware.loop_config.LoopSpec`. No Python work of the ROS process (rclpy's
``publish`` holding the GIL while the middleware sleeps, a parameter callback parsing a file,
the garbage collector) can then stall the loop: it has a GIL of its own.

Threads of this process: the **loop thread** (:mod:`delta_hardware.loop_thread`; on the wall
clock at real-time priority when allowed), the **request thread** (small requests from the node:
applied at once, the emergency stop included, also while simulated time is paused), the **plan
thread** (trajectory plans from the bulk socket) and the **main thread** (the slow steps:
enable, disable, reset, which wait on the drives). With ``thread_priority`` > 0 on the wall
clock every thread of the process runs under SCHED_FIFO (the others one level below the loop):
no thread that holds the GIL can be preempted by the host's ordinary processes while the loop
waits for it. Before the loop starts the start-up objects are frozen out of the garbage
collector's view (``gc.freeze``).

The drives are disabled (``disable()``, then ``close()``) at every exit of this process: the
node's cleanup, SIGINT or SIGTERM, an exception anywhere, and the node's death (the link's
sockets close with it: the request thread sees the end at once). A stop inside the loop (a
fault, a limit, a stall, an exception in a cycle) quick-stops the drives first.
"""
from __future__ import annotations

import argparse
import gc
import os
import queue
import signal
import socket
import sys
import threading
import time

import numpy as np

from delta_core.robot_file import RobotFileError
from delta_dynamics.kinds import model_for
from delta_hardware.control_loop import ControlLoop
from delta_hardware.drives import DriveError, make_drives
from delta_hardware.loop_link import (FLAG_ACTIVATED, FLAG_PREVIEW, FLAG_RECOVERY, FLAG_SATURATED, FLAG_SETPOINT,
                                      FLAG_STOPPED, SharedBlock, recv_message, ring_doorbell, send_message)
from delta_hardware.loop_thread import LoopThread, SimTimeLoopThread

#: events that are not warnings (everything else a cycle reports is)
INFO_EVENTS = ("trajectory finished", "back within", "feedforward topic back", "simulation paused",
               "control law updated", "reset: holding")
#: events that are errors (a collision's latched stop)
ERROR_EVENTS = ("collision on",)
#: s the request thread waits for the ring to have room in simulated time before it checks for a stop
BACKPRESSURE_POLL = 0.001
NAN3 = np.full((3, 3), np.nan)


class LoopProcess:
    """One control-loop process (module docstring): built from the spec, then serving requests."""

    def __init__(self, control: socket.socket, bulk: socket.socket, block: SharedBlock, doorbell: int):
        self.control, self.bulk, self.block, self.doorbell = control, bulk, block, doorbell
        self.send_lock = threading.Lock()
        self.event_lock = threading.Lock()
        self.slow: queue.Queue = queue.Queue()
        self.stopping = threading.Event()
        self.why = ""                                # why the process ends
        self.spec = self.drives = self.loop = self.thread = None
        self.sim = False
        self.tick = 0
        self.start_time = 0.0
        self.failure = ""

    # ------------------------------------------------------------------ replies and events
    def reply(self, seq, ok=True, message="", **data) -> None:
        """Answer request ``seq`` (a negative ``seq``, fire and forget, is answered only when refused)."""
        if ok and isinstance(seq, int) and seq < 0:
            return
        try:
            send_message(self.control, {"re": seq, "ok": ok, "message": message, **data}, self.send_lock)
        except OSError:
            self.stop("the node closed the link")

    def event(self, text: str, level: int | None = None) -> None:
        """An event for the node (logged and published on ``~/events``); never blocks."""
        if level is None:
            level = 0 if text.startswith(INFO_EVENTS) else 2 if text.startswith(ERROR_EVENTS) else 1
        with self.event_lock:
            h = self.block.header
            k = int(h["event_head"])
            self.block.events.write_text(k, text, level, tick=self.tick)
            h["event_head"] = k + 1
        ring_doorbell(self.doorbell)

    def stop(self, why: str) -> None:
        """End the process: keep the first ``why`` and wake the main thread."""
        if not self.stopping.is_set():
            self.why = why
            self.stopping.set()
            self.slow.put(None)

    # ------------------------------------------------------------------ build
    def build(self, spec) -> dict:
        """The drives and the loop from ``spec``; what the node needs to know of them."""
        self.spec = spec
        self.model = model_for(spec.robot)
        # the bus takes its own parameter block from the node's values (delta_hardware.drives.bus)
        self.drives = make_drives(spec.backend, spec.robot, spec.params, rate=float(spec.config.rate))
        simulated = bool(self.drives.simulated)
        if spec.clock == "sim" and not simulated:
            raise ValueError("use_sim_time needs simulated drives (hardware sim, or delta-drive-sim on the bus): "
                             "real drives run on the steady clock")
        self.sim = spec.clock == "sim"
        cfg = spec.config
        cfg.max_stall = float(spec.max_stall or self.drives.max_stall or 0.25)
        cfg.__post_init__()
        self.loop = ControlLoop(self.model, self.drives, cfg)
        if spec.feedforward_robot is not None:
            self.loop.reconfigure(model=model_for(spec.feedforward_robot))
        if float(spec.params.get("plant_payload_mass") or 0.0) > 0.0:     # the simulated robot's payload
            self._disturb({"payload": float(spec.params["plant_payload_mass"])})
        if self.sim:
            self.drives.lockstep()            # simulated drives on the bus: wait for their answers
        self.start_time = float(spec.start_time)
        self.block.header["now"] = self.start_time
        self.block.header["paused"] = int(self.sim and spec.start_paused)
        summary = self.drives.summary
        return {"simulated": simulated, "max_stall": cfg.max_stall, "mode": self.drives.mode.name.lower(),
                "period": self.loop.period, "pid": os.getpid(), "summary": summary}

    # ------------------------------------------------------------------ the loop thread
    def on_cycle(self, out) -> None:
        """Called by the loop thread after every cycle: the record for the node (never waits on
        the wall clock; in simulated time waits while the node is a whole ring behind)."""
        k = self.tick
        h, ring = self.block.header, self.block.states
        if self.sim:
            lead = min(self.spec.lead, ring.n)
            while k - int(h["reader"]) >= lead and not self.stopping.is_set():
                time.sleep(BACKPRESSURE_POLL)
        loop = self.loop
        flags = 0
        sp = out.setpoint
        if sp is not None:
            flags |= FLAG_SETPOINT
        if out.preview is not None:
            flags |= FLAG_PREVIEW
        if loop.stopped_reason:
            flags |= FLAG_STOPPED
        lo, hi, vmax = loop.limits()
        if loop.recovering:
            flags |= FLAG_RECOVERY
        for i in range(3):
            if sp is not None and abs(out.torque[i]) >= loop.tau_max[i]:
                flags |= FLAG_SATURATED << i
        ring.write(k, tick=k, time=out.time, period=loop.last_period, position=out.position,
                   velocity=out.velocity, effort=out.effort,
                   setpoint=(sp.q, sp.qd, sp.qdd) if sp is not None else NAN3,
                   preview_time=out.time + loop.period,
                   preview=((out.preview.q, out.preview.qd, out.preview.qdd) if out.preview is not None else NAN3),
                   torque=out.torque, feedforward=out.feedforward, flags=flags, plan=loop.plan_id,
                   lo=lo, hi=hi, vmax=vmax, residual=loop.monitor.residual, external_force=loop.monitor.force,
                   payload=loop.monitor.payload)
        h["now"] = out.time
        h["head"] = k + 1
        self.tick = k + 1
        for e in out.events:                       # published after this cycle's record
            self.event(e)
        ring_doorbell(self.doorbell)

    def write_activated(self) -> None:
        """A record of the state at activation (:data:`FLAG_ACTIVATED`): the node has a setpoint
        to start plans from before the first cycle (a simulation that starts paused)."""
        fb, sp = self.drives.read(), self.loop.current_setpoint()
        lo, hi, vmax = self.loop.limits()
        k = self.tick
        self.block.states.write(k, tick=k, time=self.now(), period=0.0, position=fb.position, velocity=fb.velocity,
                                effort=fb.torque, setpoint=(sp.q, sp.qd, sp.qdd), preview_time=np.nan, preview=NAN3,
                                torque=(0.0,) * 3, feedforward=(0.0,) * 3, flags=FLAG_SETPOINT | FLAG_ACTIVATED,
                                plan=0, lo=lo, hi=hi, vmax=vmax, residual=NAN3[0], external_force=NAN3[0],
                                payload=NAN3[0][:2])
        self.block.header["head"] = k + 1
        self.tick = k + 1

    def on_loop_error(self, error: BaseException) -> None:
        """In the dying loop thread: quick stop first (nobody writes the drives any more)."""
        self.failure = f"control loop error: {type(error).__name__}: {error}"
        try:
            self.loop.emergency_stop(self.failure)
        except Exception as e:  # noqa: BLE001 - the drives themselves may be what failed
            self.failure += f" (quick stop failed too: {e})"
        self.event(self.failure, 2)
        try:
            send_message(self.control, {"op": "failed", "message": self.failure}, self.send_lock)
        except OSError:
            self.stop("the node closed the link")

    def start_thread(self) -> None:
        """Start the loop thread: in simulated time (paced by ``real_time_factor``, paused if asked) or on the
        wall clock; the other threads one real-time level below it (if configured), the start-up objects frozen."""
        spec, loop = self.spec, self.loop
        if self.sim:
            self.thread = SimTimeLoopThread(loop, self.on_cycle, start=self.start_time,
                                            real_time_factor=spec.real_time_factor,
                                            paused=bool(self.block.header["paused"]))
            self.thread.pause_at = float(spec.pause_at) or None
            self.thread.on_pause = self._paused
            spec.start_paused = False                   # only the first activation starts paused
        else:
            self.thread = LoopThread(loop, self.on_cycle, clock=time.time, realtime=spec.realtime)
        self.thread.on_error = self.on_loop_error
        self._realtime_threads()
        gc.collect()
        gc.freeze()                                     # start-up objects leave the collector's view
        self.thread.start()

    def _paused(self, t: float) -> None:
        self.block.header["paused"] = 1
        self.event(f"simulation paused at t = {t:.3f} s")

    def stop_thread(self) -> None:
        """Stop the loop thread; simulated time goes on from where it stood at the next start."""
        if self.thread is not None:
            if isinstance(self.thread, SimTimeLoopThread):
                self.start_time = self.thread.time          # simulated time goes on from here
            self.thread.stop()
            self.thread = None

    # ------------------------------------------------------------------ requests
    def serve_requests(self) -> None:
        """The request thread: small requests, applied at once."""
        self._realtime_helper()
        try:
            while not self.stopping.is_set():
                msg = recv_message(self.control)
                op = msg.get("op")
                try:
                    if op in ("activate", "deactivate", "reset", "close"):
                        self.slow.put(msg)
                        continue
                    self.reply(msg.get("seq"), True, **(self.handle(op, msg) or {}))
                except (DriveError, ValueError, RobotFileError) as e:
                    self.reply(msg.get("seq"), False, str(e), op=op)
        except (EOFError, OSError):
            self.stop("the node closed the link")
        except Exception as e:  # noqa: BLE001 - never leave the drives behind
            self.stop(f"request thread failed: {type(e).__name__}: {e}")

    def serve_plans(self) -> None:
        """The plan thread: trajectory plans from the bulk socket."""
        self._realtime_helper()
        try:
            while not self.stopping.is_set():
                msg = recv_message(self.bulk)
                try:
                    self.loop.submit_plan(msg["plan"], requested_ns=msg.get("rx"))
                    self.reply(msg.get("seq"), True, now=self.now(), tick=self.tick, start=msg["plan"].start_time)
                except (DriveError, ValueError) as e:
                    self.reply(msg.get("seq"), False, str(e))
        except (EOFError, OSError):
            self.stop("the node closed the link")
        except Exception as e:  # noqa: BLE001
            self.stop(f"plan thread failed: {type(e).__name__}: {e}")

    def now(self) -> float:
        """The loop's time (s): the shared block's simulated time, or the wall clock."""
        return float(self.block.header["now"]) if self.sim else time.time()

    def handle(self, op, msg) -> dict | None:
        """Apply the small request ``op`` at once (estop, command, feedforward, hold, reconfigure, pause,
        resume, pause_at, status); the data of its answer, or None. ValueError for an unknown ``op``."""
        loop = self.loop
        if op == "estop":
            loop.emergency_stop(msg.get("reason") or "emergency stop", at_ns=msg.get("rx"))
            return {"message": "stopped"}
        if op == "command":
            loop.submit_command(self.now(), q=msg.get("q"), tau=msg.get("tau"), requested_ns=msg.get("rx"))
            return None
        if op == "feedforward":
            loop.set_feedforward(msg["stamp"], msg["tau"], received=self.now())
            return None
        if op == "hold":
            loop.hold()
            return None
        if op == "reconfigure":
            changes = dict(msg["changes"])
            if changes.get("model") is not None:
                changes["model"] = model_for(changes["model"])
            loop.reconfigure(**changes)
            return None
        if op in ("pause", "resume", "pause_at"):
            return self._pause(op, msg)
        if op == "status":
            return {"status": self.status()}
        if op == "plant":
            return self._disturb(msg)
        raise ValueError(f"unknown request {op!r}")

    def _disturb(self, msg) -> dict:
        """A disturbance of the simulated robot (``force``: N at the platform, ``base_link``, zero removes
        it; ``payload``: kg on its platform), from its next cycle on; ValueError with the reason on
        drives that are not an in-process simulation (a real robot, or delta-drive-sim on a bus)."""
        drives = self.drives
        if not hasattr(drives, "set_external_force"):
            raise ValueError(f"only the simulated robot (hardware sim) can be pushed or loaded; hardware "
                             f"{self.spec.backend} drives {'simulated drives in another process' if drives.simulated else 'a real robot'}")
        if msg.get("force") is not None:
            drives.set_external_force(msg["force"])
        if msg.get("payload") is not None:
            drives.set_payload(msg["payload"])
        return {"now": self.now()}

    def _pause(self, op, msg) -> dict:
        th = self.thread
        if not isinstance(th, SimTimeLoopThread):
            if op == "pause_at" and self.sim:            # not active yet: from the start on
                self.spec.pause_at = float(msg["t"])
                return {"now": self.now()}
            raise ValueError("only the simulated robot in simulated time (use_sim_time) can pause")
        if op == "pause_at":
            th.pause_at = float(msg["t"]) or None
        elif op == "pause":
            self.block.header["paused"] = 1
            th.pause(wait=2.0)                          # the answer says where it stands
        else:
            self.block.header["paused"] = 0
            th.resume()
        return {"now": th.time, "paused": th.paused}

    def status(self) -> dict:
        """The loop's status for the node: stop reason, drive state, period, late cycles, feedforward, the loop
        statistics, the pacing of simulated time or the real-time warnings, and the drives' diagnostics."""
        loop, th = self.loop, self.thread
        st = {"stopped": loop.stopped_reason or self.failure, "drives": self.drives.state.value,
              "running": th is not None and th.running, "period": loop.period, "late_cycles": loop.late.total,
              "feedforward": loop.cfg.feedforward, "feedforward_topic_silent": loop.ff_silent,
              "payload_in_feedforward_kg": loop.payload_in_feedforward,
              "recovering": loop.recovering, **loop.stats.summary()}
        if isinstance(th, SimTimeLoopThread):
            st.update(pacing_restarts=th.restarts, paused=th.paused, real_time_factor_achieved=th.achieved_factor())
        elif th is not None and getattr(th, "warnings", None):
            st["realtime_warnings"] = list(th.warnings)
        diag = self.drives.diagnostics() if self.drives is not None else None
        if diag:
            st["drive_diagnostics"] = diag
        return st

    def _realtime_helper(self, tid: int = 0) -> None:
        """SCHED_FIFO one level below the loop thread for a helper thread of a real-time loop
        (``tid``: another thread of this process; 0: the calling one), on the loop thread's CPU
        when ``cpu_affinity`` pins it: the bus receiver the loop waits for then shares its CPU
        instead of meeting other real-time work (a drive simulator) on the other ones."""
        rt = self.spec.realtime if self.spec is not None else None
        if rt is not None and rt.thread_priority and not self.sim:
            try:
                os.sched_setscheduler(tid, os.SCHED_FIFO, os.sched_param(max(rt.thread_priority - 1, 1)))
            except OSError:
                pass                                      # the loop thread reports the permission
        if rt is not None and rt.cpu_affinity >= 0 and not self.sim:
            try:
                os.sched_setaffinity(tid, {rt.cpu_affinity})
            except OSError:
                pass                                      # the loop thread reports it

    def _realtime_threads(self) -> None:
        """Every thread of this process so far (the drives' own too: a bus receiver the loop
        waits for) one level below the loop thread and on its CPU; threads started later inherit it."""
        for tid in os.listdir("/proc/self/task"):
            self._realtime_helper(int(tid))

    # ------------------------------------------------------------------ the slow steps (main thread)
    def slow_step(self, msg) -> bool:
        """Run one slow request; False when the process is to end."""
        op, seq = msg["op"], msg.get("seq")
        if op == "close":
            self.why = "closed by the node"
            return False
        try:
            if op == "activate":
                self.loop.activate()
                self._notices()
                self.write_activated()
                if self.thread is None:
                    self.start_thread()
                self.reply(seq, True, **self.status_brief())
            elif op == "deactivate":
                self.stop_thread()
                self.loop.deactivate()
                self.reply(seq, True)
            elif op == "reset":
                if self.thread is None:
                    raise DriveError("the control loop is not running")
                self.loop.reset(requested_ns=msg.get("rx"))
                self._notices()
                self.reply(seq, True)
        except (DriveError, ValueError) as e:
            self.reply(seq, False, str(e))
        return True

    def status_brief(self) -> dict:
        """Whether simulated time is paused, and the real-time warnings (the answer to ``activate``)."""
        th = self.thread
        return {"paused": bool(getattr(th, "paused", False)),
                "realtime_warnings": list(getattr(th, "warnings", []) or [])}

    def _notices(self) -> None:
        while self.loop.notices:
            self.event(self.loop.notices.pop(0), 1)

    def serve(self) -> None:
        """Run until the node closes the link or a signal comes."""
        self._realtime_helper()
        for target in (self.serve_requests, self.serve_plans):
            threading.Thread(target=target, name=target.__name__, daemon=True).start()
        while not self.stopping.is_set():
            try:
                msg = self.slow.get(timeout=0.5)
            except queue.Empty:
                continue
            if msg is None or not self.slow_step(msg):
                break

    def shutdown(self) -> str:
        """Stop the loop thread and disable and release the drives: every exit comes here."""
        gc.unfreeze()
        try:
            self.stop_thread()
        except Exception:  # noqa: BLE001
            pass
        state = "none"
        if self.drives is not None:
            try:
                self.drives.disable()
            except Exception as e:  # noqa: BLE001 - still close the bus
                state = f"disable failed: {e}"
            try:
                state = state if state.startswith("disable failed") else self.drives.state.value
                self.drives.close()
            except Exception as e:  # noqa: BLE001
                state += f"; close failed: {e}"
        return state


#: the simulated drives' names before the drive buses declared their parameters
def _fd_socket(fd: int) -> socket.socket:
    return socket.socket(fileno=fd)


def main(argv=None) -> int:
    """The control-loop process on the link's file descriptors: build the loop from the node's spec, serve
    until the link, the node or a signal ends it, then shut the drives down; the exit status."""
    ap = argparse.ArgumentParser(prog="delta_hardware.loop_process",
                                 description="the control loop of delta_hardware (started by the hardware node)")
    ap.add_argument("--control", type=int, required=True)
    ap.add_argument("--bulk", type=int, required=True)
    ap.add_argument("--block", type=int, required=True)
    ap.add_argument("--doorbell", type=int, required=True)
    args = ap.parse_args(argv)
    sys.setswitchinterval(1e-4)        # the loop thread gets the GIL back within 0.1 ms
    control, bulk = _fd_socket(args.control), _fd_socket(args.bulk)
    block = SharedBlock(args.block)
    proc = LoopProcess(control, bulk, block, args.doorbell)

    def on_signal(signum, frame):
        proc.stop(f"signal {signal.Signals(signum).name}")
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    code = 0
    try:
        msg = recv_message(control)
        try:
            info = proc.build(msg["spec"])
        except (DriveError, ValueError, RobotFileError, OSError) as e:
            proc.reply(msg.get("seq"), False, str(e))
            return 1
        proc.reply(msg.get("seq"), True, **info)
        proc.serve()
    except (EOFError, OSError):
        proc.why = proc.why or "the node closed the link"
    except BaseException as e:  # noqa: BLE001 - reported, the drives still get disabled
        proc.why = f"{type(e).__name__}: {e}"
        code = 1
    finally:
        state = proc.shutdown()
        try:
            proc.event(f"control loop process ended ({proc.why or 'done'}): drives {state}", 0)
        except Exception:  # noqa: BLE001
            pass
    return code


def run() -> None:
    """The process's entry: :func:`main`, then exit at once. The drives are released by then;
    the interpreter's teardown (finalizers of frozen start-up objects, extension modules that
    report what they still hold) has nothing left to do but print noise."""
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    run()
