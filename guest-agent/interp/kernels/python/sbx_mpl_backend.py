# SPDX-License-Identifier: Apache-2.0
"""matplotlib backend of the sbx Python kernel: Agg rendering, plt.show() displays the open
figures as results (png + chart) and closes them, like the inline backend of Jupyter."""
from matplotlib.backend_bases import FigureManagerBase
from matplotlib.backends.backend_agg import FigureCanvasAgg

FigureCanvas = FigureCanvasAgg
FigureManager = FigureManagerBase


def show(*args, **kwargs):
    import sbx_display

    sbx_display.flush_figures()
