"""Kinematics, dynamics and parameter identification of Delta robots (pure numpy/scipy)."""
