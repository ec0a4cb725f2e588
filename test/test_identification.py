"""Identification on synthetic data with known parameters: estimators, base parameters, PSO,
RLS, the robot-file round trip.

The "true" robot is nt_robot with every lumped parameter perturbed by up to 20 % (per joint)
and per-joint viscous and Coulomb friction. Its torques along an optimised excitation
trajectory (Fourier series, condition number ~8) get 1 % Gaussian noise (of each joint's RMS
torque) and the positions 2^17-count encoder quantisation; the identification sees only
(t, q, tau). Validation uses a different Fourier trajectory, never used for fitting.
"""
import numpy as np
import pytest

from delta_core.robot_file import load_robot
from delta_dynamics.reference.kim import kim_parameters
from delta_dynamics.rotary.model import PARAMETER_NAMES, RotaryModel, RotaryParameters
from delta_dynamics.identification import IdentificationError
from delta_dynamics.data_files import joint_data as J
from delta_dynamics.identification import preprocess as D
from delta_dynamics.identification import estimators as E
from delta_dynamics.identification import metrics
from delta_dynamics.identification import pipeline as P
from delta_dynamics.identification import robot_update as RU
from delta_dynamics.identification import synthetic
from delta_dynamics.identification.excitation import FourierTrajectory
from delta_dynamics.identification.pso import pso, subsample_rows
from delta_dynamics.identification.regressors import base_parameters
from delta_dynamics.rotary.identification import parameter_set, physical_from_lumped

# `delta-identify excite --robot nt_robot --period 5 --harmonics 5` (seed 0, one start), rounded
EXCITE = dict(period=5.0, q0=[0.594183, 0.48381, 0.593459],
              a=[[0.120402, -0.122881, 1.409038, 1.236256, -2.642814],
                 [-0.262598, 1.470226, 1.326266, -0.962329, -1.571565],
                 [0.106738, 0.969605, -0.69411, 1.505694, -1.887927]],
              b=[[-0.13976, -0.877402, -1.236189, -2.051877, 2.762128],
                 [-0.260752, -0.965235, 0.551263, -1.692377, 1.461388],
                 [-0.189845, -0.790839, -2.367814, 0.245491, 1.578601]])
# a second, unoptimised trajectory (random coefficients) for validation
VALIDATE = dict(period=4.0, q0=[0.4, 0.4, 0.4],
                a=[[-0.155122, -0.209463, 0.110876, 0.253709], [0.434407, -0.02062, -0.191134, -0.222653],
                   [0.186249, 0.382046, -0.098038, -0.470258]],
                b=[[-0.362716, 0.505686, 0.120357, -0.252432], [0.018397, -0.244842, 0.006944, 0.112614],
                   [-0.323436, 0.22721, 0.041091, -0.063565]])
LS = ("ols", "wls", "bounded", "tsvd", "dls", "rls")


def fourier(d):
    H = len(d["a"][0])
    z = np.concatenate((d["q0"], np.ravel(d["a"]), np.ravel(d["b"])))
    return FourierTrajectory.from_vector(d["period"], z, H)


@pytest.fixture(scope="module")
def model():
    return RotaryModel.from_robot("nt_robot")


@pytest.fixture(scope="module")
def truth(model):
    return synthetic.perturbed_model(model, spread=0.2, seed=1)


@pytest.fixture(scope="module")
def fit_data(truth):
    data, _ = synthetic.open_loop_data(truth, fourier(EXCITE), duration=20.0, noise=0.01, seed=1)
    return data


@pytest.fixture(scope="module")
def val_data(truth):
    data, _ = synthetic.open_loop_data(truth, fourier(VALIDATE), duration=8.0, noise=0.01, seed=2)
    return data


@pytest.fixture(scope="module")
def problems(model, fit_data, val_data):
    pset = parameter_set("explicit")
    return (P.build_problem(model, D.preprocess(fit_data), pset),
            P.build_problem(model, D.preprocess(val_data), pset))


# ----------------------------------------------------------------------------- LS family

@pytest.mark.parametrize("method", LS)
def test_ls_family_fitness_and_parameters(method, problems, truth):
    prob, vprob = problems
    res = P.identify(prob, method, validation=vprob)
    assert np.all(res.validation["fitness"] >= 0.995), res.validation["fitness"]
    assert np.all(res.fit["fitness"] >= 0.995)
    err = P.parameter_error(res.values, truth.params.as_vector())
    assert err.max() < 0.02, dict(zip(PARAMETER_NAMES, err.round(4)))
    assert res.base.full_rank and not res.held


