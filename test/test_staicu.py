"""Staicu & Carp-Ciocardia's recursive virtual-power model (delta_dynamics.reference.staicu), checked
against its own energy and the geometry, not against the print: the recursion's velocities and
accelerations against finite differences of the body poses, power balance, Lagrange's
equations per torque, statics; and against the explicit model on its assumptions. The robots
include two with per-arm geometry (``geometry.per_arm``: every chain its own joint offset,
radii and lengths); test_per_arm_dynamics.py checks that model against MuJoCo's."""

import numpy as np
import pytest

from delta_core.robot_file import BodyMass, FullBody, load_robot, parse_robot
from delta_dynamics.rotary import dynamics as explicit
from delta_dynamics.common.backend import ScalarMath
from delta_dynamics.rotary.kinematics import (UnreachableError, _forearm_vector, chain_geometry,
                                              forward_kinematics, inverse_kinematics, jacobian,
                                              passive_angles, sample_workspace, workspace_centre)
from delta_dynamics.rotary.model import RotaryModel
from delta_dynamics.reference.staicu import (StaicuModel, body_poses, configuration, energy, inverse_dynamics,
                                             joint_state, motion)
from delta_dynamics.motion.trajectories import ellipse, pick_place
from delta_dynamics.reference.bodies import chain_bar

from model_checks import d_dt, lagrange_efforts, multisine


def with_full_body(base, full: FullBody, **geometry):
    """A robot file dict from preset ``base`` with ``full`` and the lumped forearm it implies."""
    d = load_robot(base).to_dict()
    d["geometry"].update(geometry)
    d["mass_properties"]["full_body"] = full.to_dict()
    fa = full.implied_forearm(d["geometry"]["forearm_length"])
    d["mass_properties"]["forearm"] = {"mass": fa.mass, "com_ratio": fa.com_ratio, "inertia": fa.inertia}
    if full.upper_arm_inertia is not None:
        d["mass_properties"]["upper_arm"]["inertia"] = full.upper_arm_inertia[1]
    return parse_robot(d, source=f"{base}+full_body")


def lopsided():
    """Nothing symmetric: bar COM off-centre, Iyy != Izz, unequal blocks with full tensors, an
    arm tensor, a rotor, uneven chain angles."""
    full = FullBody(bar=BodyMass(4.0, (0.1, 0.2, 0.25), 0.35),
                    elbow_block=BodyMass(1.0, (0.01, 0.03, 0.025)),
                    platform_block=BodyMass(3.0, (0.02, 0.05, 0.06)),
                    upper_arm_inertia=(0.03, 0.09, 0.08))
    r = with_full_body("staicu2003", full, chain_angles_deg=[0.0, 130.0, 250.0])
    d = r.to_dict()
    d["mass_properties"]["motor"].update(rotor_inertia=1e-4, gear_ratio=10.0)
    return parse_robot(d, source="lopsided")


def with_per_arm(robot, seed):
    """``robot`` with every per-arm field perturbed (joint offsets up to 0.3 deg, radii and
    lengths by up to 1-3 %): a calibrated robot whose chains all differ."""
    d = robot.to_dict()
    g = d["geometry"]
    rng = np.random.default_rng(seed)
    d["geometry"]["per_arm"] = [
        {"joint_offset": float(rng.uniform(-0.005, 0.005)),
         "base_radius": g["base_radius"] * float(rng.uniform(0.99, 1.01)),
         "upper_arm_length": g["upper_arm_length"] * float(rng.uniform(0.99, 1.01)),
         "forearm_length": g["forearm_length"] * float(rng.uniform(0.99, 1.01)),
         "platform_radius": g["platform_radius"] * float(rng.uniform(0.97, 1.03))} for _ in range(3)]
    return parse_robot(d, source=f"{robot.source}+per_arm")


ROBOTS = {"nt_robot": lambda: load_robot("nt_robot"), "d3s800": lambda: load_robot("d3s800"),
          "staicu2003": lambda: load_robot("staicu2003"), "lopsided": lopsided,
          "nt_robot+per_arm": lambda: with_per_arm(load_robot("nt_robot"), 1),
          "lopsided+per_arm": lambda: with_per_arm(lopsided(), 2)}


