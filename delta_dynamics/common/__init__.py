"""What every robot kind shares, kind-neutral: it imports no kind (``docs/architecture.md``).

* :mod:`.backend`: one piece of component-wise code on Python floats (one sample) or numpy
  columns (N samples);
* :mod:`.errors`: :class:`~.errors.UnreachableError`, :class:`~.errors.SingularityError`, the
  joint-limit check;
* :mod:`.friction`: the joint friction law and its slope;
* :mod:`.solve`: the platform state's inputs, the external force, a symmetric 3x3 solve,
  chunking of long batches;
* :mod:`.integrate`: the fixed-step (semi-implicit, RK4) and adaptive integrators over any
  kind's dynamics;
* :mod:`.workspace`: sampling the workspace, the conditioning measure;
* :mod:`.model`: the immutable-model base and the lumped parameters' common shape.
"""
