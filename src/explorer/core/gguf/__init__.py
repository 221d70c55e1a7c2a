"""GGUF files: reading and checking them, the quantisation types and their block kernels,
llama.cpp's arithmetic, the llama-family loader."""
