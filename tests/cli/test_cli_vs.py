"""`explorer trace --vs`: two runs of one prompt, where they part and how far apart their
final distributions are, checked with total variation written here from the steps' logits."""

import json

import numpy as np
import pytest

from explorer.cli.main import main


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def final_probs(step, temperature):  # the sample mode's one active stage: softmax(z / T), float64
    z = np.array([c["logit"] for c in sorted(step["candidates"], key=lambda c: c["id"])], np.float64) / temperature
    e = np.exp(z - z.max())
    return e / e.sum()


def test_identical_settings_never_part(capsys):
    code, out, _ = run_cli(capsys, "trace", "--prompt", "我爱", "--vs", "seed=0", "--json")
    assert code == 0
    d = json.loads(out)
    assert d["first_divergence"] is None and d["distance"] == [0.0, 0.0, 0.0]
    assert d["a"]["output_ids"] == d["b"]["output_ids"] == [3, 5, 6]


def test_two_temperatures_with_one_seed_part_from_the_first_step(capsys):
    code, out, _ = run_cli(capsys, "trace", "--prompt", "我爱", "--mode", "sample", "--seed", "3", "--top", "7",
                           "--vs", "temperature=1.5", "--json")
    assert code == 0
    d = json.loads(out)
    a, b = d["a"]["steps"], d["b"]["steps"]
    assert d["b"]["settings"]["temperature"] == 1.5 and d["b"]["settings"]["seed"] == 3
    assert [sa["u"] for sa in a][:1] == [sb["u"] for sb in b][:1]        # the same draw at step 0
    want = [0.5 * np.abs(final_probs(sa, 1.0) - final_probs(sb, 1.5)).sum() for sa, sb in zip(a, b)]
    assert len(d["distance"]) == min(len(a), len(b))
    np.testing.assert_allclose(d["distance"], want, atol=1e-12)
    assert d["distance"][0] > 0
    split = next((i for i, (sa, sb) in enumerate(zip(a, b)) if sa["selected_id"] != sb["selected_id"]),
                 None if len(a) == len(b) else min(len(a), len(b)))
    assert d["first_divergence"] == split


def test_the_table_lists_both_choices_per_step(capsys):
    code, out, _ = run_cli(capsys, "trace", "--prompt", "我爱", "--vs", "max-new-tokens=1")
    assert code == 0
    comparison = out.split("A: the run above · B: the same prompt with max-new-tokens=1")[1]
    assert "学习" in comparison and "first divergence: step 1" in comparison    # B stops after one token


@pytest.mark.parametrize("value,message", [
    ("temp=2", "unknown setting 'temp'; expected one of"),
    ("temperature=abc", "--temperature 'abc' is not a number"),
    ("temperature", "'temperature' is not NAME=VALUE"),
    ("top-k=-1", "--top-k '-1' is out of range"),
    ("order=bogus", "unknown stage 'bogus'"),
    ("mode=beam", "mode=beam makes a tree"),
])
def test_a_bad_setting_is_named_with_what_is_expected(capsys, value, message):
    code, out, err = run_cli(capsys, "trace", "--vs", value)
    assert code == 2 and out == "" and message in err and f"--vs {value!r}" in err and "Traceback" not in err


@pytest.mark.parametrize("argv,flag", [(["--lesson", "beam"], "--lesson beam"), (["--lens"], "--lens"),
                                       (["--mode", "beam"], "--mode beam")])
def test_vs_with_what_is_not_one_run_is_refused(capsys, argv, flag):
    code, _, err = run_cli(capsys, "trace", "--vs", "seed=1", *argv)
    assert code == 2 and f"--vs seed=1 with {flag}: " in err
