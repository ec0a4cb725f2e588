"""The explicit dynamics of both kinds honour per-arm geometry (``geometry.per_arm``).

The reference is Lagrange's equations of the lumped model's energy, written here from the
per-arm kinematics of the chain models (``delta_dynamics/<kind>/chains.py``, checked by
test_per_arm_geometry.py and test_calibration.py) and finite differences only:

* rotary: point mass m_x at X; arm i's inertia I_i about its motor axis (theta_dot_i^2) and first
  moment h_i (potential -g h_i sin theta_i); m_K at K_i = (1 - r_K) C_i + r_K A_i (C_i the elbow of
  arm i, A_i = X + r_i u_i);
* linear: m_x at X; carriage i (m_c,i q_dot_i^2, weight w_c,i at height h_i = q_i + o_i); the rod
  correction m_r moving with X - h_i e_z;

so M(X) = D^T W D (D = d(coordinates)/dX by central differences), G = grad U, and
Q = M X_dd + M_dot X_d - 1/2 grad_X (X_d^T M X_d) + G = J^T tau. Every public function of
delta_dynamics.algorithms that involves the geometry is compared with it (or with a
consequence of it). The symmetric model of the same robot misses the reference by far more
than the tolerance: the checks can fail.
"""
import copy

import numpy as np
import pytest

from delta_core.robot_file import load_robot, parse_robot
from delta_dynamics import algorithms as A
from delta_dynamics.kinds import model_for

PRESETS = {"rotary": "nt_robot", "linear": "colombo2020"}
#: every per-arm field perturbed by a few mm / tenths of a degree (rad: 0.005 = 0.29 deg)
PERTURBED = {
    "rotary": [{"joint_offset": 0.005, "base_radius": 0.203, "upper_arm_length": 0.3453, "forearm_length": 0.803,
                "platform_radius": 0.048},
               {"joint_offset": -0.004, "base_radius": 0.198, "upper_arm_length": 0.3393, "forearm_length": 0.797,
                "platform_radius": 0.043},
               {"joint_offset": 0.003, "base_radius": 0.2015, "upper_arm_length": 0.3443, "forearm_length": 0.8022,
                "platform_radius": 0.0465}],
    "linear": [{"joint_offset": 0.002, "rail_radius": 0.1290, "rod_length": 0.2180},
               {"joint_offset": -0.003, "rail_radius": 0.1235, "rod_length": 0.2125},
               {"joint_offset": 0.0015, "rail_radius": 0.1272, "rod_length": 0.2162}],
}
KINDS = ["rotary", "linear"]


def with_per_arm(kind, per_arm):
    d = copy.deepcopy(load_robot(PRESETS[kind]).to_dict())
    d["geometry"]["per_arm"] = per_arm
    return parse_robot(d, "robot.yaml")


@pytest.fixture(scope="module", params=KINDS)
def case(request):
    kind = request.param
    m = model_for(with_per_arm(kind, PERTURBED[kind]))
    m0 = model_for(PRESETS[kind])        # the symmetric robot (the old code's answer)
    X = A.sample_workspace(m, 5, seed=7, min_measure=0.2)
    rng = np.random.default_rng(3)
    Xd = rng.normal(0.0, 0.4, X.shape)
    Xdd = rng.normal(0.0, 3.0, X.shape)
    return kind, m, m0, X, Xd, Xdd


# ----------------------------------------------------------------------------- the reference

def _d1(f, x, h, k):
    """Fourth-order central difference of f along coordinate k at x."""
    e = np.zeros(3)
    e[k] = h
    return (8 * (f(x + e) - f(x - e)) - (f(x + 2 * e) - f(x - 2 * e))) / (12 * h)


def _jac(f, x, h):
    """d f / d x, shape f(x).shape + (3,)."""
    return np.stack([_d1(f, x, h, k) for k in range(3)], -1)


