"""Comparing dynamic models (delta_dynamics.compare and ``delta-dynamics compare``): the
registry (built-in, plugged-in, unavailable models), the difference metrics, the table, the
plot, and the command line's errors."""
import importlib
import re

import numpy as np
import pytest

from delta_core.robot_file import load_robot, parse_robot
from delta_dynamics import compare as cmp
from delta_dynamics.compare import (ModelUnavailable, compare, explicit_torques, model_function,
                                    parse_model_list, register_model)
from delta_dynamics.motion.trajectories import circle, ellipse, pick_place

from test_cli import assert_fails, run


@pytest.fixture
def registry(monkeypatch):
    """A private copy of the registry for tests that plug models in."""
    monkeypatch.setattr(cmp, "MODELS", cmp.MODELS.copy())
    return cmp.MODELS


def scaled_explicit(robot, trajectory):
    return 1.01 * explicit_torques(robot, trajectory)


def test_builtin_models_and_their_differences():
    tr = circle(radius=0.2, depth=-0.85, period=1.0, ramp=0.3, dt=0.005)
    res = compare("d3s800", tr, ["explicit", "staicu"])
    assert res.reference == "explicit" and list(res.torques) == ["explicit", "staicu"]
    assert res.peak == pytest.approx(np.abs(res.torques["explicit"]).max())
    d = res.torques["staicu"] - res.torques["explicit"]
    assert res.rms_percent["staicu"] == pytest.approx(100 * np.sqrt(np.mean(d ** 2)) / res.peak)
    assert res.max_percent["staicu"] == pytest.approx(100 * np.abs(d).max() / res.peak)
    assert 0 < res.rms_percent["staicu"] < res.max_percent["staicu"] < 0.01     # d3s800: slender bodies
    assert res.rms_percent["explicit"] == 0.0
    assert all(v > 0 for v in res.runtime_per_sample.values())
    # staicu2003's thick bars and heavy blocks show on a fast ellipse; reference switched
    res = compare("staicu2003", ellipse(period=0.8, ramp=0.4, dt=0.002), ["staicu", "explicit"])
    assert res.reference == "staicu" and res.max_percent["explicit"] > 0.1
    table = res.table().splitlines()
    assert table[0].startswith("| model | RMS diff [% of peak] | max diff [% of peak] | runtime")
    assert table[2].startswith("| staicu | reference | reference |")
    assert table[3].startswith(f"| explicit | {res.rms_percent['explicit']:.3g} | {res.max_percent['explicit']:.3g} |")


def test_a_plugged_in_model_is_measured_exactly(registry):
    register_model("scaled", scaled_explicit, "explicit x 1.01")
    register_model("by_name", "test_compare:scaled_explicit")
    tr = pick_place(start=(-0.1525, 0.0, -0.9), dt=0.005)
    res = compare("nt_robot", tr, ["explicit", "scaled", "by_name"])
    ref = res.torques["explicit"]
    assert res.max_percent["scaled"] == pytest.approx(1.0, rel=1e-12)
    assert res.rms_percent["by_name"] == pytest.approx(np.sqrt(np.mean(ref ** 2)) / np.abs(ref).max(), rel=1e-12)


def test_unavailable_models_are_named(registry):
    with pytest.raises(ModelUnavailable, match=r"unknown model 'pinocchio' \(known: explicit, staicu, multibody, mujoco"):
        model_function("pinocchio")
    register_model("sim", "no_such_package_here.plant:torques")
    with pytest.raises(ModelUnavailable, match="model 'sim' is not available: No module named 'no_such_package_here'"):
        model_function("sim")
    register_model("needs", scaled_explicit, "a model with a dependency", requires=("no_such_dependency",))
    with pytest.raises(ModelUnavailable, match=r"model 'needs' \(a model with a dependency\) is not available: "
                       "No module named 'no_such_dependency'"):
        compare("nt_robot", circle(dt=0.1), ["explicit", "needs"])
    register_model("half", "delta_dynamics.compare:no_such_function")
    with pytest.raises(ModelUnavailable, match="delta_dynamics.compare has no no_such_function"):
        compare("nt_robot", circle(dt=0.1), ["explicit", "half"])
    register_model("bad", lambda robot, tr: np.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"model 'bad' returned torques of shape \(3, 3\) for 64 samples"):
        compare("nt_robot", circle(dt=0.1), ["explicit", "bad"])
    for name, target in (("", scaled_explicit), ("a,b", scaled_explicit), ("x", "no colon")):
        with pytest.raises(ValueError):
            register_model(name, target)


