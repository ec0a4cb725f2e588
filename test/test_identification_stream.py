"""The streamed identification path (bounded memory, delta_dynamics/identification/stream.py)
gives the in-memory path's estimates, metrics and standard deviations on data both can hold:
real CSV files and rosbag2 bags with a gap, jittered stamps (a resampled segment) and a
duplicate stamp, read in small blocks so that every block edge, window and margin is used."""
from __future__ import annotations

import numpy as np
import pytest

from delta_core.robot_file import load_robot
from delta_dynamics.identification import IdentificationError
from delta_dynamics.data_files import bag as B
from delta_dynamics.data_files import joint_files as F
from delta_dynamics.data_files import joint_data as J
from delta_dynamics.identification import preprocess as D
from delta_dynamics.identification import pipeline as P
from delta_dynamics.identification import stream as S
from delta_dynamics.identification import synthetic
from delta_dynamics.identification.cli import main
from delta_dynamics.rotary.identification import parameter_set
from delta_dynamics.rotary.model import RotaryModel

from test_identification import EXCITE, VALIDATE, fourier

ROBOT = load_robot("nt_robot")
METHODS = ("ols", "wls", "bounded", "tsvd", "dls", "rls", "pso")
OPTS = P.Options(pso_particles=40, pso_neighbours=10, pso_iterations=30, pso_samples=3000)
BLOCK = 1000          # grid points per block (at least 4 margins: ~7000 at 20 Hz / 1 kHz)


@pytest.fixture(scope="module")
def model():
    return RotaryModel.from_robot("nt_robot")


@pytest.fixture(scope="module")
def files(model, tmp_path_factory):
    d = tmp_path_factory.mktemp("stream")
    truth = synthetic.perturbed_model(model, spread=0.2, seed=1)
    fit, _ = synthetic.open_loop_data(truth, fourier(EXCITE), duration=16.0, noise=0.01, seed=1)
    val, _ = synthetic.open_loop_data(truth, fourier(VALIDATE), duration=6.0, noise=0.01, seed=2)
    t = fit.t.copy()
    rng = np.random.default_rng(0)
    t[9000:] += 0.5                                          # a gap: two segments
    t[1500:7000] += rng.uniform(-2e-4, 2e-4, 5500)            # jitter: the first is resampled
    t[12000] = t[11999]                                      # a duplicate stamp, dropped
    J.write_joint_data(d / "fit.csv", t, fit.q, fit.tau)
    J.write_joint_data(d / "val.csv", val.t, val.q, val.tau)
    B.write_bag(d / "fit_bag", t, fit.q, fit.tau, ROBOT.joint_names, storage="mcap", extra_joints=1)
    return d


def in_memory(model, path, vpath, methods):
    pset = parameter_set("explicit")
    data = F.read_joint_data(path, ROBOT)
    D.check_joint_limits(data, ROBOT)
    prob = P.build_problem(model, D.preprocess(data), pset)
    vprob = P.build_problem(model, D.preprocess(F.read_joint_data(vpath, ROBOT)), pset, what="validation")
    return prob, [P.identify(prob, m, OPTS, validation=vprob) for m in methods]


def streamed(model, path, vpath, methods, block=BLOCK):
    pset = parameter_set("explicit")
    sd, sv = S.read_stream(path, ROBOT), S.read_stream(vpath, ROBOT)
    try:
        prob = S.stream_problem(model, sd, pset, None, OPTS, block=block)
        vprob = S.stream_problem(model, sv, pset, None, OPTS, what="validation", accumulate=False, block=block)
        res = S.finish([S.identify_stream(prob, m, OPTS) for m in methods], prob, vprob)
        return prob, res
    finally:
        sd.close()
        sv.close()


def assert_same(a, b, rtol):
    assert a.method == b.method and a.held == b.held
    np.testing.assert_allclose(b.values, a.values, rtol=rtol, atol=0)
    for key in ("fitness", "rms_error", "max_error", "rms_torque"):
        np.testing.assert_allclose(b.fit[key], a.fit[key], rtol=rtol, err_msg=f"{a.method} fit {key}")
        np.testing.assert_allclose(b.validation[key], a.validation[key], rtol=rtol,
                                   err_msg=f"{a.method} validation {key}")
    assert b.fit["samples"] == a.fit["samples"] and b.validation["samples"] == a.validation["samples"]
    if a.estimate.cov is None:
        assert b.estimate.cov is None
    else:
        np.testing.assert_allclose(b.estimate.std, a.estimate.std, rtol=rtol, err_msg=f"{a.method} std")
        assert b.estimate.info["autocorrelation_factor"] == pytest.approx(
            a.estimate.info["autocorrelation_factor"], rel=rtol)
    if a.method == "pso":
        assert b.estimate.info["objective"] == pytest.approx(a.estimate.info["objective"], rel=rtol)
        assert b.estimate.info["rows_used"] == a.estimate.info["rows_used"]
        assert b.estimate.info["rows_total"] == a.estimate.info["rows_total"]


