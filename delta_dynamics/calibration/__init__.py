"""Kinematic calibration of both kinds: the per-arm geometry from measured poses
(:mod:`.fit`), measurement files (:mod:`.data`), pose design (:mod:`.poses`), Klipper configs
in and out (:mod:`.klipper`) and the ``delta-calibrate`` command (:mod:`.cli`).
Equations: ``docs/calibration.md``."""
