"""The launch files: they compile, and (where ros2/launch + launch_ros are importable) they build
the expected processes with the expected parameters, URDF and remappings."""
import importlib.util
import py_compile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from delta_description.passive_joints import movable_joint_names
from delta_core.robot_file import load_robot, resolve_robot_path

ROOT = Path(__file__).resolve().parents[1]
LAUNCH_FILES = sorted((ROOT / "launch").glob("*.launch.py"))


def test_launch_files_exist():
    names = {p.name for p in LAUNCH_FILES}
    assert {"delta.launch.py", "description.launch.py"} <= names


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_file_compiles(path, tmp_path):
    py_compile.compile(str(path), cfile=str(tmp_path / "out.pyc"), doraise=True)


def test_params_file_has_a_section_per_node():
    data = yaml.safe_load((ROOT / "config" / "delta.yaml").read_text())
    # "/**/<node>": the section applies to the node in any namespace
    assert set(data) == {f"/**/{n}" for n in ("delta_hardware", "delta_dynamics", "delta_state", "delta_identification")}
    for section in data.values():
        assert isinstance(section["ros__parameters"], dict)
        load_robot(section["ros__parameters"]["robot"])


def test_console_scripts_for_the_launch_files():
    text = (ROOT / "setup.py").read_text()
    for line in ("delta-hardware-node=delta_hardware.ros.hardware_node:main",
                 "delta-dynamics-node=delta_dynamics.ros.dynamics_node:main",
                 "delta-state-node=delta_description.ros.state_node:main",
                 "delta-identification-node=delta_dynamics.ros.identification_node:main"):
        assert line in text


# ---------------------------------------------------------------- with the launch system

HAVE_LAUNCH = all(importlib.util.find_spec(m) is not None for m in ("launch", "launch_ros"))
needs_launch = pytest.mark.skipif(not HAVE_LAUNCH, reason=(
    "ros2 'launch' / 'launch_ros' are not importable (no pip wheels; they come with a ROS 2 "
    "install): only compiled the launch files"))


PACKAGES = ("delta_robot", "robot_state_publisher", "rviz2", "controller_manager",
            "joint_state_broadcaster", "joint_trajectory_controller", "moveit_ros_move_group")


@pytest.fixture(autouse=True)
def ament_prefix(tmp_path, monkeypatch):
    """An ament index that knows the packages the launch files check for (not their executables)."""
    index = tmp_path / "prefix" / "share" / "ament_index" / "resource_index" / "packages"
    index.mkdir(parents=True)
    for package in PACKAGES:
        (index / package).touch()
        (tmp_path / "prefix" / "share" / package).mkdir()
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(tmp_path / "prefix"))
    return index


def build(name, **arguments):
    """Run a launch file's OpaqueFunction for ``arguments``: {node name: info} of its Node actions."""
    from launch import LaunchContext
    from launch.actions import DeclareLaunchArgument, OpaqueFunction
    from launch.launch_description_sources.python_launch_file_utilities import \
        load_python_launch_file_as_module
    from launch_ros.actions import Node

    module = load_python_launch_file_as_module(str(ROOT / "launch" / name))
    ld = module.generate_launch_description()
    context = LaunchContext()
    context.launch_configurations.update({k: str(v) for k, v in arguments.items()})
    declared = {e.name for e in ld.entities if isinstance(e, DeclareLaunchArgument)}
    unknown = set(arguments) - declared
    assert not unknown, f"{name} does not declare {unknown}"
    actions = []
    for entity in ld.entities:
        if isinstance(entity, DeclareLaunchArgument):
            entity.execute(context)              # defaults and choices
        elif isinstance(entity, OpaqueFunction):
            actions += entity.execute(context) or []
    nodes = {}
    for action in actions:
        assert isinstance(action, Node), action
        action._perform_substitutions(context)
        params, files = {}, []
        for arg, is_file in action._Node__expanded_parameter_arguments or []:
            assert is_file, arg
            data = yaml.full_load(Path(arg).read_text())      # launch_ros writes tuples as python/tuple
            # a params file of ours ("/**/<node>" sections) is kept as a path; launch_ros writes
            # dict parameters into a temporary file of its own
            section = None if any(k.startswith("/**/") for k in data) else (
                data.get(action.node_name.lstrip("/")) or data.get(action.node_name) or data.get("/**"))
            if section is None:                  # the params file itself: keep its path
                files.append(arg)
                continue
            params.update(section["ros__parameters"])
        cmd_args = [a if isinstance(a, str) else "".join(s.text for s in a)
                    for a in action._Node__arguments or []]
        name = action.node_name.rsplit("/", 1)[-1]
        if name == Node.UNSPECIFIED_NODE_NAME:     # spawners: one per controller
            name = f"{action.node_executable}:{cmd_args[0]}" if cmd_args else action.node_executable
        assert name not in nodes, f"two nodes named {name}"
        nodes[name] = dict(package=action.node_package, executable=action.node_executable, params=params,
                           namespace=action.expanded_node_namespace,
                           files=files, remaps=dict(action.expanded_remapping_rules or []),
                           arguments=cmd_args)
    return nodes


