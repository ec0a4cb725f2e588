"""The MoveIt 2 configuration generated from the robot file (delta_description.moveit_config):
consistent with the URDF (every group, passive and collision-pair name exists), limits equal to
the robot file's and to the reachable workspace, controllers pointing at the hardware node's
action; with a prefix too. MoveIt itself is not installable here: test_follow_joint_trajectory.py
sends the trajectories it would produce for these groups through the action."""
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import yaml

from delta_core.robot_file import load_robot
from delta_core.share import share_file
from delta_description.cli import main as description_main
from delta_description.moveit_config import (FILES, moveit_config, platform_rate_limits, workspace_box)
from delta_description.passive_joints import forearm_joint_names
from delta_description.prefix import prefix_urdf
from delta_description.xacro_urdf import DescriptionError, robot_description
from delta_dynamics.rotary.kinematics import forward_kinematics, jacobian, sample_workspace
from delta_dynamics.rotary.model import RotaryModel

ROTARY = ["nt_robot", "d3s800", "staicu2003"]


def urdf_tree(urdf):
    root = ET.fromstring(urdf.encode())
    joints = {j.get("name"): j for j in root.findall("joint")}
    links = {link.get("name") for link in root.findall("link")}
    return joints, links


@pytest.mark.parametrize("preset, prefix", [(p, "") for p in ROTARY] + [("nt_robot", "r1_")])
def test_the_configuration_is_consistent_with_the_urdf_and_the_robot_file(preset, prefix):
    robot = load_robot(preset)
    urdf = prefix_urdf(robot_description(robot), prefix)
    joints, links = urdf_tree(urdf)
    cfg = moveit_config(robot, prefix, urdf=urdf)
    assert set(cfg) == set(FILES)
    srdf = ET.fromstring(cfg["delta.srdf"].encode())
    groups = {g.get("name"): g for g in srdf.findall("group")}
    assert set(groups) == {"platform", "arms"}
    chain = groups["platform"].find("chain")
    assert (chain.get("base_link"), chain.get("tip_link")) == (prefix + "base_link", prefix + "tool0")
    # the chain base_link -> tool0 is exactly the prismatic platform joints
    by_child = {j.find("child").get("link"): j for j in joints.values()}
    path, link = [], prefix + "tool0"
    while link != prefix + "base_link":
        j = by_child[link]
        if j.get("type") != "fixed":
            path.append(j.get("name"))
        link = j.find("parent").get("link")
    assert path[::-1] == [prefix + n for n in ("platform_x", "platform_y", "platform_z")]
    arms = [j.get("name") for j in groups["arms"].findall("joint")]
    assert arms == [prefix + n for n in robot.joint_names]
    assert all(joints[a].get("type") == "revolute" for a in arms)
    passive = {p.get("name") for p in srdf.findall("passive_joint")}
    assert passive == {prefix + n for n in forearm_joint_names()} and passive <= set(joints)
    for state in srdf.findall("group_state"):
        assert {j.get("name") for j in state.findall("joint")} <= set(joints)
    pairs = {frozenset((d.get("link1"), d.get("link2"))) for d in srdf.findall("disable_collisions")}
    assert len(pairs) == len(links) * (len(links) - 1) // 2 and set().union(*pairs) == links
    # joint limits: the robot file's for the arms, the reachable box for the platform
    lim = cfg["joint_limits.yaml"]["joint_limits"]
    assert set(lim) == {prefix + n for n in (*robot.joint_names, "platform_x", "platform_y", "platform_z")}
    for i, n in enumerate(robot.joint_names):
        e = lim[prefix + n]
        assert (e["min_position"], e["max_position"]) == tuple(robot.limits.position[i])
        assert e["max_velocity"] == robot.limits.velocity[i]
        assert e["max_acceleration"] == robot.limits.acceleration[i]
        urdf_limit = joints[prefix + n].find("limit")
        assert float(urdf_limit.get("lower")) == pytest.approx(e["min_position"])
        assert float(urdf_limit.get("upper")) == pytest.approx(e["max_position"])
    model = RotaryModel(robot)
    X = sample_workspace(model, 400, seed=3)
    for i, n in enumerate(("platform_x", "platform_y", "platform_z")):
        e = lim[prefix + n]
        assert e["min_position"] <= X[:, i].min() and X[:, i].max() <= e["max_position"]
        urdf_limit = joints[prefix + n].find("limit")    # tighter than the URDF's loose box
        assert float(urdf_limit.get("lower")) <= e["min_position"] < e["max_position"] <= float(urdf_limit.get("upper"))
    # controllers: the hardware node's action over both groups' joints
    ctl = cfg["moveit_controllers.yaml"]["moveit_simple_controller_manager"]
    c = ctl[ctl["controller_names"][0]]
    assert ctl["controller_names"] == ["delta_hardware"] and c["action_ns"] == "follow_joint_trajectory"
    assert set(c["joints"]) == set(arms) | set(path)
    assert set(cfg["kinematics.yaml"]) <= set(groups)


