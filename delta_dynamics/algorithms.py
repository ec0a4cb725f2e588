"""Free algorithms over any Delta model: one robot interface for both kinds.

Like Pinocchio's algorithms (``rnea(model, data, q, v, a)`` over any joint model), these
functions take the static model first and work for a rotary
(:class:`~delta_dynamics.rotary.model.RotaryModel`) and a linear
(:class:`~delta_dynamics.linear.model.LinearModel`) Delta alike. Each forwards to
its kind's implementation through ``m.ops``, the table cached on the model class
(:mod:`delta_dynamics.kinds`): one attribute lookup, no import and no string dispatch per
call. Everything above the model (control loop, plans, plants, drives, identification,
description) calls these and never branches on the kind.

Joint values are in the kind's units (:func:`joint_units`): rad, rad/s, rad/s^2 and N m at
the arms of a rotary Delta; m, m/s, m/s^2 and N on the carriages of a linear one. Platform
values are always m, m/s, m/s^2 in ``base_link``. One sample is shape (3,), N samples
(N, 3), as in the kind modules (``docs/conventions.md``).

>>> from delta_dynamics.kinds import model_for
>>> for name in ("nt_robot", "colombo2020"):
...     m = model_for(name)
...     X = workspace_centre(m)
...     q = inverse_kinematics(m, X)
...     tau = inverse_dynamics(m, X, [0, 0, 0], [0, 0, 0])      # holding effort at rest
...     print(name, np.allclose(forward_kinematics(m, q), X), joint_units(m)["effort"], tau.shape)
nt_robot True N m (3,)
colombo2020 True N (3,)
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from delta_dynamics.common import integrate
from delta_dynamics.common.errors import SingularityError, UnreachableError  # noqa: F401  (re-exported)
from delta_dynamics.kinds import joint_units, kind_of, model_for  # noqa: F401  (re-exported)


# ----------------------------------------------------------------------------- kinematics

def inverse_kinematics(m, X, check_limits: bool = False):
    """Joint positions q that put the platform centre at X (m): closed form per chain (rotary:
    Asadi eq. 4, elbow out; linear: Colombo eq. 6, carriages above the platform). Raises
    :class:`UnreachableError` naming the point (and sample) a chain cannot reach, or, with
    ``check_limits``, a joint outside the robot file's position limits."""
    return m.ops.inverse_kinematics(m, X, check_limits)


def forward_kinematics(m, q):
    """Platform centre X (m) for joint positions q: the intersection of three spheres (radius
    the forearm / rod length) on the branch below the base (rotary) or the carriages (linear).
    Raises :class:`SingularityError` or :class:`UnreachableError`."""
    return m.ops.forward_kinematics(m, q)


def check_joint_limits(m, q, X=None):
    """Raise :class:`UnreachableError` naming the joint (and sample) if q, shape (3,) or
    (N, 3) or three components, leaves the robot file's position limits; ``X`` (the platform
    position) is named in the message when given."""
    return m.ops.check_joint_limits(m, q, X)


def jacobian(m, X):
    """J(X) with q_dot = J X_dot (rotary: Asadi eq. 9; linear: J = J_q^-1 J_x, Colombo eq. 7):
    shape (3, 3) or (N, 3, 3)."""
    return m.ops.jacobian(m, X)


def jacobian_derivative(m, X, Xd):
    """J_dot(X, X_dot), so that q_ddot = J X_ddot + J_dot X_dot (Asadi eq. 12; Colombo eq. 8
    with its sign corrected)."""
    return m.ops.jacobian_derivative(m, X, Xd)


def passive_angles(m, X):
    """Two angles per chain of the passive link pair's direction, shape (3, 2) or (N, 3, 2)
    (rotary: forearm (bend, tilt) in the arm frame; linear: rod pair (azimuth, elevation))."""
    return m.ops.passive_angles(m, X)


def passive_origins(m, q):
    """Where each chain's passive link pair starts, shape (3, 3) or (N, 3, 3) [sample, chain,
    xyz] (m): the elbows C_i of a rotary Delta (Asadi eq. 2), the carriage joints A_i of a
    linear one (Colombo eq. 2), for joint positions q."""
    return m.ops.passive_origins(m, q)


def singularity_measure(m, X):
    """Inverse condition number of J(X) in [0, 1]: 0 at a singularity, larger is better."""
    return m.ops.singularity_measure(m, X)


def sample_workspace(m, n: int, seed: int | None = 0, min_measure: float = 0.0):
    """``n`` random reachable platform positions (N, 3) with every joint inside its limits and
    a singularity measure of at least ``min_measure``."""
    return m.ops.sample_workspace(m, n, seed, min_measure)