def urdf_joints(urdf):
    root = ET.fromstring(urdf)
    return {j.get("name") for j in root.findall("joint") if j.get("type") != "fixed"}


@needs_launch
def test_description_launch_builds_state_publisher_state_node_and_rviz():
    nodes = build("description.launch.py")
    assert set(nodes) == {"robot_state_publisher", "delta_state", "rviz2"}
    nt = str(resolve_robot_path("nt_robot").resolve())
    rsp = nodes["robot_state_publisher"]
    assert rsp["package"] == "robot_state_publisher"
    assert rsp["remaps"] == {"joint_states": "delta/robot_joint_states"}      # relative: in the namespace
    urdf = rsp["params"]["robot_description"]
    assert urdf_joints(urdf) == set(movable_joint_names(load_robot(nt)))
    assert ET.fromstring(urdf).find("ros2_control") is None
    state = nodes["delta_state"]
    assert (state["package"], state["executable"]) == ("delta_robot", "delta-state-node")
    assert state["params"]["robot"] == nt
    assert state["files"] == [str(ROOT / "config" / "delta.yaml")]
    assert nodes["rviz2"]["arguments"] == ["-d", str(ROOT / "config" / "delta.rviz")]


@needs_launch
def test_delta_launch_builds_every_node_with_the_same_robot():
    nodes = build("delta.launch.py", robot="d3s800", hardware="canopen", can_interface="socketcan",
                  can_channel="can1", launch_rviz="false")
    assert set(nodes) == {"delta_hardware", "delta_dynamics", "delta_state", "robot_state_publisher"}
    d3 = str(resolve_robot_path("d3s800").resolve())
    for name in ("delta_hardware", "delta_dynamics", "delta_state"):
        assert nodes[name]["params"]["robot"] == d3, name
        assert nodes[name]["package"] == "delta_robot"
    assert nodes["delta_hardware"]["executable"] == "delta-hardware-node"
    assert nodes["delta_dynamics"]["executable"] == "delta-dynamics-node"
    hw = nodes["delta_hardware"]["params"]
    assert (hw["hardware"], hw["can_interface"], hw["can_channel"]) == ("canopen", "socketcan", "can1")
    urdf = nodes["robot_state_publisher"]["params"]["robot_description"]
    assert ET.fromstring(urdf).get("name") == load_robot(d3).name


@needs_launch
def test_delta_launch_with_ros2_control():
    nodes = build("delta.launch.py", use_ros2_control="true", launch_rviz="false",
                  launch_identification="true")
    assert set(nodes) == {"delta_hardware", "delta_dynamics", "delta_identification", "delta_state",
                          "robot_state_publisher", "ros2_control_node",
                          "spawner:joint_state_broadcaster", "spawner:joint_trajectory_controller"}
    assert nodes["delta_identification"]["executable"] == "delta-identification-node"
    urdf = nodes["robot_state_publisher"]["params"]["robot_description"]
    block = ET.fromstring(urdf).find("ros2_control")
    assert block is not None and "JointStateTopicSystem" in block.find("hardware/plugin").text
    controllers = str(ROOT / "config" / "ros2_controllers.yaml")
    cm = nodes["ros2_control_node"]
    assert cm["package"] == "controller_manager" and cm["files"] == [controllers]
    assert cm["remaps"] == {"~/robot_description": "/robot_description"}
    for name in ("spawner:joint_state_broadcaster", "spawner:joint_trajectory_controller"):
        assert nodes[name]["arguments"][1:5] == ["--controller-manager", "/controller_manager",
                                                 "--param-file", controllers]
    # the broadcaster must not publish on /joint_states, the topic system's input
    args = nodes["spawner:joint_state_broadcaster"]["arguments"]
    assert args[args.index("--controller-ros-args") + 1] == "-r joint_states:=/delta/ros2_control/joint_states"


