"""The robot description: delta.urdf.xacro from the robot file, the closed chain, ros2_control.

Every preset (and a hand-made robot file with other names, per-joint limits and the loader's
optional fields left out) must give a URDF that urdf_parser_py parses, with the names, limits,
masses and lengths of its robot file, and whose joint transforms - with the passive joint values
from the kinematics - close the chain: platform at forward kinematics, each bar's far end on its
platform ball joint, within 1e-6 m.
"""
from __future__ import annotations

import functools
import math
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import yaml

from delta_description.check import check_description, inertia_problem
from delta_description.cli import main as cli_main
from delta_description.passive_joints import full_joint_state, movable_joint_names
from delta_core.robot_file import RobotFileError, list_presets, load_robot
from delta_description.urdf_model import KinematicTree, axis_angle_matrix, parse_urdf, rpy_matrix
from delta_description.xacro_urdf import DescriptionError, robot_description, xacro_path
from delta_dynamics.rotary.kinematics import passive_origins, forward_kinematics, UnreachableError
from delta_dynamics.rotary.model import RotaryModel

ROOT = Path(__file__).resolve().parents[1]
# the rotary presets (the linear ones: test_linear_description.py)
PRESETS = [p for p in list_presets() if load_robot(p).type == "rotary"]
MODES = ("none", "mock", "topic")


def custom_robot_dict() -> dict:
    """A robot file unlike the presets: own joint names, per-joint limits, scalar triples, no
    chain_angles_deg / payload / friction / torque_constant (the loader's defaults apply)."""
    return {
        "name": "test_delta",
        "joint_names": ["j_a", "j_b", "j_c"],
        "geometry": {"base_radius": 0.15, "platform_radius": 0.05, "upper_arm_length": 0.3,
                     "forearm_length": 0.7, "forearm_spacing": 0.06},
        "mass_properties": {
            "upper_arm": {"mass": 2.0, "com_distance": 0.12, "inertia": 0.02},
            "motor": {"rotor_inertia": 1e-4, "gear_ratio": 10.0},
            "forearm": {"mass": 0.3, "com_ratio": 0.4, "inertia": 0.01},
            "platform": {"mass": 1.2},
        },
        "limits": {"position": [[-0.6, 1.4], [-0.5, 1.3], [-0.7, 1.5]],
                   "velocity": 7.0, "acceleration": [100.0, 110.0, 120.0], "torque": [100.0, 110.0, 120.0]},
    }


