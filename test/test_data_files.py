"""CSV reading and writing (delta_dynamics.data_files: csv_io, trajectory, joint_data): exact round trips, tolerant parsing
(column order, extra columns, comments), errors that name file, line and column, and the
smoothing spline used when a trajectory has positions only."""
import os

import numpy as np
import pytest

from delta_dynamics.motion.trajectories import circle, pick_place
from delta_dynamics.data_files.csv_io import CsvError, format_csv, read_csv
from delta_dynamics.data_files.joint_data import JOINT_COLUMNS, read_joint_csv, write_joint_data
from delta_dynamics.data_files.trajectory import (TRAJECTORY_COLUMNS, derivatives_from_positions, estimate_noise,
                                                  read_trajectory, write_trajectory)


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


GOOD = "t,x,y,z\n0,0,0,-0.8\n0.001,0.001,0,-0.8\n0.002,0.002,0,-0.8\n0.003,0.003,0,-0.8\n"


def test_trajectory_round_trip_is_exact(tmp_path):
    tr = circle(ramp=0.5, duration=1.0)
    p = write_trajectory(tmp_path / "c.csv", tr)
    assert p.read_text().splitlines()[0] == ",".join(TRAJECTORY_COLUMNS)
    back = read_trajectory(p)
    assert not back.derived
    for a, b in ((tr.t, back.trajectory.t), (tr.X, back.trajectory.X),
                 (tr.Xd, back.trajectory.Xd), (tr.Xdd, back.trajectory.Xdd)):
        assert np.array_equal(a, b)                      # bit for bit
    assert back.table.lines[0] == 2 and back.table.lines[-1] == len(tr) + 1


def test_joint_data_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    t = np.arange(5) * 0.01
    q, qd, qdd, tau = (rng.normal(size=(5, 3)) for _ in range(4))
    p = write_joint_data(tmp_path / "j.csv", t, q, tau, qd=qd, qdd=qdd)
    assert p.read_text().splitlines()[0] == ",".join(JOINT_COLUMNS)
    jd = read_joint_csv(p)
    assert np.array_equal(jd.t, t) and np.array_equal(jd.q, q) and np.array_equal(jd.qd, qd)
    assert np.array_equal(jd.qdd, qdd) and np.array_equal(jd.tau, tau)
    # accelerations are optional for the forward simulation
    text = "t,q1,q2,q3,qd1,qd2,qd3,tau1,tau2,tau3\n0,0,0,0,0,0,0,1,2,3\n1,0,0,0,0,0,0,1,2,3\n"
    jd = read_joint_csv(write(tmp_path / "k.csv", text))
    assert jd.qdd is None and jd.tau.tolist() == [[1, 2, 3]] * 2


def test_columns_by_name_extra_columns_comments_and_bom(tmp_path):
    text = ("\ufeff# made by hand\n"
            "\n"
            "z , note, y,x,t\n"
            "-0.8,start,0,0,0\n"
            "# a comment between rows\n"
            "-0.8,,0,0.001,0.001\n"
            "-0.8,x,0,0.002,0.002\n"
            "\n"
            "-0.8,end,0,0.003,0.003\n")
    tab = read_csv(write(tmp_path / "a.csv", text), ("t", "x", "y", "z"))
    assert tab.header == ("z", "note", "y", "x", "t") and tab.header_line == 3
    assert tab.columns["x"].tolist() == [0, 0.001, 0.002, 0.003]
    assert tab.lines.tolist() == [4, 6, 7, 9]
    assert tab.where(3) == f"{tmp_path / 'a.csv'}:9 (t = 0.003 s)"


@pytest.mark.parametrize("text, message", [
    (GOOD.replace("0.002,0,-0.8", "abc,0,-0.8"), ":4: column 'x': not a number: 'abc'"),
    (GOOD.replace("0.002,0,-0.8", ",0,-0.8"), ":4: column 'x': empty value"),
    (GOOD.replace("0.003,0,-0.8", "0.003,nan,-0.8"), ":5: column 'y': not a finite number: 'nan'"),
    (GOOD.replace("0.003,0,-0.8", "0.003,0,-inf"), ":5: column 'z': not a finite number: '-inf'"),
    (GOOD.replace("0.001,0.001,0,-0.8", "0.001,0.001,0"), ":3: column 'z' is missing: the row has 3 fields, the header 4"),
    (GOOD.replace("0.001,0.001,0,-0.8", "0.001,0.001,0,-0.8,7"), ":3: the row has 5 fields, the header only 4"),
    (GOOD.replace("t,x,y,z", "t,x,z"), ":1: missing column 'y'"),
    (GOOD.replace("t,x,y,z", "t,x,y,y"), ":1: column 'y' appears twice"),
    (GOOD.replace("t,x,y,z", "t,x,,y,z"), ":1: header field 3 is empty"),
    (GOOD.replace("0.002,0.002", "0.001,0.002"), ":4: column 't': 0.001 is not after the previous row's 0.001"),
    ("t,x,y,z\n0,0,0,-0.8\n1,0,0,-0.8\n", ": 2 data rows, need at least 4"),
    ("# nothing\n\n", ": empty file: expected a header line"),
])
def test_malformed_csv_names_line_and_column(tmp_path, text, message):
    p = write(tmp_path / "bad.csv", text)
    with pytest.raises(CsvError) as e:
        read_trajectory(p)
    assert str(e.value).startswith(str(p) + message)