def test_identify_data_in_one_call(model, truth, fit_data, val_data):
    res = P.identify_data(model, fit_data, "wls", validation=val_data)
    assert res.method == "wls" and np.all(res.validation["fitness"] >= 0.995)
    kim = P.identify_data(model, fit_data, "ols", P.Options(params="kim"))
    assert kim.names[0] == "m_p" and np.all(kim.fit["fitness"] > 0.95)


def test_standard_deviations_cover_the_errors(problems, truth):
    """The covariance (with the autocorrelation factor) is of the size of the real errors."""
    res = P.identify(problems[0], "ols")
    err = np.abs(res.values - truth.params.as_vector())
    assert res.estimate.info["autocorrelation_factor"] > 1
    assert np.all(err < 6 * res.estimate.std), (err / res.estimate.std).round(2)


def test_base_parameters_of_the_excitation(problems):
    prob, _ = problems
    base = base_parameters(prob.A, prob.pset.names)
    assert base.rank == 14 and base.full_rank
    assert base.condition < 20
    assert sorted(base.combinations()) == sorted(PARAMETER_NAMES)
    # Kim et al.'s 11 parameters are all identifiable as well
    kim = base_parameters(P.build_problem(prob.model, D.preprocess(J.JointData(
        prob.t, prob.q, prob.tau)), parameter_set("kim")).A, parameter_set("kim").names)
    assert kim.full_rank


def test_base_parameters_find_dependent_columns():
    """An exactly dependent column is reported with its combination; base values map back."""
    rng = np.random.default_rng(0)
    A = rng.normal(size=(300, 4))
    A = np.column_stack((A, 2.0 * A[:, 1] - 0.5 * A[:, 3], np.zeros(300)))
    names = ("a", "b", "c", "d", "e", "z")
    base = base_parameters(A, names)
    assert base.rank == 4 and set(base.dependent) == {4, 5} and base.zero == (5,)
    pi = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    pb = base.to_base(pi)
    assert np.allclose(A[:, list(base.independent)] @ pb, A @ pi)
    text = " ".join(base.combinations())
    assert "b + 2 e" in text and "d - 0.5 e" in text
    expl = " ".join(base.explain_dependent())
    assert "z: its regressor column is zero" in expl and "e: its column is a combination" in expl
    prior = np.zeros(6)
    full = base.from_base(pb, prior)
    assert np.allclose(A @ full, A @ pi)


def test_rank_deficient_data_name_the_parameters(model, truth):
    """Joint 2 held still: its inertia and friction are not identifiable."""
    traj = fourier(EXCITE)
    t = np.arange(6001) * 1e-3
    q, qd, qdd = traj.evaluate(t)
    q[:, 1], qd[:, 1], qdd[:, 1] = 0.45, 0.0, 0.0
    from delta_dynamics.rotary.dynamics import cartesian_state, inverse_dynamics
    tau = inverse_dynamics(truth, *cartesian_state(truth, q, qd, qdd))
    data = synthetic.measure(t, q, tau, seed=3)
    prob = P.build_problem(model, D.preprocess(data), parameter_set())
    with pytest.raises(IdentificationError) as e:
        P.identify(prob, "ols")
    msg = str(e.value)
    for name in ("arm_inertia_2", "viscous_2", "coulomb_2"):
        assert name in msg
    assert "not identifiable" in msg and "arm_inertia_1" not in msg.split("not identifiable")[1]
    res = P.identify(prob, "ols", P.Options(hold_unidentifiable=True))
    assert set(res.held) == {"arm_inertia_2", "viscous_2", "coulomb_2"}
    assert res.values[PARAMETER_NAMES.index("viscous_2")] == model.params.viscous[1]
    err = P.parameter_error(res.values, truth.params.as_vector())
    keep = [i for i, n in enumerate(PARAMETER_NAMES) if n not in res.held]
    assert err[keep].max() < 0.02


