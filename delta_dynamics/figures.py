"""Writing the demos' and reports' figures: laid out, saved as PNG atomically, closed."""
from __future__ import annotations

import io
from pathlib import Path

from delta_core.atomic_file import atomic_write_bytes


def save_figure(fig, path, dpi: int = 100, **options) -> Path:
    """Lay ``fig`` (a matplotlib figure) out tightly, write it to ``path`` as PNG (atomically:
    a reader never sees half a file) at ``dpi``, close it; the path. ``options`` go to
    ``savefig`` (e.g. ``pil_kwargs={"optimize": True}``)."""
    # the pyplot state machine holds the figure until it is closed; imported here: matplotlib is
    # optional and heavy, and only code that has drawn a figure calls this
    import matplotlib.pyplot as plt
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, **options)
    plt.close(fig)
    return atomic_write_bytes(path, buf.getvalue())