def test_error_attributes(tmp_path):
    p = write(tmp_path / "bad.csv", GOOD.replace("0.002,0,-0.8", "1e,0,-0.8"))
    with pytest.raises(CsvError) as e:
        read_trajectory(p)
    assert (e.value.path, e.value.line, e.value.column) == (str(p), 4, "x")
    assert isinstance(e.value, ValueError)


def test_partial_derivative_columns_are_refused(tmp_path):
    text = "t,x,y,z,xd,yd,zd\n" + "".join(f"{k},0,0,-0.8,0,0,0\n" for k in range(5))
    with pytest.raises(CsvError, match=r":1: missing columns 'xdd', 'ydd', 'zdd': give all of "):
        read_trajectory(write(tmp_path / "p.csv", text))


def test_missing_file_is_an_oserror(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_trajectory(tmp_path / "nope.csv")


def test_format_refuses_nan_and_writes_no_negative_zero():
    with pytest.raises(ValueError, match="non-finite"):
        format_csv(("a", "b"), [[1.0, float("nan")]])
    assert format_csv(("a", "b"), [[-0.0, 1e-5]]) == "a,b\n0.0,1e-05\n"


def test_write_is_atomic_and_leaves_no_temporary_files(tmp_path):
    target = write(tmp_path / "out.csv", "precious\n")
    with pytest.raises(ValueError):
        write_joint_data(target, [0.0, 1.0], np.zeros((2, 3)), np.zeros((2, 3)),
                         qd=np.full((2, 3), np.inf), qdd=np.zeros((2, 3)))
    assert target.read_text() == "precious\n"
    assert sorted(os.listdir(tmp_path)) == ["out.csv"]


# ----------------------------------------------------------------------------- positions only

def positions_only(tmp_path, tr, fmt="{!r}"):
    rows = "".join(",".join(fmt.format(float(v)) for v in (t, *x)) + "\n" for t, x in zip(tr.t, tr.X))
    return write(tmp_path / "xyz.csv", "t,x,y,z\n" + rows)


@pytest.mark.parametrize("make", [lambda: circle(ramp=1.0, duration=3.0),
                                  lambda: circle(period=2.0, duration=2.0),
                                  lambda: pick_place()])
def test_positions_only_exact_data_is_interpolated(tmp_path, make):
    tr = make()
    back = read_trajectory(positions_only(tmp_path, tr))
    assert back.derived and max(back.smoothing) == 0.0         # exact numbers: no smoothing
    got = back.trajectory
    assert np.array_equal(got.X, tr.X)
    assert np.abs(got.Xd - tr.Xd).max() < 1e-5 * np.abs(tr.Xd).max()
    assert np.abs(got.Xdd - tr.Xdd).max() < 1e-4 * np.abs(tr.Xdd).max()


def test_positions_only_rounded_data_is_smoothed(tmp_path):
    # positions rounded to 0.1 um, as a tool printing "%.7f" would write them
    tr = circle(ramp=1.0, duration=3.0)
    back = read_trajectory(positions_only(tmp_path, tr, "{:.7f}"))
    sig = back.smoothing
    assert 0.5e-7 / 12 ** 0.5 < sig[0] < 2e-7 / 12 ** 0.5 and sig[2] == 0.0   # z is constant
    err_auto = np.abs(back.trajectory.Xdd - tr.Xdd).max()
    interp = read_trajectory(tmp_path / "xyz.csv", smoothing=0)
    err_interp = np.abs(interp.trajectory.Xdd - tr.Xdd).max()
    assert err_auto < 0.01 * np.abs(tr.Xdd).max()
    assert err_auto < 0.1 * err_interp                          # smoothing pays off


def test_noise_estimate():
    rng = np.random.default_rng(3)
    t = np.linspace(0, 2, 2001)
    x = 0.1 * np.sin(3 * t) + 2e-6 * rng.standard_normal(len(t))
    assert estimate_noise(x) == pytest.approx(2e-6, rel=0.1)
    assert estimate_noise(0.1 * np.sin(3 * t)) < 1e-12
    assert estimate_noise([1.0, 2.0, 3.0]) == 0.0


def test_spline_needs_four_samples_and_valid_smoothing():
    t = np.arange(4) * 0.1
    X = np.stack((t ** 2, 0 * t, 0 * t - 0.8), 1)
    Xd, Xdd, _ = derivatives_from_positions(t, X)               # cubic for 4-5 samples
    assert np.allclose(Xd[:, 0], 2 * t) and np.allclose(Xdd[:, 0], 2.0)
    with pytest.raises(ValueError, match="at least 4"):
        derivatives_from_positions(t[:3], X[:3])
    with pytest.raises(ValueError, match="smoothing"):
        derivatives_from_positions(t, X, smoothing=-1.0)
