"""The multibody model (Elshami et al.): its derivatives against finite differences, its
dynamics against the explicit model, the constraint stabilisation, reactions and energy."""
import dataclasses

import numpy as np
import pytest

from delta_dynamics.motion import trajectories as tr
from delta_dynamics.reference.bodies import RigidBody, body_set
from delta_dynamics.rotary.dynamics import forward_dynamics, inverse_dynamics as explicit_id, joint_state
from delta_dynamics.rotary.kinematics import sample_workspace
from delta_dynamics.reference.multibody.dynamics import (Evaluation, Friction, State, accelerations, evaluate,
                                                         place_platform, quadratic_terms, residuals,
                                                         violation)
from delta_dynamics.reference.multibody.euler import from_rotation, g_matrix, rotate_by, rotation
from delta_dynamics.reference.multibody.integrate import move_bodies, step_semi_implicit
from delta_dynamics.reference.multibody.reactions import inverse_dynamics
from delta_dynamics.reference.multibody.simulation import simulate
from delta_dynamics.reference.multibody.system import MultibodySystem

G = np.array([0.0, 0.0, -9.80665])


@pytest.fixture(scope="module")
def system():
    return MultibodySystem.from_robot("nt_robot")


def states(s, n, seed=0):
    rng = np.random.default_rng(seed)
    X = sample_workspace(s.kinematics, n, seed=seed, min_measure=0.1)
    return X, rng.normal(0.0, 0.5, (n, 3))


def test_euler_parameters_follow_eq_2_and_eq_8():
    """A(theta) is a rotation, omega = G theta_dot (world) and omega_bar = G_bar theta_dot
    (body) by finite differences of A, and the printed G_bar rows of eq. (8)."""
    rng = np.random.default_rng(3)
    th = rng.normal(size=4)
    th /= np.linalg.norm(th)
    thd = rng.normal(size=4)
    thd -= (thd @ th) * th                         # tangent to |theta| = 1
    A = rotation(th)
    np.testing.assert_allclose(A @ A.T, np.eye(3), atol=1e-14)
    h = 1e-6
    Ad = (rotation(th + h * thd) - rotation(th - h * thd)) / (2 * h)
    W = Ad @ A.T                                   # omega~ (world)
    omega = np.array([W[2, 1], W[0, 2], W[1, 0]])
    np.testing.assert_allclose(g_matrix(th) @ thd, omega, atol=1e-8)
    np.testing.assert_allclose(g_matrix(th, body=True) @ thd, A.T @ omega, atol=1e-8)
    e0, e1, e2, e3 = th
    np.testing.assert_allclose(g_matrix(th, body=True), 2 * np.array(
        [[-e1, e0, e3, -e2], [-e2, -e3, e0, e1], [-e3, e2, -e1, e0]]))
    np.testing.assert_allclose(from_rotation(A), th * np.sign(th[0]), atol=1e-14)


def test_constraint_jacobian_and_quadratic_terms_match_finite_differences(system):
    """C_q (in the body velocities) is the derivative of C(q), and Q_d = -(C_q z)_q z is the
    velocity part of C's second derivative, both checked along a consistent motion."""
    s = system
    st = place_platform(s, [0.05, -0.03, -0.78], [0.3, -0.2, 0.4])
    ev = Evaluation(s)
    evaluate(s, ev, st)
    rng = np.random.default_rng(0)
    d = rng.normal(size=6 * s.n_bodies)
    h = 1e-6
    plus, minus = st.copy(), st.copy()
    move_bodies(plus, h * d)
    move_bodies(minus, -h * d)
    np.testing.assert_allclose((residuals(s, plus) - residuals(s, minus)) / (2 * h), ev.J @ d, atol=1e-8)
    # along the motion: d/dt (C_q z) with z held = -Q_d
    z = st.z
    moved = st.copy()
    move_bodies(moved, 1e-6 * z)
    ev2 = Evaluation(s)
    evaluate(s, ev2, moved)
    np.testing.assert_allclose((ev2.J @ z - ev.J @ z) / 1e-6, -quadratic_terms(s, ev, st), atol=1e-5)
    assert np.abs(ev.J @ z).max() < 1e-12                  # the placed velocities are consistent