def test_streamed_csv_gives_the_in_memory_estimates(model, files):
    pm, mem = in_memory(model, files / "fit.csv", files / "val.csv", METHODS)
    ps, st = streamed(model, files / "fit.csv", files / "val.csv", METHODS)
    assert len(ps) == len(pm) and ps.notes == pm.notes
    assert any("resampled" in n for n in ps.notes) and any("gap" in n for n in ps.notes)
    assert any("duplicate" in n and "line 12002" in n for n in ps.notes)
    assert len(ps.plan.segments) == 2 and ps.plan.segments[0].resample
    assert ps.plan.segments[0].grid > max(BLOCK, 4 * S.margin(ps.plan))      # two blocks at least
    for a, b in zip(mem, st):
        assert_same(a, b, rtol=1e-8)


def test_streamed_bag_gives_the_in_memory_estimates(model, files):
    _, mem = in_memory(model, files / "fit_bag", files / "val.csv", ("ols", "wls"))
    _, st = streamed(model, files / "fit_bag", files / "val.csv", ("ols", "wls"))
    for a, b in zip(mem, st):
        assert_same(a, b, rtol=1e-8)


def test_block_size_does_not_change_the_estimate(model, files):
    _, small = streamed(model, files / "fit.csv", files / "val.csv", ("bounded",), block=1000)
    _, big = streamed(model, files / "fit.csv", files / "val.csv", ("bounded",), block=10 ** 6)   # one window
    assert_same(big[0], small[0], rtol=1e-9)


def test_held_parameters_stream_like_in_memory(model, tmp_path):
    """Joint 2 never moves: its inertia and friction are not identifiable; held at the robot
    file's values both ways."""
    truth = synthetic.perturbed_model(model, spread=0.2, seed=1)
    fit, _ = synthetic.open_loop_data(truth, fourier(EXCITE), duration=8.0, noise=0.01, seed=3)
    q = fit.q.copy()
    q[:, 1] = 0.5
    from delta_dynamics.rotary.dynamics import inverse_dynamics_joint
    zero = np.zeros_like(q)
    tau = inverse_dynamics_joint(truth, q, zero, zero) + 0.0 * q
    tau[:, [0, 2]] = fit.tau[:, [0, 2]]
    tau[:, 1] += 0.01 * np.sin(fit.t)
    J.write_joint_data(tmp_path / "fit.csv", fit.t, q, tau)
    J.write_joint_data(tmp_path / "val.csv", fit.t, q, tau)
    opts = P.Options(hold_unidentifiable=True, max_condition=1e12)
    pset = parameter_set("explicit")
    data = F.read_joint_data(tmp_path / "fit.csv", ROBOT)
    prob = P.build_problem(model, D.preprocess(data), pset)
    sd = S.read_stream(tmp_path / "fit.csv", ROBOT)
    try:
        sp = S.stream_problem(model, sd, pset, None, opts, block=BLOCK)
        for m in ("ols", "wls", "bounded"):
            a = P.identify(prob, m, opts)
            b = S.finish([S.identify_stream(sp, m, opts)], sp)[0]
            assert a.held and a.held == b.held
            np.testing.assert_allclose(b.values, a.values, rtol=1e-8)
            np.testing.assert_allclose(b.fit["rms_error"], a.fit["rms_error"], rtol=1e-8)
    finally:
        sd.close()


def test_autocorrelation_in_blocks_equals_the_whole_series():
    rng = np.random.default_rng(4)
    e = rng.standard_normal((20000, 3))
    r = np.empty_like(e)
    r[0] = e[0]
    for k in range(1, len(e)):                      # AR(1): correlated like filtered residuals
        r[k] = 0.97 * r[k - 1] + e[k]
    r += 0.3                                        # a mean, removed by both
    ac = S._AutoCorrelation(4096)
    for k in range(0, len(r), 3000):
        ac.add(r[k:k + 3000])
    kappa, lags, reached = ac.factor()
    assert reached and 10 < lags < 4096
    assert kappa == pytest.approx(P.correlation_factor(r), rel=1e-9)


def test_cli_streams_a_bag_to_the_same_robot_file(files, tmp_path, capsys):
    outs = {}
    for mode in ("never", "always"):
        out = tmp_path / f"{mode}.yaml"
        code = main(["--robot", "nt_robot", "--data", str(files / "fit_bag"), "--validate", str(files / "val.csv"),
                     "--stream", mode, "--out", str(out), "--no-progress", "--report", str(tmp_path / mode)])
        so, se = capsys.readouterr()
        assert code == 0, se
        assert ("streamed" in so) == (mode == "always")
        outs[mode] = load_robot(out)
        assert (tmp_path / mode / "torque_validation.png").is_file()
    a, b = (o.metadata["identified"]["estimate"]["values"] for o in outs.values())
    np.testing.assert_allclose(b, a, rtol=1e-8)


def test_pso_on_every_sample_needs_the_in_memory_path(model, files, monkeypatch):
    monkeypatch.setattr(S, "PSO_ALL_LIMIT", 100)
    opts = P.Options(pso_samples=None, pso_iterations=2, pso_particles=10, pso_neighbours=2)
    sd = S.read_stream(files / "val.csv", ROBOT)
    try:
        sp = S.stream_problem(model, sd, parameter_set("explicit"), None, opts)
        with pytest.raises(IdentificationError, match="--pso-samples 0 .* at most 100 samples"):
            S.identify_stream(sp, "pso", opts)
    finally:
        sd.close()
