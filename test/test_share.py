"""The share-file locator and the packaging that puts the data files where it looks."""
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from delta_core import share

REPO = Path(__file__).resolve().parents[1]
PRESET = ('config', 'robots', 'nt_robot.yaml')


# --- lookup order, with fake trees -------------------------------------------------

def make_share(prefix, marker=True):
    """A fake installed prefix: <prefix>/share/delta_robot with a preset and a xacro."""
    pkg = prefix / 'share' / 'delta_robot'
    (pkg / 'config' / 'robots').mkdir(parents=True)
    (pkg / 'urdf').mkdir()
    (pkg / 'package.xml').write_text('<package/>')
    (pkg / 'config' / 'robots' / 'nt_robot.yaml').write_text('name: nt_robot\n')
    (pkg / 'urdf' / 'delta.urdf.xacro').write_text('<robot/>')
    if marker:  # what ament_index_python looks for
        index = prefix / 'share' / 'ament_index' / 'resource_index' / 'packages'
        index.mkdir(parents=True)
        (index / 'delta_robot').write_text('')
    return pkg


@pytest.fixture
def no_source(monkeypatch):
    monkeypatch.setattr(share, '_source_root', lambda: None)


def test_source_checkout_is_found_first(tmp_path, monkeypatch):
    # even with installed copies (ament index and prefix), the checkout this module runs from wins
    make_share(tmp_path / 'ament')
    make_share(tmp_path / 'prefix')
    monkeypatch.setenv('AMENT_PREFIX_PATH', str(tmp_path / 'ament'))
    monkeypatch.setattr(sys, 'prefix', str(tmp_path / 'prefix'))
    assert share.share_dir() == REPO
    assert share.share_file(*PRESET) == REPO.joinpath(*PRESET)


def test_source_tree_maps_urdf_dir(tmp_path, monkeypatch):
    (tmp_path / 'config').mkdir()
    (tmp_path / 'package.xml').write_text('<package/>')
    xacro = tmp_path / 'delta_description' / 'urdf' / 'delta.urdf.xacro'
    xacro.parent.mkdir(parents=True)
    xacro.write_text('<robot/>')
    monkeypatch.setattr(share, '_source_root', lambda: tmp_path)
    assert share.share_file('urdf', 'delta.urdf.xacro') == xacro


def test_ament_index_before_sys_prefix(tmp_path, monkeypatch, no_source):
    ament = make_share(tmp_path / 'ament')
    make_share(tmp_path / 'prefix')
    monkeypatch.setenv('AMENT_PREFIX_PATH', str(tmp_path / 'ament'))
    monkeypatch.setattr(sys, 'prefix', str(tmp_path / 'prefix'))
    assert share.share_dir() == ament
    assert share.share_file(*PRESET) == ament.joinpath(*PRESET)
    assert share.share_file('urdf', 'delta.urdf.xacro') == ament / 'urdf' / 'delta.urdf.xacro'


def test_sys_prefix_fallback(tmp_path, monkeypatch, no_source):
    pkg = make_share(tmp_path, marker=False)
    monkeypatch.setenv('AMENT_PREFIX_PATH', str(tmp_path / 'elsewhere'))
    monkeypatch.setattr(sys, 'prefix', str(tmp_path))
    assert share.share_dir() == pkg
    assert share.share_file(*PRESET) == pkg.joinpath(*PRESET)
    assert share.share_file('urdf', 'delta.urdf.xacro') == pkg / 'urdf' / 'delta.urdf.xacro'


def test_missing_file_falls_through_to_next_location(tmp_path, monkeypatch, no_source):
    make_share(tmp_path / 'ament')
    pkg = make_share(tmp_path / 'prefix')
    (pkg / 'config' / 'only_here.yaml').write_text('')
    monkeypatch.setenv('AMENT_PREFIX_PATH', str(tmp_path / 'ament'))
    monkeypatch.setattr(sys, 'prefix', str(tmp_path / 'prefix'))
    assert share.share_file('config', 'only_here.yaml') == pkg / 'config' / 'only_here.yaml'


def test_not_found_lists_where_it_looked(tmp_path, monkeypatch, no_source):
    monkeypatch.setenv('AMENT_PREFIX_PATH', str(tmp_path))
    monkeypatch.setattr(sys, 'prefix', str(tmp_path))
    with pytest.raises(FileNotFoundError, match='ament index.*prefix'):
        share.share_dir()
    with pytest.raises(FileNotFoundError, match='nt_robot.yaml'):
        share.share_file(*PRESET)


# --- the real installs ---------------------------------------------------------------

def test_editable_install_finds_preset():
    # make setup does `pip install -e .`: no data files are installed, the checkout serves them
    assert Path(share.__file__).resolve().parents[1] == REPO
    path = share.share_file(*PRESET)
    assert path == REPO.joinpath(*PRESET) and path.is_file()