@pytest.fixture(scope="module", params=list(ROBOTS))
def sm(request):
    return StaicuModel(ROBOTS[request.param]())


def joint_path(sm, seed):
    """A smooth joint-space path q(t) (multi-sine) around the workspace centre."""
    m = sm.explicit
    return multisine(inverse_kinematics(m, workspace_centre(m)), (0.03, 0.1), seed)


def cart(sm, q, qd, qdd=None):
    return explicit.cartesian_state(sm.explicit, q, qd, qdd)


# ----------------------------------------------------------------------------- kinematics

def _skew_inv(S):
    return np.array([S[2, 1] - S[1, 2], S[0, 2] - S[2, 0], S[1, 0] - S[0, 1]]) / 2


def test_relative_angles_are_the_urdf_passive_angles(sm):
    X = sample_workspace(sm.explicit, 30, seed=3)
    cfg = configuration(sm, X)
    pa = passive_angles(sm.explicit, X)
    np.testing.assert_allclose(cfg.bend, pa[..., 0], atol=1e-12)
    np.testing.assert_allclose(cfg.tilt, pa[..., 1], atol=1e-12)
    np.testing.assert_allclose(cfg.q, inverse_kinematics(sm.explicit, X), atol=1e-14)
    # the bars end on the platform joints +- s/2 along the elbow axis, length l_K (arm i's own l_i)
    bar_end = cfg.C + sm.arm_lk[:, None] * cfg.R3[..., :, 0]
    np.testing.assert_allclose(bar_end, cfg.A, atol=1e-12)


def test_recursion_matches_finite_differences_of_the_frames(sm):
    """Eqs. (11), (12), (15), (16): omega, v, eps, gamma of every joint frame (turned into
    base_link) are the time derivatives of the frames' axes and origins."""
    q, qd, qdd = joint_path(sm, 1)
    half = 0.5 * sm.s

    def frames(t):
        cfg = configuration(sm, cart(sm, q(t), qd(t))[0][None])
        y = cfg.R2[..., :, 1]
        O = np.stack((cfg.B, cfg.C, cfg.C + half * y, cfg.C - half * y, cfg.A + half * y), -2)[0]
        R = np.stack((cfg.R1, cfg.R2, cfg.R3, cfg.R3, cfg.R2), -3)[0]
        return O, R
    h = 1e-3
    for t in (0.3, 1.1):
        X, Xd, Xdd = cart(sm, q(t), qd(t), qdd(t))
        cfg = configuration(sm, X[None])
        mo = motion(sm, cfg, Xd[None], Xdd[None])
        O, R = frames(t)
        v_fd = d_dt(lambda s: frames(s)[0], t, h)
        Rd = d_dt(lambda s: frames(s)[1], t, h)
        w_fd = np.array([[_skew_inv(Rd[i, k] @ R[i, k].T) for k in range(5)] for i in range(3)])
        gam_fd = d_dt(lambda s: d_dt(lambda u: frames(u)[0], s, h), t, h)
        def omega_fd(s):
            Rs, Rds = frames(s)[1], d_dt(lambda u: frames(u)[1], s, h)
            return np.array([[_skew_inv(Rds[i, k] @ Rs[i, k].T) for k in range(5)] for i in range(3)])
        eps_fd = d_dt(omega_fd, t, h)
        world = lambda a: np.einsum("ikab,ikb->ika", R, a[0])      # noqa: E731
        scale_v = np.abs(v_fd).max()
        np.testing.assert_allclose(world(mo.v), v_fd, atol=1e-8 * scale_v)
        np.testing.assert_allclose(world(mo.omega), w_fd, atol=1e-8 * np.abs(w_fd).max())
        np.testing.assert_allclose(world(mo.gam), gam_fd, atol=1e-5 * np.abs(gam_fd).max())
        np.testing.assert_allclose(world(mo.eps), eps_fd, atol=1e-5 * np.abs(eps_fd).max())
        # the actuated joints are those of the explicit model (eqs. 13-14 vs Asadi's 9, 11)
        for a, b in zip(joint_state(sm, X, Xd, Xdd), explicit.joint_state(sm.explicit, X, Xd, Xdd)):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_energy_velocities_are_those_of_the_body_poses(sm):
    """The energy's COM and angular velocities equal finite differences of the poses, so the
    power and Lagrange checks below test against the mechanism, not against themselves."""
    q, qd, _ = joint_path(sm, 2)
    h = 1e-4
    com = lambda s: body_poses(sm, cart(sm, q(s), qd(s))[0][None])[0][0]       # noqa: E731
    axes = lambda s: body_poses(sm, cart(sm, q(s), qd(s))[0][None])[1][0]      # noqa: E731
    for t in (0.2, 0.9):
        X, Xd, _ = cart(sm, q(t), qd(t))
        v = d_dt(com, t, h)
        Ad = d_dt(axes, t, h)
        A = axes(t)
        w = np.array([[_skew_inv(Ad[i, k] @ A[i, k].T) for k in range(5)] for i in range(3)])
        bs = sm.bodies
        T = 0.5 * sm.m_platform * Xd @ Xd + 0.5 * sm.rotor * qd(t) @ qd(t)
        for i in range(3):
            # chain i's bars: those of its own forearm length l_i (bodies.chain_bar)
            bar = chain_bar(bs.bar, sm.arm_lk[i] / sm.lk)
            Jc = [np.diag(b.inertia) for b in (bs.upper_arm, bs.elbow_block, bar, bar, bs.platform_block)]
            for k in range(5):
                wb = A[i, k].T @ w[i, k]
                T += 0.5 * sm.mass[k] * v[i, k] @ v[i, k] + 0.5 * wb @ Jc[k] @ wb
        assert energy(sm, X, Xd)[0] == pytest.approx(T, rel=1e-9)


