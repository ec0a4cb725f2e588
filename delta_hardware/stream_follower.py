"""Streamed position commands made safe to follow: online jerk-limited setpoints (Ruckig).

Commands streamed on ``/delta/joint_commands`` (the ros2_control topic contract) arrive at
whatever rate and step size the sender likes. The loop does not jump to them: every cycle
:class:`StreamFollower` moves the setpoint one period toward the latest command on the
time-optimal jerk-limited path of Ruckig (Berscheid & Kroeger, RSS 2021) within the joint
velocity and acceleration limits of the robot file, so a stream that asks for more than
the robot may do is slowed down, not executed (and never trips the overspeed guard).

The jerk limit is ``JERK_PER_ACCELERATION`` times the acceleration limit (per second): full
acceleration is reached in 1/50 s.

>>> import numpy as np
>>> f = StreamFollower(0.002, [8.0] * 3, [150.0] * 3)
>>> f.reset(np.zeros(3), np.zeros(3), np.zeros(3))
>>> for _ in range(50):
...     q, qd, qdd = f.step([1.0, 0.0, 0.0])
>>> bool(abs(qd[0]) <= 8.0 and 0.0 < q[0] < 1.0)
True
"""
from __future__ import annotations

import numpy as np
from ruckig import InputParameter, OutputParameter, Result, Ruckig

JERK_PER_ACCELERATION = 50.0     # 1/s


class StreamFollower:
    """Setpoints that follow a streamed target within velocity, acceleration and jerk limits."""

    def __init__(self, period: float, v_max, a_max, jerk_per_acceleration: float = JERK_PER_ACCELERATION):
        self.otg = Ruckig(3, period)
        self.inp = InputParameter(3)
        self.out = OutputParameter(3)
        self.inp.max_velocity = [float(v) for v in v_max]
        self.inp.max_acceleration = [float(a) for a in a_max]
        self.inp.max_jerk = [float(a) * jerk_per_acceleration for a in a_max]
        self.inp.target_velocity = [0.0] * 3
        self.inp.target_acceleration = [0.0] * 3

    def set_velocity_limit(self, v_max) -> None:
        """Set the velocity limits ``v_max`` (3 values; rad/s, m/s on a linear robot) of the motion toward the
        target (the loop lowers them during the way back into the joint limits)."""
        self.inp.max_velocity = [float(v) for v in v_max]

    def reset(self, q, qd, qdd) -> None:
        """Start from the setpoint (q, qd, qdd) the loop is following."""
        a = np.clip(np.asarray(qdd, float), -np.asarray(self.inp.max_acceleration), self.inp.max_acceleration)
        v = np.clip(np.asarray(qd, float), -np.asarray(self.inp.max_velocity), self.inp.max_velocity)
        self.inp.current_position = [float(x) for x in q]
        self.inp.current_velocity = v.tolist()
        self.inp.current_acceleration = a.tolist()

    def step(self, target):
        """The setpoint one period on toward ``target``: (q, qd, qdd) arrays."""
        self.inp.target_position = [float(x) for x in target]
        r = self.otg.update(self.inp, self.out)
        if r not in (Result.Working, Result.Finished):
            raise ValueError(f"streamed command: no motion within the limits (Ruckig {r.name})")
        self.out.pass_to_input(self.inp)
        return (np.array(self.out.new_position), np.array(self.out.new_velocity),
                np.array(self.out.new_acceleration))
