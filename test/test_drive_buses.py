"""Drive buses as plug-ins (delta_hardware.drives.BUSES, delta_core.plugins): one registration
line per bus, each bus building itself from its own parameter block, callers naming no bus;
and the bus-neutral CiA 402 module, which loads no bus library."""
import subprocess
import sys

import pytest

from delta_core.robot_file import load_robot
from delta_hardware.drives import (BUSES, BusParameter, DriveBus, DriveError, DriveSet, DriveState, Feedback,
                                   bus_parameters, get_bus, make_drives)
from delta_hardware.drives.simulated import SimulatedDriveSet
from delta_hardware.ros.parameters import PARAMETERS, check_parameters

ROBOT = load_robot("nt_robot")


def test_every_bus_is_one_registration_and_declares_its_parameters():
    assert BUSES.names() == ("sim", "mock", "canopen")
    params = bus_parameters()
    assert [p.name for p in get_bus("canopen").parameters] == ["can_interface", "can_channel", "drives_config"]
    assert {"plant", "sim_payload", "true_robot"} <= set(params)
    for name, p in params.items():
        assert p.description.split(":")[0] in ("sim", "canopen"), name     # says whose it is
        assert p.check(p.default), name
        assert name in PARAMETERS and PARAMETERS[name].default == p.default  # the node declares them


def test_make_drives_takes_the_bus_block_from_any_parameters():
    d = make_drives("sim", ROBOT, {"sim_torque_noise": 0.0, "sim_counts_per_rev": 4096, "kp": [1, 2, 3]})
    assert isinstance(d, SimulatedDriveSet) and d.simulated and d.summary == "plant explicit"
    assert d.scaling[0].counts_per_rev == 4096 and d.torque_noise == 0.0
    assert make_drives("mock", ROBOT).state is DriveState.DISABLED
    with pytest.raises(DriveError, match=r"unknown drive bus 'ethercat' \(known: sim, mock, canopen\)"):
        make_drives("ethercat", ROBOT, {})


def test_the_node_checks_a_bus_parameter_by_its_declared_rule():
    good = {k: v.default for k, v in PARAMETERS.items()}
    check_parameters(good)
    for name, value, rule in (("plant", "gazebo", "must be one of explicit, multibody, mujoco"),
                              ("sim_counts_per_rev", 0, "must be an integer 1 - 1099511627776"),
                              ("sim_payload", -1.0, "must be a finite number >= 0 and <= 1000"),
                              ("hardware", "robotnik", "must be one of sim, mock, canopen")):
        with pytest.raises(ValueError, match=f"parameter {name} {rule}, got"):
            check_parameters({**good, name: value})


class _OneAxisBus(DriveSet):
    """A bus of the test's own: what a new bus needs to be built by ``make_drives``."""

    def __init__(self, robot, port, rate):
        self.robot, self.port, self.rate = robot, port, rate

    @classmethod
    def from_parameters(cls, robot, values, rate):
        return cls(robot, values["test_port"], rate)

    def enable(self): pass
    def disable(self): pass
    def quick_stop(self, reason=""): pass
    def reset(self): pass
    def read(self): return Feedback((0.0,) * 3, (0.0,) * 3, (0.0,) * 3, DriveState.DISABLED)
    def write(self, torque=None, position=None, velocity=None): pass
    def cycle(self, dt): return dt

    @property
    def state(self):
        return DriveState.DISABLED


def test_a_new_bus_is_a_declaration_and_a_drive_set():
    bus = DriveBus(description="a test bus", drive_set=f"{__name__}:_OneAxisBus",
                   parameters=(BusParameter("test_port", 7, "test: port", lo=1, hi=65535, integer=True),))
    d = bus.build(ROBOT, {"test_port": 9, "plant": "explicit"}, 250.0)
    assert (d.port, d.rate, d.robot) == (9, 250.0, ROBOT)
    assert bus.build(ROBOT, {}, 500.0).port == 7                     # the default of the block
    assert not d.simulated and d.max_stall is None and d.diagnostics() == {}


@pytest.mark.parametrize("module", ["delta_hardware.cia402", "delta_hardware.drives", "delta_hardware.canopen.plugin"])
def test_the_declarations_and_cia402_load_no_bus_library(module):
    code = (f"import sys, {module}; from delta_hardware.drives import bus_parameters; bus_parameters(); "
            "print(sorted(m for m in ('can', 'canopen') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
