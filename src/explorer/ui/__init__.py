"""The window: PySide6 + pyqtgraph panels that draw what the session holds."""
