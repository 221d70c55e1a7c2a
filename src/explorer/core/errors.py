"""Errors a user can act on: each message names the file, field or value at fault."""


class ExplorerError(Exception):
    """Bad input from a user (a file, a flag, a setting). The message says what was expected."""


class ParamsError(ExplorerError):
    """A parameter file that cannot be used; the message names the file and the field."""


class SettingError(ExplorerError, ValueError):
    """A sampling or generation setting outside its allowed range; the message names it."""


class OrderError(SettingError):
    """A processor order that leaves out stages that are on: `order` and those `left_out`
    (the command line names the flags that turned them on)."""

    def __init__(self, message: str, order: tuple[str, ...], left_out: tuple[str, ...]):
        super().__init__(message)
        self.order, self.left_out = order, left_out


class PromptError(ExplorerError):
    """A prompt the vocabulary cannot encode, or ids outside the vocabulary."""


class ChatTemplateError(ExplorerError):
    """A model's chat template failed to render or passed one of its limits: the prompt falls
    back to the plain text, and the message says why."""
