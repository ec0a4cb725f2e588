"""Every command of the README's ``sh`` blocks, checked against a fresh clone.

The README is the first thing a user follows. Each command line of its ``sh`` blocks is in
exactly one list below (a command added to the README without a verdict here, or one listed
here that left the README, fails :func:`test_every_readme_command_has_a_verdict`):

* ``RUN``: run as printed, in order, in a fresh ``git clone`` of this repository (its
  ``.venv`` linked to ours, ``.venv/bin`` on PATH as the README's ``export`` line puts it), each
  block's files made by the commands before it: exit 0.
* ``HELP``: commands that start a stack, record, or run for minutes: their ``--help`` form
  runs through the installed entry point (the command exists, and argparse accepts every
  option written before ``--help``: choices and types are checked as they are read), exit 0.
* ``ELSEWHERE``: covered by another test or by CI itself, named with the reason.
* ``NOT_HERE``: needs what a pip install on this machine does not have (a ROS install with
  colcon, ``ros2``, a CAN bus); the reason is given.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"

RUN = [
    'export PATH="$PWD/.venv/bin:$PATH"',
    "delta-dynamics trajectory circle --radius 0.25 --depth -0.75 --ramp 1 --out circle.csv",
    "delta-dynamics trajectory lissajous --speed 0.2 --depth -0.75 --out liss.csv",
    "delta-dynamics trajectory pick-place --start -0.1525 0 -0.8 --cycles 3 --out pick.csv",
    "delta-dynamics inverse --robot nt_robot --trajectory circle.csv --out torques.csv",
    "delta-dynamics ik 0.05 -0.02 -0.75",
    "delta-dynamics fk 0.3 0.3 0.3",
    "delta-dynamics trajectory lissajous --robot colombo2020 --tool --depth 0 --x0 0.05 --y0 0.05 "
    "--speed 0.2 --timing arc-length --out liss.csv",
    "delta-dynamics inverse --robot colombo2020 --trajectory liss.csv --out forces.csv",
    "delta-dynamics trajectory ellipse --robot staicu2003 --out ellipse.csv",
    "delta-description urdf --robot nt_robot --ros2-control topic > delta.urdf",
    "delta-description check --robot d3s800",
    "delta-identify excite --robot nt_robot --out excite.csv --from config/excitation/nt_robot.yaml",
    "delta-dynamics plan pick --robot nt_robot --from -0.1525 0 -0.78 --to 0.1525 0 -0.78 "
    "--height 0.025 --blend 0.01 --dwell 0.05 --cycles 10 --out pick.csv",
    "delta-calibrate poses --robot nt_robot --count 50 --out poses.csv",
]

HELP = {
    # long computations (minutes on 2 cores); their function is tested in the modules' tests
    "delta-dynamics forward --robot nt_robot --torques torques.csv --out simulated.csv": "LSODA, ~1 min",
    "delta-dynamics simulate --model multibody --torques torques.csv --out sim.csv --reactions r.csv":
        "multibody DAE over 7 s at 1 kHz: 2 min",
    "delta-dynamics reactions --robot nt_robot --trajectory circle.csv --out reactions.csv": "multibody, minutes",
    "delta-dynamics demo --robot colombo2020 --out out/linear": "plots, ~30 s (test_linear_cli.py)",
    "delta-dynamics compare --robot staicu2003 --trajectory ellipse.csv --models explicit,staicu --plot cmp.png":
        "Staicu's model per sample, ~30 s (test_compare.py)",
    "delta-description render --robot nt_robot --out robot.png": "matplotlib 3-D, ~20 s (test_description.py)",
    "delta-dynamics retime --robot d3s800 --path path.csv --out traj.csv --torque-scale 0.9":
        "needs the user's path (test_motion.py retimes paths through the same CLI)",
    "delta-identify --robot nt_robot --data run1 --out identified.yaml --report out/ident":
        "needs run1 from the stack (test_record.py runs the whole loop)",
    "delta-identify --robot nt_robot --data run1 --validate run2 --method all": "needs two recordings",
    # stacks: run until Ctrl-C (test_bringup.py, test_namespaces.py, test_record.py start them)
    "delta-bringup": "a stack, until Ctrl-C",
    "delta-bringup &": "a stack, until Ctrl-C",
    "delta-bringup --robot d3s800 --ros-args -p control_rate:=1000.0": "a stack",
    "delta-bringup --robot colombo2020": "a stack",
    "delta-bringup --plant mujoco": "a stack",
    "delta-bringup --robot identified.yaml": "a stack (the loop in test_record.py loads identified.yaml)",
    "delta-bringup --namespace r1 --prefix r1_ &": "a stack (test_namespaces.py)",
    "delta-bringup --namespace r2 --prefix r2_ &": "a stack (test_namespaces.py)",
    "delta-ctl record --out run1 &": "records until stopped (test_record.py)",
    ".venv/bin/delta-bringup &": "a stack, until Ctrl-C",
    ".venv/bin/delta-ctl status": "needs a stack (test_namespaces.py)",
    ".venv/bin/delta-ctl move 0.05 0.0 -0.75 --wait": "needs a stack (test_namespaces.py)",
    ".venv/bin/delta-ctl events --follow": "needs a stack, until Ctrl-C",
    "delta-ctl --namespace r1 --prefix r1_ move 0.05 0.0 -0.75": "needs a stack (test_namespaces.py)",
}

ELSEWHERE = {
    "delta-calibrate --robot nt_robot --measurements measured.csv --out calibrated.yaml --report cal/":
        "needs the user's measurements (test_calibration.py runs it on simulated tracker data)",
    "delta-calibrate from-klipper printer.cfg --out printer.yaml": "needs the user's printer.cfg "
        "(test_calibration_klipper.py imports Klipper's example-delta.cfg)",
    "delta-calibrate to-klipper calibrated.yaml": "needs a calibrated file (test_calibration_klipper.py)",
    "make run": "the demo, about a minute: the repro branch's figure test runs it",
    "make test": "this suite",
    "make bench": "benchmarks on an idle machine (bench/, README Performance)",
    "make fuzz": "minutes of random input; CI-optional (test/bad_input)",
    "make model-demo": "plots, ~1 min (test_cli.py runs delta-dynamics demo)",
    "delta-ctl run excite.csv --wait": "needs a stack (test_record.py)",
    "kill -INT %2 %1": "shell job control",
    ".venv/bin/delta-ctl run my_trajectory.csv --wait": "needs a stack and the user's file",
    ".venv/bin/delta-ctl estop ; .venv/bin/delta-ctl reset": "needs a stack (test_hardware_node.py)",
    "delta-drive-sim --interface udp_multicast --channel 239.74.163.2 --robot nt_robot --drives-config generic_cia402":
        "a CAN drive simulator until Ctrl-C (test_canopen_drive_sim.py)",
    "delta-bringup --hardware canopen --can-interface udp_multicast --can-channel 239.74.163.2 --sim-time":
        "with delta-drive-sim (test_canopen_node.py)",
}

NOT_HERE = {
    "delta-bringup --hardware canopen --can-interface socketcan --can-channel can0 --drives-config maxon_epos4":
        "real CAN hardware",
    "ros2 launch delta_robot delta.launch.py namespace:=r1 prefix:=r1_": "ros2 launch: a ROS install",
    "mkdir -p ~/delta_ws/src && cd ~/delta_ws/src": "the colcon workspace of a ROS install",
    "git clone <this repository> delta_robot": "the colcon workspace of a ROS install",
    "cd ~/delta_ws": "the colcon workspace of a ROS install",
    "source /opt/ros/jazzy/setup.bash": "a ROS install",
    "rosdep install --from-paths src --ignore-src -y": "a ROS install",
    "colcon build --symlink-install": "a ROS install",
    "source install/setup.bash": "a ROS install",
    "ros2 launch delta_robot delta.launch.py": "a ROS install",
    "ros2 launch delta_robot delta.launch.py robot:=d3s800 hardware:=canopen can_interface:=socketcan "
    "can_channel:=can0 launch_rviz:=false": "a ROS install and CAN hardware",
    "ros2 launch delta_robot description.launch.py": "a ROS install",
    "ros2 launch delta_robot delta.launch.py hardware:=mock use_sim_time:=true namespace:=r1 prefix:=r1_":
        "a ROS install",
    "ros2 launch delta_robot moveit.launch.py": "a ROS install and MoveIt",
}


def readme_commands() -> list:
    """The command lines of the README's sh blocks (continuations joined, comments cut)."""
    out = []
    for block in re.findall(r"```sh\n(.*?)```", README.read_text(), re.S):
        line_acc = ""
        for line in block.splitlines():
            line = line.rstrip()
            if line.endswith("\\"):
                line_acc += line[:-1].strip() + " "
                continue
            line = (line_acc + line.strip()).strip()
            line_acc = ""
            cmd = re.split(r"\s+#", line, maxsplit=1)[0].strip() if not line.startswith("#") else ""
            if cmd:
                out.append(" ".join(cmd.split()) if not cmd.startswith("export ") else cmd)
    return out


