"""The linear Delta's Lagrangian model (Colombo & Lentini 2020, eqs. 9-20) checked against the
paper's closed forms (eqs. 13-17), the power balance (eq. 20) on its Lissajous path, Lagrange's
equations of the model's own energy, an independent rigid-body energy of the six rods, and
forward(inverse) round trips; plus the regressor and the simulation."""
import math

import numpy as np
import pytest

from delta_dynamics.identification.regressors import base_parameters, stack
from delta_dynamics.algorithms import UnreachableError
from delta_dynamics.linear.dynamics import (cartesian_state, energy, forward_dynamics, friction_torque,
                                            inverse_dynamics, inverse_dynamics_joint, joint_state, mass_matrix,
                                            multipliers, regressor, regressor_joint, rod_forces)
from delta_dynamics.linear.kinematics import (forward_kinematics, inverse_kinematics, jacobian_q, jacobian_x,
                                              sample_workspace, workspace_centre)
from delta_dynamics.linear.model import PARAMETER_NAMES, LinearModel, LinearParameters
from delta_dynamics.algorithms import simulate_adaptive, simulate_fixed
from delta_dynamics.linear.simulate import step
from delta_dynamics.motion.trajectories import lissajous

from model_checks import (assert_equation_of_motion, assert_single_sample_path_matches_the_batch_path, d_dt,
                          lagrange_efforts, lagrangian, multisine)

PRESETS = ["colombo2020", "linear_delta_xl"]
PAPER = dict(m_link=0.02, m_plat=0.5, m_cart=0.25)


def paper_model(rods="lumped"):
    return LinearModel.from_robot("colombo2020", rods=rods)


@pytest.fixture(scope="module", params=[(p, r) for p in PRESETS for r in ("full", "lumped")],
                ids=lambda pr: f"{pr[0]}-{pr[1]}")
def model(request):
    name, rods = request.param
    m = LinearModel.from_robot(name, rods=rods)
    # a payload, unequal carriages and friction make the checks stricter than the preset
    p = m.params
    return m.with_parameters(LinearParameters(
        m_x=p.m_x + 0.3, m_r=p.m_r,
        carriage_inertia=(p.carriage_inertia[0], 1.2 * p.carriage_inertia[1], 0.9 * p.carriage_inertia[2]),
        carriage_mass=(p.carriage_mass[0], 0.8 * p.carriage_mass[1], 1.1 * p.carriage_mass[2]),
        viscous=(1.0, 2.0, 3.0), coulomb=(0.5, 0.7, 0.9), static=(0.8, 0.7, 1.2),
        stribeck_velocity=0.01, smoothing_velocity=0.002))


def joint_path(m, seed):
    """A smooth carriage path q(t) around the home pose (multi-sine) and its derivatives."""
    return multisine(inverse_kinematics(m, workspace_centre(m)), (0.2 * 0.06 * m.l, 0.5 * 0.06 * m.l), seed)


# ----------------------------------------------------------------------------- the paper's checks

@pytest.mark.parametrize("rods", ["lumped", "full"])
def test_static_forces_at_the_centre_are_equation_16(rods):
    m = paper_model(rods)
    g = m.g
    expected = g * (2 * PAPER["m_link"] + PAPER["m_cart"] + PAPER["m_plat"] / 3)
    for z in (0.0, 0.05, 0.15, 0.25):
        Q = inverse_dynamics(m, [0.0, 0.0, z], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0])
        np.testing.assert_allclose(Q, expected, rtol=1e-13)
    assert abs(expected - 4.4784) < 1e-4


@pytest.mark.parametrize("rods", ["lumped", "full"])
def test_static_forces_sum_to_the_suspended_weight_equation_17(rods):
    m = paper_model(rods)
    X = sample_workspace(m, 500, seed=11)
    Q = inverse_dynamics(m, X, np.zeros_like(X), np.zeros_like(X))
    weight = (6 * PAPER["m_link"] + PAPER["m_plat"] + 3 * PAPER["m_cart"]) * m.g
    np.testing.assert_allclose(Q.sum(axis=1), weight, rtol=1e-12)
    assert round(weight, 2) == 13.44
    assert np.ptp(Q[:, 0]) > 1.0                       # off the centre the forces do differ


