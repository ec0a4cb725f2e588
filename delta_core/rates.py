"""The control loop's rate: the one definition of the range it may run at, for the layers that
size things by it (the hardware node's parameter, the loop's config, the identification
node's window of ``/joint_states``).

>>> check_control_rate(1000.0)
1000.0
>>> try:
...     check_control_rate(5000)
... except ValueError as e:
...     print(e)
control_rate must be a finite number of Hz in [100, 2000], got 5000
"""
from __future__ import annotations

import math

#: Lowest control rate (Hz): below it the PD loop of a Delta arm is too slow to hold it.
CONTROL_RATE_MIN = 100.0
#: Highest control rate (Hz): what a 2-core host runs the loop and the drives' bus at.
CONTROL_RATE_MAX = 2000.0


def check_control_rate(rate, name: str = "control_rate") -> float:
    """``rate`` (Hz) as a float if it is a finite number in [:data:`CONTROL_RATE_MIN`,
    :data:`CONTROL_RATE_MAX`], else ValueError naming ``name``, the range and the value."""
    ok = isinstance(rate, (int, float)) and not isinstance(rate, bool) and math.isfinite(rate) \
        and CONTROL_RATE_MIN <= rate <= CONTROL_RATE_MAX
    if not ok:
        raise ValueError(f"{name} must be a finite number of Hz in [{CONTROL_RATE_MIN:g}, {CONTROL_RATE_MAX:g}], "
                         f"got {rate!r}")
    return float(rate)
