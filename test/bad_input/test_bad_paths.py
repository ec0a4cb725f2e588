"""Special files given where a file is read or written, for every reader and writer of the
stack (``delta_core.paths``): a FIFO, a socket, a character or block device, a directory, a
symlink loop, a dangling symlink, an unreadable file; for outputs also a read-only file. Each
is refused with one line naming the path and what it is, nothing blocks (a FIFO open used to
wait for a writer forever) and nothing is read or replaced.

Tables: READERS (the functions that read a file, each with every kind of SPECIALS),
WRITERS (the functions that write one, each with every kind of OUTPUT_SPECIALS). The command
lines and nodes have their own rows in the other modules of this folder. Every test has a
timeout: a regression fails instead of hanging the run.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from bad_input_harness import NT_ROBOT, OUTPUT_SPECIALS, SPECIALS
from delta_core.paths import (PathError, check_bag_files, check_output_dir, check_output_file,
                              check_readable_file, open_regular, read_bytes)

pytestmark = pytest.mark.timeout(120)
ROBOT_TEXT = NT_ROBOT.read_text(encoding="utf-8")
DRIVES = NT_ROBOT.parents[1] / "drives"


def _robot(p):
    from delta_core.robot_file import load_robot
    load_robot(p)


def _trajectory_csv(p):
    from delta_dynamics.data_files.trajectory import read_trajectory
    read_trajectory(p)


def _joint_csv(p):
    from delta_dynamics.data_files.joint_data import read_joint_csv
    read_joint_csv(p, velocities=True)


def _identification_csv(p):
    from delta_dynamics.data_files.joint_files import read_joint_data
    read_joint_data(p)


def _drives_config(p):
    from delta_hardware.canopen.config import load_drives_config
    load_drives_config(str(p))


def _eds(p):
    from delta_hardware.canopen.object_dictionary import load_eds
    load_eds(p, 1)


def _eds_in_drives_config(p):
    """A drives config whose ``eds:`` names the special file."""
    from delta_hardware.canopen.config import load_drives_config
    cfg = p.parent / "drives.yaml"
    cfg.write_text(f"base: {DRIVES / 'generic_cia402.yaml'}\neds: {p.name}\n")
    load_drives_config(str(cfg))


def _params_file(p):
    from delta_bringup.main import check_params_file
    why = check_params_file(str(p))
    raise ValueError(why)


def _urdf(p):
    from delta_core.text_input import read_text
    read_text(p, 1 << 20, "a URDF")


# (id, reader(path) -> raises, what the message calls the file)
READERS = [
    ("load_robot", _robot, "robot file"),
    ("read_trajectory", _trajectory_csv, "CSV file"),
    ("read_joint_data", _joint_csv, "CSV file"),
    ("identification read_joint_data", _identification_csv, ""),
    ("load_drives_config", _drives_config, "drives config"),
    ("load_eds", _eds, "EDS file"),
    ("drives config eds:", _eds_in_drives_config, "EDS file"),
    ("delta-bringup --params-file", _params_file, "parameter file"),
    ("URDF (delta-description check --urdf)", _urdf, "URDF"),
]
READER_CASES = [(r, k) for r in READERS for k in SPECIALS]


@pytest.mark.parametrize("reader, kind", READER_CASES, ids=[f"{r[0]}-{k}" for r, k in READER_CASES])
def test_every_reader_refuses_every_special_file(tmp_path, reader, kind):
    _, read, noun = reader
    make, words = SPECIALS[kind]
    p = tmp_path / ("in.yaml" if "csv" not in noun.lower() else "in.csv")
    if "EDS" in noun:
        p = tmp_path / "drive.eds"
    make(p)
    with pytest.raises(Exception) as e:            # noqa: PT011 - each reader has its error type
        read(p)
    text = str(e.value)
    assert words in text and str(p.name) in text, text
    assert "\n" not in text and len(text) < 600, text
    assert not isinstance(e.value, (TypeError, AttributeError, KeyError)), repr(e.value)


@pytest.mark.parametrize("kind", list(SPECIALS))
def test_the_path_check_names_each_kind(tmp_path, kind):
    make, words = SPECIALS[kind]
    p = tmp_path / "x.yaml"
    make(p)
    with pytest.raises(PathError) as e:
        check_readable_file(p, "a robot file")
    assert str(e.value).startswith(f"{p}: {words}"), str(e.value)
    if kind == "symlink-loop":
        assert "not found" not in str(e.value)


def test_a_fifo_put_in_place_after_the_check_is_refused_without_blocking(tmp_path, monkeypatch):
    """The race between the check and the open: O_NONBLOCK makes the open return at once,
    fstat of the descriptor refuses what is not a regular file."""
    import delta_core.paths as paths
    p = tmp_path / "swapped.yaml"
    os.mkfifo(p)
    monkeypatch.setattr(paths, "check_readable_file", lambda path, what="a file": Path(path))
    with pytest.raises(PathError, match=r"swapped.yaml: a FIFO \(named pipe\), not a robot file"):
        paths.open_regular(p, "a robot file")


def test_an_unreadable_file_is_refused_by_name(tmp_path):
    """As another user (root reads everything): a forked child drops to nobody."""
    p = tmp_path / "secret.yaml"
    p.write_text(ROBOT_TEXT)
    p.chmod(0o600)
    tmp_path.chmod(0o755)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                                    # child: no pytest, just the answer
        try:
            os.close(r)
            os.setgid(65534)
            os.setuid(65534)
            try:
                check_readable_file(p, "a robot file")
                msg = "accepted"
            except PathError as e:
                msg = str(e)
            os.write(w, msg.encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        msg = f.read()
    os.waitpid(pid, 0)
    assert msg == f"{p}: not readable (permission denied)", msg


def test_read_bytes_bounds_the_size(tmp_path):
    p = tmp_path / "big.eds"
    with open(p, "wb") as f:
        f.truncate(10 << 30)                        # sparse: 10 GB, no disk
    with pytest.raises(PathError, match=r"big.eds: 10737418240 bytes, more than the 1024 bytes allowed"):
        read_bytes(p, 1024, "an EDS file")


# ----------------------------------------------------------------------------- bags

def _bag_with(tmp_path, kind, which):
    """A rosbag2 folder whose ``metadata.yaml`` or storage file (``which``) is special."""
    bag = tmp_path / "bag"
    bag.mkdir()
    meta = bag / "metadata.yaml"
    if which == "metadata":
        SPECIALS[kind][0](meta)
    else:
        meta.write_text("rosbag2_bagfile_information:\n  version: 5\n  storage_identifier: sqlite3\n"
                        "  relative_file_paths: [bag_0.db3]\n")
        SPECIALS[kind][0](bag / "bag_0.db3")
    return bag


@pytest.mark.parametrize("which", ["metadata", "storage"])
@pytest.mark.parametrize("kind", list(SPECIALS))
def test_a_bag_with_a_special_file_is_refused(tmp_path, kind, which):
    from delta_core.robot_file import load_robot
    from delta_dynamics.data_files.bag import BagError
    from delta_dynamics.data_files.joint_files import read_joint_data
    bag = _bag_with(tmp_path, kind, which)
    name = "metadata.yaml" if which == "metadata" else "bag_0.db3"
    with pytest.raises(BagError) as e:
        read_joint_data(bag, robot=load_robot("nt_robot"))
    text = str(e.value)
    assert name in text and SPECIALS[kind][1] in text, text
    with pytest.raises(PathError):
        check_bag_files(bag)


# ----------------------------------------------------------------------------- writers

def _atomic(p):
    from delta_core.atomic_file import atomic_write_text
    atomic_write_text(p, "new\n")


def _save_robot(p):
    from delta_core.robot_file import load_robot, save_robot
    save_robot(load_robot("nt_robot"), p)


def _write_trajectory(p):
    from delta_dynamics.motion.trajectories import circle
    from delta_dynamics.data_files.trajectory import write_trajectory
    write_trajectory(p, circle(duration=0.01))


def _compare_plot(p):
    import numpy as np
    from delta_dynamics.compare import Comparison, plot
    t = np.linspace(0.0, 1.0, 3)
    torques = {"explicit": np.zeros((3, 3)), "staicu": np.ones((3, 3))}
    plot(Comparison("explicit", t, torques, {"explicit": 0.0, "staicu": 0.0}, 0.0), p)


def _write_eds(p):
    from delta_hardware.canopen.object_dictionary import write_eds
    write_eds(p)


WRITERS = [("atomic_write_text", _atomic), ("save_robot", _save_robot),
           ("write_trajectory", _write_trajectory), ("compare plot", _compare_plot), ("write_eds", _write_eds)]
WRITER_CASES = [(w, k) for w in WRITERS for k in OUTPUT_SPECIALS]


@pytest.mark.parametrize("writer, kind", WRITER_CASES, ids=[f"{w[0]}-{k}" for w, k in WRITER_CASES])
def test_every_writer_refuses_every_special_output(tmp_path, writer, kind):
    _, write = writer
    make, words = OUTPUT_SPECIALS[kind]
    p = tmp_path / "out.file"
    make(p)
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(PathError) as e:
        write(p)
    assert words in str(e.value) and str(p) in str(e.value), str(e.value)
    assert sorted(os.listdir(tmp_path)) == before                 # no temporary file left
    if kind == "read-only":
        assert p.read_text() == "keep me\n"
    if kind == "char-device":
        assert Path("/dev/null").is_char_device()                 # not replaced by a file


def test_output_folders(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(PathError, match="is a regular file, not a folder"):
        check_output_dir(tmp_path / "f")
    with pytest.raises(PathError, match="f is a regular file, not a folder"):
        check_output_file(tmp_path / "f" / "sub" / "out.csv")
    os.mkfifo(tmp_path / "p")
    with pytest.raises(PathError, match="is a FIFO"):
        check_output_dir(tmp_path / "p")
    assert check_output_dir(tmp_path / "new" / "deeper") == tmp_path / "new" / "deeper"
    ro = tmp_path / "ro"
    ro.mkdir()
    shutil.copy(NT_ROBOT, ro / "r.yaml")
    assert check_output_file(ro / "r.yaml") == ro / "r.yaml"
    with open_regular(ro / "r.yaml", "a robot file") as f:        # a regular file still opens
        assert f.read(4) == ROBOT_TEXT.encode()[:4]


# ----------------------------------------------------------------------------- command lines

# (id, module, arguments ({fifo}: a FIFO in the test's folder), expected text of the error)
FIFO_COMMANDS = [
    ("delta-bringup --robot", "delta_bringup.main", ["--robot", "{fifo}"],
     "--robot: {fifo}: a FIFO (named pipe), not a robot file"),
    ("delta-bringup --params-file", "delta_bringup.main", ["--params-file", "{fifo}"],
     "--params-file {fifo}: a FIFO (named pipe), not a ROS 2 parameter file"),
    ("delta-bringup --demo --out", "delta_bringup.main", ["--demo", "--out", "{fifo}"],
     "--out {fifo}: is a FIFO (named pipe), not a folder"),
    ("delta-dynamics ik --robot", "delta_dynamics.cli", ["ik", "0", "0", "-0.8", "--robot", "{fifo}"],
     "{fifo}: a FIFO (named pipe), not a robot file"),
    ("delta-dynamics trajectory --robot", "delta_dynamics.cli",
     ["trajectory", "lissajous", "--robot", "{fifo}", "--out", "{dir}/t.csv"], "{fifo}: a FIFO (named pipe)"),
    ("delta-dynamics trajectory --out", "delta_dynamics.cli", ["trajectory", "circle", "--out", "{fifo}"],
     "argument --out: {fifo}: is a FIFO (named pipe); cannot write"),
    ("delta-description check --robot", "delta_description.cli", ["check", "--robot", "{fifo}"],
     "{fifo}: a FIFO (named pipe), not a robot file"),
    ("delta-identify --data", "delta_dynamics.identification.cli",
     ["--robot", "nt_robot", "--data", "{fifo}", "--no-progress"], "{fifo}: a FIFO (named pipe), not a data file"),
    ("delta-drive-sim --robot", "delta_hardware.canopen.sim_cli", ["--robot", "{fifo}", "--duration", "0.1"],
     "argument --robot: {fifo}: a FIFO (named pipe), not a robot file"),
    ("delta-drive-sim --drives-config", "delta_hardware.canopen.sim_cli",
     ["--drives-config", "{fifo}", "--duration", "0.1"], "{fifo}: a FIFO (named pipe), not a drives config"),
]


@pytest.mark.parametrize("case", FIFO_COMMANDS, ids=[c[0] for c in FIFO_COMMANDS])
def test_a_fifo_on_the_command_line_is_refused_not_waited_for(tmp_path, case):
    """The real command as a subprocess; a FIFO used to block it in open() (delta-bringup then
    ignored Ctrl-C). The refusal comes at once; the timeout only turns a regression into a
    failure instead of a hung run (on an idle machine each takes about a second)."""
    import subprocess
    import sys
    _, module, args, expect = case
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    fill = lambda s: s.replace("{fifo}", str(fifo)).replace("{dir}", str(tmp_path))  # noqa: E731
    try:
        r = subprocess.run([sys.executable, "-m", module, *map(fill, args)], capture_output=True, text=True,
                           timeout=100, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{module} {' '.join(map(fill, args))}: still waiting after 100 s (blocked on the FIFO)")
    assert r.returncode == 2, r.stdout[-2000:] + r.stderr[-2000:]
    assert fill(expect) in r.stderr, r.stderr[-2000:]
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
