"""The explicit dynamic model checked against its own energy (not against the printed
equations, which have typos): power balance, Lagrange's equations, statics, symmetry,
forward(inverse) round trips, the regressor and the joint-space (Kim) form."""
import numpy as np
import pytest

from delta_dynamics.rotary.dynamics import (cartesian_state, energy, forward_dynamics, inverse_dynamics,
                                            inverse_dynamics_joint, joint_state, regressor, regressor_joint)
from delta_dynamics.reference.kim import kim_matrices, kim_parameters, kim_regressor, kim_torque
from delta_dynamics.rotary.kinematics import UnreachableError, forward_kinematics, sample_workspace
from delta_dynamics.rotary.model import RotaryModel, RotaryParameters, forearm_point_masses
from delta_dynamics.algorithms import simulate_adaptive, simulate_fixed
from delta_dynamics.rotary.simulate import step
from delta_dynamics.motion.trajectories import circle, pick_place

from model_checks import (assert_equation_of_motion, assert_single_sample_path_matches_the_batch_path, d_dt,
                          lagrange_efforts, lagrangian, multisine)

PRESETS = ["nt_robot", "d3s800"]


@pytest.fixture(scope="module", params=PRESETS)
def model(request):
    m = RotaryModel.from_robot(request.param)
    # a payload and unequal arms make the checks stricter than the symmetric preset
    p = m.params
    return m.with_parameters(RotaryParameters(
        m_x=p.m_x + 0.7, m_k=p.m_k, arm_inertia=(p.arm_inertia[0], 1.1 * p.arm_inertia[1], 0.9 * p.arm_inertia[2]),
        arm_moment=(p.arm_moment[0], 0.8 * p.arm_moment[1], 1.2 * p.arm_moment[2]),
        viscous=p.viscous, coulomb=p.coulomb, static=p.static,
        stribeck_velocity=p.stribeck_velocity, smoothing_velocity=0.01))


def joint_path(model, seed):
    """A smooth joint-space path q(t) around the home pose (multi-sine)."""
    return multisine(np.full(3, 0.5 * (model.q_lo[0] + model.q_hi[0]) * 0.6), (0.05, 0.2), seed)


def cart_path(model, seed):
    q, qd, qdd = joint_path(model, seed)

    def X(t):
        return forward_kinematics(model, q(t))
    return X


def test_power_balance_without_friction(model):
    """sum_i tau_i q_dot_i = d/dt (T + U) along trajectories (<= 1e-8 relative)."""
    mf = model.without_friction()
    for seed in range(4):
        q, qd, qdd = joint_path(model, seed)
        E = lambda t: sum(energy(mf, *cartesian_state(mf, q(t), qd(t))[:2]))
        ts = np.linspace(0.0, 2.0, 25)
        power = np.array([inverse_dynamics_joint(mf, q(t), qd(t), qdd(t)) @ qd(t) for t in ts])
        dE = np.array([d_dt(E, t, 2e-3) for t in ts])
        scale = np.sqrt(np.mean(power ** 2))
        assert np.abs(power - dE).max() <= 1e-8 * scale


def test_power_balance_on_the_paper_trajectories(model):
    mf = model.without_friction()
    for tr in (circle(radius=0.2, depth=-0.85, period=1.5, ramp=0.5, dt=2e-3),
               pick_place(start=(-0.1525, 0.0, -0.9), dt=2e-3)):
        q, qd, qdd = joint_state(mf, tr.X, tr.Xd, tr.Xdd)
        tau = inverse_dynamics(mf, tr.X, tr.Xd, tr.Xdd)
        power = np.einsum("ni,ni->n", tau, qd)
        # d/dt E via the chain rule on the analytic derivatives: E(X, Xd) at t +- h
        h = 1e-4
        dE = []
        for k in range(5, len(tr) - 5, 37):
            def E(s):
                Xs = tr.X[k] + tr.Xd[k] * s + 0.5 * tr.Xdd[k] * s * s
                return sum(energy(mf, Xs, tr.Xd[k] + tr.Xdd[k] * s))
            # jerk is not in the quadratic Taylor model, so only dE/dt at s = 0 is exact
            dE.append((d_dt(E, 0.0, h), power[k]))
        dE = np.array(dE)
        scale = np.sqrt(np.mean(power ** 2))
        assert np.abs(dE[:, 0] - dE[:, 1]).max() <= 1e-8 * scale


