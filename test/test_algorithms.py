"""The robot interface: the free functions of delta_dynamics.algorithms over either kind of model,
the kind table cached on the model class, model_for as the one builder that reads `type`, and
the kinds as plug-ins of one registry."""
import importlib
import sys
import types

import numpy as np
import pytest

from delta_core.plugins import PluginError
from delta_dynamics import algorithms as alg
from delta_dynamics.kinds import INTERFACE, KINDS, Kind, KindTable, joint_units, model_for, table
from delta_dynamics.linear.model import LinearModel
from delta_dynamics.rotary.model import RotaryModel

ROBOTS = ("nt_robot", "colombo2020")


@pytest.fixture(params=ROBOTS)
def model(request):
    return model_for(request.param)


def test_model_for_builds_the_kind_the_robot_file_names():
    assert type(model_for("nt_robot")) is RotaryModel and model_for("nt_robot").kind == "rotary"
    assert type(model_for("colombo2020")) is LinearModel and model_for("colombo2020").kind == "linear"
    assert model_for("linear_delta_xl", friction=False).viscous == (0.0, 0.0, 0.0)


def test_the_kinds_are_plugins_of_one_registry_with_the_same_modules():
    assert KINDS.names() == ("rotary", "linear")
    for kind in KINDS.names():
        k = KINDS.get(kind)
        assert isinstance(k, Kind) and k.name == kind and k.package == f"delta_dynamics.{kind}"
        for module in ("model", "kinematics", "dynamics", "simulate", "identification", "demo"):
            importlib.import_module(f"{k.package}.{module}")


def test_the_table_is_cached_on_the_model_class_after_first_use():
    for cls, kind in ((RotaryModel, "rotary"), (LinearModel, "linear")):
        m = model_for("nt_robot" if kind == "rotary" else "colombo2020")
        t = m.ops
        assert isinstance(t, KindTable) and t.kind.name == kind
        assert cls.__dict__["ops"] is t is table(kind)            # a plain class attribute now
        assert m.ops.inverse_dynamics.__module__ == f"{KINDS.get(kind).package}.dynamics"


def test_every_kind_implements_the_whole_interface():
    for kind in KINDS.names():
        t = table(kind)
        for module, names in INTERFACE.items():
            for name in names:
                fn = getattr(t, name)
                mod = importlib.import_module(f"{KINDS.get(kind).package}.{module}")
                assert callable(fn) and getattr(mod, name) is fn, (kind, name)
                assert hasattr(alg, name), name                   # ... and algorithms forwards it
        assert len(t.parameter_names) == 14
        assert callable(t.parameter_set) and callable(t.physical_from_lumped) and callable(t.demo)


def test_a_kind_missing_a_function_is_refused_by_name(monkeypatch):
    pkg = "fake_delta_kind"
    for name in ("kinematics", "dynamics", "simulate", "model"):
        mod = types.ModuleType(f"{pkg}.{name}")
        src = importlib.import_module(f"delta_dynamics.linear.{name}")
        for fn in INTERFACE.get(name, ()):
            setattr(mod, fn, getattr(src, fn))
        monkeypatch.setitem(sys.modules, f"{pkg}.{name}", mod)
    del sys.modules[f"{pkg}.dynamics"].regressor
    kind = Kind("fake", pkg, "LinearModel", "LinearParameters")
    with pytest.raises(TypeError, match=r"robot kind 'fake' does not implement fake_delta_kind\.dynamics\.regressor"):
        KindTable(kind)
    with pytest.raises(PluginError, match="unknown robot kind 'spherical' \\(known: rotary, linear\\)"):
        table("spherical")