def test_editable_install_scripts_in_bin():
    # the colcon-only script_dir options must not leak into pip installs
    bin_dir = Path(sys.executable).parent
    assert (bin_dir / 'delta-dynamics').is_file(), 'run via make test (needs the .venv editable install)'
    assert not (Path(sys.prefix) / 'lib' / 'delta_robot').exists()


def source_copy(dest):
    """Copy of the packaging inputs, plus a urdf and a launch file (those may not exist yet)."""
    ignore = shutil.ignore_patterns('__pycache__', '*.egg-info', 'build')
    dest.mkdir(parents=True, exist_ok=True)
    for name in ['setup.py', 'pyproject.toml', 'package.xml', 'resource', 'config', 'launch',
                 'delta_core', 'delta_description', 'delta_dynamics', 'delta_hardware', 'delta_bringup']:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=ignore)
        elif src.exists():
            shutil.copy2(src, dest / name)
    for extra in ['delta_description/urdf/zz_probe.urdf.xacro', 'launch/zz_probe.launch.py']:
        (dest / extra).parent.mkdir(parents=True, exist_ok=True)
        (dest / extra).write_text('')
    return dest


def expected_share_files(src):
    """share/delta_robot/... paths that every install must contain, from the source tree."""
    files = {'share/ament_index/resource_index/packages/delta_robot', 'share/delta_robot/package.xml'}
    for folder, target in [('config', 'config'), ('launch', 'launch'), ('delta_description/urdf', 'urdf')]:
        for f in (src / folder).rglob('*'):
            if f.is_file():
                files.add('share/delta_robot/%s/%s' % (target, f.relative_to(src / folder).as_posix()))
    return files


@pytest.fixture(scope='module')
def wheel(tmp_path_factory):
    src = source_copy(tmp_path_factory.mktemp('src'))
    out = tmp_path_factory.mktemp('wheel')
    subprocess.run([sys.executable, '-m', 'pip', 'wheel', '-q', '--no-deps', '--no-build-isolation',
                    '-w', str(out), str(src)], check=True)
    (whl,) = out.glob('delta_robot-*.whl')
    return src, whl


def test_wheel_contains_share_files(wheel):
    src, whl = wheel
    names = zipfile.ZipFile(whl).namelist()
    data = {n.split('.data/data/', 1)[1] for n in names if '.data/data/' in n}
    expected = expected_share_files(src)
    assert 'share/delta_robot/config/robots/nt_robot.yaml' in expected
    assert 'share/delta_robot/urdf/zz_probe.urdf.xacro' in expected
    assert expected <= data, sorted(expected - data)
    assert not any('.data/scripts/' in n for n in names)  # console scripts come from entry_points


def test_regular_pip_install_finds_preset(wheel, tmp_path):
    _, whl = wheel
    venv = tmp_path / 'venv'
    subprocess.run([sys.executable, '-m', 'venv', '--without-pip', str(venv)], check=True)
    subprocess.run([sys.executable, '-m', 'pip', '--python', str(venv / 'bin' / 'python'),
                    'install', '-q', '--no-deps', str(whl)], check=True)
    assert (venv / 'bin' / 'delta-dynamics').is_file()
    assert not (venv / 'lib' / 'delta_robot').exists()
    code = ('from delta_core.share import share_file; '
            'print(share_file("config", "robots", "nt_robot.yaml")); '
            'print(share_file("urdf", "zz_probe.urdf.xacro"))')
    env = {'PATH': '/usr/bin:/bin'}  # no AMENT_PREFIX_PATH: the sys.prefix fallback must do
    out = subprocess.run([str(venv / 'bin' / 'python'), '-c', code], cwd=tmp_path, env=env,
                         check=True, capture_output=True, text=True).stdout.split()
    share_root = venv / 'share' / 'delta_robot'
    assert [Path(p) for p in out] == [share_root.joinpath(*PRESET), share_root / 'urdf' / 'zz_probe.urdf.xacro']


def test_colcon_style_install_puts_scripts_in_lib(tmp_path):
    # what `colcon build` runs for an ament_python package (colcon-core task/python/build.py)
    src = source_copy(tmp_path / 'src')
    build, prefix = tmp_path / 'build', tmp_path / 'install'
    build.mkdir()
    subprocess.run([sys.executable, 'setup.py', '-q', 'egg_info', '--egg-base', str(build),
                    'build', '--build-base', str(build / 'build'),
                    'install', '--prefix', str(prefix), '--record', str(build / 'install.log'),
                    '--single-version-externally-managed'],
                   cwd=src, check=True, capture_output=True)
    assert (prefix / 'lib' / 'delta_robot' / 'delta-dynamics').is_file()
    assert not (prefix / 'bin').exists()
    installed = {p.relative_to(prefix).as_posix() for p in (prefix / 'share').rglob('*') if p.is_file()}
    assert expected_share_files(src) <= installed
