"""GGUF files: reading and checking them, the quantisation types and their block kernels,
the llama-family loader."""