def test_multipliers_and_forces_are_the_printed_equations_13_and_14():
    """The lumped model is eqs. (13)-(14) verbatim (with J_x, J_q of eq. 3, J_q = diag(z - q_i))."""
    m = paper_model("lumped")
    ml, mp, mc, g = PAPER["m_link"], PAPER["m_plat"], PAPER["m_cart"], m.g
    rng = np.random.default_rng(2)
    X = sample_workspace(m, 40, seed=12, min_measure=0.05)
    V, A = rng.normal(size=(2, 40, 3)) * 0.3
    q, qd, qdd = joint_state(m, X, V, A)
    lam = multipliers(m, X, V, A)
    Q = inverse_dynamics(m, X, V, A)
    ez = np.array([0.0, 0.0, 1.0])
    for k in range(len(X)):
        Jx, Jq = jacobian_x(m, X[k]), jacobian_q(m, X[k])
        JxTinv = np.linalg.inv(Jx.T)
        lam13 = (mp + 3 * ml) / 2 * JxTinv @ A[k] + (mp + 3 * ml) * g / 2 * JxTinv @ ez
        Q14 = (ml + mc) * (qdd[k] + g) + (mp + 3 * ml) * Jq @ JxTinv @ (A[k] + g * ez)
        np.testing.assert_allclose(lam[k], lam13, rtol=1e-11, atol=1e-12)
        np.testing.assert_allclose(Q[k], Q14, rtol=1e-11, atol=1e-12)
    # at rest the rods' vertical pulls carry the platform (+ half rods); near the centre all
    # three pairs are in tension (far out one pair may push)
    Xs = X[:5]
    T = rod_forces(m, Xs, np.zeros_like(Xs), np.zeros_like(Xs))
    near = np.array([[0.0, 0.0, 0.1], [0.02, -0.01, 0.05], [-0.03, 0.0, 0.2]])
    assert (multipliers(m, near, 0 * near, 0 * near) < 0).all()
    q0 = inverse_kinematics(m, Xs)
    lift = np.einsum("ni,ni->n", T, (q0 - Xs[:, 2:3]) / m.l)       # tension * vertical cosine
    np.testing.assert_allclose(lift, (mp + 3 * ml) * g, rtol=1e-12)


def _energy_rate_and_power(m, tr, every=1):
    """(d/dt (K + U), sum_i Q_i q_dot_i) at the samples of ``tr``: d/dt by the chain rule on the
    trajectory's own derivatives (E at X + X_d s + X_dd s^2/2, velocity X_d + X_dd s)."""
    Q = inverse_dynamics(m, tr.X, tr.Xd, tr.Xdd)
    _, qd, _ = joint_state(m, tr.X, tr.Xd)
    ks = np.arange(0, len(tr), every)
    power = np.einsum("ni,ni->n", Q[ks], qd[ks])
    h = 2e-4

    def E(s):
        X = tr.X[ks] + tr.Xd[ks] * s + 0.5 * tr.Xdd[ks] * s * s
        kin, pot = energy(m, X, tr.Xd[ks] + tr.Xdd[ks] * s)
        return kin + pot
    return d_dt(E, 0.0, h), power


@pytest.mark.parametrize("speed, dt", [(0.01, 1e-2), (0.05, 2e-3), (0.2, 1e-3)])
@pytest.mark.parametrize("rods", ["lumped", "full"])
def test_power_balance_equation_20_on_the_lissajous_path(speed, dt, rods):
    """sum_i Q_i q_dot_i = d/dt (K + U) (eq. 20) along eqs. (18)-(19): the nozzle at z = 0
    (platform at PQ), amplitudes 50 mm, at the paper's three printing speeds."""
    m = paper_model(rods)
    tr = lissajous(speed=speed, x0=0.05, y0=0.05, depth=m.tool_offset, dt=dt)
    dE, power = _energy_rate_and_power(m, tr, every=7)
    scale = np.sqrt(np.mean(power ** 2))
    assert scale > 0
    np.testing.assert_allclose(dE, power, atol=1e-7 * scale)


