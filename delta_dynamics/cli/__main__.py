"""``python -m delta_dynamics.cli``."""
import sys

from delta_dynamics.cli import main

sys.exit(main())
