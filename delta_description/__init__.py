"""Robot description: the URDF/xacro (delta_description/urdf) built from the robot file, the
passive joint state, checks and rendering (uses the kinematics of delta_dynamics)."""
