"""Qt-free state of one explorer window: model, prompt, settings, the Run, its frames
and the cursor. Panels subscribe to its events and draw what it holds."""

from .events import SessionEvent
from .frames import Frame, TokenState, frames_of_run
from .session import Session

__all__ = ["Frame", "Session", "SessionEvent", "TokenState", "frames_of_run"]