@needs_launch
def test_robot_comes_from_the_params_file_unless_given(tmp_path):
    params = yaml.safe_load((ROOT / "config" / "delta.yaml").read_text())
    params["/**/delta_hardware"]["ros__parameters"]["robot"] = "d3s800"
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params))
    nodes = build("description.launch.py", params_file=str(path), launch_rviz="false")
    assert nodes["delta_state"]["params"]["robot"] == str(resolve_robot_path("d3s800").resolve())
    nodes = build("description.launch.py", params_file=str(path), robot="nt_robot", launch_rviz="false")
    assert nodes["delta_state"]["params"]["robot"] == str(resolve_robot_path("nt_robot").resolve())


@needs_launch
def test_bad_arguments_stop_the_launch_with_a_reason(tmp_path):
    with pytest.raises(RuntimeError, match="no such preset"):
        build("delta.launch.py", robot="no_such_robot")
    with pytest.raises(RuntimeError, match="hardware:=ethercat"):
        build("delta.launch.py", hardware="ethercat")
    with pytest.raises(RuntimeError, match="expected true or false"):
        build("description.launch.py", launch_rviz="maybe")
    with pytest.raises(RuntimeError, match="no such file"):
        build("description.launch.py", params_file=str(tmp_path / "missing.yaml"), robot="nt_robot")


@needs_launch
def test_a_missing_package_stops_the_launch_before_anything_starts(ament_prefix):
    (ament_prefix / "rviz2").unlink()
    with pytest.raises(RuntimeError, match="package 'rviz2' not found.*launch_rviz:=false"):
        build("delta.launch.py")
    assert "delta_hardware" in build("delta.launch.py", launch_rviz="false")
    (ament_prefix / "controller_manager").unlink()
    with pytest.raises(RuntimeError, match="package 'controller_manager' not found"):
        build("delta.launch.py", launch_rviz="false", use_ros2_control="true")


@needs_launch
def test_namespace_and_prefix_reach_every_node_and_the_urdf():
    nodes = build("delta.launch.py", namespace="r1", prefix="r1_", hardware="mock", launch_rviz="false",
                  launch_identification="true", use_ros2_control="true")
    ours = ("delta_hardware", "delta_dynamics", "delta_identification", "delta_state")
    for name, info in nodes.items():
        assert info["namespace"] == "/r1", name
        assert info["remaps"].get("/clock") == "/r1/clock", name          # this stack's own clock
    for name in ours:
        assert nodes[name]["params"]["prefix"] == "r1_", name
    assert nodes["delta_hardware"]["params"]["hardware"] == "mock"
    assert nodes["delta_hardware"]["params"]["use_sim_time"] is True       # auto: simulated drives
    urdf = nodes["robot_state_publisher"]["params"]["robot_description"]
    assert all(n.startswith("r1_") for n in urdf_joints(urdf))
    block = ET.fromstring(urdf).find("ros2_control")
    params = {p.get("name"): p.text for p in block.find("hardware").findall("param")}
    assert "delta/joint_commands" in params.values() and "joint_states" in params.values()
    args = nodes["spawner:joint_state_broadcaster"]["arguments"]
    assert args[2] == "/r1/controller_manager"
    assert args[args.index("--controller-ros-args") + 1] == "-r joint_states:=/r1/delta/ros2_control/joint_states"
    with pytest.raises(RuntimeError, match="namespace"):
        build("delta.launch.py", namespace="1bad", launch_rviz="false")
    with pytest.raises(RuntimeError, match="prefix"):
        build("delta.launch.py", prefix="r1/", launch_rviz="false")


