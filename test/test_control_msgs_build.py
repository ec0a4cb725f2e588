"""control_msgs as `make setup` builds it into .venv (interfaces/build_control_msgs.py): the
type hashes are those of the real control_msgs 5.x (Jazzy) that MoveIt uses, a second run is a
no-op, and a control_msgs of a ROS install takes precedence over building one."""
import json
import os
import subprocess
import sys
from pathlib import Path

from ament_index_python.packages import get_package_share_directory

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "interfaces" / "build_control_msgs.py"
VENV = Path(sys.prefix)

#: RIHS01 hashes that rosidl (Jazzy, rosidl 4.6) computed for the original definitions of
#: control_msgs, branch jazzy (5.8.0), built in a scratch folder outside this repository.
ORIGINAL = {
    'action/FollowJointTrajectory': '738ebcb7a2d7cfa42f9f1001cc99ce3a4383d1cfe508015d9be8485e4b1c66f6',
    'action/FollowJointTrajectory_Feedback': '3fd0aaecf71725121ae1ff7f01098a5e0da581e672be18a6b2c286cb43d96b49',
    'action/FollowJointTrajectory_FeedbackMessage': '80398fcb9674a79081a9906e2ccf0c804dd7cb15e22e362e606ee87186beab71',
    'action/FollowJointTrajectory_GetResult': 'e3ceb38e3e1867c8dc0f46014df26e90eb93422f27e9e97f936e07f94be4bc8b',
    'action/FollowJointTrajectory_GetResult_Event': '43161a489e52daaa5bbc2fa74f73f1804d099574fcf8f819170807d75472662a',
    'action/FollowJointTrajectory_GetResult_Request': 'ecf7ea8463d3beec7084bca75216d0b01b87b6e1e4e09679bb26093041efcbe9',
    'action/FollowJointTrajectory_GetResult_Response': '08eefbaa146ce02ba45898d5e99160afd6c4c54a30d159aee0f2ca6035b1580f',
    'action/FollowJointTrajectory_Goal': '8a9060704b269608f5a340934cc26e66869dd14bdac29e2e7fd9ec8b9882d205',
    'action/FollowJointTrajectory_Result': '8002e99ed2c14c6faa522f2a93c26d744c5982f254f9e98ff9c6f19789bdb220',
    'action/FollowJointTrajectory_SendGoal': 'b13789dddc325a7a962825c45e28c77d37237ec129dd0c34dc5994562938c57f',
    'action/FollowJointTrajectory_SendGoal_Event': '906dd566308db02673c73c654f69bdd84738589629c1bc2841ddb49059ed1c6f',
    'action/FollowJointTrajectory_SendGoal_Request': '179c93691f1f6d1d115881ff88c3917b7cc6eac2ba4bf56766cc7c4389e19ef1',
    'action/FollowJointTrajectory_SendGoal_Response': 'e6a48ba740ae254500129a877f0b071be8663a115da1a539b74599cc97921fbf',
    'msg/JointComponentTolerance': '739ea7566931944d33830fa10f1bf5e7a7fbdc3172bce7a7eaac642bd6e3ffa4',
    'msg/JointTolerance': 'c254f9cece0f3b733017b6990fd46d1326e25242d6b8844398c97d9a88e7d648',
}


def test_the_action_is_importable_without_a_ros_install():
    from control_msgs.action import FollowJointTrajectory
    from control_msgs.msg import JointComponentTolerance, JointTolerance
    assert FollowJointTrajectory.Result.PATH_TOLERANCE_VIOLATED == -4
    assert JointComponentTolerance.ROTATION == 5
    assert list(JointTolerance.get_fields_and_field_types()) == ["name", "position", "velocity", "acceleration"]
    assert "index" not in FollowJointTrajectory.Feedback.get_fields_and_field_types()    # 6.x only


def test_type_hashes_match_the_real_control_msgs_5():
    share = Path(get_package_share_directory("control_msgs"))
    hashes = {}
    for f in ("action/FollowJointTrajectory.json", "msg/JointTolerance.json", "msg/JointComponentTolerance.json"):
        for h in json.loads((share / f).read_text())["type_hashes"]:
            if h["type_name"].startswith("control_msgs/"):
                hashes[h["type_name"][len("control_msgs/"):]] = h["hash_string"].removeprefix("RIHS01_")
    assert hashes == ORIGINAL


def _run(*args, env=None):
    return subprocess.run([sys.executable, str(SCRIPT), "--venv", str(VENV), *args], capture_output=True,
                          text=True, timeout=600, env=env)


def test_a_second_build_is_a_no_op():
    r = _run()
    assert r.returncode == 0 and r.stdout.strip().endswith("up to date"), r.stdout + r.stderr


def test_a_ros_install_takes_precedence(tmp_path):
    fake = tmp_path / "ros" / "lib" / "python3" / "site-packages"
    (fake / "control_msgs").mkdir(parents=True)
    (fake / "control_msgs" / "__init__.py").write_text("")
    env = dict(os.environ, PYTHONPATH=str(fake))
    r = _run("--force", "--package", "control_msgs", env=env)
    assert r.returncode == 0, r.stderr
    assert f"using the ROS install's package at {fake / 'control_msgs'}; nothing to build" in r.stdout, r.stdout


def test_delta_msgs_pick_is_built_with_its_fields_and_defaults():
    """delta_msgs (delta_robot's own interfaces) is built by the same script at setup."""
    r = subprocess.run([str(VENV / "bin" / "python"), "-c",
                        "from delta_msgs.srv import Pick; q = Pick.Request(); a = Pick.Response(); "
                        "print(q.height, q.blend, q.dwell, q.cycles, sorted(q.get_fields_and_field_types()), "
                        "sorted(a.get_fields_and_field_types()))"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[:4] == ["0.025", "0.01", "0.05", "1"], r.stdout
    for name in ("from_point", "to_point", "success", "message", "duration", "cycle_time", "picks_per_minute"):
        assert f"'{name}'" in r.stdout, r.stdout