def workspace_centre(m, samples: int = 200):
    """A natural home pose (m): the platform on the z axis with every joint inside its limits."""
    return m.ops.workspace_centre(m, samples)


# ----------------------------------------------------------------------------- dynamics

def inverse_dynamics(m, X, Xd, Xdd, F_P=None, friction: bool = True):
    """Joint efforts (N m or N) that move the platform along (X, X_dot, X_ddot):
    J^-T (M X_dd + C X_d + G - F_P) + friction (Asadi eq. 39; Colombo eq. 14)."""
    return m.ops.inverse_dynamics(m, X, Xd, Xdd, F_P, friction)


def model_with_payload(model, mass: float):
    """``model`` carrying ``mass`` kg more at the platform centre: its lumped platform mass m_x
    plus ``mass`` (M -> M + mass I, G -> G + mass g e_z: the same as a platform force
    -mass (X_ddot + g e_z)), everything else as it was; ``mass`` 0 gives ``model`` itself.
    ValueError for a mass that is not finite or would leave m_x at or below 0.

    >>> from delta_dynamics.kinds import model_for
    >>> m = model_for("nt_robot")
    >>> X, Xd, Xdd = [0.0, 0.0, -0.8], [0.5, 0.0, 0.0], [0.0, 2.0, 1.0]
    >>> heavier = inverse_dynamics(model_with_payload(m, 0.5), X, Xd, Xdd)
    >>> pushed = inverse_dynamics(m, X, Xd, Xdd, F_P=-0.5 * (np.array(Xdd) + [0.0, 0.0, m.g]))
    >>> bool(np.allclose(heavier, pushed, rtol=1e-12, atol=1e-12))
    True
    """
    mass = float(mass)
    if not math.isfinite(mass) or model.params.m_x + mass <= 0.0:
        raise ValueError(f"payload {mass!r} kg: must be finite and leave the platform mass m_x "
                         f"({model.params.m_x:g} kg) above 0")
    if mass == 0.0:
        return model
    return model.with_parameters(dataclasses.replace(model.params, m_x=model.params.m_x + mass))


def forward_dynamics(m, X, Xd, tau, F_P=None, friction: bool = True):
    """Platform acceleration X_ddot = M^-1 (J^T (tau - friction) + F_P - C X_d - G) for joint
    efforts ``tau`` (Asadi eq. 43; the same form for the linear Delta)."""
    return m.ops.forward_dynamics(m, X, Xd, tau, F_P, friction)


def joint_state(m, X, Xd, Xdd=None):
    """(q, q_dot, q_ddot) from the platform state: q = IK(X), q_dot = J X_dot,
    q_ddot = J X_ddot + J_dot X_dot (None without X_ddot)."""
    return m.ops.joint_state(m, X, Xd, Xdd)


def cartesian_state(m, q, qd, qdd=None):
    """(X, X_dot, X_ddot) from the joint state: X = FK(q), X_dot = J^-1 q_dot,
    X_ddot = J^-1 (q_ddot - J_dot X_dot) (None without q_ddot)."""
    return m.ops.cartesian_state(m, q, qd, qdd)


def inverse_dynamics_joint(m, q, qd, qdd, F_P=None, friction: bool = True):
    """:func:`inverse_dynamics` from the joint state (as measured)."""
    return m.ops.inverse_dynamics_joint(m, q, qd, qdd, F_P, friction)


def joint_space_sample(m, q, qd):
    """The reduced joint-space model at one joint state on Python floats (three floats each for
    q and q_dot), for the loop's one-sample paths: ``(X, Xd, J, Jinv, Mq, h, fric)`` with X =
    FK(q), X_dot = J^-1 q_dot, J and J^-1 (rows), M_q = J^-T M J^-1 (rows), h = g_q + C_q q_dot
    (the inverse dynamics at q_ddot = 0 without friction) and the friction at q_dot: the numbers
    of :func:`cartesian_state`, :func:`joint_space_inertia` and :func:`inverse_dynamics_joint`
    without their arrays."""
    return m.ops.joint_space_sample(m, q, qd)


def inverse_dynamics_sample(m, q, qd, qdd):
    """:func:`inverse_dynamics_joint` of one joint state on Python floats (three floats each for
    q, q_dot, q_ddot), friction included and no external force, as a 3-tuple: the control loop's
    feedforward path, the same numbers (to rounding) without arrays."""
    return m.ops.inverse_dynamics_sample(m, q, qd, qdd)


def friction_torque(m, qd):
    """Joint friction effort (N m or N) at joint velocity q_dot:
    c_v q_d + (c_c + (c_s - c_c) exp(-(q_d/v_s)^2)) tanh(q_d/eps)."""
    return m.ops.friction_torque(m, qd)