def test_bounded_never_negative(model):
    """Friction-free truth with noise: OLS returns some negative friction, bounded LS none."""
    p = model.params
    zero = (0.0, 0.0, 0.0)
    truth = model.with_parameters(RotaryParameters(p.m_x, p.m_k, p.arm_inertia, p.arm_moment,
                                                    zero, zero, zero, p.stribeck_velocity, p.smoothing_velocity))
    nn = parameter_set().nonnegative
    negatives = 0
    for seed in range(4):
        data, _ = synthetic.open_loop_data(truth, fourier(EXCITE), duration=5.0, noise=0.03, seed=seed)
        prob = P.build_problem(model, D.preprocess(data), parameter_set())
        ols = P.identify(prob, "ols")
        bnd = P.identify(prob, "bounded")
        negatives += int(np.sum(ols.values[nn] < 0))
        assert np.all(bnd.values[nn] >= 0), bnd.values
        assert set(bnd.estimate.info["active"]) == {n for n, v in zip(PARAMETER_NAMES, bnd.values) if v == 0}
        assert np.all(bnd.fit["fitness"] > 0.99)
    assert negatives > 0     # the bounds did something


def test_tsvd_truncation_and_dls_damping():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(600, 3))
    A = np.column_stack((A, A[:, 0] + 1e-7 * rng.normal(size=600)))   # near-duplicate column
    x = np.array([1.0, 2.0, 3.0, 4.0])
    b = A @ x + 1e-3 * rng.normal(size=600)
    t = E.tsvd(A, b)
    assert t.info["rank"] == 3 and t.info["dropped"] == 1
    assert abs(t.values[0] + t.values[3] - 5.0) < 1e-3 and abs(t.values[0] - t.values[3]) < 1e-3
    d0 = E.dls(A, b, damping=1e-2)
    d1 = E.dls(A, b, damping=1e-2, prior=[1.0, 2.0, 3.0, 4.0])
    assert np.abs(d1.values - x).max() < 1e-3 < np.abs(d0.values - x).max()


def test_wls_weights_noisy_joint_down():
    rng = np.random.default_rng(2)
    A = rng.normal(size=(3000, 2))
    x = np.array([1.0, -2.0])
    sigma = np.tile([0.01, 0.01, 1.0], 1000)
    b = A @ x + sigma * rng.normal(size=3000)
    w = E.wls(A, b)
    o = E.ols(A, b)
    assert w.info["joint_sigma"][2] > 20 * w.info["joint_sigma"][0]
    assert np.abs(w.values - x).max() < np.abs(o.values - x).max()
    assert np.all(w.std < o.std)


# ----------------------------------------------------------------------------- RLS

