"""Run every bench/bench_*.py in turn (each as its own process); exit non-zero if any fails."""
import subprocess
import sys
from pathlib import Path

here = Path(__file__).resolve().parent
failed = []
for script in sorted(here.glob('bench_*.py')):
    print('==', script.name, flush=True)
    if subprocess.call([sys.executable, str(script)], cwd=here.parent) != 0:
        failed.append(script.name)
if failed:
    sys.exit('failed: ' + ', '.join(failed))