def test_model_lists():
    assert parse_model_list(" explicit, staicu ,") == ["explicit", "staicu"]
    with pytest.raises(ValueError, match="at least two models"):
        parse_model_list("explicit")
    with pytest.raises(ValueError, match="model listed twice: staicu"):
        parse_model_list("staicu,explicit,staicu")


def test_compare_command_prints_the_table_and_writes_the_plot(tmp_path, capsys):
    traj, png = tmp_path / "c.csv", tmp_path / "plots" / "cmp.png"
    assert run(capsys, "trajectory", "circle", "--radius", 0.2, "--depth", -0.85, "--period", 1.0,
               "--ramp", 0.3, "--dt", 0.005, "--out", traj)[0] == 0
    code, out, err = run(capsys, "compare", "--robot", "d3s800", "--trajectory", traj,
                         "--models", "explicit,staicu", "--plot", png)
    assert code == 0, err
    assert "d3s800" in out and "261 samples" in out and "no joint friction" in out
    assert "| explicit | reference | reference |" in out
    row = next(line for line in out.splitlines() if line.startswith("| staicu |"))
    rms = float(row.split("|")[2])
    assert 0 < rms < 0.01
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in png.parent.iterdir()) == ["cmp.png"]     # no temporary left


def test_compare_command_errors(tmp_path, capsys):
    traj, png = tmp_path / "c.csv", tmp_path / "cmp.png"
    assert run(capsys, "trajectory", "ellipse", "--dt", 0.05, "--out", traj)[0] == 0
    for models, message in (("explicit", "--models: give at least two models"),
                            ("explicit,foo", "--models: unknown model 'foo' (known: explicit, staicu")):
        code, _, err = run(capsys, "compare", "--robot", "staicu2003", "--trajectory", traj,
                           "--models", models, "--plot", png)
        assert_fails(code, err, message)
    code, _, err = run(capsys, "compare", "--robot", "nt_robot", "--trajectory", traj, "--plot", png)
    assert_fails(code, err, "c.csv:2 (t = 0 s)", "unreachable")
    code, _, err = run(capsys, "compare", "--robot", "nope", "--trajectory", traj)
    assert_fails(code, err, "robot 'nope': no such preset")
    assert not png.exists()


@pytest.mark.parametrize("name, module", [("multibody", "delta_dynamics.reference.multibody.reactions"),
                                          ("mujoco", "delta_dynamics.reference.mujoco_model.inverse")])
def test_the_other_full_body_models_agree_with_staicu_where_installed(name, module):
    """multibody and mujoco treat the same bodies (delta_dynamics.reference.bodies) as Staicu's model:
    where their packages are installed they agree with it (thick bars with Iyy = Izz and a
    large moment about their own axis, heavy blocks; the blocks' own moments nearly 0, which
    the three models treat differently); where not, the error says why."""
    try:
        importlib.import_module(module)
    except ImportError as e:
        with pytest.raises(ModelUnavailable, match=f"model '{name}' .* is not available: "):
            model_function(name)
        with pytest.raises(ModelUnavailable, match=re.escape(str(e))):
            compare("d3s800", circle(dt=0.1), ["staicu", name])
        return
    d = load_robot("staicu2003").to_dict()
    for block in ("elbow_block", "platform_block"):
        d["mass_properties"]["full_body"][block]["inertia"] = [1e-9, 1e-9, 1e-9]
    tr = circle(radius=0.05, depth=-0.33, period=1.0, ramp=0.3, duration=0.6, dt=0.02)
    res = compare(parse_robot(d), tr, ["staicu", name])
    assert res.max_percent[name] < 1e-6, res.table()
