"""Bringup: the delta-bringup executable that starts the robot stack."""