def test_every_torque_obeys_lagrange_equations(model):
    """tau_i = d/dt dL/dq_dot_i - dL/dq_i, with L = T - U of the model's own energy."""
    mf = model.without_friction()
    for seed in (10, 11, 12):
        q, qd, qdd = joint_path(model, seed)
        for t in np.linspace(0.1, 1.9, 7):
            tau_lagrange = lagrange_efforts(lagrangian(mf), q, qd, t)
            tau = inverse_dynamics_joint(mf, q(t), qd(t), qdd(t))
            np.testing.assert_allclose(tau, tau_lagrange, rtol=1e-6, atol=1e-6 * np.abs(tau).max())


def test_static_torques_are_the_gradient_of_the_potential(model):
    """At rest: tau = dU/dq (the gravity torque -dU/dq is balanced)."""
    mf = model.without_friction()
    X = sample_workspace(model, 40, seed=21)
    tau = inverse_dynamics(mf, X, np.zeros_like(X), np.zeros_like(X))
    q = joint_state(mf, X, np.zeros_like(X))[0]
    U = lambda qq: energy(mf, forward_kinematics(mf, qq), np.zeros(3))[1]
    eye = np.eye(3)
    for k in range(len(X)):
        grad = np.array([(U(q[k] + 1e-6 * eye[i]) - U(q[k] - 1e-6 * eye[i])) / 2e-6 for i in range(3)])
        np.testing.assert_allclose(tau[k], grad, rtol=1e-6, atol=1e-6)
        gravity_torque = -grad
        np.testing.assert_allclose(tau[k] + gravity_torque, 0.0, atol=1e-5)


def test_torques_are_equal_at_the_centre():
    m = RotaryModel.from_robot("nt_robot")
    for z in (-0.65, -0.75, -0.95):
        for acc in ([0, 0, 0], [0, 0, 3.0], [0, 0, -9.0]):
            tau = inverse_dynamics(m, [0, 0, z], [0, 0, 0.2], acc)
            assert np.ptp(tau) <= 1e-10 * np.abs(tau).max()
    # and the static torque holds the arms up: negative by the sign convention
    assert (inverse_dynamics(m, [0, 0, -0.75], [0, 0, 0], [0, 0, 0]) < 0).all()


def test_equation_39_holds_with_M_C_G(model):
    """M X_dd + C X_d + G - F_P = J^T (tau - tau_fric); M symmetric positive definite."""
    rng = np.random.default_rng(3)
    X = sample_workspace(model, 30, seed=31)
    V, A, F = rng.normal(size=(3, 30, 3))
    assert_equation_of_motion(model, X, V, A, F)


def test_forward_dynamics_inverts_inverse_dynamics(model):
    rng = np.random.default_rng(4)
    X = sample_workspace(model, 50, seed=41)
    V, A = rng.normal(size=(2, 50, 3))
    tau = inverse_dynamics(model, X, V, A)
    np.testing.assert_allclose(forward_dynamics(model, X, V, tau), A, atol=1e-9)
    np.testing.assert_allclose(forward_dynamics(model, X[7], V[7], tau[7]), A[7], atol=1e-9)


def test_single_sample_path_matches_the_batch_path(model):
    assert_single_sample_path_matches_the_batch_path(model)


