"""The robot description of a linear Delta: delta.urdf.xacro with a `type: linear`
robot file gives rails, carriages on prismatic joints, the rod pairs on two-axis joints, the
platform on platform_x/y/z and tool0 at the nozzle; with the passive values of
passive_joints the URDF's transforms close the chain at random poses; the state API is the
same as the rotary robot's."""
import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from delta_core.robot_file import load_robot
from delta_description.check import check_description
from delta_description.cli import main as cli_main
from delta_description.passive_joints import (expand_joint_state, full_joint_state, movable_joint_names,
                                              passive_joint_names, rod_angles)
from delta_description.ros2_controllers import controllers_config
from delta_description.urdf_model import KinematicTree
from delta_description.xacro_urdf import DescriptionError, robot_description
from delta_dynamics import algorithms as alg
from delta_dynamics.kinds import model_for

LINEAR = ("colombo2020", "linear_delta_xl")


@pytest.fixture(scope="module", params=LINEAR)
def described(request):
    robot = load_robot(request.param)
    return robot, model_for(robot), robot_description(robot.name, ros2_control="mock")


def test_the_tree_of_a_linear_delta(described):
    robot, model, urdf = described
    tree = KinematicTree(urdf)
    assert tree.warnings == [] and tree.root == "base_link"
    assert set(tree.movable_joints) == set(movable_joint_names(robot))
    names = movable_joint_names(robot)
    assert names[:6] == (*robot.joint_names, "platform_x", "platform_y", "platform_z")
    assert names[6:10] == ("rod_1a_bend_joint", "rod_1a_tilt_joint", "rod_1b_bend_joint", "rod_1b_tilt_joint")
    for k, name in enumerate(robot.joint_names):
        j = tree.joints[name]
        assert j.type == "prismatic" and np.allclose(j.axis, [0, 0, 1])
        assert j.parent == f"rail_{k + 1}_link" and j.child == f"carriage_{k + 1}_link"
        lim = tree.urdf.joint_map[name].limit
        assert (lim.lower, lim.upper) == robot.limits.position[k]
        assert lim.effort == robot.limits.force[k] and lim.velocity == robot.limits.velocity[k]
    tool = tree.joints["tool0_joint"]
    assert np.allclose(tool.origin[:3, 3], [0, 0, -robot.geometry.tool_offset])
    rep = check_description(robot, urdf, samples=15)
    assert rep.ok, rep.problems
    assert rep.max_error < 1e-9


def test_the_chain_closes_at_random_poses_with_the_passive_values(described):
    robot, model, urdf = described
    tree = KinematicTree(urdf)
    g = robot.geometry
    for X in alg.sample_workspace(model, 10, seed=7):
        q = alg.inverse_kinematics(model, X)
        P = tree.link_poses(full_joint_state(model, q).as_dict())
        np.testing.assert_allclose(P["platform_link"][:3, 3], X, atol=1e-12)
        np.testing.assert_allclose(P["tool0"][:3, 3], X - [0, 0, g.tool_offset], atol=1e-12)
        np.testing.assert_allclose(P["tool0"][:3, 2], [0, 0, -1], atol=1e-12)         # z down
        for i in range(3):
            phi = math.radians(g.rail_angles_deg[i])
            u, t = np.array([math.cos(phi), math.sin(phi), 0]), np.array([-math.sin(phi), math.cos(phi), 0])
            np.testing.assert_allclose(P[f"carriage_{i + 1}_link"][:3, 3], g.rail_radius * u + [0, 0, q[i]],
                                       atol=1e-12)
            for s, sign in (("a", 1), ("b", -1)):
                start = P[f"rod_{i + 1}{s}_link"] @ [0, 0, 0, 1]
                end = P[f"rod_{i + 1}{s}_link"] @ [g.rod_length, 0, 0, 1]
                np.testing.assert_allclose(start[:3], g.rail_radius * u + [0, 0, q[i]] + sign * 0.5 * g.rod_spacing * t,
                                           atol=1e-12)
                np.testing.assert_allclose(end[:3], X + g.platform_radius * u + sign * 0.5 * g.rod_spacing * t,
                                           atol=1e-12)


def test_rod_angles_are_the_rod_directions_and_their_rates_the_derivatives():
    model = model_for("colombo2020")
    X0, V = np.array([0.02, -0.03, 0.12]), np.array([0.1, -0.05, 0.2])
    q0, qd, _ = alg.joint_state(model, X0, V)
    s = full_joint_state(model, q0, qd)
    # the (azimuth, elevation) of the kinematics describe the same direction
    ang, _ = rod_angles(model, q0, X0)
    az_el = alg.passive_angles(model, X0)
    for i in range(3):
        phi = math.atan2(model.sphi[i], model.cphi[i])
        b, t = ang[i]
        f_chain = np.array([math.cos(b) * math.cos(t), math.sin(t), -math.sin(b) * math.cos(t)])
        c, sn = math.cos(phi), math.sin(phi)
        f_world = np.array([c * f_chain[0] - sn * f_chain[1], sn * f_chain[0] + c * f_chain[1], f_chain[2]])
        az, el = az_el[i]
        np.testing.assert_allclose(f_world, [math.cos(el) * math.cos(az), math.cos(el) * math.sin(az), math.sin(el)],
                                   atol=1e-12)
    h = 1e-6
    plus = np.array(full_joint_state(model, q0 + h * qd).position)
    minus = np.array(full_joint_state(model, q0 - h * qd).position)
    np.testing.assert_allclose(s.velocity, (plus - minus) / (2 * h), atol=1e-6)
    np.testing.assert_allclose(s.velocity[3:6], V, atol=1e-12)


