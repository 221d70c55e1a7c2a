"""Everything the window remembers between runs, through one wrapper with defaults."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings

DEFAULTS = {
    "lang": "en",               # the course is Chinese, but English is the common ground
    "theme": "light",           # "light" | "high-contrast"
    "font_size": 12.0,          # points; readable from the back row on a projector
    "geometry": QByteArray(),   # window position and size
    "window_state": QByteArray(),  # dock layout
    "presentation_state": QByteArray(),  # dock layout in presentation mode (empty: the default one)
    "start_page_shown": False,  # the lesson list opens by itself once, at the first start
    "export_folder": "",        # where the teacher last saved an export ("": their Documents or Pictures)
    "model_folders": "",        # folders the teacher added to look for models in (a JSON list of paths)
}


class Settings:
    """`settings["lang"]`, `settings["lang"] = "zh"`; unknown keys are an error."""

    def __init__(self, path: str | None = None):
        self._qs = (QSettings(path, QSettings.Format.IniFormat) if path
                    else QSettings("TokenExplorer", "explorer"))

    def __getitem__(self, key: str):
        default = DEFAULTS[key]
        value = self._qs.value(key, default)
        if isinstance(default, bool):        # an ini file gives back "true" / "false"
            return value if isinstance(value, bool) else str(value).lower() in ("true", "1")
        if isinstance(default, float):
            try:
                return float(value)
            except (TypeError, ValueError):
                return default
        if isinstance(default, QByteArray) and not isinstance(value, QByteArray):
            return default
        return value

    def __setitem__(self, key: str, value) -> None:
        if key not in DEFAULTS:
            raise KeyError(key)
        self._qs.setValue(key, value)

    @property
    def folder(self) -> Path:
        """The folder of the settings file: what else the window keeps per user goes beside it
        (the lesson editor's recovery file)."""
        return Path(self._qs.fileName()).parent

    def reset(self) -> None:
        self._qs.clear()

    def sync(self) -> None:
        self._qs.sync()