@pytest.mark.parametrize("axial", [None, 1e-7])
def test_forward_dynamics_agree_with_the_explicit_model(system, axial):
    """From the lumped robot file the multibody model is the explicit model's mechanism but
    for the forearm's axial inertia (1e-3 of its dominant one): the platform accelerations
    agree within 2e-5 of their size with friction and torques, and the difference shrinks in
    proportion to that inertia (1e-7 kg m^2 instead of 1.1e-5: within 2e-7): it is the only
    difference between the models."""
    s = system
    if axial is not None:
        bs = body_set(s.robot)
        bar = dataclasses.replace(bs.bar, inertia=(axial,) + tuple(bs.bar.inertia[1:]))
        s = MultibodySystem(s.robot, bodies=dataclasses.replace(bs, bar=bar))
    m = s.kinematics
    ev = Evaluation(s)
    fr = Friction(s.robot)
    X, V = states(s, 20)
    rng = np.random.default_rng(1)
    worst = 0.0
    for k in range(len(X)):
        tau = rng.normal(0.0, 10.0, 3)
        st = place_platform(s, X[k], V[k])
        a, _ = accelerations(s, ev, st, tau, fr)
        ref = forward_dynamics(m, X[k], V[k], tau)
        worst = max(worst, float(np.abs(a.reshape(-1, 6)[s.platform, :3] - ref).max() / np.abs(ref).max()))
    assert worst < (2e-5 if axial is None else 2e-7)


def test_inverse_dynamics_torques_agree_with_the_explicit_model(system):
    s = system
    p = tr.pick_place(start=(-0.1525, 0.0, -0.8), dt=0.01)
    out = inverse_dynamics(s, p.X, p.Xd, p.Xdd)
    ref = explicit_id(s.kinematics, p.X, p.Xd, p.Xdd)
    assert np.abs(out.tau - ref).max() < 1e-4 * np.abs(ref).max()
    assert out.residual < 1e-9


def test_platform_reactions_sum_to_the_platform_inertia_force(system):
    """f_1 + f_2 + f_3 = m_platform (X_dd - g) at every instant, X_dd from the trajectory."""
    s = system
    c = tr.circle(radius=0.2, depth=-0.8, period=1.0, ramp=0.3, dt=0.01)
    out = inverse_dynamics(s, c.X, c.Xd, c.Xdd)
    total = out.reactions.platform_force.sum(axis=1)
    expected = s.platform_mass * (c.Xdd - G)
    assert np.abs(expected).max() > 10.0
    np.testing.assert_allclose(total, expected, atol=1e-9)
    # the shoulders carry the rest: at rest, the three shoulder forces hold the whole weight
    rest = inverse_dynamics(s, c.X[:1], 0 * c.X[:1], 0 * c.X[:1], friction=False)
    np.testing.assert_allclose(rest.reactions.shoulder_force[0].sum(0), -s.mass.sum() * G, atol=1e-9)


def test_projection_keeps_the_constraints_over_10_s_of_pick_and_place(system):
    """The plant's step (semi-implicit, projection) with PD + feedforward over 10.4 s of pick
    and place: violation <= 1e-10 m at every step; without stabilisation it drifts to
    ten times further than with Baumgarte's terms, which hold it near 1e-5 m."""
    s = system
    m = s.kinematics
    p = tr.pick_place(start=(-0.1525, 0.0, -0.8), cycles=8, dt=1e-3)
    q_ref, qd_ref, _ = joint_state(m, p.X, p.Xd, p.Xdd)
    ff = explicit_id(m, p.X, p.Xd, p.Xdd)
    fr = Friction(s.robot)
    worst = {}
    for stab, n in (("projection", len(p)), ("baumgarte", 2000), ("none", 2000)):
        ev = Evaluation(s)
        st = place_platform(s, p.X[0])
        v = 0.0
        from delta_dynamics.reference.multibody.dynamics import joint_angles, joint_rates
        for k in range(n - 1):
            tau = 2500.0 * (q_ref[k] - joint_angles(s, st)) + 60.0 * (qd_ref[k] - joint_rates(s, st)) + ff[k]
            st = step_semi_implicit(s, ev, st, tau, 1e-3, fr, stab)
            v = max(v, violation(s, residuals(s, st)))
        worst[stab] = v
    assert worst["projection"] <= 1e-10
    assert worst["baumgarte"] < 1e-4
    assert worst["none"] > 10 * worst["baumgarte"]