def test_the_lissajous_forces_look_like_figure_4():
    """At 10 mm/s the sum of the forces is the suspended weight (Fig. 4 bottom); at 200 mm/s
    inertia makes Q_1 and the sum swing by several newtons (Fig. 4 top)."""
    m = paper_model("lumped")
    slow = lissajous(speed=0.01, x0=0.05, y0=0.05, depth=m.tool_offset, dt=0.01, timing="arc-length")
    fast = lissajous(speed=0.2, x0=0.05, y0=0.05, depth=m.tool_offset, dt=1e-3, timing="arc-length")
    Qs = inverse_dynamics(m, slow.X, slow.Xd, slow.Xdd)
    Qf = inverse_dynamics(m, fast.X, fast.Xd, fast.Xdd)
    np.testing.assert_allclose(Qs.sum(axis=1), 13.435, atol=0.01)
    assert np.ptp(Qf.sum(axis=1)) > 2.0
    assert np.ptp(Qf[:, 0]) > np.ptp(Qs[:, 0]) + 2.0


# ----------------------------------------------------------------------------- the model's own energy

def test_every_force_obeys_lagrange_equations(model):
    """Q_i = d/dt dL/dq_dot_i - dL/dq_i (+ friction), with L = T - U of :func:`energy`."""
    mf = model.without_friction()
    for seed in (10, 11):
        q, qd, qdd = joint_path(model, seed)
        for t in np.linspace(0.1, 1.9, 5):
            Q_lagrange = lagrange_efforts(lagrangian(mf), q, qd, t)
            Q = inverse_dynamics_joint(mf, q(t), qd(t), qdd(t))
            np.testing.assert_allclose(Q, Q_lagrange, rtol=1e-6, atol=1e-7 * np.abs(Q).max())
            np.testing.assert_allclose(inverse_dynamics_joint(model, q(t), qd(t), qdd(t)) - Q,
                                       friction_torque(model, qd(t)), atol=1e-12)


def test_power_balance_along_carriage_paths(model):
    mf = model.without_friction()
    q, qd, qdd = joint_path(model, 3)
    E = lambda t: sum(energy(mf, *cartesian_state(mf, q(t), qd(t))[:2]))
    for t in np.linspace(0.0, 2.0, 9):
        power = inverse_dynamics_joint(mf, q(t), qd(t), qdd(t)) @ qd(t)
        assert abs(power - d_dt(E, t, 1e-3)) <= 1e-8 * (1 + abs(power))


def test_static_forces_are_the_gradient_of_the_potential(model):
    mf = model.without_friction()
    X = sample_workspace(model, 30, seed=21)
    Q = inverse_dynamics(mf, X, np.zeros_like(X), np.zeros_like(X))
    q = inverse_kinematics(mf, X)
    U = lambda qq: energy(mf, forward_kinematics(mf, qq), np.zeros(3))[1]
    for k in range(len(X)):
        grad = np.array([d_dt(lambda s: U(q[k] + s * np.eye(3)[i]), 0.0, 1e-5) for i in range(3)])
        np.testing.assert_allclose(Q[k], grad, rtol=1e-7, atol=1e-8)


