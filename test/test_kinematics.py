"""Kinematics: FK∘IK identity, Jacobians against finite differences, errors."""
import numpy as np
import pytest

from delta_dynamics.rotary.kinematics import (SingularityError, UnreachableError, forward_kinematics,
                                              inverse_kinematics, jacobian, jacobian_derivative,
                                              passive_angles, sample_workspace, singularity_measure)
from delta_dynamics.rotary.model import RotaryModel

PRESETS = ["nt_robot", "d3s800"]


@pytest.fixture(scope="module", params=PRESETS)
def model(request):
    return RotaryModel.from_robot(request.param)


def test_fk_of_ik_is_identity_over_the_workspace(model):
    X = sample_workspace(model, 3000, seed=11)
    q = inverse_kinematics(model, X, check_limits=True)
    assert np.abs(forward_kinematics(model, q) - X).max() <= 1e-9


def test_ik_of_fk_is_identity_in_joint_space(model):
    rng = np.random.default_rng(5)
    q = rng.uniform(-0.3, 1.0, size=(500, 3))
    X = forward_kinematics(model, q)
    assert np.abs(inverse_kinematics(model, X) - q).max() <= 1e-9


def test_single_sample_equals_batch(model):
    X = sample_workspace(model, 20, seed=3)
    qb = inverse_kinematics(model, X)
    for k in range(len(X)):
        np.testing.assert_allclose(inverse_kinematics(model, X[k]), qb[k], rtol=0, atol=1e-14)
        assert inverse_kinematics(model, X[k]).shape == (3,)
    np.testing.assert_allclose(forward_kinematics(model, qb[4]), X[4], atol=1e-12)


def test_jacobian_matches_finite_differences(model):
    rng = np.random.default_rng(7)
    X = sample_workspace(model, 50, seed=7, min_measure=0.05)
    J = jacobian(model, X)
    h = 1e-6
    for k in range(len(X)):
        v = rng.normal(size=3)
        fd = (inverse_kinematics(model, X[k] + h * v) - inverse_kinematics(model, X[k] - h * v)) / (2 * h)
        np.testing.assert_allclose(J[k] @ v, fd, rtol=1e-6, atol=1e-7)


def test_jacobian_derivative_matches_finite_differences(model):
    rng = np.random.default_rng(8)
    X = sample_workspace(model, 50, seed=8, min_measure=0.05)
    h = 1e-6
    for k in range(len(X)):
        v = rng.normal(size=3)
        Jd = jacobian_derivative(model, X[k], v)
        fd = (jacobian(model, X[k] + h * v) - jacobian(model, X[k] - h * v)) / (2 * h)
        np.testing.assert_allclose(Jd, fd, rtol=1e-5, atol=1e-5)


def test_q_ddot_equals_J_xddot_plus_Jdot_xdot(model):
    """Asadi eq. (11), checked along a curve X(t) by differentiating q(t) = IK(X(t)) twice."""
    X0 = sample_workspace(model, 1, seed=2, min_measure=0.1)[0]
    v, a = np.array([0.3, -0.2, 0.1]), np.array([1.0, 2.0, -1.5])
    X = lambda t: X0 + v * t + 0.5 * a * t * t
    h = 1e-4
    qdd_fd = (inverse_kinematics(model, X(h)) - 2 * inverse_kinematics(model, X(0)) + inverse_kinematics(model, X(-h))) / h ** 2
    qdd = jacobian(model, X0) @ a + jacobian_derivative(model, X0, v) @ v
    np.testing.assert_allclose(qdd, qdd_fd, rtol=1e-5, atol=1e-5)


