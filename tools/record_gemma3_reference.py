"""Record llama.cpp's view of Gemma 3 270M as a test fixture (tests/fixtures/gemma3_llama_cpp.json).

The explorer's numbers for a real model are checked against an independent
implementation, never only against themselves. This script runs llama.cpp (through
llama-cpp-python, in a separate virtual environment: it is never a dependency of the
app, and the tests never run this script) on the same GGUF file and writes down:

- the token ids llama.cpp's tokenizer gives for varied text (Chinese, English, code,
  emoji, runs of spaces, tabs and newlines), `<bos>` added as the model expects;
- for a handful of prompts (Chinese and English, short, and a few hundred tokens, one
  of them longer than the 512-position sliding window): the greedy continuation, and
  after the prompt and after each greedy token the five most probable next tokens with
  their probabilities (softmax of llama.cpp's logits, in float64) and their logits
  (float32, exact); and the same after a full recompute (the prompt and its greedy
  tokens in one Prefill), which llama.cpp sums in another order than its Decode steps;
- after a Prefill of the first 513 ids of the longest prompt (llama.cpp multiplies 512
  rows at a time: the last token is alone in its batch).

llama-cpp-python's Llama leaves flash attention off (flash_attn=False: the context's
flash_attn_type is DISABLED), so llama.cpp keeps K and V as float16 and multiplies the
attention weights, rounded to float16, by V: what the explorer's llama.cpp arithmetic
does too.

Usage (about a minute on two cores):

    python -m venv /tmp/peer && /tmp/peer/bin/pip install llama-cpp-python numpy
    /tmp/peer/bin/python tools/record_gemma3_reference.py \\
        ~/.cache/token-explorer/models/gemma-3-270m-q4_k_m.gguf tests/fixtures/gemma3_llama_cpp.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

TOKENIZER_TEXTS = [
    "我爱",
    "The capital of France is",
    "我爱学习！今天天气很好。",
    "大语言模型一次生成一个词元，先预填充，再逐步解码。",
    "Hello, world! How are you doing today?",
    "def add(a, b):\n    return a + b\n",
    "for (int i = 0; i < n; ++i) { sum += x[i]; }",
    "emoji: 🙂👍🏽🇫🇷 and ❤️",
    "a  b   c    d\t\te\n\nf\n\n\n\ng",
    "   leading and trailing spaces   ",
    "混合 text 和 English，还有数字 12345 与 3.14159。",
    "日本語のテキストも少し。한국어도 조금.",
    "<bos> is written here as plain text, and so is <end_of_turn>.",
    "ÀÉÎÕÜ ñ ß ø å — “quotes” ‘single’ … ©®™",
    "𠀀𪚥 rare characters: 龘 靐",
]

SHORT_CHINESE = "我爱"
SHORT_ENGLISH = "The capital of France is"

CHINESE_PARAGRAPHS = [
    "春天来了，河边的柳树长出了嫩绿的新芽。孩子们放学以后喜欢在河岸上放风筝，"
    "风筝飞得很高，像一只只彩色的鸟。老人们坐在长椅上聊天，说今年的雨水比往年多，"
    "地里的麦子一定会有好收成。",
    "城市的早晨总是很忙碌。地铁站里挤满了上班的人，有人一边走一边吃包子，"
    "有人低头看手机上的新闻。街角的咖啡店刚刚开门，店员把新烤好的面包摆进橱窗，"
    "香味飘到了马路对面。",
    "学习一门新的语言需要耐心。每天记十个单词，读一篇短文，再试着用新学的句子写日记。"
    "刚开始会觉得很难，可是坚持三个月以后，你会发现自己已经能看懂简单的故事了。",
]

ENGLISH_PARAGRAPHS = [
    "The lighthouse keeper climbed the spiral stairs every evening at dusk. He polished the "
    "great lens, trimmed the wick, and wrote the weather in a leather notebook: wind from the "
    "north-east, a low swell, gulls resting on the rocks below the cliff.",
    "In the workshop the carpenter measured twice and cut once. Shavings of pine curled from "
    "his plane and gathered around his boots, and the smell of resin filled the small room "
    "while the radio played an old song about a ship that never came home.",
    "A recipe for a simple loaf: mix five hundred grams of flour with ten grams of salt, seven "
    "grams of yeast and three hundred and fifty millilitres of warm water. Knead for ten "
    "minutes, let it rise for an hour, shape it, and bake it in a hot oven until it sounds "
    "hollow when tapped underneath.",
    "The committee met on Tuesday to discuss the new bridge. The engineers presented three "
    "designs: a steel arch, a concrete beam and a suspension bridge with two towers. After a "
    "long debate about cost, maintenance and the view from the old town, they chose the arch.",
    "Def code review notes: the function reads the configuration file, validates every field, "
    "and returns a frozen record; errors name the field and the value that was expected. The "
    "tests cover empty files, wrong types, and numbers outside their allowed range.",
    "At the observatory the astronomers waited for the clouds to clear. Shortly after midnight "
    "the sky opened, and the telescope turned slowly towards a faint galaxy in the "
    "constellation of Andromeda, its light older than any city on Earth.",
    "The marathon started at seven in the morning. Thousands of runners crossed the bridge while "
    "bands played on every corner, volunteers handed out water and oranges, and children held "
    "up signs with the names of their parents written in bright colours.",
]

PROMPTS = {
    "zh-short": SHORT_CHINESE,
    "en-short": SHORT_ENGLISH,
    "zh-long": "".join(CHINESE_PARAGRAPHS) + "读完这些段落，我最喜欢的是",
    "en-long": " ".join(ENGLISH_PARAGRAPHS[:3]) + " The next morning, the lighthouse keeper",
    # longer than the 512-position window: the local layers no longer read its beginning
    "mixed-past-window": ("\n\n".join(ENGLISH_PARAGRAPHS + CHINESE_PARAGRAPHS)
                          + "\n\nIn one sentence, the first paragraph was about"),
}
GREEDY_STEPS = 8
TOP = 5


def softmax(logits: np.ndarray) -> np.ndarray:  # [V] -> [V] float64
    z = logits.astype(np.float64)
    z = np.exp(z - z.max())
    return z / z.sum()


def top(llm) -> tuple[list[list], list[float]]:
    """([[id, probability], ...], [their float32 logits]) of the next token after what llm
    has evaluated (the one row of logits llama.cpp computed for the last token of the
    last batch). The logits are exact (a float32 is a float64 exactly): the explorer's
    llama.cpp arithmetic is checked against them bit for bit."""
    import llama_cpp
    logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(llm.n_vocab(),)).copy()
    p = softmax(logits)
    ids = np.argsort(-p, kind="stable")[:TOP]
    return [[int(i), round(float(p[i]), 6)] for i in ids], [float(logits[i]) for i in ids]


def record(model_path: str) -> dict:
    import llama_cpp
    llm = llama_cpp.Llama(model_path=model_path, n_ctx=2048, n_batch=2048, n_threads=2, flash_attn=False,
                          logits_all=False, verbose=False)
    tokenize = [{"text": t, "ids": llm.tokenize(t.encode("utf-8"), add_bos=True, special=True)}
                for t in TOKENIZER_TEXTS]
    prompts = []
    for name, text in PROMPTS.items():
        ids = llm.tokenize(text.encode("utf-8"), add_bos=True, special=True)
        llm.reset()
        llm.eval(ids)
        tops, greedy = [top(llm)], []
        for _ in range(GREEDY_STEPS):
            token = tops[-1][0][0][0]
            greedy.append(token)
            llm.eval([token])
            tops.append(top(llm))
        llm.reset()                    # the same ids again, in one Prefill: a full recompute
        llm.eval(ids + greedy)
        again, again_logits = top(llm)
        prompts.append({"name": name, "text": text, "ids": ids, "greedy": greedy,
                        "top5": [t for t, _ in tops], "top5_logits": [lg for _, lg in tops],
                        "recompute_top5": again, "recompute_top5_logits": again_logits})
    # llama.cpp multiplies a Prefill 512 rows at a time (n_ubatch): after 513 tokens the
    # last one is alone in its batch and takes the one-row kernels
    edge = prompts[-1]["ids"][:513]
    llm.reset()
    llm.eval(edge)
    edge_top, edge_logits = top(llm)
    return {
        "about": "llama.cpp (llama-cpp-python) on gemma-3-270m-q4_k_m.gguf; written by "
                 "tools/record_gemma3_reference.py. top5[0] follows the prompt, top5[k] follows "
                 "greedy[:k]; probabilities are the softmax of llama.cpp's logits, top5_logits "
                 "those logits (float32); recompute_* after one Prefill of ids + greedy. "
                 "Flash attention off, 2 threads, on an x86 CPU with AVX-512.",
        "llama_cpp_python": llama_cpp.__version__,
        "model_sha256": "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        "tokenize": tokenize,
        "prompts": prompts,
        "ubatch_edge": {"prompt": prompts[-1]["name"], "length": len(edge), "top5": edge_top,
                        "top5_logits": edge_logits},
    }


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    data = record(sys.argv[1])
    Path(sys.argv[2]).write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {sys.argv[2]}: {len(data['tokenize'])} texts, {len(data['prompts'])} prompts "
          f"({', '.join(str(len(p['ids'])) for p in data['prompts'])} tokens)")


if __name__ == "__main__":
    main()
