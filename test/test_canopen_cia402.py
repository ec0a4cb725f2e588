"""The CiA 402 state machine as the master steps it (cia402.drive_to) against the simulated
drives: every transition confirmed by the statusword, fault reset on a rising edge, and
errors that name the axis, the state and the error code. (The tables: test_canopen_config.py.)"""
import contextlib
import time

import pytest

from canopen_helpers import bare_axes, sim_on, unique_channel
from delta_hardware import cia402
from delta_hardware.cia402 import Command, State
from delta_hardware.drives import DriveError


@contextlib.contextmanager
def _drives():
    channel = unique_channel()
    sim = sim_on(channel)
    net, axes, _ = bare_axes(channel)
    try:
        yield sim, axes
    finally:
        net.disconnect()
        sim.close()


def test_to_operation_enabled_and_back():
    with _drives() as (sim, axes):
        cia402.drive_to(axes[0], State.OPERATION_ENABLED, 1.0)
        assert sim.drive_state(0) is State.OPERATION_ENABLED and axes[0].cia_state is State.OPERATION_ENABLED
        assert sim.drives[0].cw == Command.ENABLE_OPERATION.value
        axes[0].write_controlword(Command.QUICK_STOP.value)
        assert sim.drive_state(0) is State.QUICK_STOP_ACTIVE
        cia402.drive_to(axes[0], State.OPERATION_ENABLED, 1.0)        # via switch on disabled, not 16
        assert sim.drive_state(0) is State.OPERATION_ENABLED
        cia402.drive_to(axes[0], State.SWITCH_ON_DISABLED, 1.0)
        assert sim.drive_state(0) is State.SWITCH_ON_DISABLED
        assert sim.drive_state(1) is State.SWITCH_ON_DISABLED         # the others untouched


def test_a_fault_needs_a_reset_and_a_reset_needs_the_cause_gone():
    with _drives() as (sim, axes):
        sim.inject_fault(1, 0x2310)
        with pytest.raises(DriveError, match=r"axis 2 \(arm_2_joint, node 2\) is in fault \(error code 0x2310 "
                                             r"\(continuous over-current\)\): reset first"):
            cia402.drive_to(axes[1], State.OPERATION_ENABLED, 1.0)
        t0 = time.monotonic()
        with pytest.raises(DriveError, match=r"axis 2 .* stays in fault \(statusword 0x0218, error code 0x2310 "
                                             r"\(continuous over-current\)\) after 0.20 s on the way to switch on disabled"):
            cia402.drive_to(axes[1], State.SWITCH_ON_DISABLED, 0.2)
        assert time.monotonic() - t0 >= 0.2
        sim.clear_fault(1)
        cia402.drive_to(axes[1], State.SWITCH_ON_DISABLED, 1.0)       # 0x0000 then 0x0080: a rising edge
        assert sim.drive_state(1) is State.SWITCH_ON_DISABLED and sim.drives[1].error_code == 0