# ----------------------------------------------------------------------------- dynamics

def test_power_balance(sm):
    """sum_i tau_i q_dot_i = d/dt (T + U) of the model's own bodies (<= 1e-8 relative)."""
    for seed in range(3):
        q, qd, qdd = joint_path(sm, seed)
        E = lambda t: sum(energy(sm, *cart(sm, q(t), qd(t))[:2]))        # noqa: E731
        ts = np.linspace(0.0, 2.0, 9)
        tau, p = zip(*(inverse_dynamics(sm, *cart(sm, q(t), qd(t), qdd(t)), friction=False, powers=True)
                       for t in ts))
        power = np.array([pk.sum() for pk in p])
        np.testing.assert_allclose(power, [tk @ qd(t) for tk, t in zip(tau, ts)], atol=1e-12 * np.abs(power).max())
        dE = np.array([d_dt(E, t, 2e-3) for t in ts])
        assert np.abs(power - dE).max() <= 1e-8 * np.sqrt(np.mean(power ** 2))


def test_power_balance_on_the_trajectories_of_the_papers():
    """Staicu's ellipse (eq. 7) on staicu2003 and a pick-and-place cycle, batch evaluation."""
    sm = StaicuModel.from_robot("staicu2003")
    for tr in (ellipse(dt=0.01), ellipse(dt=0.01, period=1.0, ramp=0.5),
               pick_place(start=(-0.05, 0.0, -0.33), width=0.1, height=0.02, dt=2e-3)):
        tau, p = inverse_dynamics(sm, tr.X, tr.Xd, tr.Xdd, friction=False, powers=True)
        power = p.sum(axis=1)
        dE = []
        for k in range(3, len(tr) - 3, 29):
            def E(s):
                return sum(energy(sm, tr.X[k] + tr.Xd[k] * s + 0.5 * tr.Xdd[k] * s * s, tr.Xd[k] + tr.Xdd[k] * s))
            dE.append((d_dt(E, 0.0, 1e-4), power[k]))
        dE = np.array(dE)
        assert np.abs(dE[:, 0] - dE[:, 1]).max() <= 1e-8 * np.sqrt(np.mean(power ** 2))


def lagrangian(sm, q, qd):
    T, U = energy(sm, *cart(sm, q, qd)[:2])
    return T - U


def test_every_torque_obeys_lagrange_equations(sm):
    """tau_i = d/dt dL/dq_dot_i - dL/dq_i, with L = T - U of the model's own bodies."""
    for seed in (10, 11):
        q, qd, qdd = joint_path(sm, seed)
        for t in np.linspace(0.1, 1.9, 4):
            tau_lagrange = lagrange_efforts(lambda a, b: lagrangian(sm, a, b), q, qd, t)
            tau = inverse_dynamics(sm, *cart(sm, q(t), qd(t), qdd(t)), friction=False)
            np.testing.assert_allclose(tau, tau_lagrange, rtol=1e-6, atol=1e-6 * np.abs(tau).max())


