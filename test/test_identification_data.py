"""Data in: CSV and rosbag2 (sqlite3 and mcap) reading, time-base checks, preprocessing."""
import numpy as np
import pytest

from delta_core.robot_file import load_robot
from delta_dynamics.rotary.model import RotaryModel
from delta_dynamics.identification import IdentificationError
from delta_dynamics.data_files.csv_io import DataFileError
from delta_dynamics.data_files import bag as B
from delta_dynamics.data_files import joint_files as F
from delta_dynamics.data_files import joint_data as J
from delta_dynamics.identification import preprocess as D
from delta_dynamics.identification import pipeline as P
from delta_dynamics.identification import synthetic
from delta_dynamics.rotary.identification import parameter_set

from test_identification import EXCITE, VALIDATE, fourier

ROBOT = load_robot("nt_robot")
NAMES = ROBOT.joint_names


@pytest.fixture(scope="module")
def model():
    return RotaryModel(ROBOT)


@pytest.fixture(scope="module")
def truth(model):
    return synthetic.perturbed_model(model, seed=1)


@pytest.fixture(scope="module")
def short(truth):
    """6 s of excitation data (for the bags)."""
    data, _ = synthetic.open_loop_data(truth, fourier(EXCITE), duration=6.0, seed=11)
    return data


@pytest.fixture(scope="module")
def vproblem(model, truth):
    data, _ = synthetic.open_loop_data(truth, fourier(VALIDATE), duration=6.0, seed=12)
    return P.build_problem(model, D.preprocess(data), parameter_set())


def fit(model, data, vproblem=None, method="ols", pre=None):
    prob = P.build_problem(model, D.preprocess(data, pre), parameter_set())
    return P.identify(prob, method, validation=vproblem)


# ----------------------------------------------------------------------------- CSV

def test_csv_round_trip_and_free_column_order(tmp_path, short):
    p = J.write_joint_data(tmp_path / "a.csv", short.t, short.q, short.tau)
    d = J.read_joint_csv(p)
    assert np.allclose(d.q, short.q, atol=1e-11) and np.allclose(d.tau, short.tau, atol=1e-9)
    assert d.qd is None and d.where(0) == "line 2"
    # reordered columns, an extra column, comments and blank lines
    lines = ["# recorded by a test", "tau3,q1,extra,t,q2,tau1,q3,tau2"]
    for k in range(0, 300):
        lines.append(f"{short.tau[k, 2]},{short.q[k, 0]},7,{short.t[k]},{short.q[k, 1]},{short.tau[k, 0]},"
                     f"{short.q[k, 2]},{short.tau[k, 1]}")
        if k == 100:
            lines += ["", "# a comment inside"]
    (tmp_path / "b.csv").write_text("\n".join(lines) + "\n")
    d = J.read_joint_csv(tmp_path / "b.csv")
    assert np.allclose(d.q, short.q[:300]) and np.allclose(d.tau, short.tau[:300])
    assert d.where(0) == "line 3" and d.where(101) == "line 106"   # line numbers survive comments
    (tmp_path / "c.csv").write_text("\n".join([lines[0], lines[1].upper()] + lines[2:]) + "\n")
    assert np.array_equal(J.read_joint_csv(tmp_path / "c.csv").q, d.q)     # column names in any case


def test_csv_velocities_are_used(tmp_path, model, truth):
    """Given q_d and q_dd columns (exact) are used instead of differentiating."""
    traj = fourier(EXCITE)
    t = np.arange(3001) * 1e-3
    q, qd, qdd = traj.evaluate(t)
    from delta_dynamics.rotary.dynamics import cartesian_state, inverse_dynamics
    tau = inverse_dynamics(truth, *cartesian_state(truth, q, qd, qdd))
    p = J.write_joint_data(tmp_path / "v.csv", t, q, tau, qd=qd, qdd=qdd)
    d = J.read_joint_csv(p)
    assert d.qd is not None and d.qdd is not None
    res = fit(model, d, pre=D.Preprocessing(derivative="central"))
    assert P.parameter_error(res.values, truth.params.as_vector()).max() < 1e-6


