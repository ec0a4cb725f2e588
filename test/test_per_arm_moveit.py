"""The MoveIt configuration of a calibrated robot file (``geometry.per_arm``), built as
``moveit.launch.py`` and ``delta-description moveit`` build it (the robot file read from its
path, the URDF from the same file): the SRDF's home states are the per-arm robot's, the URDF
MoveIt plans on closes each chain with its own lengths at that home, the platform joints'
limits are the per-arm robot's reachable box and rates. Each check fails when the builder takes
the shared geometry (the nominal robot of the same file: asserted beside it)."""
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from test_per_arm_dynamics import PERTURBED, PRESETS, with_per_arm

from delta_core.robot_file import load_robot, save_robot
from delta_description.moveit_config import kinematics, moveit_config, srdf, workspace_box
from delta_description.passive_joints import PLATFORM_JOINTS, full_joint_state
from delta_description.urdf_model import KinematicTree
from delta_description.xacro_urdf import robot_description
from delta_dynamics import algorithms as A
from delta_dynamics.kinds import model_for

KINDS = ["rotary", "linear"]


def calibrated_file(kind, tmp_path):
    """A calibrated robot file on disk (every per-arm field perturbed) and the robot read back."""
    path = tmp_path / "calibrated.yaml"
    save_robot(with_per_arm(kind, PERTURBED[kind]), path)
    return str(path), load_robot(str(path))


def home_states(text):
    """{group: {joint: value}} of the SRDF's group states called home."""
    root = ET.fromstring(text.encode())
    return {s.get("group"): {j.get("name"): float(j.get("value")) for j in s.findall("joint")}
            for s in root.findall("group_state") if s.get("name") == "home"}


@pytest.mark.parametrize("kind", KINDS)
def test_the_home_states_are_the_per_arm_robots_and_the_urdf_closes_there(kind, tmp_path):
    path, robot = calibrated_file(kind, tmp_path)
    assert robot.geometry.per_arm is not None
    urdf = robot_description(path)
    links = [link.get("name") for link in ET.fromstring(urdf.encode()).findall("link")]
    home = home_states(srdf(robot, links))
    m, m0 = model_for(robot), model_for(PRESETS[kind])
    q = np.array([home["arms"][n] for n in robot.joint_names])
    X = np.array([home["platform"][n] for n in PLATFORM_JOINTS])
    # the platform group's home is where the per-arm arms' home puts the platform (6 digits)
    np.testing.assert_allclose(X, A.forward_kinematics(m, q), rtol=0, atol=1e-6)
    assert np.abs(A.forward_kinematics(m0, q) - X).max() > 1e-3        # the shared geometry's is not
    # the URDF (the robot_description MoveIt gets) closes every chain there with its own lengths:
    # each passive link's far end on its own platform joint, the platform at X
    P = KinematicTree(urdf).link_poses(full_joint_state(m, q).as_dict())
    np.testing.assert_allclose(P["platform_link"][:3, 3], X, rtol=0, atol=1e-6)
    g = robot.geometry
    angles = g.chain_angles_deg if kind == "rotary" else g.rail_angles_deg
    spacing = g.forearm_spacing if kind == "rotary" else g.rod_spacing
    Xq = A.forward_kinematics(m, q)
    for k, arm in enumerate(g.per_arm):
        length = arm["forearm_length" if kind == "rotary" else "rod_length"]
        r = arm["platform_radius"] if kind == "rotary" else g.platform_radius
        phi = np.radians(angles[k])
        u, t = np.array([np.cos(phi), np.sin(phi), 0.0]), np.array([-np.sin(phi), np.cos(phi), 0.0])
        for side, sign in (("a", 1.0), ("b", -1.0)):
            link = f"forearm_{k + 1}{side}_link" if kind == "rotary" else f"rod_{k + 1}{side}_link"
            end = P[link] @ [length, 0.0, 0.0, 1.0]
            np.testing.assert_allclose(end[:3], Xq + r * u + sign * 0.5 * spacing * t, rtol=0, atol=1e-12)


#: the geometry the builder calls (imported into its module from delta_dynamics.algorithms)
GEOMETRY_CALLS = ("forward_kinematics", "inverse_kinematics", "jacobian", "passive_origins", "sample_workspace",
                  "workspace_centre")


def test_the_joint_limits_are_the_per_arm_robots(tmp_path, monkeypatch):
    """joint_limits.yaml (robot_description_planning): the arms' limits of the file; the platform
    joints' box that of the per-arm robot's reachable workspace (5 mm from the shared geometry's
    on x when measured), their rates from its Jacobian: every kinematics call of the builder
    gets the per-arm model. kinematics.yaml has no geometry (KDL, position only, on the
    prismatic platform chain) and is the nominal robot's."""
    import delta_description.moveit_config as builder
    path, robot = calibrated_file("rotary", tmp_path)
    arms = model_for(robot).arms
    seen = []
    for name in GEOMETRY_CALLS:
        def spy(m, *args, _f=getattr(builder, name), _name=name, **kw):
            seen.append((_name, m.arms is not None and np.array_equal(m.arms, arms)))
            return _f(m, *args, **kw)
        monkeypatch.setattr(builder, name, spy)
    cfg = moveit_config(robot)
    monkeypatch.undo()
    assert {n for n, _ in seen} >= {"forward_kinematics", "jacobian", "passive_origins"}
    assert all(ok for _, ok in seen), sorted({n for n, ok in seen if not ok})
    lim = cfg["joint_limits.yaml"]["joint_limits"]
    for i, n in enumerate(robot.joint_names):
        assert (lim[n]["min_position"], lim[n]["max_position"]) == tuple(robot.limits.position[i])
        assert lim[n]["max_velocity"] == robot.limits.velocity[i]
    m = model_for(robot)
    lo, hi = workspace_box(m)
    box = np.array([[lim[n]["min_position"], lim[n]["max_position"]] for n in PLATFORM_JOINTS])
    np.testing.assert_array_equal(box, np.stack((lo, hi), 1))
    X = A.sample_workspace(m, 2000, seed=4)
    assert (X >= lo).all() and (X <= hi).all()
    assert cfg["kinematics.yaml"] == kinematics() and cfg["kinematics.yaml"]["platform"]["position_only_ik"]
