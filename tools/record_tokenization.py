"""Record llama.cpp's tokenization of the tiny vocabulary files of tests/support/tokenizer_files.py
into tests/fixtures/tokenization_llama_cpp.json (what test_llama_cpp_tokens.py compares with).

Run with a Python that has llama-cpp-python (never an app dependency), from the repository:
    /tmp/peer/bin/python tools/record_tokenization.py
Each file is built afresh in a temporary folder, loaded vocabulary-only, and every text is
tokenized as the app reads a prompt: with the file's <bos> rule and special tokens parsed
(`tokenize(text, add_bos=True, special=True)`)."""

from __future__ import annotations

import json
import platform
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests" / "support")]

from tokenizer_files import FILES, TEXTS, write_tokenizer_file  # noqa: E402

OUT = ROOT / "tests" / "fixtures" / "tokenization_llama_cpp.json"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main() -> None:
    import llama_cpp
    files = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in FILES:
            path = Path(tmp) / f"{name}.gguf"
            write_tokenizer_file(path, name)
            llm = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
            files[name] = [{"text": t, "ids": llm.tokenize(t.encode("utf-8"), add_bos=True, special=True)}
                           for t in TEXTS]
            del llm
    data = {"about": "llama.cpp (llama-cpp-python) tokenizing TEXTS for each tiny file of "
                     "tests/support/tokenizer_files.py with add_bos=True, special=True; written by "
                     "tools/record_tokenization.py",
            "llama_cpp_python": llama_cpp.__version__, "cpu": cpu_model(), "files": files}
    OUT.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT}: {len(files)} files x {len(TEXTS)} texts")


if __name__ == "__main__":
    main()
