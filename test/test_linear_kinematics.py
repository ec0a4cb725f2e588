"""Kinematics of the linear Delta (Colombo & Lentini 2020, eqs. 2-8) against the paper's
closed forms, finite differences and the mechanism's geometry; the print's sign slip in
eq. (8) is shown here."""
import math

import numpy as np
import pytest

from delta_dynamics.algorithms import SingularityError, UnreachableError
from delta_dynamics.linear.dynamics import cartesian_state, joint_state
from delta_dynamics.linear.kinematics import (passive_origins, check_joint_limits, forward_kinematics,
                                              inverse_kinematics, jacobian, jacobian_derivative, jacobian_q,
                                              jacobian_x, passive_angles, platform_from_tool, platform_joints,
                                              sample_workspace, singularity_measure, tool_point,
                                              workspace_centre)
from delta_dynamics.linear.model import LinearModel
from model_checks import d_dt, multisine

PRESETS = ["colombo2020", "linear_delta_xl"]


@pytest.fixture(scope="module", params=PRESETS)
def model(request):
    return LinearModel.from_robot(request.param)


def platform_path(m, seed):
    """A smooth platform path X(t) around the home pose (multi-sine), with its derivatives."""
    s = 0.25 * (m.R - m.r)
    return multisine(workspace_centre(m), (0.2 * s, 0.5 * s), seed, omega=(1.0, 5.0))


def test_inverse_kinematics_is_the_papers_equation_6():
    """With the paper's layout (rails at 210, 330, 90 deg) eq. (6) in terms of the triangle
    sides s_B = sqrt(3) R, s_P = sqrt(3) r, carriages above the platform (+ branch)."""
    m = LinearModel.from_robot("colombo2020")
    sB, sP, l = math.sqrt(3) * m.R, math.sqrt(3) * m.r, m.l
    X = sample_workspace(m, 200, seed=3)
    x, y, z = X.T
    r3 = math.sqrt(3)
    q1 = z + np.sqrt(l * l - (x + sB / 2 - sP / 2) ** 2 - (y + sB / (2 * r3) - sP / (2 * r3)) ** 2)
    q2 = z + np.sqrt(l * l - (x - sB / 2 + sP / 2) ** 2 - (y + sB / (2 * r3) - sP / (2 * r3)) ** 2)
    q3 = z + np.sqrt(l * l - x ** 2 - (y - sB / r3 + sP / r3) ** 2)
    np.testing.assert_allclose(inverse_kinematics(m, X), np.stack((q1, q2, q3), 1), atol=1e-14)


def test_every_rod_has_its_length_and_the_carriages_are_above(model):
    X = sample_workspace(model, 300, seed=1)
    q = inverse_kinematics(model, X)
    A = passive_origins(model, q)
    P = platform_joints(model, X)
    np.testing.assert_allclose(np.linalg.norm(P - A, axis=-1), model.l, rtol=1e-13)
    assert (A[..., 2] > P[..., 2]).all()
    # the rail is vertical: A_i's horizontal position is R u_i whatever q is
    np.testing.assert_allclose(np.hypot(A[..., 0], A[..., 1]), model.R, rtol=1e-13)


def test_forward_and_inverse_kinematics_round_trip(model):
    X = sample_workspace(model, 500, seed=2)
    q = inverse_kinematics(model, X)
    np.testing.assert_allclose(forward_kinematics(model, q), X, atol=1e-12)
    for k in (0, 17, 499):                         # the single-sample (float) path agrees
        np.testing.assert_allclose(forward_kinematics(model, q[k]), X[k], atol=1e-12)
        np.testing.assert_allclose(inverse_kinematics(model, X[k]), q[k], atol=1e-14)
    qs = np.random.default_rng(0).uniform(model.q_lo, model.q_hi, size=(400, 3))
    try:
        Xs = forward_kinematics(model, qs)
    except UnreachableError as e:            # some draws do not close; keep those before
        qs = qs[:e.index]
        Xs = forward_kinematics(model, qs)
    np.testing.assert_allclose(inverse_kinematics(model, Xs), qs, atol=1e-11)