def test_static_torques_are_the_gradient_of_the_potential(sm):
    X = sample_workspace(sm.explicit, 10, seed=21)
    zero = np.zeros_like(X)
    tau = inverse_dynamics(sm, X, zero, zero, friction=False)
    q = joint_state(sm, X, zero)[0]
    U = lambda qq: energy(sm, forward_kinematics(sm.explicit, qq), np.zeros(3))[1]    # noqa: E731
    eye = np.eye(3)
    for k in range(len(X)):
        grad = np.array([(U(q[k] + 1e-6 * eye[i]) - U(q[k] - 1e-6 * eye[i])) / 2e-6 for i in range(3)])
        np.testing.assert_allclose(tau[k], grad, rtol=1e-6, atol=1e-7 * np.abs(tau).max())


def test_external_force_and_friction_enter_as_in_the_explicit_model():
    sm = StaicuModel.from_robot("d3s800")
    rng = np.random.default_rng(7)
    X = sample_workspace(sm.explicit, 20, seed=71)
    V, A, F = rng.normal(size=(3, 20, 3))
    base = inverse_dynamics(sm, X, V, A, friction=False)
    J = jacobian(sm.explicit, X)
    # tau(F_P) = tau(0) - J^-T F_P
    np.testing.assert_allclose(inverse_dynamics(sm, X, V, A, F_P=F, friction=False),
                               base - np.linalg.solve(np.swapaxes(J, 1, 2), F[..., None])[..., 0], atol=1e-9)
    qd = explicit.joint_state(sm.explicit, X, V)[1]
    np.testing.assert_allclose(inverse_dynamics(sm, X, V, A) - base,
                               explicit.friction_torque(sm.explicit, qd), atol=1e-12)


# ----------------------------------------------------------------------------- vs the explicit model

def test_massless_blocks_equal_the_explicit_model_with_the_bars_summed():
    """Blocks without mass, bars without a moment about their own axis and with Iyy = Izz:
    the explicit model with M_K = 2 m_bar, I_K = 2 I_bar (the bars' summed mass and inertia,
    without any spacing term) gives the same torques to rounding."""
    rng = np.random.default_rng(8)
    for base, bar in (("d3s800", BodyMass(1.65, (0.0, 0.1394, 0.1394), 0.5)),
                      ("nt_robot", BodyMass(0.3, (0.0, 0.004, 0.004), 0.3)),
                      ("staicu2003", BodyMass(5.0, (0.0, 0.246875, 0.246875), 0.5))):
        r = with_full_body(base, FullBody(bar=bar, elbow_block=BodyMass(0.0, (0.0, 0.0, 0.0)),
                                          platform_block=BodyMass(0.0, (0.0, 0.0, 0.0))))
        assert r.mass.forearm.mass == pytest.approx(2 * bar.mass)
        assert r.mass.forearm.inertia == pytest.approx(2 * bar.inertia[1])
        sm, m = StaicuModel(r), RotaryModel(r)
        X = sample_workspace(m, 200, seed=81)
        V, A, F = rng.normal(size=(3, 200, 3))
        ts, te = inverse_dynamics(sm, X, V, A, F_P=F), explicit.inverse_dynamics(m, X, V, A, F_P=F)
        np.testing.assert_allclose(ts, te, rtol=0, atol=1e-11 * np.abs(te).max())


def test_on_the_explicit_models_assumptions_the_two_agree_to_rounding():
    """Blocks with mass but no inertia are Asadi's point masses m_C, m_A at the elbow and the
    platform joint; with an off-centre bar COM, unequal blocks and an arm tensor (only its
    Iyy matters: the arm turns about the motor axis alone) the models still agree."""
    full = FullBody(bar=BodyMass(1.2, (0.0, 0.05, 0.05), 0.3), elbow_block=BodyMass(0.4, (0.0, 0.0, 0.0)),
                    platform_block=BodyMass(0.7, (0.0, 0.0, 0.0)), upper_arm_inertia=(0.02, 0.12448, 0.13))
    r = with_full_body("d3s800", full)
    sm, m = StaicuModel(r), RotaryModel(r)
    rng = np.random.default_rng(9)
    X = sample_workspace(m, 200, seed=91)
    V, A = rng.normal(size=(2, 200, 3))
    te = explicit.inverse_dynamics(m, X, V, A)
    np.testing.assert_allclose(inverse_dynamics(sm, X, V, A), te, rtol=0, atol=1e-11 * np.abs(te).max())
    # and the energies are the same
    for a, b in zip(energy(sm, X, V), explicit.energy(m, X, V)):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-11 * np.abs(b).max())


