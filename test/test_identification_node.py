"""The identification node's parameters: each unusable value is refused by name, and the
node does not start with one (exit 1, the reason logged)."""
import subprocess
import sys

import pytest

from delta_dynamics.ros.identification_node import PARAMETERS, check_parameters


@pytest.mark.parametrize("name, value, rule", [
    ("window", -1.0, "window must be > 0 s, got -1.0"),
    ("validation_fraction", 1.5, "validation_fraction must be in (0, 1), got 1.5"),
    ("method", "bogus", "method must be one of ols, wls, bounded, tsvd, dls, got 'bogus'"),
    ("forgetting_factor", 0.0, "forgetting_factor must be in (0, 1]"),
    ("fitness_threshold", 2.0, "fitness_threshold must be in (0, 1]"),
    ("push_to", ["delta_dynamics"], "push_to entries must be node:parameter"),
    ("output", " ", "output must be a file path"),
])
def test_each_unusable_parameter_is_named(name, value, rule):
    check_parameters(dict(PARAMETERS))                    # the defaults are fine
    with pytest.raises(ValueError) as e:
        check_parameters({**PARAMETERS, name: value})
    assert rule in str(e.value)


@pytest.mark.ros
def test_the_node_refuses_to_start_with_a_bad_parameter():
    proc = subprocess.run([sys.executable, "-m", "delta_dynamics.ros.identification_node",
                           "--ros-args", "-p", "window:=-5.0"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    out = proc.stdout + proc.stderr
    assert "cannot start: delta_identification parameter window must be > 0 s, got -5.0" in out
    assert "Traceback" not in out
