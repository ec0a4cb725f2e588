"""Start-up and PDO mapping alone (delta_hardware.canopen.startup, .pdo_map), without the
backend: real canopen RemoteNodes against the simulated drives on the virtual bus."""
import time

import pytest

from canopen_helpers import bare_axes, sim_on, unique_channel
from delta_core.robot_file import load_robot
from delta_hardware.canopen import startup
from delta_hardware.canopen.pdo_map import Pdo, map_pdos
from delta_hardware.drives import DriveError

ROBOT = load_robot("nt_robot")


@pytest.fixture
def bus():
    channel = unique_channel()
    sim = sim_on(channel)
    net, axes, cfg = bare_axes(channel)
    for ax in axes:                                   # what monitor.Monitor does in the backend
        ax.node.nmt.add_heartbeat_callback(lambda s, ax=ax: _heartbeat(ax, s))
    try:
        yield sim, net, axes, cfg
    finally:
        net.disconnect()
        sim.close()


def _heartbeat(ax, state):
    ax.hb_time = time.monotonic()
    ax.hb_state = state


def test_probe_configure_start(bus):
    sim, net, axes, cfg = bus
    startup.probe(axes, cfg, "virtual test")
    assert all(d.node.nmt.state == "PRE-OPERATIONAL" for d in sim.drives)
    startup.parallel(lambda ax: startup.configure(ax, cfg, ROBOT, 0.002, 0.002, net), axes)
    for ax, d in zip(axes, sim.drives):
        assert ax.device_name == "delta-drive-sim (generic_cia402)"                  # 0x1008
        assert d.read_param("modes_of_operation") == 8
        assert d.read_param("communication_cycle_period") == 2000                   # us
        assert d.read_param("producer_heartbeat_time") == cfg.heartbeat_ms
        assert d.read_param("following_error_window") == round(0.3 / ax.units.scaling.rad_per_count)
        assert [p.names for p in ax.rpdos] == [("controlword", "target_position", "torque_offset"),
                                               ("velocity_offset",)]
        assert [p.cob_id for p in ax.tpdos] == [0x180 + ax.node_id, 0x280 + ax.node_id]
        assert d._raw(0x1800, 2) == 1                                                # synchronous
    startup.start(axes, cfg, "virtual test")
    assert all(d.node.nmt.state == "OPERATIONAL" for d in sim.drives)
    assert all(startup.nmt_name(ax.hb_state) == "OPERATIONAL" for ax in axes)


def test_probe_tells_a_silent_bus_from_a_missing_drive_and_a_foreign_device():
    net, axes, cfg = bare_axes(unique_channel())
    try:
        with pytest.raises(DriveError, match=r"no drive answered on here within 0.50 s \(node IDs 1, 2, 3\)"):
            startup.probe(axes, cfg, "here")
    finally:
        net.disconnect()
    channel = unique_channel()
    sim = sim_on(channel, absent=(2,))
    net, axes, cfg = bare_axes(channel)
    try:
        with pytest.raises(DriveError, match=r"drive missing: no answer from axis 3 \(arm_3_joint, node 3\)"):
            startup.probe(axes, cfg, "here")
    finally:
        net.disconnect()
        sim.close()


def test_a_foreign_device_type_is_refused(bus):
    sim, net, axes, cfg = bus
    sim.drives[1].node.data_store.setdefault(0x1000, {})[0] = (0x00020191).to_bytes(4, "little")   # profile 401
    with pytest.raises(DriveError, match=r"axis 2 \(arm_2_joint, node 2\) is not a CiA 402 drive: device type 0x00020191"):
        startup.probe(axes, cfg, "here")


def test_an_encoder_other_than_the_config_says_is_refused():
    channel = unique_channel()
    sim = sim_on(channel)                                            # 131072 increments per revolution
    net, axes, cfg = bare_axes(channel, overrides={"scaling": {"counts_per_rev": 4096}})
    try:
        with pytest.raises(DriveError, match=r"axis 1 .*131072/1 increments per motor revolution \(0x608F\).*"
                                             r"counts_per_rev 4096"):
            startup.configure(axes[0], cfg, ROBOT, 0.002, 0.002, net)
    finally:
        net.disconnect()
        sim.close()


def test_revive_configures_a_rebooted_drive_again(bus):
    sim, net, axes, cfg = bus
    startup.probe(axes, cfg, "here")
    startup.parallel(lambda ax: startup.configure(ax, cfg, ROBOT, 0.002, 0.002, net), axes)
    startup.start(axes, cfg, "here")
    sim.reboot(2)
    assert sim.drives[2].read_param("modes_of_operation") == 0
    assert startup.wait_heartbeat(axes[2], 0.0, False, 1.0)
    time.sleep(0.25)                                   # its boot-up message reached us
    assert startup.nmt_name(axes[2].hb_state) in ("boot-up", "PRE-OPERATIONAL")
    startup.revive(axes[2], cfg, lambda ax: startup.configure(ax, cfg, ROBOT, 0.002, 0.002, net))
    d = sim.drives[2]
    assert d.node.nmt.state == "OPERATIONAL" and d.read_param("modes_of_operation") == 8
    assert [d._raw(0x1600, s) for s in range(1, 4)] == [0x60400010, 0x607A0020, 0x60B20010]


def test_mapping_more_pdos_than_the_drive_has_is_named(bus):
    sim, net, axes, cfg = bus
    with pytest.raises(DriveError, match=r"axis 1 .*: the object dictionary has 4 RPDOs, cfg.yaml maps 5"):
        map_pdos(axes[0], [["controlword"]] * 5, cfg.tpdo, net, "cfg.yaml")


def test_pdo_packing_saturates_each_object():
    from delta_hardware.canopen.object_dictionary import CATALOGUE as C
    p = Pdo(0x201, ["controlword", "target_position", "torque_offset"],
            [C["controlword"], C["target_position"], C["torque_offset"]], 1)
    data = p.pack({"controlword": 0x0F, "target_position": -(1 << 40), "torque_offset": 1e6})
    assert len(data) == 8
    assert p.unpack(data) == {"controlword": 0x0F, "target_position": -(1 << 31), "torque_offset": 32767}
    with pytest.raises(Exception):
        p.unpack(data[:5])