def reaches(m, x):
    """Whether model ``m`` reaches platform position ``x``."""
    try:
        inverse_kinematics(m, x)
    except UnreachableError:
        return False
    return True


def test_per_arm_on_the_explicit_models_assumptions_the_two_agree_to_rounding():
    """A per-arm robot (every chain its own offset, radii, lengths) whose bodies are the explicit
    model's (massless blocks, bars without a moment about their own axis): Staicu's per-chain
    recursion and the explicit per-arm model (test_per_arm_dynamics.py: Lagrange's equations)
    give the same torques and energies to rounding; the symmetric robot's torques miss by far
    more. The old model refused such a robot."""
    for base, bar in (("nt_robot", BodyMass(0.3, (0.0, 0.004, 0.004), 0.3)),
                      ("staicu2003", BodyMass(5.0, (0.0, 0.246875, 0.246875), 0.5))):
        sym = with_full_body(base, FullBody(bar=bar, elbow_block=BodyMass(0.0, (0.0, 0.0, 0.0)),
                                            platform_block=BodyMass(0.0, (0.0, 0.0, 0.0))))
        r = with_per_arm(sym, 5)
        sm, m = StaicuModel(r), RotaryModel(r)
        rng = np.random.default_rng(16)
        X = np.array([x for x in sample_workspace(RotaryModel(sym), 120, seed=161) if reaches(m, x)])[:100]
        V, A, F = rng.normal(size=(3, len(X), 3))
        te = explicit.inverse_dynamics(m, X, V, A, F_P=F)
        np.testing.assert_allclose(inverse_dynamics(sm, X, V, A, F_P=F), te, rtol=0, atol=1e-11 * np.abs(te).max())
        for a, b in zip(energy(sm, X, V), explicit.energy(m, X, V)):
            np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-11 * np.abs(b).max())
        # the actuated joints are the per-arm ones (q_i = theta_i - o_i)
        np.testing.assert_allclose(joint_state(sm, X, V)[0], inverse_kinematics(m, X), atol=1e-14)
        miss = np.abs(inverse_dynamics(StaicuModel(sym), X, V, A, F_P=F) - te).max()
        assert miss > 1e-3 * np.abs(te).max(), (base, miss)


#: Torques (with an external force) and energies of the model as it was before it took per-arm
#: geometry (commit 7bfa49d), on three samples: float.hex, so the check is bit for bit.
BEFORE_PER_ARM = {
    "nt_robot": ([["0x1.00441a88f6f00p+2", "-0x1.e11bd13f21747p+3", "-0x1.d545f1a0d9e09p+3"],
                  ["-0x1.0f07cd1e8524dp+4", "-0x1.252ae87034ae4p+4", "0x1.2b9650f2da140p+2"],
                  ["-0x1.5fbbdf1d5cb60p+4", "-0x1.cca6213e02cdep+3", "-0x1.1cf515659ee80p+2"]],
                 ["0x1.9e40cb60aabdep+1", "0x1.cca883ba74e00p+3", "0x1.140374178b52cp+3"],
                 ["-0x1.8055bde2ba1aap+4", "-0x1.05319af379800p+4", "-0x1.0397f0e9ade98p+5"]),
    "lopsided": ([["0x1.b44e3f777fb82p+5", "-0x1.013cd2af690e8p+3", "-0x1.a64b23ad727fcp+3"],
                  ["0x1.74974765572b0p+5", "-0x1.e1f6075ebb9c8p+8", "0x1.3c69e4bc17a07p+5"],
                  ["-0x1.f444d946a0905p+0", "0x1.6a4052b2bde27p+5", "0x1.4cf64ca441583p+7"]],
                 ["0x1.c1db8de91e371p+5", "0x1.4f2e66a10049ap+8", "0x1.f95cd4d87262ap+6"],
                 ["-0x1.7bc34afa6c344p+6", "-0x1.25decb817caa9p+6", "-0x1.ffbb50a6e3d88p+6"]),
}


