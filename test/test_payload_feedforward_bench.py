"""The README's payload-feedforward figures (section "Monitoring", made by
``bench/bench_payload_feedforward.py``; simulated time, so a fresh run gives them to rounding)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import bench_payload_feedforward as bench  # noqa: E402


def test_the_readme_quotes_a_fresh_run_of_the_payload_feedforward_bench():
    text = " ".join((ROOT / "README.md").read_text().split())
    m = re.search(r"a 1 kg payload the model lacked: ([0-9.]+) mrad RMS without, ([0-9.]+) mrad with, "
                  r"as with no payload: ([0-9.]+)", text)
    assert m, "the README's payload_feedforward sentence"
    without, with_, empty = (float(v) for v in m.groups())
    got_without, _ = bench.third_move("explicit", 1.0, False)
    got_with, carried = bench.third_move("explicit", 1.0, True)
    got_empty, _ = bench.third_move("explicit", 0.0, False)
    for quoted, fresh in ((without, got_without), (with_, got_with), (empty, got_empty)):
        assert fresh == pytest.approx(quoted, rel=0.01, abs=0.0006), (quoted, fresh)
    assert abs(carried - 1.0) <= 0.02