def test_full_body_energy_is_that_of_six_rigid_rods():
    """An independent check of the full-body model: the kinetic and potential energy of every
    body from the mechanism's geometry (each rod of each parallelogram, offset +-s/2 along the
    pair's axle, spinning as the rod's direction turns), the velocities by finite differences."""
    m = LinearModel.from_robot("colombo2020", rods="full")
    rb = m.robot
    mr, Ir = rb.mass.rod.mass, rb.mass.rod.inertia
    s = rb.geometry.rod_spacing
    q, qd, _ = joint_path(m, 5)
    u = np.stack((m.cphi, m.sphi, np.zeros(3)), 1)
    tang = np.stack((-np.asarray(m.sphi), m.cphi, np.zeros(3)), 1)

    def rod_ends(t):
        X = forward_kinematics(m, q(t))
        A = m.R * u + q(t)[:, None] * np.array([0, 0, 1.0])
        P = X + m.r * u
        return [(A + k * s / 2 * tang, P + k * s / 2 * tang) for k in (-1, 1)], X

    for t in (0.3, 1.1):
        kin = pot = 0.0
        for j in range(2):
            A, P = rod_ends(t)[0][j]
            vA = d_dt(lambda tt: rod_ends(tt)[0][j][0], t, 1e-4)
            vP = d_dt(lambda tt: rod_ends(tt)[0][j][1], t, 1e-4)
            e = (P - A) / m.l
            omega = np.cross(e, (vP - vA) / m.l)           # no spin about the rod's own axis
            vc = 0.5 * (vA + vP)
            kin += 0.5 * mr * np.sum(vc * vc) + 0.5 * Ir * np.sum(omega * omega)
            pot += mr * m.g * np.sum(0.5 * (A + P)[:, 2])
        X = rod_ends(t)[1]
        Xd = d_dt(lambda tt: rod_ends(tt)[1], t, 1e-4)
        mc = rb.mass.carriage.mass + rb.mass.motor.reflected_inertia
        kin += 0.5 * rb.mass.platform_mass * Xd @ Xd + 0.5 * mc * qd(t) @ qd(t)
        pot += m.g * (rb.mass.platform_mass * X[2] + rb.mass.carriage.mass * q(t).sum())
        T, U = energy(m, *cartesian_state(m, q(t), qd(t))[:2])
        assert T == pytest.approx(kin, rel=1e-9)
        assert U == pytest.approx(pot, rel=1e-12)


def test_the_lumping_error_is_measurable_and_small():
    """The paper's lumped rods against rigid rods: the same statics, a different inertia. On
    the 200 mm/s Lissajous the forces differ by a few percent of their swing at most."""
    full, lumped = paper_model("full"), paper_model("lumped")
    tr = lissajous(speed=0.2, x0=0.05, y0=0.05, depth=full.tool_offset, dt=1e-3, timing="arc-length")
    Qf = inverse_dynamics(full, tr.X, tr.Xd, tr.Xdd)
    Ql = inverse_dynamics(lumped, tr.X, tr.Xd, tr.Xdd)
    err = np.abs(Qf - Ql).max()
    swing = np.ptp(Ql - Ql.mean(axis=0), axis=0).max()
    assert 0.01 < err < 0.1 * swing
    X = tr.X[::100]
    zero = np.zeros_like(X)
    np.testing.assert_allclose(inverse_dynamics(full, X, zero, zero), inverse_dynamics(lumped, X, zero, zero),
                               rtol=1e-13)


# ----------------------------------------------------------------------------- reduced form, round trips

def test_reduced_equation_of_motion_holds_with_M_C_G(model):
    """M X_dd + C X_d + G - F_P = J^T (Q - Q_fric); M symmetric positive definite, T = 1/2 X_d^T M X_d."""
    rng = np.random.default_rng(3)
    X = sample_workspace(model, 30, seed=31, min_measure=0.05)
    V, A, F = rng.normal(size=(3, 30, 3))
    M = assert_equation_of_motion(model, X, V, A, F, sym_atol=1e-13)
    np.testing.assert_allclose(mass_matrix(model, X[4]), M[4], rtol=1e-14)


def test_forward_dynamics_inverts_inverse_dynamics(model):
    rng = np.random.default_rng(4)
    X = sample_workspace(model, 50, seed=41, min_measure=0.05)
    V, A, F = rng.normal(size=(3, 50, 3))
    Q = inverse_dynamics(model, X, V, A, F_P=F)
    np.testing.assert_allclose(forward_dynamics(model, X, V, Q, F_P=F), A, atol=1e-8)
    np.testing.assert_allclose(forward_dynamics(model, X[7], V[7], Q[7], F_P=F[7]), A[7], atol=1e-8)
    Q0 = inverse_dynamics(model, X, V, A, friction=False)
    np.testing.assert_allclose(forward_dynamics(model, X, V, Q0, friction=False), A, atol=1e-8)


def test_single_sample_path_matches_the_batch_path(model):
    assert_single_sample_path_matches_the_batch_path(model)


