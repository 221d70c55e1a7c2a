"""One module per panel id (as lesson files name them: kv.py for "kv"), and the helpers they draw with."""
