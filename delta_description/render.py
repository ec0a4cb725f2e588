"""Draw the robot from its URDF with matplotlib (the picture in the README).

Every ``<visual>`` of every link is drawn where the URDF puts it: the link pose comes from
composing the joint transforms (:class:`~delta_description.urdf_model.KinematicTree`) with the
passive joint values of :func:`~delta_description.passive_joints.full_joint_state`, then the
visual's own ``<origin>``; boxes, cylinders and spheres become shaded polygons (a cylinder's
axis is its local z). Nothing is drawn from the robot file directly, so the picture shows the
URDF as robot_state_publisher/RViz would.

    python -m delta_description.render --robot nt_robot --out docs/images/robot.png
    delta-description render --robot d3s800 --pose 0.4,0.4,0.4 --pose 0.1,0.8,0.5
    delta-description render --robot colombo2020 --out docs/images/robot_colombo2020.png

Either kind of Delta: a pose is three arm angles (rad) or three carriage positions (m).
"""
from __future__ import annotations

import argparse
import io
import math
import os
import sys

import numpy as np

from delta_core.atomic_file import atomic_write_bytes
from delta_core.paths import output_file_arg
from delta_core.robot_file import load_robot
from delta_description.errors import guarded
from delta_description.passive_joints import full_joint_state
from delta_description.urdf_model import KinematicTree, origin_matrix
from delta_description.xacro_urdf import DescriptionError, robot_description
from delta_dynamics.kinds import joint_units, model_for

#: Most panels of one picture (``--pose`` repeated).
MAX_POSES = 12
LIGHT = np.array([0.4, -0.5, 0.77]) / np.linalg.norm([0.4, -0.5, 0.77])