@pytest.mark.parametrize("name", list(BEFORE_PER_ARM))
def test_a_symmetric_robot_gives_the_floats_of_the_model_before_per_arm_geometry(name):
    """Without ``geometry.per_arm`` every chain's values are the shared ones and the per-chain
    code computes the same floats as the model that had one chain's data (checked on 3000
    samples of the four symmetric robots above when the change was made, bit for bit; here on three,
    to 1e-13 relative, so another CPU's or libm's last-bit rounding does not fail it while any change
    of the model does)."""
    sm = StaicuModel(ROBOTS[name]())
    X = sample_workspace(sm.explicit, 3, seed=17)
    V, A = np.random.default_rng(18).normal(size=(2, 3, 3))
    tau, T, U = BEFORE_PER_ARM[name]
    fromhex = np.vectorize(float.fromhex)
    np.testing.assert_allclose(inverse_dynamics(sm, X, V, A, F_P=[1.0, -2.0, 3.0]), fromhex(tau), rtol=1e-13, atol=0)
    kin, pot = energy(sm, X, V)
    np.testing.assert_allclose(kin, fromhex(T), rtol=1e-13, atol=0)
    np.testing.assert_allclose(pot, fromhex(U), rtol=1e-13, atol=0)


def test_what_the_explicit_model_leaves_out_is_seen():
    """The bars' and blocks' moments about their own axes (d3s800: small; staicu2003: its
    thick bars and heavy blocks) make the models differ, by more on fast motion."""
    rng = np.random.default_rng(10)
    for name, lo, hi in (("d3s800", 1e-7, 1e-3), ("staicu2003", 1e-3, 0.5)):
        sm = StaicuModel.from_robot(name)
        X = sample_workspace(sm.explicit, 100, seed=101)
        V, A = rng.normal(size=(2, 100, 3))
        te = explicit.inverse_dynamics(sm.explicit, X, V, A, friction=False)
        diff = np.abs(inverse_dynamics(sm, X, V, A, friction=False) - te).max() / np.abs(te).max()
        assert lo < diff < hi, (name, diff)


def test_bar_spacing_changes_no_torque():
    """The two bars are offset by +-s/2 along the elbow axis y', a fixed direction (the blocks
    only turn about it): their COMs move identically and the bars turn alike, so the spacing
    adds nothing, although a rigid pair of bars turning with the bars' omega would move its
    two COMs differently (by omega x s y'): the explicit model is right to leave the
    'spacing term' 2 m_bar (s/2)^2 out of I_K."""
    full = load_robot("staicu2003").mass.full_body
    taus = []
    for s in (0.0, 0.05, 0.3):
        r = with_full_body("staicu2003", full, forearm_spacing=s)
        sm = StaicuModel(r)
        X = sample_workspace(sm.explicit, 50, seed=111)
        V, A = np.random.default_rng(12).normal(size=(2, 50, 3))
        taus.append(inverse_dynamics(sm, X, V, A))
        if s > 0:
            q, qd, _ = joint_path(sm, 3)
            h = 1e-4
            com = lambda t: body_poses(sm, cart(sm, q(t), qd(t))[0][None])[0][0]     # noqa: E731
            for t in (0.4, 1.3):
                v = d_dt(com, t, h)                                 # (chain, body, xyz)
                np.testing.assert_allclose(v[:, 2], v[:, 3], atol=1e-9 * np.abs(v).max())
                X1, Xd1, _ = cart(sm, q(t), qd(t))
                mo = motion(sm, configuration(sm, X1[None]), Xd1[None])
                cfg = configuration(sm, X1[None])
                w_bar = np.einsum("iab,ib->ia", cfg.R3[0], mo.omega[0, :, 2])
                rigid = np.cross(w_bar, s * cfg.R2[0, :, :, 1])     # what a rigid pair would add
                assert np.abs(rigid).max() > 1e-3 * np.abs(v).max()
    np.testing.assert_allclose(taus[1], taus[0], atol=1e-11 * np.abs(taus[0]).max())
    np.testing.assert_allclose(taus[2], taus[0], atol=1e-11 * np.abs(taus[0]).max())