def test_expand_joint_state_is_the_same_api_as_the_rotary_robot():
    model = model_for("colombo2020")
    q = alg.inverse_kinematics(model, [0.01, 0.02, 0.1])
    names = ["extruder", model.joint_names[2], model.joint_names[0], model.joint_names[1]]
    out = expand_joint_state(model, names, [0.0, q[2], q[0], q[1]], velocity=[0.0, 0.01, -0.02, 0.03])
    assert out.names == movable_joint_names(model.robot)
    np.testing.assert_allclose(out.position[:3], q)
    np.testing.assert_allclose(out.velocity[:3], [-0.02, 0.03, 0.01])
    assert expand_joint_state(model, names, [0.0, q[2], q[0], q[1]]).velocity is None
    with pytest.raises(ValueError, match=r"lacks the actuated joints \['carriage_2_joint'\]"):
        expand_joint_state(model, [model.joint_names[0], model.joint_names[2]], [0.2, 0.2])
    with pytest.raises(alg.UnreachableError):
        full_joint_state(model, [0.49, 0.49, 0.1])                 # the rods cannot meet below the carriages
    assert passive_joint_names(model)[3] == "rod_1a_bend_joint" and passive_joint_names()[3] == "forearm_1a_bend_joint"


def test_ros2_control_and_controllers_of_the_carriages():
    robot = load_robot("colombo2020")
    root = ET.fromstring(robot_description(robot, ros2_control="mock").encode())
    joints = root.findall("ros2_control/joint")
    assert [j.get("name") for j in joints] == list(robot.joint_names)
    for j in joints:
        eff = j.find("command_interface[@name='effort']")
        assert [float(p.text) for p in eff.findall("param")] == [-60.0, 60.0]            # N
        pos = j.find("command_interface[@name='position']")
        assert [float(p.text) for p in pos.findall("param")] == [0.1, 0.49]              # m
        assert float(j.find("state_interface[@name='position']/param").text) == pytest.approx(0.295)
    cfg = controllers_config(robot)["joint_trajectory_controller"]["ros__parameters"]
    assert cfg["joints"] == list(robot.joint_names)
    assert cfg["constraints"]["carriage_1_joint"] == {"trajectory": 0.01, "goal": 0.0005}     # m


def test_joint_names_that_clash_with_the_linear_tree_are_refused():
    robot = load_robot("colombo2020")
    clash = robot.replace(joint_names=("carriage_1_joint", "rod_1a_bend_joint", "carriage_3_joint"))
    with pytest.raises(DescriptionError, match=r"joint_names \['rod_1a_bend_joint'\] clash"):
        robot_description(clash)
    robot_description(robot.replace(joint_names=("motor_1_joint", "b", "c")))       # a rotary name is free here


def test_a_broken_linear_urdf_is_caught():
    robot = load_robot("colombo2020")
    text = robot_description(robot)
    bad = text.replace('<origin rpy="0 0 0" xyz="0 0.02 0"/>', '<origin rpy="0 0 0" xyz="0 0.021 0"/>', 1)
    assert bad != text
    problems = check_description(robot, bad, samples=5).problems
    assert any("rod_1a_bend_joint: origin" in p for p in problems), problems
    assert any("does not close" in p for p in problems)
    bad = text.replace('effort="60.0"', 'effort="6.0"', 1)
    assert any("limit effort 6.0, robot file says 60.0" in p for p in check_description(robot, bad, samples=2).problems)


def test_the_command_line(tmp_path, capsys):
    assert cli_main(["check", "--robot", "colombo2020", "--ros2-control", "topic", "--samples", "5"]) == 0
    assert "matches its robot file" in capsys.readouterr().out
    out = tmp_path / "lin.urdf"
    assert cli_main(["urdf", "--robot", "linear_delta_xl", "-o", str(out)]) == 0
    assert "rod_3b_tilt_joint" in out.read_text()
    png = tmp_path / "robot.png"
    assert cli_main(["render", "--robot", "colombo2020", "--out", str(png), "--pose", "0.3,0.28,0.32"]) == 0
    assert png.stat().st_size > 10_000
    assert cli_main(["render", "--robot", "colombo2020", "--out", str(png), "--pose", "0.49,0.49,0.1"]) == 2
    assert "delta-description: error: " in capsys.readouterr().err
    assert cli_main(["controllers", "--robot", "colombo2020"]) == 0
    assert "Tolerances are in m." in capsys.readouterr().out


def test_the_rviz_config_of_a_linear_robot_names_its_frames():
    import yaml
    from pathlib import Path
    cfg = yaml.safe_load((Path(__file__).resolve().parents[1] / "config" / "delta_linear.rviz").read_text())
    vm = cfg["Visualization Manager"]
    by_class = {d["Class"]: d for d in vm["Displays"]}
    assert by_class["rviz_default_plugins/RobotModel"]["Description Topic"]["Value"] == "/robot_description"
    assert by_class["rviz_default_plugins/Marker"]["Topic"]["Value"] == "/delta/platform_path"
    frames = set(by_class["rviz_default_plugins/TF"]["Frames"]) - {"All Enabled"}
    links = {link.name for link in KinematicTree(robot_description("colombo2020")).urdf.links}
    assert frames <= links and {"carriage_1_link", "rail_3_link", "tool0"} <= frames