@pytest.fixture(scope="module")
def custom_file(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("robots") / "test_delta.yaml"
    p.write_text(yaml.safe_dump(custom_robot_dict()))
    return p


@functools.lru_cache(maxsize=None)
def urdf_of(robot: str, mode: str = "none") -> str:
    return robot_description(robot, ros2_control=mode)


def robots(custom_file):
    return [*PRESETS, str(custom_file)]


def frame_vectors(robot, k):
    phi = math.radians(robot.geometry.chain_angles_deg[k])
    return np.array([math.cos(phi), math.sin(phi), 0.0]), np.array([-math.sin(phi), math.cos(phi), 0.0])


# ------------------------------------------------------------------ parsing, names

def test_presets_exist():
    assert {"nt_robot", "d3s800"} <= set(PRESETS)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("preset", PRESETS)
def test_every_preset_parses(preset, mode):
    from urdf_parser_py.urdf import URDF

    text = urdf_of(preset, mode)
    u = URDF.from_xml_string(text)
    robot, warnings = parse_urdf(text)
    assert warnings == []
    assert u.name == load_robot(preset).name
    assert u.get_root() == "base_link"
    assert len(u.links) == 23 and len(u.joints) == 22
    assert (ET.fromstring(text).find("ros2_control") is not None) == (mode != "none")


def test_link_and_joint_names(custom_file):
    for name in robots(custom_file):
        robot = load_robot(name)
        u = KinematicTree(urdf_of(name)).urdf
        links = {"base_link", "platform_x_link", "platform_y_link", "platform_link", "tool0"}
        for i in (1, 2, 3):
            links |= {f"motor_{i}_link", f"upper_arm_{i}_link"}
            for s in "ab":
                links |= {f"forearm_{i}{s}_elbow_link", f"forearm_{i}{s}_link"}
        assert {link.name for link in u.links} == links
        joints = {j.name: j.type for j in u.joints}
        fixed = {n for n, t in joints.items() if t == "fixed"}
        assert fixed == {"motor_1_joint", "motor_2_joint", "motor_3_joint", "tool0_joint"}
        assert [n for n in joints if n in robot.joint_names] == list(robot.joint_names)
        assert set(joints) - fixed == set(movable_joint_names(robot))
        assert {n for n, t in joints.items() if t == "prismatic"} == {"platform_x", "platform_y", "platform_z"}
        for i, jn in enumerate(robot.joint_names, start=1):
            j = u.joint_map[jn]
            assert (j.parent, j.child, j.type, list(j.axis)) == (f"motor_{i}_link", f"upper_arm_{i}_link",
                                                                 "revolute", [0.0, 1.0, 0.0])
            for s in "ab":
                bend, tilt = u.joint_map[f"forearm_{i}{s}_bend_joint"], u.joint_map[f"forearm_{i}{s}_tilt_joint"]
                assert (bend.parent, bend.child, list(bend.axis)) == (f"upper_arm_{i}_link",
                                                                      f"forearm_{i}{s}_elbow_link", [0, 1, 0])
                assert (tilt.parent, tilt.child, list(tilt.axis)) == (f"forearm_{i}{s}_elbow_link",
                                                                      f"forearm_{i}{s}_link", [0, 0, 1])


# ------------------------------------------------------------------ numbers from the robot file

def test_limits_and_friction_match_robot_file(custom_file):
    for name in robots(custom_file):
        robot = load_robot(name)
        u = KinematicTree(urdf_of(name)).urdf
        for k, jn in enumerate(robot.joint_names):
            lim, dyn = u.joint_map[jn].limit, u.joint_map[jn].dynamics
            assert (lim.lower, lim.upper) == pytest.approx(robot.limits.position[k], abs=1e-12)
            assert lim.velocity == pytest.approx(robot.limits.velocity[k], abs=1e-12)
            assert lim.effort == pytest.approx(robot.limits.torque[k], abs=1e-12)
            assert dyn.damping == pytest.approx(robot.friction.viscous[k], abs=1e-12)
            assert dyn.friction == pytest.approx(robot.friction.coulomb[k], abs=1e-12)
    # the custom file's per-joint limits really differ from joint to joint
    u = KinematicTree(urdf_of(str(custom_file))).urdf
    assert [u.joint_map[j].limit.lower for j in ("j_a", "j_b", "j_c")] == [-0.6, -0.5, -0.7]
    assert [u.joint_map[j].limit.effort for j in ("j_a", "j_b", "j_c")] == [100.0, 110.0, 120.0]


def test_masses_inertias_and_lengths(custom_file):
    for name in robots(custom_file):
        robot = load_robot(name)
        g, mp = robot.geometry, robot.mass
        u = KinematicTree(urdf_of(name)).urdf
        for link in u.links:
            if link.inertial is not None:
                assert inertia_problem(link.inertial.inertia) is None, link.name
        for i in (1, 2, 3):
            arm = u.link_map[f"upper_arm_{i}_link"].inertial
            assert arm.mass == pytest.approx(mp.upper_arm.mass)
            assert arm.origin.xyz == pytest.approx([mp.upper_arm.com_distance, 0, 0])
            assert arm.inertia.iyy == pytest.approx(mp.upper_arm.inertia)   # about the motor-axis direction
            assert arm.inertia.ixx < arm.inertia.iyy
            for s, sign in (("a", 1), ("b", -1)):
                bar = u.link_map[f"forearm_{i}{s}_link"]
                assert bar.inertial.mass == pytest.approx(0.5 * mp.forearm.mass)
                assert bar.inertial.origin.xyz == pytest.approx([mp.forearm.com_ratio * g.forearm_length, 0, 0])
                assert bar.inertial.inertia.iyy == pytest.approx(0.5 * mp.forearm.inertia)
                assert bar.inertial.inertia.izz == pytest.approx(0.5 * mp.forearm.inertia)
                cyl = bar.visuals[0]
                assert cyl.geometry.length == pytest.approx(g.forearm_length)
                assert cyl.origin.xyz == pytest.approx([0.5 * g.forearm_length, 0, 0])
                bend = u.joint_map[f"forearm_{i}{s}_bend_joint"]
                assert bend.origin.xyz == pytest.approx([g.upper_arm_length, sign * 0.5 * g.forearm_spacing, 0])
            motor = u.joint_map[f"motor_{i}_joint"]
            phi = math.radians(g.chain_angles_deg[i - 1])
            assert motor.origin.xyz == pytest.approx([g.base_radius * math.cos(phi), g.base_radius * math.sin(phi), 0])
            assert motor.origin.rpy == pytest.approx([0, 0, phi])
        plat = u.link_map["platform_link"].inertial
        assert plat.mass == pytest.approx(mp.platform_mass + mp.payload_mass)
        moving = sum(link.inertial.mass for link in u.links
                     if link.inertial is not None and not link.name.startswith("motor_"))
        assert moving == pytest.approx(3 * mp.upper_arm.mass + 3 * mp.forearm.mass + mp.platform_mass + mp.payload_mass)


def test_custom_file_defaults_follow_the_loader(custom_file):
    robot = load_robot(custom_file)
    assert robot.geometry.chain_angles_deg == (0.0, 120.0, 240.0)
    u = KinematicTree(urdf_of(str(custom_file))).urdf
    assert [u.joint_map[f"motor_{i}_joint"].origin.rpy[2] for i in (1, 2, 3)] == \
        pytest.approx([0.0, 2 * math.pi / 3, 4 * math.pi / 3])
    assert u.joint_map["j_b"].limit.velocity == 7.0           # a scalar triple
    assert u.joint_map["j_a"].dynamics.damping == 0.0           # no friction block


# ------------------------------------------------------------------ the closed chain

def test_transform_helpers_match_scipy():
    from scipy.spatial.transform import Rotation

    rng = np.random.default_rng(3)
    for _ in range(20):
        rpy = rng.uniform(-3, 3, 3)
        assert rpy_matrix(rpy) == pytest.approx(Rotation.from_euler("xyz", rpy).as_matrix(), abs=1e-12)
        axis, ang = rng.normal(size=3), rng.uniform(-3, 3)
        axis /= np.linalg.norm(axis)
        assert axis_angle_matrix(axis, ang) == pytest.approx(Rotation.from_rotvec(ang * axis).as_matrix(), abs=1e-12)


def random_closed_poses(model, n, seed):
    """Arm angles drawn uniformly inside the limits whose forward kinematics exists (either elbow branch)."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        q = rng.uniform(model.q_lo, model.q_hi)
        try:
            X = forward_kinematics(model, q)
        except UnreachableError:
            continue
        if X[2] < passive_origins(model, q)[:, 2].min():
            out.append((q, X))
    return out


def test_closed_chain_consistency(custom_file):
    """Composing the URDF's transforms with the passive values puts the platform at forward
    kinematics and every bar's far end on its platform attachment point (1e-6 m)."""
    for name in robots(custom_file):
        robot = load_robot(name)
        g = robot.geometry
        model = RotaryModel(robot)
        tree = KinematicTree(urdf_of(name))
        for q, X in random_closed_poses(model, 25, seed=7):
            state = full_joint_state(model, q)
            P = tree.link_poses(state.as_dict())
            assert np.abs(P["platform_link"][:3, 3] - X).max() < 1e-6
            assert P["platform_link"][:3, :3] == pytest.approx(np.eye(3), abs=1e-12)   # it only translates
            assert P["tool0"][:3, 2] == pytest.approx([0, 0, -1], abs=1e-12)           # flange z down
            C = passive_origins(model, q)
            for k in range(3):
                u_k, t_k = frame_vectors(robot, k)
                arm_end = P[f"upper_arm_{k + 1}_link"] @ [g.upper_arm_length, 0, 0, 1]
                assert np.abs(arm_end[:3] - C[k]).max() < 1e-6
                for s, sign in (("a", 1), ("b", -1)):
                    end = P[f"forearm_{k + 1}{s}_link"] @ [g.forearm_length, 0, 0, 1]
                    target = X + g.platform_radius * u_k + sign * 0.5 * g.forearm_spacing * t_k
                    assert np.abs(end[:3] - target).max() < 1e-6, (name, q, k, s)
                    start = P[f"forearm_{k + 1}{s}_link"][:3, 3]
                    assert np.linalg.norm(start - (C[k] + sign * 0.5 * g.forearm_spacing * t_k)) < 1e-9


def test_passive_values_stay_inside_their_urdf_limits():
    robot = load_robot("nt_robot")
    model = RotaryModel(robot)
    u = KinematicTree(urdf_of("nt_robot")).urdf
    for q, _ in random_closed_poses(model, 40, seed=11):
        for name, v in full_joint_state(model, q).as_dict().items():
            lim = u.joint_map[name].limit
            assert lim.lower <= v <= lim.upper, name


def test_check_passes_and_detects_a_wrong_urdf():
    robot = load_robot("nt_robot")
    text = urdf_of("nt_robot", "mock")
    rep = check_description(robot, text, samples=10)
    assert rep.ok, rep.problems
    assert rep.max_error < 1e-9
    # a bar joint moved 1 mm along the arm: the chain no longer closes, the elbow is off
    bad = text.replace('xyz="0.3423 0.04 0"', 'xyz="0.3433 0.04 0"', 1)
    assert bad != text
    problems = check_description(robot, bad, samples=5).problems
    assert any("forearm_1a_bend_joint" in p for p in problems)
    assert any("does not close" in p for p in problems)
    # a limit that is not the robot file's
    bad = text.replace('lower="-0.7"', 'lower="-0.8"', 1)
    assert any("limit lower" in p for p in check_description(robot, bad, samples=2).problems)
    # an unphysical inertia
    bad = text.replace('ixx="0.000955', 'ixx="0.0955', 1)
    assert any("triangle inequality" in p for p in check_description(robot, bad, samples=2).problems)


# ------------------------------------------------------------------ ros2_control, controllers, rviz

def test_ros2_control_blocks():
    robot = load_robot("nt_robot")
    mock = ET.fromstring(urdf_of("nt_robot", "mock")).find("ros2_control")
    assert mock.findtext("hardware/plugin").strip() == "mock_components/GenericSystem"
    topic = ET.fromstring(urdf_of("nt_robot", "topic")).find("ros2_control")
    assert topic.findtext("hardware/plugin").strip() == "joint_state_topic_hardware_interface/JointStateTopicSystem"
    params = {p.get("name"): p.text for p in topic.findall("hardware/param")}
    assert params == {"joint_commands_topic": "/delta/joint_commands", "joint_states_topic": "/joint_states"}
    for blk in (mock, topic):
        joints = blk.findall("joint")
        assert [j.get("name") for j in joints] == list(robot.joint_names)
        for k, j in enumerate(joints):
            cmd = {c.get("name"): {p.get("name"): float(p.text) for p in c.findall("param")}
                   for c in j.findall("command_interface")}
            assert cmd == {"position": {"min": robot.limits.position[k][0], "max": robot.limits.position[k][1]},
                           "velocity": {"min": -robot.limits.velocity[k], "max": robot.limits.velocity[k]},
                           "effort": {"min": -robot.limits.torque[k], "max": robot.limits.torque[k]}}
            assert sorted(s.get("name") for s in j.findall("state_interface")) == ["effort", "position", "velocity"]
            init = float(j.find("state_interface[@name='position']/param[@name='initial_value']").text)
            forward_kinematics(RotaryModel(robot), [init] * 3)      # the home pose exists
    legacy = robot_description("nt_robot", "topic", topic_plugin="topic_based_ros2_control/TopicBasedSystem",
                               command_interfaces="position")
    blk = ET.fromstring(legacy).find("ros2_control")
    assert blk.findtext("hardware/plugin").strip() == "topic_based_ros2_control/TopicBasedSystem"
    assert {c.get("name") for c in blk.iter("command_interface")} == {"position"}
    with pytest.raises(DescriptionError, match="command_interfaces"):
        robot_description("nt_robot", "mock", command_interfaces="position torque")
    with pytest.raises(DescriptionError, match="ros2_control must be one of"):
        robot_description("nt_robot", "gazebo")


def test_controllers_yaml_matches_the_urdf():
    from delta_description.ros2_controllers import controllers_config

    cfg = yaml.safe_load((ROOT / "config" / "ros2_controllers.yaml").read_text())
    assert cfg == controllers_config(load_robot("nt_robot"))       # the shipped file is up to date
    for preset in PRESETS:
        blk = ET.fromstring(urdf_of(preset, "mock")).find("ros2_control")
        hw_joints = [j.get("name") for j in blk.findall("joint")]
        jtc = cfg["joint_trajectory_controller"]["ros__parameters"]
        assert jtc["joints"] == hw_joints
        cmd = {c.get("name") for c in blk.iter("command_interface")}
        assert set(jtc["command_interfaces"]) <= cmd
    cm = cfg["controller_manager"]["ros__parameters"]
    assert cm["joint_state_broadcaster"]["type"] == "joint_state_broadcaster/JointStateBroadcaster"
    assert cm["joint_trajectory_controller"]["type"] == "joint_trajectory_controller/JointTrajectoryController"


def test_rviz_config():
    cfg = yaml.safe_load((ROOT / "config" / "delta.rviz").read_text())
    vm = cfg["Visualization Manager"]
    assert vm["Global Options"]["Fixed Frame"] == "base_link"
    by_class = {d["Class"]: d for d in vm["Displays"]}
    assert by_class["rviz_default_plugins/RobotModel"]["Description Topic"]["Value"] == "/robot_description"
    assert by_class["rviz_default_plugins/TF"]["Enabled"] is True
    assert by_class["rviz_default_plugins/Marker"]["Topic"]["Value"] == "/delta/platform_path"
    links = {link.name for link in KinematicTree(urdf_of("nt_robot")).urdf.links}
    frames = set(by_class["rviz_default_plugins/TF"]["Frames"]) - {"All Enabled"}
    assert frames <= links


# ------------------------------------------------------------------ xacro directly, errors, CLI

def test_plain_xacro_call_gives_the_same_urdf(tmp_path):
    """What a robot_state_publisher launch file does: xacro <file> robot_file:=... ros2_control:=..."""
    preset_file = ROOT / "config" / "robots" / "d3s800.yaml"
    code = ("import sys, xacro; sys.argv = ['xacro'] + sys.argv[1:]; xacro.main()")
    out = subprocess.run([sys.executable, "-c", code, str(xacro_path()), f"robot_file:={preset_file}",
                          "ros2_control:=topic"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr

    def canon(text):
        return ET.tostring(ET.fromstring(text.encode()))        # drops comments and layout
    assert canon(out.stdout) == canon(urdf_of("d3s800", "topic"))


def test_plain_xacro_without_robot_file_fails_clearly():
    code = "import sys, xacro; sys.argv = ['xacro'] + sys.argv[1:]; xacro.main()"
    out = subprocess.run([sys.executable, "-c", code, str(xacro_path())], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert "robot_file:=" in out.stderr


def test_bad_robot_file_gives_a_clear_error(tmp_path):
    d = custom_robot_dict()
    d["geometry"]["forearm_length"] = -0.3
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(d))
    with pytest.raises(RobotFileError, match=r"bad\.yaml: geometry\.forearm_length must be > 0"):
        robot_description(str(bad))
    with pytest.raises(RobotFileError, match="no such preset"):
        robot_description("no_such_robot")
    d = custom_robot_dict()
    d["joint_names"] = ["platform_x", "j_b", "j_c"]
    clash = tmp_path / "clash.yaml"
    clash.write_text(yaml.safe_dump(d))
    with pytest.raises(DescriptionError, match="clash"):
        robot_description(str(clash))


def test_cli_errors_exit_2_without_traceback(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    d = custom_robot_dict()
    del d["mass_properties"]["platform"]
    bad.write_text(yaml.safe_dump(d))
    for argv in (["urdf", "--robot", str(bad)], ["check", "--robot", str(bad)],
                 ["urdf", "--robot", "no_such_robot"], ["urdf", "--robot", str(tmp_path / "missing.yaml")]):
        assert cli_main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("delta-description: error: ") and "Traceback" not in err
    assert cli_main(["urdf", "--robot", str(bad)]) == 2
    assert f"{bad}: mass_properties.platform.mass is missing" in capsys.readouterr().err
    # the console script, as a user runs it
    out = subprocess.run([sys.executable, "-m", "delta_description.cli", "urdf", "--robot", "nope"],
                         capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert out.returncode == 2 and "Traceback" not in out.stderr and "no such preset" in out.stderr


def test_cli_urdf_and_check(tmp_path, capsys):
    assert cli_main(["urdf", "--robot", "nt_robot", "--ros2-control", "mock"]) == 0
    text = capsys.readouterr().out
    assert parse_urdf(text)[1] == []
    assert ET.fromstring(text).findtext("ros2_control/hardware/plugin").strip() == "mock_components/GenericSystem"
    assert cli_main(["check", "--robot", "d3s800", "--ros2-control", "topic", "--samples", "10"]) == 0
    assert "OK:" in capsys.readouterr().out
    # checking a URDF file made for another robot fails (exit 1) and says why
    f = tmp_path / "nt.urdf"
    f.write_text(urdf_of("nt_robot"))
    assert cli_main(["check", "--robot", "d3s800", "--urdf", str(f), "--samples", "3"]) == 1
    assert "PROBLEM:" in capsys.readouterr().err
    assert cli_main(["controllers", "--robot", "nt_robot"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["joint_trajectory_controller"]["ros__parameters"]["joints"] == \
        ["arm_1_joint", "arm_2_joint", "arm_3_joint"]


def test_render_draws_the_urdf(tmp_path):
    from delta_description.render import default_poses, render_poses, scene_polygons

    robot = load_robot("nt_robot")
    model = RotaryModel(robot)
    tree = KinematicTree(urdf_of("nt_robot"))
    q = default_poses(robot)[1]
    state = full_joint_state(model, q)
    polys, colors = scene_polygons(tree, state.as_dict())
    pts = np.concatenate(polys)
    # the drawing reaches down to the platform and no further than its ball joints
    X = forward_kinematics(model, q)
    assert pts[:, 2].min() == pytest.approx(X[2] - tree.urdf.link_map["platform_link"].visuals[1].geometry.radius,
                                            abs=0.02)
    assert len(polys) == len(colors) > 100
    out = render_poses(robot, [q], tmp_path / "r.png")
    assert Path(out).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_render_does_not_read_uninitialised_memory(tmp_path, monkeypatch):
    """matplotlib pads polygons of unequal sizes with np.empty and its autoscale reads the
    padding: the picture must not depend on what that memory holds (it failed at random)."""
    from delta_description.render import default_poses, render_poses
    real_empty = np.empty
    monkeypatch.setattr(np, "empty", lambda shape, dtype=float, **kw: np.full(shape, -np.finfo(dtype).max, dtype=dtype, **kw)
                        if np.dtype(dtype).kind == "f" else real_empty(shape, dtype=dtype, **kw))
    robot = load_robot("nt_robot")
    out = render_poses(robot, default_poses(robot)[:1], tmp_path / "r.png")
    assert Path(out).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