@pytest.mark.parametrize("content, message", [
    ("t,q1,q2,q3,tau1,tau2\n0,0,0,0,0,0\n", ":1: missing column 'tau3'"),
    ("t,q1,q2,q3,tau1,tau2,tau3\n0,0,0,0,0,0,0\n0.001,0,0,nan,0,0,0\n", ":3: column 'q3': not a finite number: 'nan'"),
    ("t,q1,q2,q3,tau1,tau2,tau3\n0,0,0,0,0,0,0\n0.001,0,0,x,0,0,0\n", ":3: column 'q3': not a number: 'x'"),
    ("t,q1,q2,q3,tau1,tau2,tau3\n0,0,0,0,0,0,0\n0.001,0,0,0,0,0\n", ":3: column 'tau3' is missing: the row has 6 fields, the header 7"),
    ("", "empty file"),
    ("t,q1,q2,q3,tau1,tau2,tau3\n", ": 0 data rows, need at least 1"),
    ("t,q1,q2,q3,tau1,tau2,tau3,qdd1,qdd2,qdd3\n0,0,0,0,0,0,0,0,0,0\n", "without velocities"),
])
def test_csv_errors(tmp_path, content, message):
    p = tmp_path / "bad.csv"
    p.write_text(content)
    with pytest.raises(DataFileError) as e:
        J.read_joint_csv(p)
    assert message in str(e.value) and str(p) in str(e.value)


def test_missing_file(tmp_path):
    with pytest.raises(DataFileError, match="file not found"):
        F.read_joint_data(tmp_path / "nope.csv", ROBOT)
    with pytest.raises(DataFileError, match="file not found"):
        F.read_joint_data(tmp_path / "nope.mcap", ROBOT)


def test_too_few_samples(short):
    d = J.JointData(short.t[:50], short.q[:50], short.tau[:50], source="x.csv", unit="line", first=2)
    with pytest.raises(IdentificationError, match="too few samples: 50"):
        D.preprocess(d)
    d = J.JointData(short.t[:250], short.q[:250], short.tau[:250], source="x.csv")
    with pytest.raises(IdentificationError, match="too few usable samples after preprocessing"):
        D.preprocess(d)          # 2 x 100 samples trimmed at the ends


def test_nan_samples_are_named(short):
    tau = short.tau.copy()
    tau[123, 1] = np.nan
    d = J.JointData(short.t, short.q, tau, source="run.csv", unit="line", first=2)
    with pytest.raises(IdentificationError, match=r"run.csv: line 125: tau2 is"):
        D.preprocess(d)


# ----------------------------------------------------------------------------- time base

def test_duplicate_and_backwards_timestamps_are_reported(short, model, vproblem):
    t = short.t.copy()
    t[500] = t[499]                 # duplicate
    t[900] = t[880]                 # backwards
    d = J.JointData(t, short.q, short.tau, source="run.csv", unit="line", first=2)
    pre = D.preprocess(d)
    note = next(n for n in pre.notes if "duplicate" in n)
    assert "1 duplicate timestamp(s) (first at line 502" in note and "backwards (first at line 902" in note
    assert "2 sample(s) not in time order dropped" in note
    with pytest.raises(IdentificationError, match="duplicate"):
        D.preprocess(d, D.Preprocessing(strict_time=True))


def test_gaps_split_into_segments(model, vproblem, truth):
    long, _ = synthetic.open_loop_data(truth, fourier(EXCITE), duration=12.0, seed=13)
    keep = np.ones(len(long.t), bool)
    keep[5000:5400] = False         # 0.4 s missing
    d = J.JointData(long.t[keep], long.q[keep], long.tau[keep], source="gap.csv")
    pre = D.preprocess(d)
    assert len(pre.segments) == 2
    assert any("1 gap(s)" in n and "2 segments" in n for n in pre.notes)
    res = fit(model, d, vproblem)
    assert np.all(res.validation["fitness"] >= 0.995)
    assert P.parameter_error(res.values, truth.params.as_vector()).max() < 0.02


def test_irregular_timestamps_are_resampled(truth, model, vproblem):
    """Time stamps with +-30 % jitter (as a ROS callback would give): resampled, same fit."""
    rng = np.random.default_rng(4)
    traj = fourier(EXCITE)
    t = np.cumsum(np.full(6000, 1e-3) * (1 + 0.3 * rng.uniform(-1, 1, 6000)))
    q, qd, qdd = traj.evaluate(t)
    from delta_dynamics.rotary.dynamics import cartesian_state, inverse_dynamics
    tau = inverse_dynamics(truth, *cartesian_state(truth, q, qd, qdd))
    d = synthetic.measure(t, q, tau, seed=5)
    pre = D.preprocess(d)
    assert any("resampled" in n for n in pre.notes)
    assert np.allclose(np.diff(pre.t), np.median(np.diff(t)))
    res = fit(model, d, vproblem)
    assert np.all(res.validation["fitness"] >= 0.995)
    assert P.parameter_error(res.values, truth.params.as_vector()).max() < 0.02