class Reference:
    """The lumped model's energy from the per-arm chain kinematics (module docstring)."""

    def __init__(self, m):
        self.m, self.kind, self.p, self.ch = m, m.kind, m.arms, m.chains
        self.off = self.ch.block(self.p, "joint_offset")
        self.u, _ = _units(self.ch.block(self.p, "chain_angle" if self.kind == "rotary" else "rail_angle"))

    def q(self, X):
        return self.ch.inverse(self.p, np.asarray(X)[None])[0]

    def coords(self, X):
        """(coordinates, weights): the weighted squared rates sum to 2 T."""
        m, q = self.m, self.q(X)
        if self.kind == "rotary":
            C = self.ch.elbows(self.p, q[None])[0]
            A_ = X + self.ch.block(self.p, "platform_radius")[:, None] * self.u
            K = (1 - m.r_k) * C + m.r_k * A_
            c = np.concatenate([X, q, K.ravel()])
            w = np.concatenate([[m.m_x] * 3, m.inertia, [m.m_k] * 9])
        else:
            h = q + self.off
            c = np.concatenate([X, q, np.concatenate([X - hi * np.array([0, 0, 1.0]) for hi in h])])
            w = np.concatenate([[m.m_x] * 3, m.carriage_inertia, [m.m_r] * 9])
        return c, w

    def potential(self, X):
        m, q = self.m, self.q(X)
        th = q + self.off
        if self.kind == "rotary":
            C = self.ch.elbows(self.p, q[None])[0]
            zk = (1 - m.r_k) * C[:, 2] + m.r_k * X[2]
            return m.g * (m.m_x * X[2] - np.dot(m.moment, np.sin(th)) + m.m_k * zk.sum())
        return m.g * (m.m_x * X[2] + np.dot(m.carriage_mass, th))

    def mass(self, X):
        D = _jac(lambda x: self.coords(x)[0], X, 2e-5)
        w = self.coords(X)[1]
        return D.T @ (w[:, None] * D)

    def jac(self, X):
        return _jac(self.q, X, 1e-4)

    def gravity(self, X):
        return _jac(lambda x: np.array([self.potential(x)]), X, 1e-4)[0]

    def velocity_force(self, X, Xd):
        """M_dot X_d - 1/2 grad_X (X_d^T M X_d)."""
        dM = _jac(self.mass, X, 2e-4)                       # (3, 3, 3): dM[a, b, k] = dM_ab / dX_k
        return np.einsum("abk,k,b->a", dM, Xd, Xd) - 0.5 * np.einsum("abk,a,b->k", dM, Xd, Xd)

    def generalized_force(self, X, Xd, Xdd):
        return self.mass(X) @ Xdd + self.velocity_force(X, Xd) + self.gravity(X)

    def torques(self, X, Xd, Xdd):
        return np.linalg.solve(self.jac(X).T, self.generalized_force(X, Xd, Xdd))


def _units(phi):
    u = np.stack([np.cos(phi), np.sin(phi), np.zeros(3)], -1)
    return u, None


def _rel(a, b):
    return float(np.abs(np.asarray(a) - np.asarray(b)).max() / max(np.abs(np.asarray(b)).max(), 1e-9))


def _both(case, fn, want, tol):
    """fn(m) matches want to tol, and the symmetric model misses it by 30 tol at least."""
    kind, m, m0, *_ = case
    assert _rel(fn(m), want) < tol, (kind, _rel(fn(m), want))
    assert _rel(fn(m0), want) > 30 * tol, (kind, _rel(fn(m0), want))


# ----------------------------------------------------------------------------- the checks

def test_mass_matrix_and_joint_space_inertia(case):
    kind, m, m0, X, Xd, Xdd = case
    ref = Reference(m)
    for x in X:
        M = ref.mass(x)
        _both(case, lambda mm: A.mass_matrix(mm, x), M, 1e-7)
        Jinv = np.linalg.inv(ref.jac(x))
        _both(case, lambda mm: A.joint_space_inertia(mm, x), Jinv.T @ M @ Jinv, 1e-7)
    np.testing.assert_allclose(A.mass_matrix(m, X), np.stack([ref.mass(x) for x in X]), rtol=1e-7, atol=1e-9)


