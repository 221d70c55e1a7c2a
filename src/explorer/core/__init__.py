"""The numpy engine: models, KV cache, sampling, generation. No Qt in here."""
