"""Build the MuJoCo model of a robot file, hold it for 1 s with the explicit model's
gravity-compensation torques (friction off, so only the torques hold it) and print where the
platform is. Needs mujoco (pip install mujoco).  python examples/mujoco_gravity_hold.py [robot]"""
import sys

from delta_core.robot_file import load_robot
from delta_dynamics.algorithms import inverse_dynamics, workspace_centre
from delta_dynamics.kinds import model_for
from delta_dynamics.reference.mujoco_model.mjcf import mjcf_xml
from delta_dynamics.reference.mujoco_model.plant import MujocoPlant

robot = load_robot(sys.argv[1] if len(sys.argv) > 1 else "nt_robot")      # read once, at the edge
print(f"MJCF of {robot.name}: {len(mjcf_xml(robot).splitlines())} lines")
model = model_for(robot)
X0 = workspace_centre(model)
tau = inverse_dynamics(model, X0, [0, 0, 0], [0, 0, 0], friction=False)
plant = MujocoPlant(robot, friction=False)
plant.place_platform(X0)
for k in range(1000):                                   # 1 s at 1 kHz
    plant.step(tau, 0.001)
X = plant.platform_position()
print(f"holding torques {tau.round(3).tolist()} N m; platform at {X.round(6).tolist()} m after 1 s, "
      f"{abs(X - X0).max() * 1e6:.1f} um from where it started; chain gap {plant.max_closure_error * 1e6:.2f} um")
