# `make run` / `make test` set themselves up on a machine with only python3 (3.11).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.stamp

# ROS 2 from pip wheels: the venv is the ament prefix.
export AMENT_PREFIX_PATH := $(abspath $(VENV))
export RMW_IMPLEMENTATION := rmw_fastrtps_cpp
export ROS_AUTOMATIC_DISCOVERY_RANGE := LOCALHOST
export PYTHONUNBUFFERED := 1

.PHONY: setup test fuzz run model-demo bench clean readme-check readme-figures

# The commands (delta-bringup, delta-ctl, delta-identify, delta-dynamics, ...) live in .venv/bin:
# `make`, `make setup`, `make run` and `make model-demo` end with the one line that puts them on PATH.
PATH_LINE := export PATH="$(abspath $(VENV))/bin:$$PATH"
say_path = @echo 'Next: the commands are in $(VENV)/bin; for this shell:  $(PATH_LINE)'

setup: $(STAMP)
	$(say_path)

# Re-run pip only when the packaging inputs change (a new top-level package too: the editable
# install maps the packages it found when it was made). Then control_msgs (FollowJointTrajectory)
# and delta_msgs (the ~/pick service) are built into the venv unless a ROS install has them
# (interfaces/README.md: cmake + gcc, about 65 s of CPU for control_msgs and a minute or two of
# wall time for delta_msgs the first time, a no-op after).
$(STAMP): setup.py pyproject.toml package.xml requirements-ros.txt requirements-dev.txt requirements-klipper.txt \
          tools/install_klipper_reference.py \
          $(wildcard */__init__.py) $(wildcard interfaces/*.* interfaces/control_msgs/*.* interfaces/control_msgs/*/* \
            interfaces/delta_msgs/*.* interfaces/delta_msgs/*/*)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -r requirements-ros.txt -r requirements-dev.txt
	$(PY) tools/install_klipper_reference.py requirements-klipper.txt
	$(PY) -m pip install -q --no-build-isolation -e .
	$(PY) interfaces/build_control_msgs.py --venv $(VENV)
	touch $@

test: $(STAMP)
	$(PY) -m pytest -q -rfExX --durations=15 -n 3 -m "not fuzz and not demo_plants and not serial" test; a=$$?; \
	$(PY) -m pytest -q -rfExX -m serial test; b=$$?; test $$a -eq 0 -a $$b -eq 0

# Randomised bad input for every class (robot files, CSV, bags, CLI options), with the
# "cases / crash / unsafe / unclear" table; a few minutes. Not part of `make test`.
fuzz: $(STAMP)
	$(PY) test/bad_input/fuzz_bad_input.py --seed $(or $(SEED),1) --cases $(or $(CASES),400)

# The README's demo figures against fresh runs of every variant (rotary on each plant, linear; 1 %),
# and their regeneration (the README's figure blocks and docs/images/stack_demo.png).
readme-check: $(STAMP)
	$(PY) -m pytest -q -m "demo or demo_plants" test/test_readme_figures.py

readme-figures: $(STAMP)
	$(PY) tools/readme_figures.py

# The whole stack on the simulated robot: PD only, nominal and identified feedforward.
run: $(STAMP)
	$(VENV)/bin/delta-bringup --demo --out out/
	$(say_path)

# The model alone (no ROS): inverse dynamics on the demo trajectories, plots in out/model/.
model-demo: $(STAMP)
	$(VENV)/bin/delta-dynamics demo --out out/model/
	$(say_path)

bench: $(STAMP)
	$(PY) bench/run_all.py

clean:
	rm -rf $(VENV) out build install log *.egg-info .pytest_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
