"""What a student page carries of one step's logits: all of a small vocabulary; for a big
one the top candidates and the seen ids exactly and the rest in narrow groups whose mass at
temperature 1 is the rest's exact mass (checked against a float64 sum written here)."""

import math

import numpy as np

from explorer.export.page_logits import REST_BIN, SMALL_VOCAB, TOP_CANDIDATES, page_vector, split_logits


def test_a_small_vocabulary_is_carried_whole():
    raw = np.array([2.0, 1.0, -np.inf, 0.0, -3.5])
    page = split_logits(raw, [0, 3])
    assert page.ids.tolist() == [0, 1, 2, 3, 4] and page.group_values.size == 0
    assert np.array_equal(page_vector(page), raw)


def test_a_big_vocabulary_keeps_the_top_and_the_seen_ids_and_groups_the_rest():
    rng = np.random.default_rng(5)
    size = 20_000
    raw = rng.normal(0, 3, size)
    raw[17] = -np.inf                                      # not a candidate: in no group
    seen = [3, 9_999, 19_998, 3]
    page = split_logits(raw, seen)
    top = np.argsort(-raw)[:TOP_CANDIDATES]
    assert set(top) | {3, 9_999, 19_998} == set(page.ids.tolist())
    assert np.array_equal(page.logits, raw[page.ids])
    assert page.group_counts.sum() == size - page.ids.size - 1
    assert np.all(np.diff(page.group_values) < 0)          # one group per bin, highest first
    vector = page_vector(page)
    assert np.array_equal(vector[page.ids], raw[page.ids]) and vector[17] == -np.inf
    rest = np.setdiff1d(np.arange(size), np.append(page.ids, 17))
    assert np.all(np.abs(vector[rest] - raw[rest]) < REST_BIN)
    assert vector[rest].max() <= np.sort(raw)[-TOP_CANDIDATES]       # no group above the carried top
    # at temperature 1 every carried probability is the true one, and the rest holds its exact mass
    finite = raw[raw > -np.inf]
    exact = math.fsum(math.exp(v - finite.max()) for v in raw[rest])
    total = math.fsum(math.exp(v - finite.max()) for v in finite)
    assert abs(page.rest_mass - exact / total) < 1e-12
    grouped = vector[vector > -np.inf]
    mass = np.exp(vector[page.ids] - grouped.max()) / np.exp(grouped - grouped.max()).sum()
    truth = np.exp(raw[page.ids] - finite.max()) / total
    assert np.max(np.abs(mass - truth)) < 1e-12


def test_a_group_never_ties_a_carried_logit():
    raw = np.zeros(SMALL_VOCAB * 2)                          # every logit equal
    raw[:10] = 5.0
    page = split_logits(raw, [])
    assert not set(page.group_values.tolist()) & set(page.logits.tolist())
    assert page.group_values[0] == np.nextafter(0.0, -1)     # moved one step below the tie, no further
