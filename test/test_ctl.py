"""delta-ctl and delta-bringup without a running stack: bad arguments and input files exit 2
with one line, a missing ROS install says what to install (no traceback). The commands against
running stacks: test_namespaces.py."""
import os
import subprocess
import sys

import pytest

from delta_bringup.ctl import main as ctl_main


@pytest.mark.parametrize("args, message", [
    (["move", "0.1", "0.2"], "move takes a point x y z"),
    (["move", "0.1", "0.2", "-0.7", "--joints", "0", "0", "0"], "move takes a point x y z"),
    (["move", "0.1", "nan", "-0.7"], "must be finite"),
    (["--namespace", "1r", "status"], "namespace must be"),
    (["--prefix", "r1/", "status"], "prefix must be"),
    (["--timeout", "0", "status"], "must be > 0"),
    (["pick", "0.1", "0", "-0.8", "-0.1", "0"], "pick: error: the following arguments are required"),
    (["pick", "0.1", "0", "-0.8", "-0.1", "0", "inf"], "must be finite"),
    (["pick", "0.1", "0", "-0.8", "-0.1", "0", "-0.8", "--cycles", "-2"], "pick --cycles must be a whole number"),
    (["push", "0", "0"], "the following arguments are required: F"),
    (["push", "0", "nan", "-30"], "must be finite"),
    (["push", "0", "0", "-30", "--for", "-1"], "must be > 0"),
    (["payload", "inf"], "must be finite"),
])
def test_bad_arguments_exit_2_with_one_line(args, message, capsys):
    with pytest.raises(SystemExit) as e:
        ctl_main(args)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_bad_trajectory_file_exits_2_naming_the_file(tmp_path, capsys):
    bad = tmp_path / "traj.csv"
    bad.write_text("t,x,y,z\n0,0,0,-0.7\n0.1,abc,0,-0.7\n")
    assert ctl_main(["run", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("delta-ctl: error: ") and "traj.csv" in err and "abc" in err
    assert ctl_main(["run", str(tmp_path / "missing.csv")]) == 2
    assert "missing.csv" in capsys.readouterr().err


BLOCK_ROS = ("import sys; sys.modules['rclpy'] = None; from {module} import main; sys.exit(main({args!r}))")


@pytest.mark.parametrize("module, args, prog", [("delta_bringup.main", [], "delta-bringup"),
                                                ("delta_bringup.ctl", ["status"], "delta-ctl")])
def test_without_ros_the_commands_say_what_to_install(module, args, prog):
    res = subprocess.run([sys.executable, "-c", BLOCK_ROS.format(module=module, args=args)], capture_output=True,
                         text=True, timeout=60, env=dict(os.environ))
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{prog}: error: the ROS 2 Python packages are not installed")
    assert "pip install '.[ros]'" in lines[0] and "Traceback" not in res.stderr


def test_bringup_namespace_and_prefix_are_checked(capsys):
    from delta_bringup.main import main as bringup_main, parse_args, ros_arguments
    with pytest.raises(SystemExit) as e:
        bringup_main(["--namespace", "9x"])
    assert e.value.code == 2 and "--namespace" in capsys.readouterr().err
    args, ros_args = parse_args(["--namespace", "line2/r1", "--prefix", "r1_"])
    out = ros_arguments(args, ros_args)
    assert out[out.index("-r") + 1] == "__ns:=/line2/r1" and "/clock:=/line2/r1/clock" in out
    assert "prefix:=r1_" in out


def test_the_ros_extra_pins_the_requirements_file():
    import re
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    setup = (root / "setup.py").read_text()
    assert "'ros': ros_requirements()" in setup and "delta-ctl=delta_bringup.ctl:main" in setup
    reqs = [line.split("#")[0].strip() for line in (root / "requirements-ros.txt").read_text().splitlines()]
    assert all(re.match(r"^ros-[a-z0-9-]+==[0-9.]+$", r) for r in reqs if r)