def test_rls_converges_to_batch(problems):
    prob, _ = problems
    ols = E.ols(prob.A, prob.b)
    rls = E.rls(prob.A, prob.b, forgetting=1.0, history=True)
    assert np.allclose(rls.values, ols.values, rtol=1e-5, atol=1e-7)
    h = rls.info["history"]
    err = np.abs(h - ols.values).max(axis=1) / np.abs(ols.values).max()
    assert err[len(h) // 10] < 0.05 and err[-1] < 1e-6


def test_rls_forgetting_tracks_a_payload(model, truth):
    """A 1 kg payload added half-way: RLS with forgetting follows m_x, plain RLS averages."""
    p = truth.params
    heavy = truth.with_parameters(RotaryParameters(p.m_x + 1.0, p.m_k, p.arm_inertia, p.arm_moment,
                                                    p.viscous, p.coulomb, p.static, p.stribeck_velocity,
                                                    p.smoothing_velocity))
    d1, _ = synthetic.open_loop_data(truth, fourier(EXCITE), duration=10.0, seed=4)
    d2, _ = synthetic.open_loop_data(heavy, fourier(EXCITE), duration=10.0, seed=5)
    pset = parameter_set()
    A1 = P.build_problem(model, D.preprocess(d1), pset)
    A2 = P.build_problem(model, D.preprocess(d2), pset)
    A = np.vstack((A1.A, A2.A))
    b = np.concatenate((A1.b, A2.b))
    forget = E.rls(A, b, forgetting=0.999)
    plain = E.rls(A, b, forgetting=1.0)
    assert abs(forget.values[0] - heavy.m_x) < 0.02 * heavy.m_x
    assert abs(plain.values[0] - heavy.m_x) > 0.2


def test_rls_update_single_and_block():
    rng = np.random.default_rng(3)
    th = rng.normal(size=5)
    r = E.RecursiveLeastSquares(5, P0=1e6)
    for _ in range(200):
        Y = rng.normal(size=(3, 5))
        r.update(Y, Y @ th)
    assert np.allclose(r.theta, th, atol=1e-6)
    with pytest.raises(IdentificationError):
        E.RecursiveLeastSquares(3, forgetting=1.5)


# ----------------------------------------------------------------------------- PSO

def test_pso_converges_on_the_kim_problem(model, truth, fit_data):
    """Kim et al.'s 11-parameter model (eq. 26), torques from it with 1 % noise: the swarm
    (fixed seed, reduced size) reaches the L1 optimum and the true parameters."""
    pset = parameter_set("kim")
    prob = P.build_problem(model, D.preprocess(fit_data), pset)
    true = kim_parameters(truth)
    rng = np.random.default_rng(0)
    b = prob.A @ true
    b = b + rng.normal(size=b.shape) * 0.01 * np.sqrt(np.mean(b * b))
    lo, hi = P.default_box(pset, model)
    assert np.all(lo <= true) and np.all(true <= hi)
    A, b = subsample_rows(prob.A, b, 4000)
    r = pso(A, b, lo, hi, n_particles=80, n_neighbours=16, iterations=300, seed=1)
    err = np.abs(r.values - true) / np.abs(true)
    assert err.max() < 0.01, err.round(4)
    ols = E.ols(A, b)
    assert r.score <= np.abs(b - A @ ols.values).sum()        # the L1 optimum beats the L2 one in L1
    assert np.all(np.diff(r.history) <= 0) and r.history[-1] < 0.05 * r.history[0]
    r2 = pso(A, b, lo, hi, n_particles=80, n_neighbours=16, iterations=300, seed=1)
    assert np.array_equal(r.values, r2.values)      # seeded: reproducible


def test_pso_rejects_bad_settings():
    A, b = np.ones((30, 2)), np.ones(30)
    with pytest.raises(IdentificationError, match="even"):
        pso(A, b, [0, 0], [1, 1], n_particles=10, n_neighbours=3)
    with pytest.raises(IdentificationError, match="box"):
        pso(A, b, [0, 0], [1, -1])


def test_pso_method_through_the_pipeline(problems, truth):
    prob, vprob = problems
    opts = P.Options(pso_particles=100, pso_neighbours=10, pso_iterations=600, pso_samples=3000)
    res = P.identify(prob, "pso", opts, validation=vprob)
    assert np.all(res.validation["fitness"] >= 0.995)
    assert P.parameter_error(res.values, truth.params.as_vector()).max() < 0.02
    assert res.estimate.info["rows_used"] <= 3 * 3000


# ----------------------------------------------------------------------------- closed loop

def test_closed_loop_simulation_data(model, truth, problems):
    """The fixed-step simulator under PD + feedforward (nominal model) control: identified
    from the commanded torques and the simulated, quantised positions."""
    data, rms = synthetic.closed_loop_data(truth, model, fourier(EXCITE), duration=6.0, noise=0.01)
    assert rms < 0.01
    prob = P.build_problem(model, D.preprocess(data), parameter_set())
    res = P.identify(prob, "wls", validation=problems[1])
    assert np.all(res.validation["fitness"] >= 0.995)
    assert P.parameter_error(res.values, truth.params.as_vector()).max() < 0.02


def test_central_differences_without_noise(model, truth):
    """Kim et al.'s way (plain central differences) works on clean data."""
    data, _ = synthetic.open_loop_data(truth, fourier(EXCITE), duration=5.0, noise=0.0, counts_per_rev=None)
    prob = P.build_problem(model, D.preprocess(data, D.Preprocessing(derivative="central")), parameter_set())
    res = P.identify(prob, "ols")
    assert np.all(res.fit["fitness"] > 0.999)
    assert P.parameter_error(res.values, truth.params.as_vector()).max() < 0.01


def test_stribeck_columns(model):
    """With break-away torques in the truth, the 17-column set recovers them."""
    truth = synthetic.perturbed_model(model, seed=2, static=(2.6, 3.0, 2.4))
    data, _ = synthetic.open_loop_data(truth, fourier(EXCITE), duration=10.0, noise=0.005, seed=6)
    pset = parameter_set("explicit", stribeck=True)
    prob = P.build_problem(model, D.preprocess(data), pset)
    res = P.identify(prob, "ols")
    true = np.concatenate((truth.params.as_vector(), truth.params.static))
    err = P.parameter_error(res.values, true)
    assert err[:8].max() < 0.02 and err[8:].max() < 0.1, err.round(3)


# ----------------------------------------------------------------------------- metrics

def test_fitness_is_eq_41():
    meas = np.column_stack((np.linspace(0, 10, 101), np.zeros(101), np.ones(101)))
    pred = meas + 0.5
    pred[:, 1] = np.linspace(-1, 1, 101)
    f = metrics.fitness(pred, meas)
    assert f[0] == pytest.approx(1 - 0.5 / 10)
    assert f[1] == pytest.approx(1 - np.sqrt(np.mean(pred[:, 1] ** 2)) / 2)
    assert np.isnan(f[2])            # constant prediction: no range
    m = metrics.torque_metrics(pred, meas)
    assert m["max_error"][1] == pytest.approx(1.0) and m["rms_error"][0] == pytest.approx(0.5)


# ----------------------------------------------------------------------------- robot file

def test_robot_file_round_trip(tmp_path, model, problems, truth):
    prob, vprob = problems
    res = P.identify(prob, "bounded", validation=vprob)
    robot = load_robot("nt_robot")
    new = RU.identified_robot(robot, res, model, "fit.csv", "val.csv")
    path = RU.write_robot_file(tmp_path / "identified.yaml", new, header="test")
    back = load_robot(path)
    md = back.metadata["identified"]
    assert md["method"] == "bounded" and md["data"] == "fit.csv" and md["validation"] == "val.csv"
    assert len(md["fitness"]["validation"]) == 3 and min(md["fitness"]["validation"]) >= 0.995
    assert md["date"] and md["lumped_parameters"]["names"] == list(PARAMETER_NAMES)
    m2 = RU.model_from_robot_file(path)
    assert np.allclose(m2.params.as_vector(), res.values)
    assert m2.static == m2.coulomb          # fitted without Stribeck columns
    # every model built from the file uses the exact identified values ...
    assert np.allclose(RotaryModel(back).params.as_vector(), res.values)
    # ... and the physical fields alone reproduce the per-joint mean of the lumped values
    plain = RotaryModel(back.replace(metadata={})).params
    mean = res.lumped(model)
    assert plain.m_x == pytest.approx(mean.m_x) and plain.m_k == pytest.approx(mean.m_k)
    assert plain.arm_inertia[0] == pytest.approx(np.mean(mean.arm_inertia))
    assert plain.arm_moment[0] == pytest.approx(np.mean(mean.arm_moment))
    assert plain.viscous == pytest.approx(mean.viscous) and plain.coulomb == pytest.approx(mean.coulomb)
    # a robot file without the metadata gives the ordinary model
    assert np.allclose(RU.model_from_robot_file("nt_robot").params.as_vector(), model.params.as_vector())


def test_kim_estimate_to_lumped(model, truth):
    pset = parameter_set("kim")
    k = kim_parameters(truth.with_parameters(RotaryParameters.from_vector(
        truth.params.as_vector()[:2].tolist() + [0.3, 0.31, 0.32, 0.6, 0.6, 0.6] + [1, 1, 1, 2, 2, 2])))
    lumped = pset.to_lumped(model, k)
    assert lumped.m_k == model.m_k                         # held at the robot file's value
    assert np.allclose(kim_parameters(model.with_parameters(lumped)), k)


def test_clipped_physical_values_are_reported(model):
    p = model.params
    odd = RotaryParameters(-0.5, p.m_k, p.arm_inertia, p.arm_moment, (-0.1, 1.0, 1.0), p.coulomb,
                            p.coulomb, p.stribeck_velocity, p.smoothing_velocity)
    new, notes = physical_from_lumped(load_robot("nt_robot"), odd)
    assert new.mass.platform_mass == 0.0 and new.friction.viscous[0] == 0.0
    assert any("platform mass written as 0" in n for n in notes)
    assert any("viscous_1" in n for n in notes)


def test_lumped_metadata_is_validated(tmp_path):
    robot = load_robot("nt_robot")
    bad = robot.replace(metadata={"identified": {"lumped_parameters": {"names": ["m_x"], "values": [1.0]}}})
    with pytest.raises(IdentificationError, match="names"):
        RU.model_from_robot_file(bad)
