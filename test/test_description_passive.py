"""The passive joint state (what the state publisher node republishes for robot_state_publisher)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from delta_description.passive_joints import (expand_joint_state, forearm_joint_names, full_joint_state,
                                              movable_joint_names, passive_joint_names)
from delta_core.robot_file import list_presets, load_robot
from delta_description.urdf_model import KinematicTree
from delta_description.xacro_urdf import robot_description
from delta_dynamics.rotary.kinematics import (UnreachableError, forward_kinematics, inverse_kinematics,
                                              passive_angles, sample_workspace)
from delta_dynamics.rotary.model import RotaryModel


@pytest.fixture(scope="module", params=[p for p in list_presets() if load_robot(p).type == "rotary"])
def model(request):
    return RotaryModel.from_robot(request.param)


def test_names():
    assert passive_joint_names()[:3] == ("platform_x", "platform_y", "platform_z")
    assert len(forearm_joint_names()) == 12 == len(set(forearm_joint_names()))
    assert forearm_joint_names()[:2] == ("forearm_1a_bend_joint", "forearm_1a_tilt_joint")


def test_state_publisher_output_has_every_non_fixed_urdf_joint(model):
    tree = KinematicTree(robot_description(model.robot))
    q = [0.3, 0.5, 0.45]
    # a JointState as the hardware node publishes it: other order, an unrelated joint, velocities
    names = ["gripper_joint", model.joint_names[2], model.joint_names[0], model.joint_names[1]]
    out = expand_joint_state(model, names, [0.0, q[2], q[0], q[1]], velocity=[0.0, 0.1, -0.2, 0.3])
    assert set(out.names) == set(tree.movable_joints)
    assert len(out.names) == len(out.position) == len(out.velocity) == len(tree.movable_joints)
    assert all(math.isfinite(v) for v in out.position + out.velocity)
    assert out.as_dict()[model.joint_names[0]] == 0.3
    assert out.velocity[:3] == pytest.approx((-0.2, 0.3, 0.1))
    assert out.position[3:6] == pytest.approx(tuple(forward_kinematics(model, q)), abs=1e-12)
    tree.link_poses(out.as_dict())                        # enough for every link's transform
    no_vel = expand_joint_state(model, names, [0.0, q[2], q[0], q[1]])
    assert no_vel.velocity is None and no_vel.position == out.position


def test_expand_rejects_incomplete_messages(model):
    with pytest.raises(ValueError, match=model.joint_names[1]):
        expand_joint_state(model, [model.joint_names[0], model.joint_names[2]], [0.1, 0.2])
    with pytest.raises(ValueError, match="positions"):
        expand_joint_state(model, list(model.joint_names), [0.1, 0.2])


def test_unreachable_arm_angles_raise():
    with pytest.raises(UnreachableError):
        full_joint_state(RotaryModel.from_robot("nt_robot"), [0.0, 0.0, 3.14])   # the forearms cannot meet


def test_forearm_angles_match_kinematics_passive_angles(model):
    for X in sample_workspace(model, 30, seed=5):
        q = inverse_kinematics(model, X)
        s = full_joint_state(model, q).as_dict()
        pa = passive_angles(model, X)
        for i in range(3):
            for side in "ab":
                assert s[f"forearm_{i + 1}{side}_bend_joint"] == pytest.approx(pa[i, 0], abs=1e-9)
                assert s[f"forearm_{i + 1}{side}_tilt_joint"] == pytest.approx(pa[i, 1], abs=1e-9)


def test_velocities_are_the_time_derivative_of_the_positions(model):
    """Along q(t) = q0 + t q_dot, every joint's velocity equals the central difference of its position."""
    rng = np.random.default_rng(2)
    h = 1e-6
    for X in sample_workspace(model, 10, seed=9, min_measure=0.05):
        q0 = inverse_kinematics(model, X)
        qd = rng.uniform(-2.0, 2.0, 3)
        s = full_joint_state(model, q0, qd)
        plus = np.array(full_joint_state(model, q0 + h * qd).position)
        minus = np.array(full_joint_state(model, q0 - h * qd).position)
        fd = (plus - minus) / (2 * h)
        assert np.array(s.velocity) == pytest.approx(fd, rel=1e-5, abs=1e-6)


def test_order_is_movable_joint_names():
    robot = load_robot("nt_robot")
    s = full_joint_state(RotaryModel(robot), [0.4, 0.4, 0.4])
    assert s.names == movable_joint_names(robot)
    # symmetric pose: the platform is on the axis, the three chains' angles are equal
    d = s.as_dict()
    assert d["platform_x"] == pytest.approx(0.0, abs=1e-12) and d["platform_y"] == pytest.approx(0.0, abs=1e-12)
    assert d["forearm_1a_bend_joint"] == pytest.approx(d["forearm_3b_bend_joint"], abs=1e-12)
    assert d["forearm_2a_tilt_joint"] == pytest.approx(0.0, abs=1e-12)
