"""The installed Qt binding must not corrupt Python's reference counts (PySide6 6.12.0 on
Python < 3.12 drops a reference to None per void call and the process aborts)."""

import sys

from PySide6.QtGui import QColor, QImage, QPainter


def test_painting_does_not_drain_references_to_none(qapp):
    image = QImage(8, 8, QImage.Format.Format_RGB32)
    painter = QPainter(image)
    painter.setPen(QColor("red"))        # warm-up: first calls may cache objects
    before = sys.getrefcount(None)
    for _ in range(2000):
        painter.setPen(QColor("red"))
        painter.drawRect(0, 0, 2, 2)
    after = sys.getrefcount(None)
    painter.end()
    assert after - before > -100, f"None lost {before - after} references: use a fixed PySide6"