def mass_matrix(m, X):
    """M(X) of the reduced model in platform coordinates (kinetic energy 1/2 X_d^T M X_d),
    shape (3, 3) or (N, 3, 3). The joint-space mass matrix is J^-T M J^-1."""
    return m.ops.mass_matrix(m, X)


def coriolis_matrix(m, X, Xd):
    """C(X, X_dot): C X_dot is the velocity-dependent generalized force."""
    return m.ops.coriolis_matrix(m, X, Xd)


def gravity_vector(m, X):
    """G(X) (N): the generalized gravity force to be balanced."""
    return m.ops.gravity_vector(m, X)


def energy(m, X, Xd):
    """(kinetic, potential) energy (J) of the model's own mass distribution."""
    return m.ops.energy(m, X, Xd)


def regressor(m, X, Xd, Xdd, stribeck: bool = False):
    """Y with tau = Y pi, pi = ``m.params.as_vector()`` (14 lumped parameters, the kind's
    :func:`parameter_names`; with ``stribeck`` 3 more columns for the break-away efforts):
    shape (3, p) or (N, 3, p)."""
    return m.ops.regressor(m, X, Xd, Xdd, stribeck)


def regressor_joint(m, q, qd, qdd, stribeck: bool = False):
    """:func:`regressor` from the joint state."""
    return m.ops.regressor_joint(m, q, qd, qdd, stribeck)


# ----------------------------------------------------------------------------- simulation

def step(m, X, Xd, tau, dt: float, method: str = "semi-implicit", F_P=None):
    """Advance (X, X_dot) by ``dt`` s under constant joint efforts ``tau`` (sequences of 3
    floats; returns tuples): semi-implicit Euler with linearly implicit friction, or RK4."""
    return m.ops.step(m, X, Xd, tau, dt, method, F_P)


def simulate_fixed(m, X0, Xd0, t, tau, method: str = "semi-implicit", substeps: int = 1, F_P=None):
    """Fixed-step simulation over the time samples ``t`` (s) under efforts ``tau`` (a callable
    tau(t) or (N, 3) samples held over each interval), ``substeps`` steps per interval of the
    kind's :func:`step`; returns (X, X_dot), each (N, 3)
    (:func:`delta_dynamics.common.integrate.simulate_fixed`)."""
    return integrate.simulate_fixed(m, X0, Xd0, t, tau, method, substeps, F_P)


def simulate_adaptive(m, X0, Xd0, t, tau, method: str = "LSODA", rtol: float = 1e-9,
                      atol: float = 1e-11, F_P=None):
    """Adaptive-step simulation of the kind's forward dynamics (scipy ``solve_ivp``); returns
    (X, X_dot) at ``t`` (:func:`delta_dynamics.common.integrate.simulate_adaptive`)."""
    return integrate.simulate_adaptive(m, X0, Xd0, t, tau, method, rtol, atol, F_P)


# ----------------------------------------------------------------------------- parameters

def parameter_names(m) -> tuple:
    """Names of the 14 lumped parameters of ``m.params.as_vector()`` (rotary: m_x, m_k,
    arm_inertia_1..3, arm_moment_1..3, ...; linear: m_x, m_r, carriage_inertia_1..3,
    carriage_mass_1..3, ...; friction at 8-10 and 11-13 in both)."""
    return m.ops.parameter_names


def parameters_from_vector(m, values, static=None):
    """The kind's lumped-parameter object for a 14-vector (friction shape from ``m``)."""
    p = m.params
    return m.ops.parameters.from_vector(values, static=static, stribeck_velocity=p.stribeck_velocity,
                                        smoothing_velocity=p.smoothing_velocity)


def parameter_set(m, key: str = "explicit", stribeck: bool = False):
    """The identification parameter set (:class:`~delta_dynamics.identification.regressors.ParameterSet`)
    of ``m``'s kind: ``explicit`` (the model's 14 lumped parameters) for either kind, ``kim``
    (Kim et al.'s 11) for a rotary Delta only; ``stribeck`` adds the break-away columns."""
    return m.ops.parameter_set(key, stribeck)


def physical_from_lumped(m, params):
    """(robot file with the physical fields implied by lumped ``params``, notes): writing an
    identified model back into a robot file, under the kind's assumptions (its
    ``identification.physical_from_lumped``)."""
    return m.ops.physical_from_lumped(m.robot, params)


def joint_space_inertia(m, X):
    """The joint-space mass matrix J^-T M(X) J^-1 (kg m^2 or kg), shape (3, 3) or (N, 3, 3):
    the inertia each joint feels through the mechanism."""
    Ji = np.linalg.inv(jacobian(m, X))
    M = mass_matrix(m, X)
    return np.einsum("...ji,...jk,...kl->...il", Ji, M, Ji)