def test_gravity_coriolis_energy(case):
    kind, m, m0, X, Xd, Xdd = case
    ref = Reference(m)
    for x, v in zip(X, Xd):
        _both(case, lambda mm: A.gravity_vector(mm, x), ref.gravity(x), 1e-8)
        _both(case, lambda mm: A.coriolis_matrix(mm, x, v) @ v, ref.velocity_force(x, v), 1e-5)
        kin, pot = A.energy(m, x, v)
        assert kin == pytest.approx(0.5 * v @ ref.mass(x) @ v, rel=1e-8)
        assert pot == pytest.approx(ref.potential(x), rel=1e-10, abs=1e-10)


def test_inverse_and_forward_dynamics_obey_lagrange(case):
    kind, m, m0, X, Xd, Xdd = case
    ref = Reference(m)
    want = np.stack([ref.torques(x, v, a) for x, v, a in zip(X, Xd, Xdd)])
    for k in range(len(X)):
        _both(case, lambda mm: A.inverse_dynamics(mm, X[k], Xd[k], Xdd[k], friction=False), want[k], 1e-5)
    np.testing.assert_allclose(A.inverse_dynamics(m, X, Xd, Xdd, friction=False), want, rtol=1e-5,
                               atol=1e-5 * np.abs(want).max())
    # forward dynamics inverts it (with friction and an external force), one sample and N
    F = np.array([1.0, -2.0, 3.0])
    tau = A.inverse_dynamics(m, X, Xd, Xdd, F_P=F)
    np.testing.assert_allclose(A.forward_dynamics(m, X, Xd, tau, F_P=F), Xdd, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(A.forward_dynamics(m, X[0], Xd[0], tau[0], F_P=F), Xdd[0], rtol=1e-9, atol=1e-9)
    # and M X_dd + C X_d + G = J^T tau with the model's own pieces
    J = A.jacobian(m, X)
    lhs = (np.einsum("nab,nb->na", A.mass_matrix(m, X), Xdd) + np.einsum("nab,nb->na", A.coriolis_matrix(m, X, Xd), Xd)
           + A.gravity_vector(m, X))
    np.testing.assert_allclose(lhs, np.einsum("nia,ni->na", J, A.inverse_dynamics(m, X, Xd, Xdd, friction=False)),
                               rtol=1e-9, atol=1e-9 * np.abs(lhs).max())


def test_joint_state_forms(case):
    kind, m, m0, X, Xd, Xdd = case
    ref = Reference(m)
    q, qd, qdd = A.joint_state(m, X, Xd, Xdd)
    np.testing.assert_allclose(q, np.stack([ref.q(x) for x in X]), atol=1e-12)
    np.testing.assert_allclose(qd, np.einsum("nia,na->ni", np.stack([ref.jac(x) for x in X]), Xd), rtol=1e-8, atol=1e-10)
    # q_dd: second time derivative of q(X(t)), X(t) = X + Xd t + Xdd t^2 / 2
    h = 1e-4
    path = lambda t: np.stack([ref.q(x + v * t + 0.5 * a * t * t) for x, v, a in zip(X, Xd, Xdd)])
    qdd_fd = (-path(2 * h) + 16 * path(h) - 30 * path(0) + 16 * path(-h) - path(-2 * h)) / (12 * h * h)
    np.testing.assert_allclose(qdd, qdd_fd, rtol=1e-5, atol=1e-5)
    # J_dot: q_dd = J X_dd + J_dot X_d
    Jd = A.jacobian_derivative(m, X, Xd)
    np.testing.assert_allclose(np.einsum("nia,na->ni", A.jacobian(m, X), Xdd) + np.einsum("nia,na->ni", Jd, Xd),
                               qdd_fd, rtol=1e-5, atol=1e-5)
    # the joint-space forms: back to the platform state and the same efforts
    Xb, Xdb, Xddb = A.cartesian_state(m, q, qd, qdd)
    np.testing.assert_allclose(Xb, X, atol=1e-12)
    np.testing.assert_allclose(Xdb, Xd, atol=1e-10)
    np.testing.assert_allclose(Xddb, Xdd, atol=1e-8)
    tau = A.inverse_dynamics(m, X, Xd, Xdd)
    np.testing.assert_allclose(A.inverse_dynamics_joint(m, q, qd, qdd), tau, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(A.inverse_dynamics_joint(m, q[1], qd[1], qdd[1]), tau[1], rtol=1e-8, atol=1e-8)
    # the control loop's feedforward path on floats: the same efforts per sample
    one = np.array([A.inverse_dynamics_sample(m, *(tuple(v[k].tolist()) for v in (q, qd, qdd)))
                    for k in range(len(q))])
    np.testing.assert_allclose(one, tau, rtol=1e-8, atol=1e-8)


def test_regressor_is_linear_in_the_lumped_parameters(case):
    kind, m, m0, X, Xd, Xdd = case
    pi = np.concatenate([m.params.as_vector(), m.params.static])     # with the break-away columns
    tau = A.inverse_dynamics(m, X, Xd, Xdd)
    np.testing.assert_allclose(A.regressor(m, X, Xd, Xdd, stribeck=True) @ pi, tau, rtol=1e-10, atol=1e-10)
    q, qd, qdd = A.joint_state(m, X, Xd, Xdd)
    np.testing.assert_allclose(A.regressor_joint(m, q, qd, qdd, stribeck=True) @ pi, tau, rtol=1e-8, atol=1e-8)
    assert _rel(A.regressor(m0, X, Xd, Xdd, stribeck=True) @ pi, tau) > 1e-4


def test_passive_angles_follow_the_per_arm_links(case):
    """The passive pair's direction is the unit vector from its origin (elbow / carriage) to the
    platform joint."""
    kind, m, m0, X, Xd, Xdd = case
    ref = Reference(m)
    ang = A.passive_angles(m, X)
    for x, a in zip(X, ang):
        q = ref.q(x)
        o = A.passive_origins(m, q)
        r = m.chains.block(m.arms, "platform_radius") if kind == "rotary" else np.full(3, m.r)
        d = x + r[:, None] * ref.u - o
        d = d / np.linalg.norm(d, axis=1)[:, None]
        if kind == "rotary":
            th = q + ref.off
            # in the arm's frame: x along the arm, y along the motor axis (e_z x u), z = x x y
            ax = np.cos(th)[:, None] * ref.u - np.sin(th)[:, None] * np.array([0, 0, 1.0])
            ay = np.cross(np.array([0, 0, 1.0]), ref.u)
            az = np.cross(ax, ay)
            fx, fy, fz = (d * ax).sum(1), (d * ay).sum(1), (d * az).sum(1)
            want = np.stack([np.arctan2(-fz, fx), np.arcsin(fy)], -1)
        else:
            want = np.stack([np.arctan2(d[:, 1], d[:, 0]), np.arcsin(d[:, 2])], -1)
        np.testing.assert_allclose(a, want, atol=1e-9)


def test_step_follows_the_forward_dynamics(case):
    """One fixed step under the inverse-dynamics efforts reaches the accelerated state."""
    kind, m, m0, X, Xd, Xdd = case
    tau = A.inverse_dynamics(m, X[0], Xd[0], Xdd[0])
    dt = 1e-5
    Xn, Vn = A.step(m, X[0], Xd[0], tau, dt, method="rk4")
    np.testing.assert_allclose((np.asarray(Vn) - Xd[0]) / dt, Xdd[0], rtol=1e-3, atol=1e-3)


def test_identification_with_per_arm_geometry():
    """The explicit set identifies a per-arm robot (its regressor is the per-arm model's, above)
    and writes its physical fields back unchanged; Kim's set, one gravity moment for three arms,
    refuses it in one line."""
    from delta_dynamics.identification import IdentificationError
    from delta_dynamics.rotary.identification import physical_from_lumped
    robot = with_per_arm("rotary", PERTURBED["rotary"])
    m = model_for(robot)
    assert len(set(m.params.arm_moment)) == 3          # h_i = m_L r_L + m_C l_i per arm
    X = A.sample_workspace(m, 60, seed=5)
    rng = np.random.default_rng(1)
    Xd, Xdd = rng.normal(0, 0.5, X.shape), rng.normal(0, 5, X.shape)
    q, qd, qdd = A.joint_state(m, X, Xd, Xdd)
    pset = A.parameter_set(m, "explicit", stribeck=True)
    Y = pset.regressor(m, q, qd, qdd).reshape(-1, len(pset.names))
    est = np.linalg.lstsq(Y, A.inverse_dynamics(m, X, Xd, Xdd).ravel(), rcond=None)[0]
    np.testing.assert_allclose(est, np.concatenate([m.params.as_vector(), m.params.static]), rtol=1e-8)
    new, notes = physical_from_lumped(robot, m.params)
    assert notes == []
    for field in ("mass", "inertia"):
        assert getattr(new.mass.upper_arm, field) == pytest.approx(getattr(robot.mass.upper_arm, field), rel=1e-12)
    kim = A.parameter_set(m, "kim")
    why = ("robot.yaml: the kim parameter set assumes three identical arms .* but this robot has "
           r"geometry.per_arm .*: use the explicit parameter set \(--params explicit\), whose regressor is the "
           "per-arm model's")
    with pytest.raises(IdentificationError, match=why):
        kim.regressor(m, q, qd, qdd)
    with pytest.raises(IdentificationError, match=why):
        kim.nominal(m)
    kim.regressor(model_for("nt_robot"), q[:2], qd[:2], qdd[:2])     # the symmetric robot keeps it


def test_identify_cli_refuses_kim_for_a_per_arm_robot_before_reading_data(tmp_path, capsys):
    """delta-identify --params kim with a per-arm robot file: one line naming the file, why and
    what to use, before the data are read (the data file given does not even exist)."""
    import yaml
    from delta_dynamics.identification.cli import main
    path = tmp_path / "calibrated.yaml"
    path.write_text(yaml.safe_dump(with_per_arm("rotary", PERTURBED["rotary"]).to_dict()))
    assert main(["--robot", str(path), "--data", str(tmp_path / "missing.csv"), "--params", "kim",
                 "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert err.startswith(f"delta-identify: error: {path}: the kim parameter set assumes three identical arms")
    assert err.endswith("use the explicit parameter set (--params explicit), whose regressor is the per-arm "
                        "model's with an inertia and a gravity moment per arm")


def test_mujoco_closed_chain_of_the_per_arm_robot_agrees():
    """An independent model of different structure: MuJoCo's closed chain built from the per-arm
    robot file (rigid bars of each arm's own length on universal joints, Lagrange multipliers)
    assembles where the per-arm kinematics puts it and needs the explicit per-arm model's
    torques to within the bars' axial inertia (as for the symmetric robot,
    test_mujoco_model.py), while the symmetric model misses by far more."""
    mujoco = pytest.importorskip("mujoco", reason="the MuJoCo model needs the mujoco package")
    from delta_dynamics.reference.mujoco_model.inverse import MujocoInverseDynamics
    from delta_dynamics.reference.mujoco_model.plant import ClosedChain
    robot = with_per_arm("rotary", PERTURBED["rotary"])
    m, m0 = model_for(robot), model_for("nt_robot")
    chain = ClosedChain(robot)
    d = mujoco.MjData(chain.model)
    X = A.sample_workspace(m, 30, seed=5, min_measure=0.1)
    for x in X[:10]:
        d.qpos[:] = chain.qpos(A.inverse_kinematics(m, x), x)
        mujoco.mj_forward(chain.model, d)
        assert chain.closure_error(d) < 1e-12
    rng = np.random.default_rng(5)
    V, Acc = rng.normal(0, 0.5, X.shape), rng.normal(0, 5, X.shape)
    tau_mj = MujocoInverseDynamics(robot).torques(X, V, Acc)
    tau = A.inverse_dynamics(m, X, V, Acc)
    assert np.abs(tau).max() > 20.0
    np.testing.assert_allclose(tau_mj, tau, atol=1e-3)
    assert np.abs(A.inverse_dynamics(m0, X, V, Acc) - tau_mj).max() > 0.1


def test_multibody_model_of_the_per_arm_robot_agrees():
    """Elshami et al.'s multibody DAE built from the per-arm robot file (each arm's own bodies and
    joints): its platform accelerations under random torques agree with the explicit per-arm
    model's forward dynamics within 2e-5 of their size (as for the symmetric robot,
    test_multibody.py: the bars' axial inertia), the symmetric model's do not."""
    from delta_dynamics.reference.multibody.dynamics import (Evaluation, Friction, accelerations, joint_angles,
                                                            place_platform)
    from delta_dynamics.reference.multibody.system import MultibodySystem
    robot = with_per_arm("rotary", PERTURBED["rotary"])
    m, m0 = model_for(robot), model_for("nt_robot")
    s = MultibodySystem(robot)
    ev, fr = Evaluation(s), Friction(robot)
    X = A.sample_workspace(m, 10, seed=3, min_measure=0.1)
    rng = np.random.default_rng(1)
    V = rng.normal(0.0, 0.5, X.shape)
    worst = worst0 = 0.0
    for k in range(len(X)):
        tau = rng.normal(0.0, 10.0, 3)
        st = place_platform(s, X[k], V[k])
        np.testing.assert_allclose(joint_angles(s, st), A.inverse_kinematics(m, X[k]), atol=1e-12)
        a, _ = accelerations(s, ev, st, tau, fr)
        a = a.reshape(-1, 6)[s.platform, :3]
        ref = A.forward_dynamics(m, X[k], V[k], tau)
        worst = max(worst, float(np.abs(a - ref).max() / np.abs(ref).max()))
        worst0 = max(worst0, float(np.abs(a - A.forward_dynamics(m0, X[k], V[k], tau)).max() / np.abs(ref).max()))
    assert worst < 2e-5, worst
    assert worst0 > 1e-3, worst0


def test_staicu_model_of_the_per_arm_robot_agrees_with_mujoco():
    """Staicu's recursive model built from the per-arm robot file (each chain's own joint offset,
    radii, lengths and bars) needs MuJoCo's inverse-dynamics torques of the same closed chain to
    rounding (the same bodies, bars' axial inertia included: 4e-14 N m of 37 N m when measured),
    and the explicit per-arm model's within that axial inertia; the symmetric robot's Staicu
    model misses by newtons. The model refused a per-arm robot before."""
    pytest.importorskip("mujoco", reason="the MuJoCo model needs the mujoco package")
    from delta_dynamics.reference.mujoco_model.inverse import MujocoInverseDynamics
    from delta_dynamics.reference.staicu import StaicuModel, inverse_dynamics
    robot = with_per_arm("rotary", PERTURBED["rotary"])
    m = model_for(robot)
    X = A.sample_workspace(m, 30, seed=5, min_measure=0.1)
    rng = np.random.default_rng(5)
    V, Acc = rng.normal(0, 0.5, X.shape), rng.normal(0, 5, X.shape)
    tau_mj = MujocoInverseDynamics(robot).torques(X, V, Acc)
    tau = inverse_dynamics(StaicuModel(robot), X, V, Acc)
    assert np.abs(tau).max() > 20.0
    np.testing.assert_allclose(tau, tau_mj, rtol=0, atol=1e-9 * np.abs(tau).max())
    np.testing.assert_allclose(tau, A.inverse_dynamics(m, X, V, Acc), atol=1e-3)
    assert np.abs(inverse_dynamics(StaicuModel(load_robot("nt_robot")), X, V, Acc) - tau_mj).max() > 1.0
