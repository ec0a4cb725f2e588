"""The ground every other package stands on: the robot file (its loader and dataclasses), the
share-file locator and atomic file writes (``ros/``: the small helpers every node uses).

Imports none of the other delta_robot packages (``docs/architecture.md``).
"""