def test_algorithms_give_exactly_what_the_kinds_modules_give(model):
    pkg = KINDS.get(model.kind).package
    kin = importlib.import_module(f"{pkg}.kinematics")
    dyn = importlib.import_module(f"{pkg}.dynamics")
    sim = importlib.import_module(f"{pkg}.simulate")
    X = alg.sample_workspace(model, 20, seed=3)
    rng = np.random.default_rng(0)
    V, A = 0.2 * rng.normal(size=X.shape), 2.0 * rng.normal(size=X.shape)
    np.testing.assert_array_equal(alg.inverse_kinematics(model, X), kin.inverse_kinematics(model, X))
    np.testing.assert_array_equal(alg.jacobian(model, X), kin.jacobian(model, X))
    np.testing.assert_array_equal(alg.inverse_dynamics(model, X, V, A), dyn.inverse_dynamics(model, X, V, A))
    np.testing.assert_array_equal(alg.regressor(model, X, V, A, stribeck=True),
                                  dyn.regressor(model, X, V, A, stribeck=True))
    q, qd, qdd = alg.joint_state(model, X, V, A)
    for a, b in zip(alg.cartesian_state(model, q, qd, qdd), dyn.cartesian_state(model, q, qd, qdd)):
        np.testing.assert_array_equal(a, b)
    tau = alg.inverse_dynamics(model, X[0], V[0], A[0])
    assert alg.step(model, X[0], V[0], tau, 1e-3) == sim.step(model, X[0], V[0], tau, 1e-3)
    # the interface's own consistency, either kind: forward dynamics inverts inverse dynamics
    np.testing.assert_allclose(alg.forward_dynamics(model, X, V, alg.inverse_dynamics(model, X, V, A)), A,
                               rtol=1e-8, atol=1e-8)
    # Y pi = tau with pi the model's own lumped parameters (and break-away efforts)
    Y = alg.regressor_joint(model, q, qd, qdd, stribeck=True)
    pi = np.concatenate((model.params.as_vector(), model.params.static))
    np.testing.assert_allclose(Y @ pi, alg.inverse_dynamics(model, X, V, A), rtol=1e-9, atol=1e-9)


def test_check_joint_limits_takes_arrays_and_components_for_both_kinds(model):
    lo, hi = np.array(model.q_lo), np.array(model.q_hi)
    mid = 0.5 * (lo + hi)
    alg.check_joint_limits(model, mid)
    alg.check_joint_limits(model, np.stack([mid, mid]))
    alg.check_joint_limits(model, list(mid))
    bad = np.stack([mid, mid])
    bad[1, 2] = hi[2] + 0.01
    unit = joint_units(model)["position"]
    with pytest.raises(alg.UnreachableError, match=r"3 .*outside its limits .*\(sample 1\)") as e:
        alg.check_joint_limits(model, bad)
    assert e.value.index == 1 and f" {unit} is outside" in str(e.value)


def test_joint_space_inertia_is_the_inertia_each_joint_feels(model):
    """J^-T M J^-1: the kinetic energy in joint coordinates, 1/2 q_dot^T M_q q_dot."""
    X = alg.sample_workspace(model, 5, seed=1)
    V = np.random.default_rng(2).normal(size=X.shape) * 0.1
    _, qd, _ = alg.joint_state(model, X, V)
    Mq = alg.joint_space_inertia(model, X)
    kin, _ = alg.energy(model, X, V)
    np.testing.assert_allclose(0.5 * np.einsum("ni,nij,nj->n", qd, Mq, qd), kin, rtol=1e-9)


def test_parameter_sets_by_kind():
    rot, lin = model_for("nt_robot"), model_for("colombo2020")
    assert alg.parameter_set(rot).names == alg.parameter_names(rot)
    assert alg.parameter_set(lin, stribeck=True).names == alg.parameter_names(lin) + ("static_1", "static_2",
                                                                                      "static_3")
    assert alg.parameter_set(rot, "kim").key == "kim"
    from delta_dynamics.identification import IdentificationError
    with pytest.raises(IdentificationError, match="kim parameter set .* rotary Delta.*use --params explicit"):
        alg.parameter_set(lin, "kim")
    p = alg.parameters_from_vector(lin, np.arange(14.0))
    assert type(p) is type(lin.params) and p.carriage_mass == (5.0, 6.0, 7.0)
