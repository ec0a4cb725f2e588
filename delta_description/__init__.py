"""Robot description: robot-file loader, share-file locator and URDF/xacro (delta_description/urdf)."""