def test_regressor_reproduces_the_torques(model):
    rng = np.random.default_rng(6)
    X = sample_workspace(model, 40, seed=61)
    V, A = rng.normal(size=(2, 40, 3))
    pi = model.params.as_vector()
    Y = regressor(model, X, V, A)
    assert Y.shape == (40, 3, 14)
    # the model has Stribeck friction; the plain regressor lacks it: compare with the
    # Stribeck columns included
    Ys = regressor(model, X, V, A, stribeck=True)
    p = model.params
    pis = np.concatenate((pi, np.array(p.static)))
    np.testing.assert_allclose(np.einsum("nik,k->ni", Ys, pis), inverse_dynamics(model, X, V, A), atol=1e-10)
    no_stribeck = model.with_parameters(RotaryParameters.from_vector(pi, smoothing_velocity=p.smoothing_velocity))
    np.testing.assert_allclose(np.einsum("nik,k->ni", Y, pi), inverse_dynamics(no_stribeck, X, V, A), atol=1e-10)
    q, qd, qdd = joint_state(model, X, V, A)
    np.testing.assert_allclose(regressor_joint(model, q, qd, qdd), Y, atol=1e-9)


def test_kim_joint_space_form(model):
    """Kim et al. eqs. (26)-(29) equal the explicit model with the forearm lumped at its ends."""
    X = sample_workspace(model, 20, seed=71)
    rng = np.random.default_rng(7)
    V, A = rng.normal(size=(2, 20, 3))
    q, qd, qdd = joint_state(model, X, V, A)
    p = kim_parameters(model)
    lumped = model.with_parameters(RotaryParameters(
        m_x=p[0], m_k=0.0, arm_inertia=tuple(p[2:5]), arm_moment=(p[1] / model.g,) * 3,
        viscous=tuple(p[5:8]), coulomb=tuple(p[8:11]), static=tuple(p[8:11]),
        stribeck_velocity=1.0, smoothing_velocity=0.0))
    tau = kim_torque(model, q, qd, qdd)
    np.testing.assert_allclose(tau, inverse_dynamics(lumped, X, V, A), atol=1e-10)
    np.testing.assert_allclose(np.einsum("nik,k->ni", kim_regressor(model, q, qd, qdd), p), tau, atol=1e-10)
    D, C, N = kim_matrices(model, q, qd)
    np.testing.assert_allclose(D, np.swapaxes(D, 1, 2), atol=1e-12)
    assert (np.linalg.eigvalsh(D) > 0).all()


def test_forearm_point_masses_are_dynamically_equivalent():
    """Eq. (22): same mass, same COM, same inertia about the COM."""
    M, I, rk, l = 0.4, 0.015, 0.4, 0.8
    mc, ma, mk = forearm_point_masses(M, I, rk, l)
    assert mc + ma + mk == pytest.approx(M)
    assert mc * (-rk * l) + ma * ((1 - rk) * l) == pytest.approx(0.0, abs=1e-15)
    assert mc * (rk * l) ** 2 + ma * ((1 - rk) * l) ** 2 == pytest.approx(I)


def test_forward_of_inverse_reproduces_the_trajectory():
    m = RotaryModel.from_robot("nt_robot")
    tr = pick_place(start=(-0.1525, 0.0, -0.8), dt=1e-3)
    ts = tr.t[:800]
    # friction-free torques are smooth: the cubic spline through the 1 kHz samples is exact
    # to ~1e-9, so forward(inverse) must close tightly
    mf = m.without_friction()
    tau = inverse_dynamics(mf, tr.X, tr.Xd, tr.Xdd)
    X, V = simulate_adaptive(mf, tr.X[0], tr.Xd[0], ts, tau[:800])
    assert np.abs(X - tr.X[:800]).max() < 1e-7
    assert np.abs(V - tr.Xd[:800]).max() < 1e-6
    # with friction the Coulomb sign flips within ~1 ms at each velocity reversal; the
    # spline through sampled torques smears that, which bounds the agreement
    tau = inverse_dynamics(m, tr.X, tr.Xd, tr.Xdd)
    X, V = simulate_adaptive(m, tr.X[0], tr.Xd[0], ts, tau[:800])
    assert np.abs(X - tr.X[:800]).max() < 2e-4
    # the 1 kHz fixed-step integrator, 10 substeps, torques from the inverse model as a function of time
    # the fixed-step RK4 integrator, friction-free, torques as a smooth function of time
    from scipy.interpolate import CubicSpline
    f = CubicSpline(tr.t, inverse_dynamics(mf, tr.X, tr.Xd, tr.Xdd), axis=0)
    X2, _ = simulate_fixed(mf, tr.X[0], tr.Xd[0], ts, f, method="rk4", substeps=2)
    assert np.abs(X2 - tr.X[:800]).max() < 1e-6