def test_every_readme_command_has_a_verdict():
    cmds = readme_commands()
    listed = [*RUN, *HELP, *ELSEWHERE, *NOT_HERE]
    assert len(listed) == len(set(listed)), "a command is listed twice"
    unknown = [c for c in cmds if c not in listed]
    assert not unknown, f"README commands without a verdict in {__file__}: {unknown}"
    stale = [c for c in listed if c not in cmds]
    assert not stale, f"listed here but not in the README any more: {stale}"


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """A fresh clone of this repository (its committed state) with our .venv linked in."""
    d = tmp_path_factory.mktemp("readme") / "delta_robot"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{ROOT}", str(d)], check=True, timeout=120)
    (d / ".venv").symlink_to(Path(sys.prefix))
    return d


def _env(clone):
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    return env


def test_run_commands_work_as_printed_in_a_fresh_clone(clone):
    """One shell, as a user types them: the export line, then each command (set -e)."""
    script = "set -e\n" + RUN[0] + "\n" + "".join(f"echo '>>> {c}' >&2\n{c}\n" for c in RUN[1:])
    res = subprocess.run(["bash", "-c", script], cwd=clone, capture_output=True, text=True, timeout=900,
                         env=_env(clone))
    ran = [line[4:] for line in res.stderr.splitlines() if line.startswith(">>> ")]
    assert res.returncode == 0, f"failed: {ran[-1] if ran else RUN[0]}\n{res.stderr[-3000:]}"
    assert ran == RUN[1:] and "Traceback" not in res.stderr
    assert (clone / "delta.urdf").read_text().lstrip().startswith("<?xml")


def _entry_points():
    from importlib.metadata import entry_points
    return {e.name: e for e in entry_points(group="console_scripts") if e.name.startswith("delta-")}


@pytest.mark.parametrize("cmd", sorted(HELP))
def test_long_commands_accept_their_options(cmd, capsys, monkeypatch, tmp_path):
    """The command's ``--help`` form, in this process (the installed entry point's main):
    argparse checks every option written before ``--help``."""
    argv = shlex.split(cmd.rstrip("&").strip())
    name = argv[0].split("/")[-1]
    # --help before --ros-args (what follows it goes to the nodes), else at the end
    k = argv.index("--ros-args") if "--ros-args" in argv else len(argv)
    argv = [*argv[1:k], "--help", *argv[k:]]
    main = _entry_points()[name].load()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        main(argv)
    out = capsys.readouterr()
    assert e.value.code in (0, None), f"{cmd} --help: {out.err[-2000:]}"
    assert "usage:" in out.out


def test_make_prints_the_path_line():
    res = subprocess.run(["make", "-n", "run"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert 'export PATH="' in res.stdout and '/.venv/bin:$PATH"' in res.stdout
    assert RUN[0] in README.read_text()