def test_the_workspace_box_is_tight_and_the_rate_limits_hold_in_most_of_the_workspace():
    model = RotaryModel.from_robot("nt_robot")
    lo, hi = workspace_box(model)
    X = sample_workspace(model, 3000, seed=5)
    # the box is the reachable one: random points come within 4 cm of every face
    assert np.all(X.min(axis=0) - lo < 0.04) and np.all(hi - X.max(axis=0) < 0.04)
    v, a = platform_rate_limits(model)
    qd = np.abs(jacobian(model, X) @ np.full(3, v))         # the worst sign pattern is bounded by sqrt(3)
    within = (qd <= np.asarray(model.robot.limits.velocity) + 1e-9).all(axis=1)
    assert within.mean() >= 0.9
    assert forward_kinematics(model, np.zeros(3))[2] < 0


@pytest.mark.parametrize("preset", ["colombo2020", "linear_delta_xl"])
def test_a_linear_delta_gets_its_configuration(preset, tmp_path):
    """Carriage joints (prismatic, m, N) in the arms group, the rods' joints passive, the
    platform box of the carriages' reach (above the base plane), the home at the workspace centre."""
    from delta_dynamics.algorithms import inverse_kinematics, sample_workspace, workspace_centre
    from delta_dynamics.kinds import model_for
    robot = load_robot(preset)
    urdf = robot_description(robot)
    joints, links = urdf_tree(urdf)
    cfg = moveit_config(robot, urdf=urdf)
    srdf = ET.fromstring(cfg["delta.srdf"].encode())
    arms = [j.get("name") for g in srdf.findall("group") if g.get("name") == "arms" for j in g.findall("joint")]
    assert arms == list(robot.joint_names) and all(joints[a].get("type") == "prismatic" for a in arms)
    passive = {p.get("name") for p in srdf.findall("passive_joint")}
    assert passive == set(forearm_joint_names(robot)) and passive <= set(joints)
    assert all(n.startswith("rod_") for n in passive)
    lim = cfg["joint_limits.yaml"]["joint_limits"]
    assert lim[arms[0]]["max_effort"] == robot.limits.force[0]                        # N
    assert (lim[arms[0]]["min_position"], lim[arms[0]]["max_position"]) == robot.limits.position[0]   # m
    model = model_for(robot)
    X = sample_workspace(model, 400, seed=3)
    for i, n in enumerate(("platform_x", "platform_y", "platform_z")):
        assert lim[n]["min_position"] <= X[:, i].min() and X[:, i].max() <= lim[n]["max_position"]
    home = {j.get("name"): float(j.get("value")) for s in srdf.findall("group_state") if s.get("group") == "arms"
            for j in s.findall("joint")}
    np.testing.assert_allclose([home[a] for a in arms], inverse_kinematics(model, workspace_centre(model)),
                               atol=1e-6)
    assert description_main(["moveit", "--robot", preset, "--out", str(tmp_path / "x")]) == 0
    assert sorted(p.name for p in (tmp_path / "x").iterdir()) == sorted(FILES)


def test_delta_description_moveit_writes_the_files(tmp_path, capsys):
    assert description_main(["moveit", "--robot", "d3s800", "--out", str(tmp_path), "--prefix", "r2_"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(FILES)
    lim = yaml.safe_load((tmp_path / "joint_limits.yaml").read_text())
    assert "r2_platform_z" in lim["joint_limits"]
    assert description_main(["moveit", "--robot", "d3s800", "--out", str(tmp_path), "--prefix", "2/"]) == 2
    assert "--prefix" in capsys.readouterr().err


def test_the_ompl_pipeline_plans_for_both_groups():
    ompl = yaml.safe_load(share_file("config", "moveit", "ompl_planning.yaml").read_text())
    assert ompl["planning_plugins"] == ["ompl_interface/OMPLPlanner"]
    for group in ("platform", "arms"):
        assert set(ompl[group]["planner_configs"]) <= set(ompl["planner_configs"])


def test_prefix_urdf_renames_every_link_and_joint_reference():
    urdf = robot_description("nt_robot", ros2_control="mock")
    out = prefix_urdf(urdf, "r1_")
    joints, links = urdf_tree(out)
    assert all(n.startswith("r1_") for n in (*joints, *links))
    for j in joints.values():
        assert j.find("parent").get("link") in links and j.find("child").get("link") in links
    block = ET.fromstring(out.encode()).find("ros2_control")
    assert {j.get("name") for j in block.findall("joint")} == {"r1_arm_1_joint", "r1_arm_2_joint", "r1_arm_3_joint"}
    assert prefix_urdf(urdf, "") == urdf
