"""Motion: platform trajectories for the models, the plants and the robot
(:mod:`.trajectories`: Asadi & Heydari's circle, Colombo & Lentini's Lissajous path, the
standard pick-and-place cycle, Staicu's ellipse). Works for either kind of Delta; no ROS.
"""
