"""The `token-explorer` command line: the entry point, the shared flags and one module per sub-command."""
