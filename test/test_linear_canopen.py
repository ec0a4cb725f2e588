"""The CANopen backend with a linear Delta: the carriage drives on python-can's virtual
bus with the simulated CiA 402 drives (delta_hardware/canopen/drive_sim.py) and the shipped
linear drives config. Encoder counts <-> m through the belt (gear_ratio = 2 pi / travel per
revolution, motor rad per metre), per-mille <-> N through the motor's rated torque; the control
loop tracks a carriage trajectory over CAN in cyclic synchronous position and torque mode."""
import contextlib
import math

import numpy as np
import pytest

from canopen_helpers import unique_channel, wait_until
from delta_core.robot_file import load_robot
from delta_dynamics.kinds import model_for
from delta_hardware.canopen.backend import CanopenDriveSet
from delta_hardware.canopen.config import load_drives_config
from delta_hardware.canopen.drive_sim import SimulatedCia402Drives
from delta_hardware.control_loop import ControlLoop, LoopConfig
from delta_hardware.drives import DriveState, Mode
from delta_hardware.trajectory_plan import build_plan

DT = 0.002
ROBOT = load_robot("colombo2020")
MODEL = model_for(ROBOT)
# for a machine saturated by other processes: SYNC answers may take 0.5 s, a heartbeat 3 s, a
# drive's first SDO answer at start-up 5 s (a loaded fresh run: one drive took over 0.5 s), and
# the simulated drives do not fault when the test process is descheduled between two SYNCs
TIMING = {"timing": {"tpdo_timeout": 0.5, "sdo_timeout": 0.5, "startup_timeout": 5.0}, "heartbeat": {"timeout_ms": 3000}}


@contextlib.contextmanager
def rig(mode="position"):
    channel = unique_channel("lin")
    cfg = load_drives_config("linear_cia402", ROBOT, {**TIMING, "simulation": {"sync_timeout": 0}, "mode": mode})
    sim = SimulatedCia402Drives(ROBOT, "virtual", channel, cfg)
    drives = None
    try:
        drives = CanopenDriveSet(ROBOT, "virtual", channel, "linear_cia402", rate=1 / DT,
                                 config_overrides={**TIMING, "mode": mode})
        yield sim, drives
    finally:
        if drives is not None:
            drives.close()
        sim.close()


def test_linear_scaling_counts_to_metres_and_per_mille_to_newtons():
    cfg = load_drives_config("linear_cia402", ROBOT)
    u = cfg.axes[0]
    travel = ROBOT.mass.motor.travel_per_revolution                     # 0.04 m per motor turn
    assert u.scaling.gear_ratio == pytest.approx(2 * math.pi / travel)  # motor rad per metre
    assert u.position_to_si(131072) == pytest.approx(travel)             # one motor turn
    assert u.position_to_counts(0.3) == round(0.3 / travel * 131072)
    assert u.torque_to_si(1000) == pytest.approx(0.4 * 2 * math.pi / travel)     # 62.8 N
    assert u.torque_to_permille(4.4784) == round(4.4784 / (0.4 * 2 * math.pi / travel) * 1000)
    # the force limit of the robot file as the drive's max torque (0x6072)
    assert cfg.max_torque == [math.ceil(60.0 * 1000 / (0.4 * 2 * math.pi / travel))] * 3 == [955] * 3


def test_startup_writes_the_carriage_limits_and_the_feedback_is_in_metres():
    with rig() as (sim, drives):
        assert drives.state is DriveState.DISABLED
        for i, d in enumerate(sim.drives):
            u = drives.cfg.axes[i]
            assert d.read_param("rated_torque") == 400                                   # mN m
            assert d.read_param("max_torque") == 955
            lo, hi = ROBOT.limits.position[i]
            assert d.read_param("software_position_limit_min") == u.position_to_counts(lo - 0.005)
            assert d.read_param("software_position_limit_max") == u.position_to_counts(hi + 0.005)
            assert d.read_param("following_error_window") == round(0.01 / u.scaling.rad_per_count)
        fb = drives.read()
        one_count = drives.cfg.axes[0].scaling.rad_per_count                             # m here
        assert one_count == pytest.approx(0.04 / 131072)
        np.testing.assert_allclose(fb.position, sim.joint_positions(), atol=2 * one_count)
        np.testing.assert_allclose(fb.position, [0.2953] * 3, atol=1e-3)                 # the home pose, m


@pytest.mark.parametrize("mode", ["position", "torque"])
def test_a_carriage_trajectory_is_tracked_over_can(mode):
    with rig(mode) as (sim, drives):
        loop = ControlLoop(MODEL, drives, LoopConfig(rate=1 / DT, feedforward="model"))
        loop.activate()
        assert drives.state is DriveState.ENABLED
        t, outs = 0.0, []
        for _ in range(50):
            loop.cycle(t)
            t += DT
        goal = [0.32, 0.27, 0.30]
        loop.submit_plan(build_plan(MODEL, t, loop.current_setpoint(), t, [0.6], [goal]))
        for _ in range(450):
            outs.append(loop.cycle(t))
            t += DT
        events = [e for o in outs for e in o.events]
        assert all(o.setpoint is not None for o in outs), events      # never stopped
        lag = 1 if drives.mode is Mode.POSITION else 0
        err = max(np.abs(a.setpoint.q - np.array(b.position)).max() for a, b in zip(outs, outs[lag:]))
        assert err < (5e-4 if drives.mode is Mode.POSITION else 3e-4)                   # m
        np.testing.assert_allclose(outs[-1].position, goal, atol=1e-4)
        np.testing.assert_allclose(sim.joint_positions(), goal, atol=1e-4)
        assert not any("fault" in e or "quick stop" in e for e in events), events
        # the efforts read back over CAN are carriage forces (N): the weight share of each carriage
        assert 2.0 < np.median([o.effort for o in outs[-50:]]) < 8.0
        assert wait_until(lambda: sim.sync_count == drives.stats["syncs"])
