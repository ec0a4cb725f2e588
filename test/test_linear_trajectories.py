"""The paper's Lissajous path (Colombo & Lentini eqs. 18-19) with its exact arc-length timing:
constant speed, the same path as the Taylor update of eq. (19), derivatives that match
finite differences, and clear errors."""
import math

import numpy as np
import pytest

from delta_dynamics.motion.trajectories import lissajous


@pytest.mark.parametrize("speed, ramp", [(0.01, 0.0), (0.2, 0.0), (0.2, 0.5), (0.05, 100.0)])
def test_arc_length_timing_agrees_with_the_papers_taylor_update(speed, ramp):
    kw = dict(speed=speed, x0=0.05, y0=0.05, depth=0.05, ramp=ramp, dt=5e-3)
    a = lissajous(timing="arc-length", **kw)
    b = lissajous(timing="taylor", **kw)
    assert len(a) == len(b)
    np.testing.assert_allclose(a.t[:-1], b.t[:-1], rtol=1e-10)        # b sums 20 sub-steps
    assert abs(a.t[-1] - b.t[-1]) < 1e-5                  # the last, shorter step
    np.testing.assert_allclose(a.X, b.X, atol=2e-6)       # eq. (19)'s drift: < 2 um over the path
    assert a.t[-1] > a.t[-2] > 0


def test_arc_length_timing_travels_the_path_at_exactly_the_speed():
    a = lissajous(speed=0.2, x0=0.05, y0=0.05, depth=0.05, dt=1e-3, timing="arc-length")
    np.testing.assert_allclose(np.linalg.norm(a.Xd, axis=1), 0.2, rtol=1e-12)
    # the chord between two samples 1 ms apart is the arc v dt (to the chord's own shortfall)
    chord = np.linalg.norm(np.diff(a.X[:-1], axis=0), axis=1)
    np.testing.assert_allclose(chord, 0.2e-3, rtol=2e-4)
    assert chord.max() <= 0.2e-3 * (1 + 1e-12)
    # u = 1 at the end: back where the closed curve started
    np.testing.assert_allclose(a.X[-1], a.X[0], atol=1e-14)
    # the paper's path: x = x0 sin(6 pi u + pi/2), y = y0 sin(4 pi u)
    assert a.X[0].tolist() == pytest.approx([0.05, 0.0, 0.05])


def test_arc_length_derivatives_match_finite_differences():
    a = lissajous(speed=0.1, x0=0.05, y0=0.04, depth=0.0, dt=1e-3, timing="arc-length", ramp=0.3)
    def d4(f):              # 4th-order central difference at the samples 2 .. n-4 (equal steps)
        return (-f[4:-1] + 8 * f[3:-2] - 8 * f[1:-4] + f[:-5]) / (12 * 1e-3)
    k = slice(2, -3)
    np.testing.assert_allclose(a.Xd[k], d4(a.X), atol=1e-6 * np.abs(a.Xd).max())
    np.testing.assert_allclose(a.Xdd[k], d4(a.Xd), atol=1e-3 * np.abs(a.Xdd).max())


def test_bad_lissajous_arguments_are_named():
    with pytest.raises(ValueError, match="Lissajous timing must be one of taylor, arc-length, got 'exact'"):
        lissajous(timing="exact")
    with pytest.raises(ValueError, match="Lissajous wx must be finite"):
        lissajous(wx=math.inf)
    with pytest.raises(ValueError, match="time step must be > 0"):
        lissajous(dt=0.0)
