"""The project's data files, read and written in one place (numpy only; rosbags for bags).

* :mod:`.csv_io`: the one CSV reader (block-wise, bounded memory: :class:`~.csv_io.CsvReader`,
  :func:`~.csv_io.read_csv`) and writer (:func:`~.csv_io.write_csv`); every problem a
  :class:`~.csv_io.CsvError` naming the file, the line and the column;
* :mod:`.trajectory`: trajectory CSV files (``t,x,y,z,xd,...,zdd``), derivatives from positions;
* :mod:`.joint_data`: :class:`~.joint_data.JointData`, the one record of joint-space samples,
  and joint-data CSV files (``t,q1..3,qd1..3,qdd1..3,tau1..3``);
* :mod:`.bag`: rosbag2 bags of ``sensor_msgs/msg/JointState`` (a fast block decoder, reading
  and writing whole bags);
* :mod:`.joint_files`: :func:`~.joint_files.read_joint_data`, a CSV file or a bag by its name.

Used by the command lines (``delta-dynamics``, ``delta-identify``, ``delta-calibrate``), the
identification, calibration and motion code, the kinds' demos and ``delta-ctl record``.
"""