def test_an_unreachable_sample_is_named():
    m = paper_model()
    X = np.tile([0.0, 0.0, 0.1], (4, 1))
    X[2] = [0.3, 0.0, 0.1]
    with pytest.raises(UnreachableError, match=r"platform position \(0\.3, 0, 0\.1\) m is unreachable \(sample 2\)") as e:
        inverse_dynamics(m, X, np.zeros_like(X), np.zeros_like(X))
    assert e.value.index == 2
    with pytest.raises(ValueError, match="must all be single samples or all"):
        inverse_dynamics(m, X, np.zeros(3), np.zeros_like(X))


# ----------------------------------------------------------------------------- regressor

def test_regressor_reproduces_the_forces(model):
    rng = np.random.default_rng(6)
    X = sample_workspace(model, 40, seed=61, min_measure=0.05)
    V, A = rng.normal(size=(2, 40, 3)) * 0.3
    p = model.params
    Y = regressor(model, X, V, A)
    assert Y.shape == (40, 3, len(PARAMETER_NAMES))
    Ys = regressor(model, X, V, A, stribeck=True)
    pis = np.concatenate((p.as_vector(), p.static))
    np.testing.assert_allclose(np.einsum("nik,k->ni", Ys, pis), inverse_dynamics(model, X, V, A), atol=1e-10)
    mf = model.without_friction()
    np.testing.assert_allclose(np.einsum("nik,k->ni", Y, mf.params.as_vector()),
                               inverse_dynamics(mf, X, V, A), atol=1e-10)
    q, qd, qdd = joint_state(model, X, V, A)
    np.testing.assert_allclose(regressor_joint(model, q, qd, qdd), Y, atol=1e-8)
    np.testing.assert_allclose(regressor(model, X[3], V[3], A[3]), Y[3], atol=1e-13)


def test_every_lumped_parameter_is_identifiable_from_a_rich_motion():
    """The identification pipeline's base-parameter analysis finds full rank (14) on random
    carriage motions: m_r is separable from m_x and the carriage masses."""
    xl = LinearModel.from_robot("linear_delta_xl")
    m = xl.with_parameters(LinearParameters.from_vector(xl.params.as_vector()))   # no Stribeck dip
    rng = np.random.default_rng(7)
    X = sample_workspace(m, 3000, seed=71, min_measure=0.1)
    V = rng.normal(size=(3000, 3))
    A = rng.normal(size=(3000, 3)) * 20.0
    Y = regressor(m, X, V, A)
    Q = inverse_dynamics(m, X, V, A)
    Amat, b = stack(Y, Q)
    base = base_parameters(Amat, PARAMETER_NAMES)
    assert base.full_rank and base.rank == 14
    est = np.linalg.lstsq(Amat, b, rcond=None)[0]
    np.testing.assert_allclose(est, m.params.as_vector(), rtol=1e-6, atol=1e-8)


# ----------------------------------------------------------------------------- model

def test_model_parameters_from_the_robot_file():
    m = LinearModel.from_robot("colombo2020")
    ml, mp, mc = PAPER["m_link"], PAPER["m_plat"], PAPER["m_cart"]
    assert m.m_x == pytest.approx(mp + 3 * ml)
    assert m.carriage_inertia == pytest.approx((ml + mc,) * 3)           # eq. (14): m_link + m_cart
    assert m.carriage_mass == pytest.approx((ml + mc,) * 3)
    I = m.robot.mass.rod.inertia
    assert m.m_r == pytest.approx(2 * (I - ml * m.l ** 2 / 4) / m.l ** 2)
    assert m.lumped_rods().m_r == 0.0 and paper_model("lumped").m_r == 0.0
    xl = LinearModel.from_robot("linear_delta_xl")
    d = xl.robot.mass.motor
    assert xl.carriage_inertia[0] - xl.carriage_mass[0] == pytest.approx(
        d.rotor_inertia * (2 * math.pi / d.travel_per_revolution) ** 2)
    p = LinearParameters.from_vector(m.params.as_vector(), static=m.params.static)
    assert p.as_vector().tolist() == m.params.as_vector().tolist()
    with pytest.raises(AttributeError, match="immutable"):
        m.m_x = 1.0
    with pytest.raises(ValueError, match="type 'rotary'.*needs a 'linear' robot file"):
        LinearModel.from_robot("nt_robot")
    with pytest.raises(ValueError, match="rods must be one of full, lumped"):
        LinearModel.from_robot("colombo2020", rods="half")
    assert m.joint_names == ("carriage_1_joint", "carriage_2_joint", "carriage_3_joint")
    assert m.without_friction().viscous == (0.0, 0.0, 0.0)


