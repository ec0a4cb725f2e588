"""Locate delta_robot's data files (robot presets, URDF/xacro, rviz config, launch files).

Installed layout (colcon or a regular pip install)    source checkout / editable install
    share/delta_robot/config/...                        config/...
    share/delta_robot/launch/...                        launch/...
    share/delta_robot/urdf/...                          delta_description/urdf/...

so `share_file('urdf', 'delta.urdf.xacro')` works in every case.
"""
import sys
from pathlib import Path

PACKAGE = 'delta_robot'

# Installed name of a top-level folder -> its place in the source tree (if different).
_SOURCE_DIRS = {'urdf': Path('delta_description', 'urdf')}


def _source_root():
    """The repo root if this module runs from a source checkout (incl. editable installs)."""
    root = Path(__file__).resolve().parents[1]
    if (root / 'package.xml').is_file() and (root / 'config').is_dir():
        return root
    return None


def _ament_share():
    """get_package_share_directory('delta_robot'), or None without ament or the package."""
    try:
        # ament is optional (ROS installs only)
        from ament_index_python.packages import get_package_share_directory
        return Path(get_package_share_directory(PACKAGE))
    except Exception:  # ImportError, PackageNotFoundError, unset AMENT_PREFIX_PATH, ...
        return None


def _prefix_share():
    share = Path(sys.prefix) / 'share' / PACKAGE
    return share if (share / 'package.xml').is_file() else None


def _candidates():
    """(description, directory or None, is_source_tree) in lookup order."""
    return [
        ('source checkout next to ' + __file__, _source_root(), True),
        ("ament index (get_package_share_directory('%s'))" % PACKAGE, _ament_share(), False),
        ('python prefix share dir ' + str(Path(sys.prefix) / 'share' / PACKAGE), _prefix_share(), False),
    ]


def share_dir():
    """Directory holding the package's data: the source root, or an installed share/delta_robot.

    Prefer share_file(): in a source checkout the urdf folder is delta_description/urdf.
    """
    for _, directory, _ in _candidates():
        if directory is not None:
            return directory
    raise FileNotFoundError(
        'delta_robot share directory not found; looked in: '
        + '; '.join(desc for desc, _, _ in _candidates()))


def _in_source_tree(root, parts):
    parts = list(parts)
    if parts and parts[0] in _SOURCE_DIRS:
        return root / _SOURCE_DIRS[parts[0]] / Path(*parts[1:])
    return root.joinpath(*parts)


def share_file(*parts):
    """Path of an existing data file, e.g. share_file('config', 'robots', 'nt_robot.yaml').

    Every location is tried in order, so a file missing from one (say a new
    preset not yet installed) is still found in the next.
    """
    tried = []
    for desc, directory, is_source in _candidates():
        if directory is None:
            tried.append(desc + ' (not present)')
            continue
        path = _in_source_tree(directory, parts) if is_source else directory.joinpath(*parts)
        if path.exists():
            return path
        tried.append(str(path))
    raise FileNotFoundError(
        '%s not found in the delta_robot share files; looked in: %s' % ('/'.join(parts), '; '.join(tried)))
