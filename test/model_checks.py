"""Helpers of the models' own-energy checks, shared by the tests of every model (the rotary and
linear kinds, Staicu's model): a 6th-order central difference, smooth multi-sine paths, and
Lagrange's equations evaluated by finite differences of a Lagrangian."""
import numpy as np

from delta_dynamics.algorithms import (cartesian_state, coriolis_matrix, energy, friction_torque, gravity_vector,
                                       inverse_dynamics, jacobian, joint_state, mass_matrix, sample_workspace)

# 6th-order central difference weights for the first derivative
_D1 = (np.array([-1, 9, -45, 0, 45, -9, 1]) / 60.0, np.arange(-3, 4))


def d_dt(f, t, h):
    """df/dt at t by the 6th-order central difference of step h."""
    return sum(w * f(t + k * h) for w, k in zip(*_D1)) / h


def multisine(centre, amplitude, seed, omega=(1.0, 6.0)):
    """(p, p_dot, p_ddot): a smooth path around ``centre`` (3,), three sines per component of
    amplitudes drawn in ``amplitude`` = (lo, hi) and frequencies in ``omega`` (rad/s)."""
    rng = np.random.default_rng(seed)
    amp = rng.uniform(*amplitude, size=(3, 3))
    w = rng.uniform(*omega, size=(3, 3))
    ph = rng.uniform(0, 2 * np.pi, size=(3, 3))
    return (lambda t: centre + (amp * np.sin(w * t + ph)).sum(axis=1),
            lambda t: (amp * w * np.cos(w * t + ph)).sum(axis=1),
            lambda t: -(amp * w * w * np.sin(w * t + ph)).sum(axis=1))


def lagrange_efforts(lagrangian, q, qd, t, hq=1e-5, hv=1e-3, ht=1e-3):
    """d/dt dL/dq_dot - dL/dq at time t along the joint path (q(t), qd(t)): the efforts
    Lagrange's equations ask of the joints, by central differences of ``lagrangian(q, qd)``
    (L is quadratic in q_dot, so the velocity difference is exact)."""
    eye = np.eye(3)

    def p(s):                                    # dL/dq_dot along the path
        return np.array([(lagrangian(q(s), qd(s) + hv * eye[i]) - lagrangian(q(s), qd(s) - hv * eye[i])) / (2 * hv)
                         for i in range(3)])
    dLdq = np.array([d_dt(lambda s: lagrangian(q(t) + s * eye[i], qd(t)), 0.0, hq) for i in range(3)])
    return d_dt(p, t, ht) - dLdq


def lagrangian(m):
    """L(q, q_dot) = T - U of a model of either kind, from its own energy."""
    def L(q, qd):
        X, Xd, _ = cartesian_state(m, q, qd)
        T, U = energy(m, X, Xd)
        return T - U
    return L


def assert_equation_of_motion(m, X, V, A, F, sym_atol=1e-12):
    """The reduced equation of motion at the samples, M X_dd + C X_d + G - F_P =
    J^T (tau - tau_fric), with M symmetric positive definite and the kinetic energy
    1/2 X_d^T M X_d (either kind); returns M."""
    tau = inverse_dynamics(m, X, V, A, F_P=F)
    _, qd, _ = joint_state(m, X, V)
    M, C, G, J = mass_matrix(m, X), coriolis_matrix(m, X, V), gravity_vector(m, X), jacobian(m, X)
    lhs = np.einsum("nab,nb->na", M, A) + np.einsum("nab,nb->na", C, V) + G - F
    rhs = np.einsum("nia,ni->na", J, tau - friction_torque(m, qd))
    np.testing.assert_allclose(lhs, rhs, atol=1e-9 * np.abs(rhs).max())
    np.testing.assert_allclose(M, np.swapaxes(M, 1, 2), atol=sym_atol)
    assert (np.linalg.eigvalsh(M) > 0).all()
    np.testing.assert_allclose(energy(m, X, V)[0], 0.5 * np.einsum("na,nab,nb->n", V, M, V), rtol=1e-12)
    return M


def assert_single_sample_path_matches_the_batch_path(m):
    """Inverse dynamics of one sample (numpy arrays, tuples of floats) equals the batch path's
    (10 000 samples: more than one chunk of it)."""
    rng = np.random.default_rng(5)
    X = sample_workspace(m, 10000, seed=51)
    V, A = rng.normal(size=(2, 10000, 3))
    batch = inverse_dynamics(m, X, V, A)
    for k in (0, 4095, 4096, 9999):
        np.testing.assert_allclose(inverse_dynamics(m, X[k], V[k], A[k]), batch[k], rtol=1e-13, atol=1e-12)
        np.testing.assert_allclose(inverse_dynamics(m, tuple(X[k].tolist()), tuple(V[k].tolist()),
                                                    tuple(A[k].tolist())), batch[k], rtol=1e-13, atol=1e-12)