# ----------------------------------------------------------------------------- interface

def test_single_sample_matches_the_batch_and_symmetry():
    sm = StaicuModel.from_robot("staicu2003")
    rng = np.random.default_rng(13)
    X = sample_workspace(sm.explicit, 20, seed=131)
    V, A = rng.normal(size=(2, 20, 3))
    tb, pb = inverse_dynamics(sm, X, V, A, powers=True)
    for k in (0, 7, 19):
        ts, ps = inverse_dynamics(sm, X[k], V[k], A[k], powers=True)
        assert ts.shape == (3,) and ps.shape == (3,)
        np.testing.assert_allclose(ts, tb[k], rtol=1e-13, atol=1e-12)
        np.testing.assert_allclose(ps, pb[k], rtol=1e-13, atol=1e-12)
    X0 = workspace_centre(sm.explicit)
    tau = inverse_dynamics(sm, X0, [0.0, 0.0, 0.3], [0.0, 0.0, -2.0])
    assert np.ptp(tau) <= 1e-10 * np.abs(tau).max()
    assert (inverse_dynamics(sm, X0, np.zeros(3), np.zeros(3)) < 0).all()   # holding up: tau < 0


def test_bad_input_is_named():
    sm = StaicuModel.from_robot("nt_robot")
    X = np.array([[0.0, 0.0, -0.8], [0.0, 0.0, -3.0]])
    with pytest.raises(UnreachableError, match=r"unreachable \(sample 1\)") as e:
        inverse_dynamics(sm, X, np.zeros((2, 3)), np.zeros((2, 3)))
    assert e.value.index == 1
    with pytest.raises(ValueError, match=r"platform velocity must have shape \(3,\) or \(N, 3\)"):
        inverse_dynamics(sm, [0, 0, -0.8], [0, 0], [0, 0, 0])
    with pytest.raises(ValueError, match="all be single samples or all"):
        inverse_dynamics(sm, X, np.zeros(3), np.zeros((2, 3)))
    with pytest.raises(ValueError, match="platform acceleration must be finite"):
        inverse_dynamics(sm, [0, 0, -0.8], [0, 0, 0], [0, np.nan, 0])
    with pytest.raises(AttributeError, match="immutable"):
        sm.l = 1.0


def test_long_batches_are_cut_into_blocks_that_agree_with_single_samples():
    sm = StaicuModel.from_robot("d3s800")
    rng = np.random.default_rng(14)
    X = sample_workspace(sm.explicit, 5000, seed=141)
    V, A = rng.normal(size=(2, 5000, 3))
    tau, p = inverse_dynamics(sm, X, V, A, F_P=[1.0, -2.0, 3.0], powers=True)
    assert tau.shape == p.shape == (5000, 3)
    for k in (0, 2047, 2048, 4999):
        np.testing.assert_allclose(tau[k], inverse_dynamics(sm, X[k], V[k], A[k], F_P=[1.0, -2.0, 3.0]),
                                   rtol=1e-12, atol=1e-12)
    X[4100] = [0.0, 0.0, -5.0]
    with pytest.raises(UnreachableError, match=r"\(sample 4100\)") as e:
        inverse_dynamics(sm, X, V, A)
    assert e.value.index == 4100
    with pytest.raises(UnreachableError) as e:
        inverse_dynamics(sm, X[4100], V[0], A[0])
    assert "sample" not in str(e.value)


# ----------------------------------------------------------------------------- the paper's frames

def _az(p):
    c, s = np.cos(p), np.sin(p)
    return np.array([[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]])


