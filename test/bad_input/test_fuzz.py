"""The randomised bad-input cases of :mod:`fuzz_bad_input` as a test (``pytest -m fuzz``,
not part of ``make test``): every class must end with 0 crash / 0 unsafe / 0 unclear."""
import pytest

from fuzz_bad_input import fuzz


@pytest.mark.fuzz
@pytest.mark.parametrize("seed", [1, 2])
def test_fuzz_bad_input(seed):
    tally = fuzz(seed=seed, cases=150)
    print("\n" + tally.table())
    assert tally.failures == 0, "\n".join(tally.examples[:20])
