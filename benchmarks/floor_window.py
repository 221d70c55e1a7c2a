"""The floor for start-up: PySide6 + pyqtgraph opening a window with one ImageItem and one
BarGraphItem, painting it once, and quitting. bench_window.py compares the app with this."""

import sys

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QApplication, QHBoxLayout, QWidget

app = QApplication(sys.argv[:1])
window = QWidget()
layout = QHBoxLayout(window)
image_plot, bar_plot = pg.PlotWidget(), pg.PlotWidget()
image_plot.addItem(pg.ImageItem(np.random.default_rng(0).random((8, 8)), axisOrder="row-major"))
bar_plot.addItem(pg.BarGraphItem(x=np.arange(7), height=np.linspace(0.1, 0.7, 7), width=0.8))
layout.addWidget(image_plot)
layout.addWidget(bar_plot)
window.resize(1600, 960)
window.show()
app.processEvents()
window.grab()