def test_identified_parameters_in_the_robot_file_are_used(tmp_path):
    from delta_core.robot_file import RobotFileError, load_robot, save_robot
    r = load_robot("colombo2020")
    values = LinearModel(r).params.as_vector() * 1.1
    meta = {"identified": {"lumped_parameters": {"names": list(PARAMETER_NAMES), "values": values.tolist(),
                                                 "static": [1.0, 2.0, 3.0]}}}
    save_robot(r.replace(metadata=meta), tmp_path / "id.yaml")
    m = LinearModel.from_robot(tmp_path / "id.yaml")
    np.testing.assert_allclose(m.params.as_vector(), values)
    assert m.static == (1.0, 2.0, 3.0)
    meta["identified"]["lumped_parameters"]["names"] = ["m_x"]
    save_robot(r.replace(metadata=meta), tmp_path / "bad.yaml")
    with pytest.raises(RobotFileError, match="bad.yaml: metadata.identified.lumped_parameters.names must be"):
        LinearModel.from_robot(tmp_path / "bad.yaml")


# ----------------------------------------------------------------------------- simulation

def test_fixed_step_and_adaptive_simulation_follow_the_inverse_dynamics(model):
    """Driven open loop by the inverse-dynamics forces of a 200 mm/s Lissajous (held over each
    1 ms step), the simulated platform stays on the path."""
    tr = lissajous(speed=0.2, x0=0.3 * (model.R - model.r), y0=0.3 * (model.R - model.r),
                   depth=float(workspace_centre(model)[2]), dt=1e-3, timing="arc-length")
    tr = type(tr)(tr.t[:300], tr.X[:300], tr.Xd[:300], tr.Xdd[:300])
    Q = inverse_dynamics(model, tr.X, tr.Xd, tr.Xdd)
    size = np.abs(tr.X[:, :2]).max()
    Xr, _ = simulate_fixed(model, tr.X[0], tr.Xd[0], tr.t, lambda t: inverse_dynamics(
        model, _interp(tr, t, "X"), _interp(tr, t, "Xd"), _interp(tr, t, "Xdd")), method="rk4")
    assert np.abs(Xr - tr.X).max() < 1e-4 * size
    Xs, _ = simulate_fixed(model, tr.X[0], tr.Xd[0], tr.t, Q)          # semi-implicit, forces held
    assert np.abs(Xs - tr.X).max() < 2e-2 * size
    Xa, _ = simulate_adaptive(model, tr.X[0], tr.Xd[0], tr.t[:200], Q[:200], rtol=1e-8, atol=1e-10)
    assert np.abs(Xa - tr.X[:200]).max() < 1e-3 * size


def _interp(tr, t, what):
    arr = getattr(tr, what)
    return np.array([np.interp(t, tr.t, arr[:, k]) for k in range(3)])


def test_holding_forces_keep_the_robot_at_rest_and_none_let_it_fall():
    m = paper_model("full")
    X0 = (0.02, -0.01, 0.1)
    Q = inverse_dynamics(m, X0, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0))
    X, V = X0, (0.0, 0.0, 0.0)
    for _ in range(200):
        X, V = step(m, X, V, Q, 1e-3)
    np.testing.assert_allclose(X, X0, atol=1e-12)
    X, V = step(m, X0, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 1e-3, method="rk4")
    assert V[2] == pytest.approx(-m.g * 1e-3, rel=1e-6)
    with pytest.raises(ValueError, match="integrator method must be one of"):
        step(m, X0, (0.0, 0.0, 0.0), Q, 1e-3, method="euler")