def test_cutoff_above_nyquist(short):
    with pytest.raises(IdentificationError, match="Nyquist"):
        D.preprocess(short, D.Preprocessing(cutoff=600.0))


# ----------------------------------------------------------------------------- rosbag2

@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
def test_bag_identifies_like_the_csv(tmp_path, storage, short, model, vproblem):
    """Extra joints in the messages and a different joint order: matched by name."""
    order = [2, 0, 1]
    bag = B.write_bag(tmp_path / f"run_{storage}", short.t, short.q[:, order], short.tau[:, order],
                      [NAMES[i] for i in order], topic="/robot/joint_states", storage=storage, extra_joints=2)
    d = F.read_joint_data(bag, ROBOT, topic="/robot/joint_states")
    assert np.allclose(d.q, short.q) and np.allclose(d.tau, short.tau)
    assert np.allclose(d.t, short.t - short.t[0], atol=1e-9)
    from_bag = fit(model, d, vproblem)
    from_csv = fit(model, short, vproblem)
    assert np.allclose(from_bag.values, from_csv.values, rtol=1e-6)
    assert np.all(from_bag.validation["fitness"] >= 0.995)
    # the storage file on its own opens too
    f = next(bag.glob("*.mcap" if storage == "mcap" else "*.db3"))
    assert np.allclose(F.read_joint_data(f, ROBOT, topic="/robot/joint_states").q, short.q)


def test_bag_effort_as_current(tmp_path, short):
    k = ROBOT.mass.motor.torque_constant * ROBOT.mass.motor.gear_ratio
    bag = B.write_bag(tmp_path / "cur", short.t[:500], short.q[:500], short.tau[:500] / k, NAMES, storage="mcap")
    d = F.read_joint_data(bag, ROBOT, effort="current")
    assert np.allclose(d.tau, short.tau[:500])
    assert "current" in d.notes[0]


def test_bag_errors(tmp_path, short):
    bag = B.write_bag(tmp_path / "b", short.t[:200], short.q[:200], short.tau[:200], NAMES, storage="mcap")
    with pytest.raises(DataFileError) as e:
        F.read_joint_data(bag, ROBOT, topic="/nope")
    assert "no topic /nope" in str(e.value) and "/joint_states (sensor_msgs/msg/JointState)" in str(e.value)
    noeff = B.write_bag(tmp_path / "noeff", short.t[:200], short.q[:200], None, NAMES, storage="sqlite3")
    with pytest.raises(DataFileError, match="JointState without effort"):
        F.read_joint_data(noeff, ROBOT)
    other = B.write_bag(tmp_path / "other", short.t[:200], short.q[:200], short.tau[:200],
                        ["a", "b", "c"], storage="mcap")
    with pytest.raises(DataFileError) as e:
        F.read_joint_data(other, ROBOT)
    assert "no joint 'arm_1_joint', 'arm_2_joint', 'arm_3_joint'" in str(e.value) and "message 0" in str(e.value)
    (tmp_path / "junk.mcap").write_bytes(b"not a bag")
    with pytest.raises(DataFileError, match="not a readable rosbag2 bag"):
        F.read_joint_data(tmp_path / "junk.mcap", ROBOT)
    (tmp_path / "emptydir").mkdir()
    with pytest.raises(DataFileError, match="without metadata.yaml"):
        F.read_joint_data(tmp_path / "emptydir", ROBOT)


def test_bag_with_another_message_type(tmp_path):
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore
    store = get_typestore(Stores.ROS2_JAZZY)
    with Writer(tmp_path / "s", version=9, storage_plugin=StoragePlugin.MCAP) as w:
        c = w.add_connection("/joint_states", "std_msgs/msg/String", typestore=store)
        w.write(c, 1, store.serialize_cdr(store.types["std_msgs/msg/String"](data="x"), "std_msgs/msg/String"))
    with pytest.raises(DataFileError, match="carries std_msgs/msg/String, not sensor_msgs/msg/JointState"):
        F.read_joint_data(tmp_path / "s", ROBOT)


def test_bag_receive_time(tmp_path, short):
    """stamp='receive' uses the bag time stamps (here the same clock)."""
    bag = B.write_bag(tmp_path / "r", short.t[:300], short.q[:300], short.tau[:300], NAMES, storage="mcap")
    a = F.read_joint_data(bag, ROBOT, stamp="receive")
    b = F.read_joint_data(bag, ROBOT, stamp="header")
    assert np.allclose(a.t, b.t)