_TH1 = np.array([[0.0, 0.0, -1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
_TH2 = np.array([[0.0, 1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
_TH4 = np.diag([-1.0, -1.0, 1.0])
THETA3_PRINTED = np.diag([-1.0, 1.0, 1.0])
THETA3 = np.diag([-1.0, 1.0, -1.0])


def paper_leg(alpha, p10, p21, p32, theta3=THETA3):
    """Staicu & Carp-Ciocardia eqs. (2), (3), (8), (9) for one leg of staicu2003: the platform
    centre r_0^G and orientation a_50 in their frame T_0 (z_0 down), phi_43 = phi_32 and
    phi_54 = phi_21 - phi_10 (eq. 6)."""
    beta, l0, l1, l2, l3 = np.pi / 6, 0.35, 0.1, 0.05, 0.35
    u1, u2, u3 = np.eye(3)
    a10 = _az(p10) @ _TH1 @ _TH2 @ _az(alpha)
    a20 = _az(p21) @ _az(beta) @ theta3 @ a10
    a30 = _az(p32) @ _TH1 @ _TH2 @ a20
    a40 = _az(p32) @ theta3 @ a30
    a50 = _az(p21 - p10) @ _az(beta) @ _TH1 @ _TH4 @ a40
    r = (l0 * _az(alpha).T @ u1 + a10.T @ (-l1 * u1) + a20.T @ (0.5 * l2 * u3) + a30.T @ (-l3 * u2)
         + a40.T @ (-0.5 * l2 * u1) + a50.T @ ((l0 - l3 * np.sin(beta)) * u1))
    return r, a50


def test_the_papers_frames_and_angles_map_onto_ours():
    """With theta_3 = diag(-1, 1, -1) the three legs meet at (0, 0, l_1 + l_3 cos beta) at
    phi = 0 (eq. 7 at t = 0) with the printed a_50*, b_50*, c_50*; and in our frames
    (x, y, z) = (x_0, -y_0, -z_0), chain angles -alpha: q = pi/2 - phi_10, bend = pi/6 + phi_21,
    tilt = -phi_32. The printed theta_3 = diag(-1, 1, 1) is a reflection, and the legs do
    not meet with it."""
    alphas = (np.pi / 3, np.pi, -np.pi / 3)
    start = [paper_leg(a, 0.0, 0.0, 0.0) for a in alphas]
    for r, _ in start:
        np.testing.assert_allclose(r, [0.0, 0.0, 0.1 + 0.35 * np.cos(np.pi / 6)], atol=1e-15)
    h3 = np.sqrt(3)
    np.testing.assert_allclose(start[1][1], [[1, 0, 0], [0, 0, 1], [0, -1, 0]], atol=1e-15)      # b_50*
    np.testing.assert_allclose(start[2][1], 0.5 * np.array([[-1, h3, 0], [0, 0, 2], [h3, 1, 0]]), atol=1e-15)
    np.testing.assert_allclose(start[0][1], 0.5 * np.array([[-1, -h3, 0], [0, 0, 2], [-h3, 1, 0]]), atol=1e-15)
    assert np.linalg.det(THETA3_PRINTED) == -1.0
    printed = [paper_leg(a, 0.0, 0.0, 0.0, THETA3_PRINTED)[0] for a in alphas]
    assert np.abs(printed[0] - printed[1]).max() > 0.3
    sm = StaicuModel.from_robot("staicu2003")
    to_ours = np.diag([1.0, -1.0, -1.0])
    rng = np.random.default_rng(15)
    for leg, alpha in enumerate(alphas):
        for p10, p21, p32 in rng.uniform(-0.4, 0.4, (3, 3)):
            rG, a50 = paper_leg(alpha, p10, p21, p32)
            np.testing.assert_allclose(a50, start[leg][1], atol=1e-14)     # the platform only translates
            # only this leg is closed: put the other chains' platform joints on the same point
            q, bend, tilt = angles_of_chain(sm, leg, to_ours @ rG)
            assert q == pytest.approx(np.pi / 2 - p10, abs=1e-12)
            assert bend == pytest.approx(np.pi / 6 + p21, abs=1e-12)
            assert tilt == pytest.approx(-p32, abs=1e-12)


def angles_of_chain(sm, i, X):
    """(q, bend, tilt) of chain i alone (``kinematics.passive_angles`` needs all three chains)."""
    m = sm.explicit
    q, cq, sq, *_ = chain_geometry(m, i, *X, ScalarMath)
    ux, uy, uz = _forearm_vector(m, i, *X, cq, sq)
    c, s = m.cphi[i], m.sphi[i]
    fx, fy, fz = (c * ux + s * uy) / m.lk, (c * uy - s * ux) / m.lk, uz / m.lk
    return q, np.arctan2(-(sq * fx + cq * fz), cq * fx - sq * fz), np.arcsin(fy)
