# SPDX-License-Identifier: MIT
"""The matplotlib backend of every sandbox (MPLBACKEND=module://sandboxd_runtime.mplbackend):
Agg for drawing, and plt.show() hands the open figures to sandboxd as PNG artifacts (then
closes them), as a notebook's inline backend shows them under the cell."""
from matplotlib.backend_bases import _Backend
from matplotlib.backends.backend_agg import _BackendAgg

from sandboxd_runtime import artifacts


@_Backend.export
class _BackendSandbox(_BackendAgg):
    @classmethod
    def show(cls, *args, **kwargs):
        artifacts.flush_figures()