def test_explicit_inverse_dynamics_torques_reproduce_the_trajectory(system):
    """The explicit model's torques for a pick and place (no friction, 1 ms samples,
    interpolated linearly) drive the multibody model along the trajectory within 10 um."""
    s = system
    m = s.kinematics
    p = tr.pick_place(start=(-0.1525, 0.0, -0.8), dt=1e-3)
    q, qd, _ = joint_state(m, p.X, p.Xd, p.Xdd)
    tau = explicit_id(m, p.X, p.Xd, p.Xdd, friction=False)
    sim = simulate(s, q[0], qd[0], p.t, tau, method="rk4", hold="linear", friction=False)
    assert np.linalg.norm(sim.X - p.X, axis=1).max() < 1e-5
    assert sim.violation.max() < 1e-12


def test_energy_balance(system):
    """Without friction, E(t) - E(0) equals the motor work: unpowered (a free fall, through
    the arms' swing) to 1e-9 of the energy moved; under torques to 1e-4 (the trapezoid
    quadrature of the work)."""
    s = system
    t = np.arange(0.0, 0.3001, 1e-3)
    t = t[:201]
    sim = simulate(s, [0.3, 0.45, 0.6], [0.5, -0.5, 0.2], t, np.zeros((len(t), 3)), friction=False)
    E = sim.energy.sum(1)
    moved = np.abs(sim.energy[:, 0] - sim.energy[0, 0]).max()
    assert moved > 1.0
    assert np.abs(E - E[0]).max() < 1e-9 * moved
    t = np.arange(0.0, 0.3001, 1e-3)
    rng = np.random.default_rng(2)
    tau = explicit_id(s.kinematics, *([np.tile([0.0, 0.0, -0.8], (len(t), 1))] + [np.zeros((len(t), 3))] * 2),
                      friction=False) + rng.normal(0, 3, 3) * np.sin(8 * t)[:, None]
    sim = simulate(s, [0.45, 0.45, 0.45], [0.0, 0.0, 0.0], t, tau, hold="linear", friction=False)
    E = sim.energy.sum(1)
    P = (tau * sim.qd).sum(1)
    W = np.concatenate([[0.0], np.cumsum(0.5 * (P[1:] + P[:-1]) * np.diff(t))])
    assert np.abs(E - E[0]).max() > 0.1
    assert np.abs(E - E[0] - W).max() < 1e-4 * np.abs(E - E[0]).max()


def test_full_body_data_with_a_base_and_heavy_blocks():
    """A body set with massive elbow and platform blocks and a fixed base (eq. 3): still three
    degrees of freedom, the platform reactions carry the platform blocks too, and at rest the
    ground holds the base with the whole robot's weight."""
    from delta_core.robot_file import load_robot
    robot = load_robot("d3s800")
    bs = body_set(robot)
    block = RigidBody(mass=0.2, inertia=(1.47e-5, 1.01e-4, 1.01e-4), com=0.0475, length=0.095)
    bs = dataclasses.replace(bs, elbow_block=block, platform_block=block)
    base = RigidBody(mass=30.0, inertia=(0.52202, 0.52202, 0.88497), com=0.0, length=0.0)
    s = MultibodySystem(robot, bodies=bs, base=base)
    assert s.body_names[0] == "base" and 6 * s.n_bodies - s.n_constraints == 3
    assert s.platform_mass == pytest.approx(0.9 + 0.6)
    X = np.array([[0.1, -0.05, -0.85]])
    out = inverse_dynamics(s, X, np.zeros((1, 3)), np.zeros((1, 3)), friction=False)
    np.testing.assert_allclose(out.reactions.platform_force[0].sum(0), -s.platform_mass * G, atol=1e-9)
    np.testing.assert_allclose(out.reactions.base_force[0], -s.mass.sum() * G, atol=1e-8)
    # the base's moment about the origin balances the weights' moments
    st = place_platform(s, X[0])
    moment = -np.cross(st.pos, s.mass[:, None] * G).sum(0)
    np.testing.assert_allclose(out.reactions.base_moment[0], moment, atol=1e-8)


def test_bad_bodies_are_refused_by_name():
    from delta_core.robot_file import load_robot
    robot = load_robot("nt_robot")
    bs = body_set(robot)
    with pytest.raises(ValueError, match="forearm bars with a mass"):
        MultibodySystem(robot, bodies=dataclasses.replace(bs, bar=dataclasses.replace(bs.bar, mass=0.0)))
    flat = dataclasses.replace(bs.upper_arm, inertia=(0.0, 0.01, 0.01))
    with pytest.raises(ValueError, match="arm_1 has principal inertias"):
        MultibodySystem(robot, bodies=dataclasses.replace(bs, upper_arm=flat))