def test_jacobian_is_the_derivative_of_inverse_kinematics(model):
    X = sample_workspace(model, 30, seed=4, min_measure=0.05)
    J = jacobian(model, X)
    for a in range(3):
        e = np.eye(3)[a]
        fd = d_dt(lambda s: inverse_kinematics(model, X + s * e), 0.0, 1e-6)
        np.testing.assert_allclose(J[:, :, a], fd, rtol=1e-8, atol=1e-9)
    # eq. (3): J_x X_dot = J_q q_dot, and J = J_q^-1 J_x (eq. 7)
    V = np.random.default_rng(1).normal(size=X.shape)
    qd = np.einsum("nij,nj->ni", J, V)
    np.testing.assert_allclose(np.einsum("nij,nj->ni", jacobian_x(model, X), V),
                               np.einsum("nij,nj->ni", jacobian_q(model, X), qd), atol=1e-13)
    np.testing.assert_allclose(jacobian(model, X[3]), J[3], rtol=1e-14)


def test_accelerations_and_the_sign_slip_of_printed_equation_8(model):
    """Along a smooth path, q_ddot from finite differences of q(t) equals
    J_q^-1 (J_x X_dd + v) (what :func:`joint_state` computes); the print's eq. (8),
    J_q^-1 (J_x X_dd - v), is off by 2 J_q^-1 v. Eq. (5) as printed, X_dd = J_x^-1 (J_q q_dd - v),
    is right."""
    for seed in (0, 1):
        X, Xd, Xdd = platform_path(model, seed)
        for t in np.linspace(0.1, 1.5, 6):
            q = lambda s: inverse_kinematics(model, X(s))
            qd_fd = d_dt(q, t, 1e-3)
            qdd_fd = d_dt(lambda s: d_dt(q, s, 1e-3), t, 1e-3)
            qq, qd, qdd = joint_state(model, X(t), Xd(t), Xdd(t))
            np.testing.assert_allclose(qd, qd_fd, rtol=1e-8, atol=1e-10)
            np.testing.assert_allclose(qdd, qdd_fd, rtol=1e-5, atol=1e-7)
            Jx, Jq = jacobian_x(model, X(t)), jacobian_q(model, X(t))
            vt = Xd(t)
            v = vt[0] ** 2 + vt[1] ** 2 + (vt[2] - qd) ** 2
            printed_8 = np.linalg.solve(Jq, Jx @ Xdd(t) - v)
            corrected_8 = np.linalg.solve(Jq, Jx @ Xdd(t) + v)
            np.testing.assert_allclose(corrected_8, qdd_fd, rtol=1e-5, atol=1e-7)
            np.testing.assert_allclose(printed_8 - qdd_fd, -2 * np.linalg.solve(Jq, v), rtol=1e-4, atol=1e-7)
            printed_5 = np.linalg.solve(Jx, Jq @ qdd - v)
            np.testing.assert_allclose(printed_5, Xdd(t), atol=1e-9 * (1 + np.abs(Xdd(t)).max()))
            # q_dd = J X_dd + J_dot X_dot, J_dot the time derivative of J along the path
            Jd_fd = d_dt(lambda s: jacobian(model, X(s)), t, 1e-3)
            np.testing.assert_allclose(jacobian_derivative(model, X(t), Xd(t)), Jd_fd, rtol=1e-6, atol=1e-8)
            np.testing.assert_allclose(jacobian(model, X(t)) @ Xdd(t) + Jd_fd @ Xd(t), qdd_fd, rtol=1e-5, atol=1e-7)


def test_cartesian_state_inverts_joint_state(model):
    rng = np.random.default_rng(5)
    X = sample_workspace(model, 200, seed=5, min_measure=0.05)
    V, A = rng.normal(size=(2, 200, 3))
    q, qd, qdd = joint_state(model, X, V, A)
    X2, V2, A2 = cartesian_state(model, q, qd, qdd)
    np.testing.assert_allclose(X2, X, atol=1e-12)
    np.testing.assert_allclose(V2, V, atol=1e-9)
    np.testing.assert_allclose(A2, A, atol=1e-7)
    X1, V1, A1 = cartesian_state(model, q[7], qd[7], qdd[7])
    np.testing.assert_allclose(A1, A[7], atol=1e-7)
    assert cartesian_state(model, q[7], qd[7])[2] is None