def test_passive_angles_point_each_forearm_at_its_platform_joint(model):
    X = sample_workspace(model, 30, seed=4)
    q = inverse_kinematics(model, X)
    ang = passive_angles(model, X)
    for k in range(len(X)):
        for i in range(3):
            c, s = model.cphi[i], model.sphi[i]
            bend, tilt = ang[k, i]
            fa = np.array([np.cos(bend) * np.cos(tilt), np.sin(tilt), -np.sin(bend) * np.cos(tilt)])
            cq, sq = np.cos(q[k, i]), np.sin(q[k, i])
            f_chain = np.array([cq * fa[0] + sq * fa[2], fa[1], -sq * fa[0] + cq * fa[2]])
            f_world = np.array([c * f_chain[0] - s * f_chain[1], s * f_chain[0] + c * f_chain[1], f_chain[2]])
            elbow = np.array([(model.R + model.l * cq) * c, (model.R + model.l * cq) * s, -model.l * sq])
            attach = X[k] + model.r * np.array([c, s, 0.0])
            np.testing.assert_allclose(elbow + model.lk * f_world, attach, atol=1e-9)


def test_singularity_measure_drops_to_zero_at_the_workspace_boundary(model):
    inside = singularity_measure(model, sample_workspace(model, 200, seed=9))
    assert (inside > 0).all() and (inside <= 1).all()
    # straighten arm 1 towards its forearm: U.T -> 0 at the edge of the reachable set
    z = -0.8
    xs = np.linspace(0.0, 1.0, 2001)
    last = None
    for x in xs:
        try:
            last = singularity_measure(model, [x * model.cphi[0], x * model.sphi[0], z])
        except UnreachableError:
            break
    assert last is not None and last < 0.05 * inside.max()


def test_unreachable_point_raises_an_error_naming_it(model):
    with pytest.raises(UnreachableError, match=r"\(0, 0, -5\) m is unreachable"):
        inverse_kinematics(model, [0.0, 0.0, -5.0])
    X = sample_workspace(model, 5, seed=1)
    X[3] = [3.0, 0.0, -0.5]
    with pytest.raises(UnreachableError, match="sample 3") as e:
        inverse_kinematics(model, X)
    assert e.value.index == 3
    assert not np.isnan(inverse_kinematics(model, X[:3])).any()


def test_joint_limits_are_enforced_on_request(model):
    lo = model.q_lo[0]
    X = forward_kinematics(model, [lo - 0.1, 0.6, 0.6])
    inverse_kinematics(model, X)                     # geometrically fine
    with pytest.raises(UnreachableError, match="joint 1 angle .* outside its limits"):
        inverse_kinematics(model, X, check_limits=True)


def short_forearm_model():
    """nt_robot with 0.4 m forearms: horizontal arms put the sphere centres 0.497 m from the
    axis, farther than a forearm reaches, so the spheres do not meet."""
    from delta_core.robot_file import load_robot
    r = load_robot("nt_robot")
    return RotaryModel(r.replace(geometry=r.geometry.__class__(**{**r.geometry.__dict__, "forearm_length": 0.4})))


def test_forward_kinematics_errors(model):
    with pytest.raises(UnreachableError, match=r"joint angles \(0, 0, 0\) rad are unreachable"):
        forward_kinematics(short_forearm_model(), [0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="finite"):
        forward_kinematics(model, [np.nan, 0.0, 0.0])
    with pytest.raises(ValueError, match="shape"):
        forward_kinematics(model, [0.0, 0.0])
    with pytest.raises(ValueError, match="finite"):
        inverse_kinematics(model, [0.0, np.inf, -0.8])


def test_singular_forward_kinematics_is_reported():
    m = RotaryModel.from_robot("nt_robot")
    # q chosen so that the three sphere centres coincide on the axis: R - r + l cos q = 0
    # has no solution for this robot (R > r + ... ), so build a coincident case directly
    # by checking the collinearity guard with a degenerate geometry instead.
    from delta_core.robot_file import load_robot
    r = load_robot("nt_robot")
    geo = r.geometry.__class__(**{**r.geometry.__dict__, "chain_angles_deg": (0.0, 120.0, 240.0)})
    mm = RotaryModel(r.replace(geometry=geo))
    # R - r + l cos q = 0  <=>  cos q = (r - R) / l : all three centres on the z axis
    q = np.arccos((mm.r - mm.R) / mm.l)
    with pytest.raises(SingularityError, match="singular"):
        forward_kinematics(mm, [q, q, q])
    forward_kinematics(m, [0.3, 0.3, 0.3])