def _box(size):
    x, y, z = (0.5 * float(s) for s in size)
    c = np.array([[sx * x, sy * y, sz * z] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
    idx = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    return [c[list(f)] for f in idx]


def _cylinder(radius, length, n=20):
    a = np.linspace(0.0, 2 * math.pi, n, endpoint=False)
    ring = np.stack((radius * np.cos(a), radius * np.sin(a), np.zeros(n)), axis=1)
    lo, hi = ring + [0, 0, -0.5 * length], ring + [0, 0, 0.5 * length]
    faces = [np.array([lo[k], lo[(k + 1) % n], hi[(k + 1) % n], hi[k]]) for k in range(n)]
    return faces + [lo[::-1], hi]


def _sphere(radius, n=8):
    th = np.linspace(0.0, math.pi, n + 1)
    ph = np.linspace(0.0, 2 * math.pi, 2 * n + 1)
    p = radius * np.stack((np.sin(th)[:, None] * np.cos(ph), np.sin(th)[:, None] * np.sin(ph),
                           np.cos(th)[:, None] * np.ones_like(ph)), axis=-1)
    return [np.array([p[i, j], p[i + 1, j], p[i + 1, j + 1], p[i, j + 1]])
            for i in range(n) for j in range(2 * n)]


def visual_faces(visual):
    """Polygons (list of (k, 3) arrays) of one urdf_parser_py visual in its own frame."""
    g = visual.geometry
    kind = type(g).__name__
    if kind == "Box":
        return _box(g.size)
    if kind == "Cylinder":
        return _cylinder(g.radius, g.length)
    if kind == "Sphere":
        return _sphere(g.radius)
    return []   # meshes: not used by delta.urdf.xacro


def _colors(urdf):
    named = {m.name: m.color.rgba for m in urdf.materials if m.color is not None}

    def rgba(visual):
        mat = visual.material
        if mat is None:
            return (0.6, 0.6, 0.6, 1.0)
        if mat.color is not None:
            return tuple(mat.color.rgba)
        return tuple(named.get(mat.name, (0.6, 0.6, 0.6, 1.0)))
    return rgba


def scene_polygons(tree: KinematicTree, positions: dict):
    """(polygons in the root frame, face colours) of every visual for the given joint positions."""
    poses = tree.link_poses(positions)
    rgba = _colors(tree.urdf)
    polys, colors = [], []
    for link in tree.urdf.links:
        T = poses[link.name]
        for vis in link.visuals:
            M = T @ origin_matrix(vis.origin)
            base = np.array(rgba(vis))
            for f in visual_faces(vis):
                w = f @ M[:3, :3].T + M[:3, 3]
                n = np.cross(w[1] - w[0], w[2] - w[0])
                nn = np.linalg.norm(n)
                shade = 0.55 + 0.45 * abs(float(n @ LIGHT)) / nn if nn > 1e-15 else 0.8
                polys.append(w)
                colors.append((*(base[:3] * shade), base[3]))
    return polys, colors


def _equal_sized(polys) -> np.ndarray:
    """The polygons as one array, each padded to the largest vertex count by repeating its
    last vertex (a zero-length edge: the same filled shape)."""
    n = max(len(p) for p in polys)
    return np.stack([np.concatenate([p, np.repeat(p[-1:], n - len(p), axis=0)]) for p in polys])


def default_poses(robot):
    """Three joint-position triples for the picture (arm angles in rad, or carriage positions
    in m): home (mid-range) and two off-centre poses."""
    lo = max(p[0] for p in robot.limits.position)
    hi = min(p[1] for p in robot.limits.position)
    mid, span = 0.5 * (lo + hi), hi - lo
    return [(mid, mid, mid),
            (mid - 0.25 * span, mid + 0.15 * span, mid + 0.1 * span),
            (mid + 0.3 * span, mid + 0.25 * span, mid - 0.05 * span)]


def render_poses(robot, poses, out_png, titles=None, urdf_xml: str | None = None, dpi: int = 90):
    """Draw the robot at each joint-position triple in ``poses`` (one panel each) into ``out_png``.

    ``robot``: preset name, robot file path or RobotParameters. The URDF is built from it
    (or given as ``urdf_xml``). Returns the output path.
    """
    import matplotlib            # optional and heavy: only drawing needs it
    matplotlib.use("Agg")
    # matplotlib is optional and heavy: only what draws loads it
    import matplotlib.pyplot as plt
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection

    fmt = os.path.splitext(os.fspath(out_png))[1].lstrip(".").lower() or "png"
    known = sorted(plt.figure().canvas.get_supported_filetypes())
    plt.close("all")
    if fmt not in known:
        raise DescriptionError(f"{out_png}: unknown image format '.{fmt}' (known: {', '.join(known)})")
    if not 1 <= len(poses) <= MAX_POSES:
        raise DescriptionError(f"{len(poses)} poses: draw 1 to {MAX_POSES} in one picture")
    params = load_robot(robot)
    model = model_for(params)
    unit = joint_units(model)["position"]
    tree = KinematicTree(urdf_xml if urdf_xml is not None else robot_description(robot))
    scenes = []
    for q in poses:
        state = full_joint_state(model, q)
        scenes.append((state, *scene_polygons(tree, state.as_dict())))
    pts = np.concatenate([np.concatenate(p) for _, p, _ in scenes])
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    centre, half = 0.5 * (lo + hi), 0.5 * (hi - lo).max() * 1.02

    fig = plt.figure(figsize=(4.0 * len(poses), 4.6))
    for k, (state, polys, colors) in enumerate(scenes):
        ax = fig.add_subplot(1, len(poses), k + 1, projection="3d")
        # one (N, V, 3) array: matplotlib 3.11 pads polygons of unequal vertex counts with
        # uninitialised memory and then reads it (autoscale, projection); the limits are set below
        ax.add_collection3d(Poly3DCollection(_equal_sized(polys), facecolors=colors, edgecolors="none"),
                            autolim=False)
        X = np.round(state.position[3:6], 3) + 0.0        # no "-0.000" in the title
        ax.plot([X[0], X[0]], [X[1], X[1]], [X[2], lo[2]], color="0.5", lw=0.8, ls=":")
        ax.set_xlim(centre[0] - half, centre[0] + half)
        ax.set_ylim(centre[1] - half, centre[1] + half)
        ax.set_zlim(centre[2] - half, centre[2] + half)
        ax.set_box_aspect((1, 1, 1), zoom=0.9)
        ax.view_init(elev=14, azim=-35)
        ax.set_xlabel("x [m]", labelpad=-8)
        ax.set_ylabel("y [m]", labelpad=-8)
        ax.set_zlabel("z [m]", labelpad=-8)
        ax.tick_params(labelsize=6, pad=-2)
        q = state.position[:3]
        f = ".2f" if unit == "rad" else ".3f"
        title = titles[k] if titles else (f"q = ({q[0]:{f}}, {q[1]:{f}}, {q[2]:{f}}) {unit}\n"
                                          f"X = ({X[0]:.3f}, {X[1]:.3f}, {X[2]:.3f}) m")
        ax.set_title(title, fontsize=8)
    plural = "s" if len(poses) != 1 else ""
    fig.suptitle(f"{params.name}: URDF of delta.urdf.xacro at {len(poses)} pose{plural}", fontsize=10)
    fig.subplots_adjust(left=0.0, right=0.98, bottom=0.03, top=0.86, wspace=0.05)
    buf = io.BytesIO()
    try:
        fig.savefig(buf, dpi=dpi, format=fmt)
    finally:
        plt.close(fig)
    atomic_write_bytes(out_png, buf.getvalue())
    return out_png


def _pose(text: str):
    try:
        q = tuple(float(v) for v in text.split(","))
    except ValueError:
        q = ()
    if len(q) != 3 or not all(math.isfinite(v) for v in q):
        raise argparse.ArgumentTypeError(f"a pose is three arm angles in rad (carriage positions in m on a "
                                         f"linear Delta), q1,q2,q3; got {text!r}")
    return q


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the ``render`` options (``--robot``, ``--out``, ``--pose``) to ``p``."""
    p.add_argument("--robot", default="nt_robot", help="preset name or robot file (default nt_robot)")
    p.add_argument("--out", default="docs/images/robot.png", type=output_file_arg, help="PNG to write")
    p.add_argument("--pose", type=_pose, action="append",
                   help="joint positions q1,q2,q3: arm angles in rad, carriage positions in m for a linear "
                        "Delta (repeat for several panels; default: three poses)")


def run(args) -> int:
    """Draw the poses of ``args`` into ``args.out``; exit status 0."""
    robot = load_robot(args.robot)
    poses = args.pose or default_poses(robot)
    out = render_poses(robot, poses, args.out)
    print(out)
    return 0


def main(argv=None) -> int:
    """``python -m delta_description.render``: the exit status."""
    p = argparse.ArgumentParser(prog="python -m delta_description.render", description=__doc__.split("\n")[0])
    add_arguments(p)
    return guarded("delta-description", run, p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