def test_an_unreachable_point_is_named_with_the_chain_and_the_reason():
    m = LinearModel.from_robot("colombo2020")
    with pytest.raises(UnreachableError, match=r"platform position \(0\.3, 0, 0\.1\) m is unreachable: "
                                               r"rod pair [123] \(length 0\.215 m\) cannot reach it"):
        inverse_kinematics(m, [0.3, 0.0, 0.1])
    X = np.tile([0.0, 0.0, 0.1], (5, 1))
    X[3, 0] = -0.5
    with pytest.raises(UnreachableError, match=r"\(sample 3\)") as e:
        inverse_kinematics(m, X)
    assert e.value.index == 3 and e.value.point == (-0.5, 0.0, 0.1)
    # exactly horizontal rods: platform joint at distance l from rail 3's line
    edge = np.array([m.cx[2], m.cy[2] - m.l, 0.1])
    with pytest.raises(UnreachableError, match="rod pair 3 would be horizontal"):
        jacobian(m, edge)
    with pytest.raises(ValueError, match=r"platform position must have shape \(3,\) or \(N, 3\)"):
        inverse_kinematics(m, [0.0, 0.1])
    with pytest.raises(ValueError, match="platform position must be finite"):
        inverse_kinematics(m, [0.0, float("nan"), 0.1])


def test_joint_limits_are_checked_with_the_carriage_named():
    m = LinearModel.from_robot("colombo2020")
    with pytest.raises(UnreachableError, match=r"carriage [123] position 0\.5[0-9]* m is outside its limits "
                                               r"\[0\.1, 0\.49\] m for platform position \(0, 0, 0\.32\) m"):
        inverse_kinematics(m, [0.0, 0.0, 0.32], check_limits=True)
    check_joint_limits(m, np.array([0.2, 0.3, 0.4]))
    with pytest.raises(UnreachableError, match=r"carriage 2 position 0\.05 m .* \(sample 1\)"):
        check_joint_limits(m, np.array([[0.2, 0.3, 0.4], [0.2, 0.05, 0.4]]))


def test_forward_kinematics_refuses_carriages_the_rods_cannot_join():
    m = LinearModel.from_robot("colombo2020")
    with pytest.raises(UnreachableError, match=r"carriage positions \(0\.2, 0\.2, 0\.6\) m are unreachable: "
                                               r"the rod pairs cannot meet"):
        forward_kinematics(m, [0.2, 0.2, 0.6])
    with pytest.raises(UnreachableError, match=r"\(sample 1\)") as e:
        forward_kinematics(m, np.array([[0.2, 0.2, 0.2], [0.2, 0.2, 0.6]]))
    assert e.value.index == 1
    with pytest.raises(ValueError, match="carriage positions must have shape"):
        forward_kinematics(m, [0.1, 0.2])
    assert issubclass(SingularityError, UnreachableError)


def test_singularity_measure_falls_to_zero_as_a_rod_pair_turns_horizontal():
    m = LinearModel.from_robot("colombo2020")
    # move the platform away from rail 3 until its rods are nearly horizontal
    direction = -np.array([m.cphi[2], m.sphi[2], 0.0])
    reach = m.l - (m.R - m.r)
    s = [float(singularity_measure(m, np.array([0, 0, 0.1]) + f * reach * direction))
         for f in (0.0, 0.5, 0.9, 0.999, 0.99999)]
    assert all(a > b for a, b in zip(s, s[1:])) and s[-1] < 0.02
    assert singularity_measure(m, sample_workspace(m, 50, seed=1)).shape == (50,)


def test_workspace_sampling_and_the_home_pose(model):
    X = sample_workspace(model, 400, seed=7, min_measure=0.1)
    assert X.shape == (400, 3)
    q = inverse_kinematics(model, X, check_limits=True)          # inside the limits
    assert (singularity_measure(model, X) >= 0.1).all()
    assert np.ptp(q) > 0.2 * (model.q_hi[0] - model.q_lo[0])
    np.testing.assert_array_equal(X, sample_workspace(model, 400, seed=7, min_measure=0.1))
    home = workspace_centre(model)
    qh = inverse_kinematics(model, home, check_limits=True)
    assert home[:2].tolist() == [0.0, 0.0]
    np.testing.assert_allclose(qh, 0.5 * (model.q_lo[0] + model.q_hi[0]), atol=1e-12)


def test_tool_point_and_passive_angles():
    m = LinearModel.from_robot("colombo2020")
    X = np.array([[0.01, 0.02, 0.1], [0.0, 0.0, 0.2]])
    np.testing.assert_allclose(tool_point(m, X), X - [0, 0, 0.05])
    np.testing.assert_allclose(platform_from_tool(m, tool_point(m, X)), X)
    ang = passive_angles(m, X)
    d = platform_joints(m, X) - passive_origins(m, inverse_kinematics(m, X))
    az, el = ang[..., 0], ang[..., 1]
    np.testing.assert_allclose(m.l * np.stack((np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)), -1),
                               d, atol=1e-14)
