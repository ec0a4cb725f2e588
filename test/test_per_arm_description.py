"""The URDF, its check and the MoveIt configuration of a calibrated robot (``geometry.per_arm``):
each chain's own radius, lengths and joint offset; the closed chain closes with the per-arm
kinematics; a symmetric robot's URDF is unchanged (test_description.py) and fails the check of
the calibrated file."""
import numpy as np
import pytest

from test_per_arm_dynamics import PERTURBED, PRESETS, with_per_arm

from delta_core.robot_file import save_robot
from delta_description.check import check_description
from delta_description.cli import main as cli_main
from delta_description.passive_joints import full_joint_state
from delta_description.urdf_model import KinematicTree
from delta_description.xacro_urdf import robot_description
from delta_dynamics import algorithms as A
from delta_dynamics.kinds import model_for

KINDS = ["rotary", "linear"]


@pytest.fixture(params=KINDS)
def calibrated(request, tmp_path):
    kind = request.param
    robot = with_per_arm(kind, PERTURBED[kind])
    path = tmp_path / "calibrated.yaml"
    save_robot(robot, path)
    return kind, robot, str(path)


def test_check_of_the_calibrated_file_passes(calibrated, capsys):
    kind, robot, path = calibrated
    assert cli_main(["check", "--robot", path, "--ros2-control", "mock", "--samples", "20"]) == 0
    out = capsys.readouterr().out
    assert "OK:" in out
    worst = float(out.split("worst mismatch ")[1].split(" m")[0])
    assert worst < 1e-12


def test_the_symmetric_urdf_fails_the_calibrated_file(calibrated):
    kind, robot, path = calibrated
    rep = check_description(robot, robot_description(PRESETS[kind]), samples=5)
    text = "\n".join(rep.problems)
    assert "closed chain does not close" in text
    assert rep.max_error > 1e-3
    assert "at q = 0 is not at R u_i" in text


def test_urdf_places_each_chain_by_its_own_geometry(calibrated):
    """The composed transforms of the URDF put each passive link's far end on its platform joint
    at a pose of the per-arm robot, and the platform at its forward kinematics."""
    kind, robot, path = calibrated
    m = model_for(robot)
    tree = KinematicTree(robot_description(path))
    X = A.workspace_centre(m) + np.array([0.02, -0.015, 0.0])
    q = A.inverse_kinematics(m, X)
    P = tree.link_poses(full_joint_state(m, q).as_dict())
    np.testing.assert_allclose(P["platform_link"][:3, 3], X, atol=1e-12)
    for k, arm in enumerate(robot.geometry.per_arm):
        length = arm["forearm_length" if kind == "rotary" else "rod_length"]
        name = f"forearm_{k + 1}a_link" if kind == "rotary" else f"rod_{k + 1}a_link"
        end = P[name] @ [length, 0, 0, 1]
        phi = np.radians((robot.geometry.chain_angles_deg if kind == "rotary" else robot.geometry.rail_angles_deg)[k])
        u, t = np.array([np.cos(phi), np.sin(phi), 0.0]), np.array([-np.sin(phi), np.cos(phi), 0.0])
        r = arm["platform_radius"] if kind == "rotary" else robot.geometry.platform_radius
        spacing = robot.geometry.forearm_spacing if kind == "rotary" else robot.geometry.rod_spacing
        np.testing.assert_allclose(end[:3], X + r * u + 0.5 * spacing * t, atol=1e-12)