@needs_launch
def test_moveit_launch_builds_move_group_consistent_with_the_urdf():
    nodes = build("moveit.launch.py", namespace="r2", prefix="r2_")
    assert "rviz2" not in nodes and {"delta_hardware", "delta_state", "move_group"} <= set(nodes)
    mg = nodes["move_group"]
    assert (mg["package"], mg["executable"], mg["namespace"]) == ("moveit_ros_move_group", "move_group", "/r2")
    # MoveIt's state monitor reads the full joint state of the state node
    assert mg["remaps"] == {"joint_states": "delta/robot_joint_states", "/clock": "/r2/clock"}
    p = mg["params"]
    urdf_joint_names = urdf_joints(p["robot_description"])
    srdf = ET.fromstring(p["robot_description_semantic"])
    for group in srdf.findall("group"):
        for j in group.findall("joint"):
            assert j.get("name") in urdf_joint_names
    assert {j.get("name") for j in srdf.findall("passive_joint")} <= urdf_joint_names
    nested = lambda key: {k[len(key) + 1:]: v for k, v in p.items() if k.startswith(key + ".")} or p.get(key)  # noqa: E731
    text = str(p)
    assert "r2_platform_z" in text and "follow_joint_trajectory" in text and "OMPLPlanner" in text
    assert p["use_sim_time"] is True and nested("moveit_simple_controller_manager")
    nodes = build("moveit.launch.py", launch_stack="false")
    assert set(nodes) == {"move_group"} and nodes["move_group"]["namespace"] == "/"


@needs_launch
def test_moveit_launch_needs_moveit(ament_prefix):
    (ament_prefix / "moveit_ros_move_group").unlink()
    with pytest.raises(RuntimeError, match="package 'moveit_ros_move_group' not found"):
        build("moveit.launch.py")


@needs_launch
@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_the_stack_under_ros2_launch_stops_cleanly(tmp_path, ament_prefix, sig):
    """``ros2 launch delta_robot delta.launch.py`` for real (the nodes' executables in a prefix
    of their own, as colcon would install them): every node comes up; SIGINT to the launch
    process ends every node with status 0, SIGTERM (which ends launch at once) ends them too."""
    import os
    import signal as signals
    import subprocess
    import sys
    import time
    prefix = ament_prefix.parents[3]
    lib = prefix / "lib" / "delta_robot"
    lib.mkdir(parents=True)
    for exe, module in (("delta-hardware-node", "delta_hardware.ros.hardware_node"),
                        ("delta-dynamics-node", "delta_dynamics.ros.dynamics_node"),
                        ("delta-state-node", "delta_description.ros.state_node")):
        script = lib / exe
        script.write_text(f"#!/bin/sh\nexec {sys.executable} -m {module} \"$@\"\n")
        script.chmod(0o755)
    launcher = tmp_path / "run_launch.py"
    launcher.write_text(
        "import sys\nfrom launch import LaunchDescription, LaunchService\n"
        "from launch.actions import IncludeLaunchDescription\n"
        "from launch.launch_description_sources import PythonLaunchDescriptionSource\n"
        f"ls = LaunchService(argv=sys.argv[1:])\n"
        f"ls.include_launch_description(IncludeLaunchDescription(PythonLaunchDescriptionSource({str(ROOT / 'launch' / 'delta.launch.py')!r}),"
        " launch_arguments={'launch_rviz': 'false', 'use_robot_state_publisher': 'false'}.items()))\n"
        "sys.exit(ls.run())\n")
    log = tmp_path / "launch.log"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, str(launcher)], stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 60
        while "active: holding position" not in log.read_text() and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()[-3000:]
            time.sleep(0.2)
        assert "active: holding position" in log.read_text(), log.read_text()[-3000:]
        time.sleep(1.0)
        import re
        pids = [int(p) for p in re.findall(r"process started with pid \[(\d+)\]", log.read_text())]
        assert len(pids) == 3
        proc.send_signal(getattr(signals, sig))
        proc.wait(40)
        deadline = time.monotonic() + 30
        while any(os.path.exists(f"/proc/{p}") for p in pids) and time.monotonic() < deadline:
            time.sleep(0.2)
        text = log.read_text()
        assert not any(os.path.exists(f"/proc/{p}") for p in pids), "node processes left running:\n" + text[-3000:]
        if sig == "SIGINT":                   # launch waits for its nodes and reports each
            assert proc.returncode == 0, text[-3000:]
            assert text.count("process has finished cleanly") == 3, text[-3000:]
            assert "Traceback" not in text and "exit code" not in text, text[-3000:]
        # SIGTERM: launch itself ends at once and says it may leave its processes orphaned
        # (launch_service.py); the nodes stop with it (PR_SET_PDEATHSIG, delta_core.ros.node_util)
    finally:
        if proc.poll() is None:
            proc.kill()