def test_fixed_step_holds_still_and_dissipates():
    m = RotaryModel.from_robot("nt_robot")
    X0 = (0.05, -0.03, -0.8)
    hold = inverse_dynamics(m, X0, [0, 0, 0], [0, 0, 0], friction=False)
    X, V = X0, (0.0, 0.0, 0.0)
    for _ in range(2000):
        X, V = step(m, X, V, hold, 1e-3)
    assert np.abs(np.subtract(X, X0)).max() < 1e-9
    # released with no torque from a moving state, friction drains the energy monotonically
    X, V = (0.0, 0.0, -0.8), (0.3, 0.0, 0.0)
    mg = m.without_friction()
    E0 = sum(energy(mg, X, V))
    last = E0
    for k in range(300):
        X, V = step(m, X, V, (0.0, 0.0, 0.0), 1e-3)
        hold_e = sum(energy(mg, X, V))
        assert hold_e <= last + 1e-6
        last = hold_e
    assert last < E0


def test_fixed_step_lets_a_joint_pass_through_rest_while_the_others_move_fast():
    """Regression: joint 2 at rest, joints 1 and 3 at 2.2-2.9 rad/s, 8 N m pulling joint 2
    down (the demo's excitation at t = 12.9 s). The 1 kHz semi-implicit step held joint 2
    at rest (its velocity-product drift balanced by the stiff linearised friction: 0.2 mrad
    moved instead of 8) until the torque reached 18 N m; now it follows RK4 at 50 us."""
    m = RotaryModel.from_robot("nt_robot")
    X, V, _ = cartesian_state(m, np.array([0.28, 1.4245, -0.11]), np.array([2.85, 0.0, 2.22]))
    tau = (-0.8, -8.0, -4.8)
    ends = {}
    for method, n in (("semi-implicit", 50), ("rk4", 1000)):
        Xs, Vs = tuple(X), tuple(V)
        for _ in range(n):
            Xs, Vs = step(m, Xs, Vs, tau, 0.05 / n, method)
        ends[method] = joint_state(m, np.array(Xs), np.array(Vs))[:2]
    (q, qd), (q_ref, qd_ref) = ends["semi-implicit"], ends["rk4"]
    assert q_ref[1] < 1.4245 - 0.007 and qd_ref[1] < -0.25       # joint 2 moves in 50 ms
    assert np.abs(q - q_ref).max() < 5e-4, (q, q_ref)
    assert np.abs(qd - qd_ref).max() < 0.02, (qd, qd_ref)


def test_bad_inputs_raise_clear_errors():
    m = RotaryModel.from_robot("nt_robot")
    with pytest.raises(ValueError, match="platform velocity must be finite"):
        inverse_dynamics(m, [0, 0, -0.8], [np.nan, 0, 0], [0, 0, 0])
    with pytest.raises(ValueError, match="shape"):
        inverse_dynamics(m, np.zeros((4, 2)), np.zeros((4, 2)), np.zeros((4, 2)))
    with pytest.raises(ValueError, match="same N"):
        inverse_dynamics(m, np.tile([0, 0, -0.8], (4, 1)), np.zeros((3, 3)), np.zeros((4, 3)))
    with pytest.raises(UnreachableError, match="unreachable"):
        inverse_dynamics(m, [0, 0, -3.0], [0, 0, 0], [0, 0, 0])
    with pytest.raises(ValueError, match="integrator method"):
        step(m, (0, 0, -0.8), (0, 0, 0), (0, 0, 0), 1e-3, method="euler")
