"""`explorer trace --lens` as a user runs it: the lens of every step in the JSON and as one
line per layer, checked against float64 numbers written here, and the refusals."""

import json

import numpy as np
import pytest

from explorer.cli.main import main
from explorer.core.models.teaching import load_teaching_model
from family_files import write_family


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def softmax64(z):
    e = np.exp(np.asarray(z, np.float64) - np.max(z))
    return e / e.sum()


def test_the_teaching_models_lens_is_its_h_times_wout_at_every_step(capsys):
    code, out, _ = run_cli(capsys, "trace", "--prompt", "我爱", "--lens", "--json")
    assert code == 0
    steps = json.loads(out)["steps"]
    model = load_teaching_model()
    ids = [1, 2, 3, 5]
    for n, step in enumerate(steps):
        h = model.full_forward(ids[:2 + n]).layers[0].hidden[-1]               # the layer's residual stream
        want = softmax64(h @ model.params.w_out + model.params.b_out)          # the course's h·Wout, as probabilities
        assert [entry["layer"] for entry in step["lens"]] == [0]
        top = step["lens"][0]["top"]
        assert [t["id"] for t in top] == list(np.argsort(-want, kind="stable"))
        assert all(abs(t["prob"] - want[t["id"]]) < 1e-12 for t in top)
        assert [t["piece"] for t in top][:1] == [step["selected_text"]]
        assert [(c["id"], round(c["prob"], 12)) for c in step["candidates"]] == \
               [(t["id"], round(t["prob"], 12)) for t in top]                  # the last layer is the raw distribution
        assert step["commit_layer"] == 0


def test_the_plain_table_prints_one_line_per_layer(capsys, tmp_path):
    path = write_family(tmp_path / "llama.gguf", "llama", "f32")
    code, out, _ = run_cli(capsys, "trace", "--model", str(path), "--prompt-ids", "1,2,3", "--max-new-tokens", "2",
                           "--lens")
    assert code == 0
    blocks = [b for b in out.split("\n\n") if "raw logit lens" in b]
    assert len(blocks) == 2                                                     # Prefill, Decode 1
    for block in blocks:
        heading, header, rule, *rows = block.splitlines()
        assert "position" in heading and header.split()[0] == "layer" and set(rule) <= {"-", " "}
        assert [row.split()[0] for row in rows] == ["0", "1"]                    # two layers, one line each
    code, out, _ = run_cli(capsys, "trace", "--model", str(path), "--prompt-ids", "1,2,3", "--max-new-tokens", "2",
                           "--lens", "--json")
    steps = json.loads(out)["steps"]
    assert [[entry["layer"] for entry in s["lens"]] for s in steps] == [[0, 1], [0, 1]]
    assert all(len(entry["top"]) == 20 for s in steps for entry in s["lens"])
    assert all(s["lens"][-1]["top"][0]["id"] == s["selected_id"] for s in steps)     # greedy: its own top-1


def test_the_lens_speaks_chinese(capsys):
    code, out, _ = run_cli(capsys, "trace", "--prompt", "我爱", "--lens", "--lang", "zh")
    assert code == 0 and "原始logit lens" in out and "从第0层起学习一直排第一" in out


@pytest.mark.parametrize("argv,message", [
    (["--lesson", "stop-reasons"], "model 'stop-example' has no layers to show"),
    (["--mode", "beam"], "--lens with --mode beam"),
    (["--speculative", "2"], "--lens with --speculative"),
])
def test_a_lens_that_cannot_be_shown_exits_2_with_the_reason(capsys, argv, message):
    code, out, err = run_cli(capsys, "trace", "--lens", *argv)
    assert code == 2 and out == "" and message in err and "Traceback" not in err


def test_smollm2s_lens_ends_on_paris(capsys, smollm2):
    code, out, _ = run_cli(capsys, "trace", "--model", "smollm2", "--prompt", "The capital of France is",
                           "--max-new-tokens", "1", "--no-check", "--lens", "--json")
    assert code == 0
    step = json.loads(out)["steps"][0]
    assert len(step["lens"]) == 30 and step["lens"][-1]["top"][0]["piece"] == " Paris"
    assert [c["id"] for c in step["candidates"]] == [t["id"] for t in step["lens"][-1]["top"][:len(step["candidates"])]]
    assert 0 <= step["commit_layer"] <= 29
