"""CANopen CiA 402 servo drives: the ``canopen`` backend of the drive interface
(:mod:`.backend`), the CiA 402 state machine (:mod:`.cia402`), object dictionaries
(:mod:`.object_dictionary`), drives configs (:mod:`.config`) and ``delta-drive-sim``, the
simulated CiA 402 drives with the robot physics behind them (:mod:`.drive_sim`).
Guide: ``docs/canopen.md``."""
