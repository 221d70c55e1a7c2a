"""Token Explorer: watch a language model produce text one token at a time."""

__version__ = "0.1.0"
