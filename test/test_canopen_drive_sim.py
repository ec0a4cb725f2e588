"""``delta-drive-sim`` as a program: every argument checked with a one-line error (exit 2, no
traceback), and a clean stop (exit 0, bus closed) on SIGINT and SIGTERM, started from a
terminal or as a background job. The simulated drives' own behaviour on SYNC is tested
with the cyclic exchange (test_canopen_cyclic.py), their SYNC watchdog here."""
import signal
import subprocess
import sys

import pytest

from canopen_helpers import ROOT, SimProcess, bare_axes, sim_on, unique_channel, wait_until
from delta_core.robot_file import load_robot
from delta_hardware import cia402
from delta_hardware.canopen import sim_cli
from delta_hardware.cia402 import State
from delta_hardware.canopen.config import load_drives_config

ROBOT = load_robot("nt_robot")


@pytest.fixture
def own_signals():
    """main() installs SIGINT/SIGTERM handlers: give pytest its own back afterwards."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield
    for s, h in saved.items():
        signal.signal(s, h)


@pytest.mark.parametrize("args, argument, message", [
    (["--absent", "5"], "--absent", "must be an axis 1, 2 or 3, got '5'"),
    (["--absent", "1", "1"], "--absent", "an axis given twice"),
    (["--absent", "1", "2", "3"], "--absent", "at least one drive must be on the bus"),
    (["--duration", "-1"], "--duration", "must be a finite number >= 0 s, got -1"),
    (["--duration", "inf"], "--duration", "must be a finite number >= 0 s, got inf"),
    (["--status-period", "soon"], "--status-period", "not a number: 'soon'"),
    (["--payload", "nan"], "--payload", "must be a finite number >= 0 kg, got nan"),
    (["--torque-noise", "nan"], "--torque-noise", "must be a finite number >= 0 N m, got nan"),
    (["--velocity-noise", "-0.1"], "--velocity-noise", "must be a finite number >= 0 rad/s, got -0.1"),
    (["--interface", "carrier-pigeon"], "--interface", "unknown python-can interface 'carrier-pigeon'"),
    (["--channel", "10.0.0.1"], "--channel", "must be a multicast group"),
    (["--channel", "239.1.1.1:70000"], "--channel", "must be a multicast group"),
    (["--interface", "virtual", "--channel", " "], "--channel", "must not be empty"),
    (["--robot", "no_such_robot"], "--robot", "no_such_robot"),
    (["--true-robot", "no_such_robot"], "--true-robot", "no_such_robot"),
    (["--drives-config", "no_such_drive"], "--drives-config", "no_such_drive"),
    (["--realtime", "yes"], "", "unrecognized arguments: yes"),
])
def test_every_bad_argument_is_one_line_naming_it(own_signals, capsys, args, argument, message):
    with pytest.raises(SystemExit) as e:
        sim_cli.main(args)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("delta-drive-sim: error: "), err
    if argument:
        assert err.startswith(f"delta-drive-sim: error: argument {argument}: "), err
    assert message in err


def test_a_bad_drives_config_value_names_the_file_and_field(own_signals, capsys, tmp_path):
    p = tmp_path / "noisy.yaml"
    p.write_text("base: generic_cia402\nsimulation: {torque_noise: .nan}\n")
    with pytest.raises(SystemExit):
        sim_cli.main(["--drives-config", str(p)])
    err = capsys.readouterr().err
    assert err.startswith(f"delta-drive-sim: error: argument --drives-config: {p}: simulation.torque_noise: ")


def test_the_command_line_error_has_no_traceback():
    r = subprocess.run([sys.executable, "-m", "delta_hardware.canopen.sim_cli", "--absent", "5", "--duration", "-1"],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert r.stderr.startswith("delta-drive-sim: error: argument --absent: must be an axis 1, 2 or 3")


@pytest.mark.parametrize("background", [False, True], ids=["terminal", "background"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_stops_it_cleanly(sig, background):
    sim = SimProcess("--interface", "virtual", "--channel", unique_channel("sig"), background=background)
    out, err = sim.stop(sig)
    assert sim.proc.returncode == 0, f"{out}\n{err}"
    assert "Traceback" not in err and err == ""
    assert out.splitlines()[-1].startswith("delta-drive-sim: stopped after ") and out.endswith("; bus closed")


# ---------------------------------------------------------------------------- the drives' SYNC watchdog
def test_an_enabled_drive_without_sync_faults():
    """A real drive whose master falls silent stops on its own: no SYNC for
    simulation.sync_timeout while in operation enabled -> fault, EMCY 0x8100."""
    channel = unique_channel()
    cfg = load_drives_config("generic_cia402", ROBOT, {"simulation": {"sync_timeout": 0.2}})
    sim = sim_on(channel, config=cfg)
    net, axes, _ = bare_axes(channel)
    try:
        emcy = []
        axes[0].node.emcy.add_callback(lambda e: emcy.append(e.code))
        cia402.drive_to(axes[0], State.OPERATION_ENABLED, 1.0)
        assert wait_until(lambda: sim.drive_state(0) is State.FAULT, timeout=10.0)
        assert wait_until(lambda: 0x8100 in emcy)
        assert sim.drive_state(1) is State.SWITCH_ON_DISABLED           # not enabled: nothing to stop
        assert "0x8100 (communication" in cia402.error_text(sim.drives[0].error_code)
    finally:
        net.disconnect()
        sim.close()
