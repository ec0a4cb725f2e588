"""CANopen CiA 402 servo drives: the ``canopen`` backend of the drive interface
(:mod:`.backend`, over one module per service: :mod:`.axis`, :mod:`.startup`,
:mod:`.pdo_map`, :mod:`.cyclic`, :mod:`.monitor`), the CiA 402 state machine
(:mod:`.cia402`), object dictionaries (:mod:`.object_dictionary`), drives configs
(:mod:`.config`) and ``delta-drive-sim``, the simulated CiA 402 drives with the robot physics
behind them (:mod:`.drive_sim`, command line :mod:`.sim_cli`). Guide: ``docs/canopen.md``."""
