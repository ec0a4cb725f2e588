"""The README's time-optimal motion figures (section "Time-optimal motion", made by
``bench/bench_motion.py``) against a fresh run of the same computations: the time-optimal
cycle and its legs (to the quoted 0.1 ms), the independent bound (on a coarser grid: within
0.3 %), today's planner's fastest timing at the same limits (a coarser search finds it within
3 %, never faster), and the claims derived from them (shorter by, above the bound). Wall-clock
figures (planning time) are the bench's alone: not asserted here.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import bench_motion as bm  # noqa: E402

from delta_dynamics.kinds import model_for  # noqa: E402
from delta_dynamics.motion import plan_pick  # noqa: E402

ROW = re.compile(r"^\| (?P<robot>\w+) \| (?P<cycle>[\d.]+) ms \((?P<there>[\d.]+) \+ (?P<back>[\d.]+) ms moving\) "
                 r"\| (?P<today>[\d.]+) ms \(lift .*?\) \| (?P<shorter>[\d.]+) % \| (?P<bound>[\d.]+) ms "
                 r"\| (?P<above>[\d.]+) % \|")


def readme_rows() -> dict:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Time-optimal motion"):]
    section = section[:section.index("\n## ", 5)]
    rows = {}
    for line in section.splitlines():
        m = ROW.match(line)
        if m:
            rows[m["robot"]] = {k: (v if k == "robot" else float(v)) for k, v in m.groupdict().items()}
    return rows


def test_the_readme_has_a_row_per_robot():
    assert set(readme_rows()) == set(bm.ROBOTS)


@pytest.mark.parametrize("robot", bm.ROBOTS)
def test_readme_motion_figures_match_a_fresh_run(robot):
    row = readme_rows()[robot]
    m = model_for(robot)
    start, end = bm.cycle_points(robot)
    plan = plan_pick(m, start, end, bm.HEIGHT, bm.BLEND, bm.DWELL)
    assert row["cycle"] == pytest.approx(plan.cycle_time * 1e3, abs=0.051)
    assert row["there"] == pytest.approx(plan.legs[0].duration * 1e3, abs=0.051)
    assert row["back"] == pytest.approx(plan.legs[1].duration * 1e3, abs=0.051)
    bound = sum(bm.independent_bound(m, leg.path, 2_000) for leg in plan.legs) + 2 * bm.DWELL
    assert row["bound"] == pytest.approx(bound * 1e3, rel=3e-3)
    assert row["above"] == pytest.approx(100 * (row["cycle"] / row["bound"] - 1), abs=0.006)
    assert row["above"] <= 100 * bm.TARGET_BOUND
    leg, *_ = bm.todays_fastest(m, start, end, quick=True)
    today = 2 * leg + 2 * bm.DWELL
    assert row["today"] <= today * 1e3 + 0.5 and row["today"] >= 0.97 * today * 1e3
    assert row["shorter"] == pytest.approx(100 * (1 - row["cycle"] / row["today"]), abs=0.051)
