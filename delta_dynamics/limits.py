"""Size limits shared by the command-line tools and the file readers, so that no input and no
option can ask for unbounded memory or time (README, "The delta-dynamics command line";
``docs/identification.md``, section 3).

A run of ``delta-dynamics inverse`` holds about 0.5 kB per sample, ``delta-identify`` about
1.5 kB (the regressor and its filtered copy), so :data:`MAX_SAMPLES` keeps either within
1-2 GB. Record or generate longer runs in pieces, or decimate.

    >>> MAX_SAMPLES
    1000000
"""

#: Most samples a tool generates or reads (CSV rows, bag messages, a resampled grid):
#: 1000 s at 1 kHz.
MAX_SAMPLES = 1_000_000
