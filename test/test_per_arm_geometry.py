"""Per-arm geometry (``geometry.per_arm``): the robot file validates it with one-line errors,
the kinematics of both kinds honour it (IK and FK inverse of each other, the Jacobian their
derivative), and a file without it takes the unchanged closed forms."""
import copy

import numpy as np
import pytest

from delta_core.robot_file import RobotFileError, load_robot, parse_robot
from delta_dynamics import algorithms as A
from delta_dynamics.kinds import model_for

PERTURBED = {
    "rotary": [{"joint_offset": 0.01, "forearm_length": 0.803}, {"base_radius": 0.201, "upper_arm_length": 0.341},
               {"platform_radius": 0.046}],
    "linear": [{"joint_offset": 0.002, "rod_length": 0.216}, {"rail_radius": 0.1262}, {}],
}
PRESETS = {"rotary": "nt_robot", "linear": "colombo2020"}


def with_per_arm(kind, per_arm):
    d = copy.deepcopy(load_robot(PRESETS[kind]).to_dict())
    d["geometry"]["per_arm"] = per_arm
    return parse_robot(d, "robot.yaml")


@pytest.mark.parametrize("kind", ["rotary", "linear"])
def test_ik_fk_jacobian_with_per_arm(kind):
    m = model_for(with_per_arm(kind, PERTURBED[kind]))
    assert m.arms is not None
    X = A.sample_workspace(m, 100, seed=3)
    q = A.inverse_kinematics(m, X)
    np.testing.assert_allclose(A.forward_kinematics(m, q), X, atol=1e-12)
    np.testing.assert_allclose(A.forward_kinematics(m, q[0]), X[0], atol=1e-12)
    # the per-arm model differs from the symmetric one where the file says so
    m0 = model_for(PRESETS[kind])
    Xc = A.workspace_centre(m0)
    assert np.abs(A.inverse_kinematics(m0, Xc) - A.inverse_kinematics(m, Xc)).max() > 1e-4
    # the Jacobian is the derivative of the inverse kinematics (central differences)
    eps = 1e-7
    J = A.jacobian(m, X[:4])
    Jn = np.stack([(A.inverse_kinematics(m, X[:4] + eps * e) - A.inverse_kinematics(m, X[:4] - eps * e)) / (2 * eps)
                   for e in np.eye(3)], -1)
    np.testing.assert_allclose(J, Jn, atol=1e-6)


@pytest.mark.parametrize("kind", ["rotary", "linear"])
def test_joint_offset_shifts_the_joint_position(kind):
    off = 0.01 if kind == "rotary" else 0.002
    m = model_for(with_per_arm(kind, [{"joint_offset": off}, {}, {}]))
    m0 = model_for(PRESETS[kind])
    X = A.sample_workspace(m0, 20, seed=1)
    dq = A.inverse_kinematics(m0, X) - A.inverse_kinematics(m, X)
    np.testing.assert_allclose(dq, np.tile([off, 0.0, 0.0], (20, 1)), atol=1e-12)


@pytest.mark.parametrize("kind", ["rotary", "linear"])
def test_equal_per_arm_matches_the_closed_form(kind):
    m = model_for(with_per_arm(kind, [{}, {}, {}]))
    m0 = model_for(PRESETS[kind])
    assert m0.arms is None
    X = A.sample_workspace(m0, 200, seed=2)
    np.testing.assert_allclose(A.inverse_kinematics(m, X), A.inverse_kinematics(m0, X), atol=1e-13)
    np.testing.assert_allclose(A.forward_kinematics(m, A.inverse_kinematics(m0, X)), X, atol=1e-13)
    np.testing.assert_allclose(A.jacobian(m, X), A.jacobian(m0, X), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("kind", ["rotary", "linear"])
def test_round_trip_through_the_file(kind, tmp_path):
    from delta_core.robot_file import save_robot
    robot = with_per_arm(kind, PERTURBED[kind])
    save_robot(robot, tmp_path / "r.yaml")
    again = load_robot(str(tmp_path / "r.yaml"))
    assert again.geometry.per_arm == robot.geometry.per_arm
    assert "per_arm" not in load_robot(PRESETS[kind]).to_dict()["geometry"]


@pytest.mark.parametrize("kind", ["rotary", "linear"])
@pytest.mark.parametrize("bad, words", [
    ([{}], "geometry.per_arm must be a list of 3 mappings"),
    ("x", "geometry.per_arm must be a list of 3 mappings"),
    ([{"bogus": 1}, {}, {}], "geometry.per_arm[0].bogus is not a known per-arm field"),
    ([{}, {"joint_offset": "a"}, {}], "geometry.per_arm[1].joint_offset must be a number"),
    ([{}, {}, [1]], "geometry.per_arm[2] must be a mapping"),
])
def test_bad_per_arm_is_one_line(kind, bad, words):
    with pytest.raises(RobotFileError) as e:
        with_per_arm(kind, bad)
    assert words in str(e.value) and "\n" not in str(e.value) and str(e.value).startswith("robot.yaml: ")


@pytest.mark.parametrize("kind, field", [("rotary", "forearm_length"), ("linear", "rod_length")])
def test_bad_per_arm_length(kind, field):
    with pytest.raises(RobotFileError, match=rf"geometry.per_arm\[1\].{field} must be > 0"):
        with_per_arm(kind, [{}, {field: -0.2}, {}])
    with pytest.raises(RobotFileError, match=rf"geometry.per_arm\[0\].{field} must lie within"):
        with_per_arm(kind, [{field: 1e6}, {}, {}])
