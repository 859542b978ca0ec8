"""The Fig. 2.4 example's bookkeeping: per-fit saving, resuming, merging shards (needs shared data).

``examples/plot_deep_gp_uci.py`` runs for days at its default knobs, so it is run in shards; these
tests run it with two optimiser steps on yacht.
"""

import json
import runpy
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "plot_deep_gp_uci.py"


@pytest.fixture
def run_example(shared_data_with, tmp_path, monkeypatch):
    shared_data_with("uci_hl/yacht.csv.gz")
    monkeypatch.setenv("LVGP_UCI_OUT", str(tmp_path))
    monkeypatch.setenv("LVGP_UCI_DATASETS", "yacht")
    monkeypatch.setenv("LVGP_UCI_ITERS", "2")
    for knob in ("LVGP_UCI_RESUME", "LVGP_UCI_MERGE", "LVGP_UCI_NATGRAD", "LVGP_UCI_BATCH",
                 "LVGP_UCI_SCHEME", "LVGP_UCI_SCHEDULE"):
        monkeypatch.delenv(knob, raising=False)

    def run(**knobs):
        for name, value in knobs.items():
            monkeypatch.setenv(f"LVGP_UCI_{name}", str(value))
        try:
            runpy.run_path(str(EXAMPLE), run_name="example")
        finally:
            for name in knobs:
                monkeypatch.delenv(f"LVGP_UCI_{name}")

    return run, tmp_path


def _records(path):
    return json.loads(path.read_text())["results"]["yacht"]


def test_resume_skips_recorded_fits_and_merge_takes_the_union(run_example):
    run, out = run_example
    run(TAG="_a", SPLITS=1, MODELS="SGP")
    first = _records(out / "deep_gp_uci_a.json")
    assert [r["split"] for r in first["SGP"]] == [0]
    assert json.loads((out / "deep_gp_uci_a.json").read_text())["protocol"] == {
        "steps": 2, "batch": 10000, "natgrad": None, "splits": "published",
        "schedule": "constant"}

    run(TAG="_a", SPLITS=1, MODELS="SGP,DGP2", RESUME=1)
    resumed = _records(out / "deep_gp_uci_a.json")
    assert resumed["SGP"] == first["SGP"]  # not refitted: same record, same seconds
    assert [r["split"] for r in resumed["DGP2"]] == [0]

    run(TAG="_b", FIRST_SPLIT=1, SPLITS=1, MODELS="SGP")
    run(TAG="_all", MERGE="deep_gp_uci_a.json,deep_gp_uci_b.json")
    merged = _records(out / "deep_gp_uci_all.json")
    assert [r["split"] for r in merged["SGP"]] == [0, 1]
    assert merged["DGP2"] == resumed["DGP2"]
    table = (out / "deep_gp_uci_all.md").read_text()
    assert "[n] per cell" in table  # SGP has 2 splits, DGP 2 one
    assert "DGP2 − SGP" in table
    # progress: 2 of yacht's 20 published splits for the SGP, 1 for DGP 2, with hours left
    row = next(line for line in table.splitlines() if line.startswith("| yacht | 2/20 · "))
    assert row.split(" | ")[2].startswith("1/20 · ") and row.count("h left") == 2


def test_merge_refuses_another_protocol(run_example):
    run, out = run_example
    run(TAG="_a", SPLITS=1, MODELS="SGP")
    with pytest.raises(ValueError, match="was run with"):
        run(TAG="_all", MERGE="deep_gp_uci_a.json", ITERS=3)
    with pytest.raises(FileNotFoundError, match="matches no file"):
        run(TAG="_all", MERGE="nothing_*.json")


def test_unknown_model_is_refused(run_example):
    run, _ = run_example
    with pytest.raises(ValueError, match="unknown models"):
        run(TAG="_a", MODELS="SGP,DGP9")


def test_split_scheme_is_part_of_the_protocol(run_example):
    run, out = run_example
    run(TAG="_p", SPLITS=1, MODELS="SGP")
    run(TAG="_s", SPLITS=1, MODELS="SGP", SCHEME="shuffle")
    doc = json.loads((out / "deep_gp_uci_s.json").read_text())
    assert doc["protocol"]["splits"] == "shuffle" and "shuffle splits" in doc["settings"]
    assert _records(out / "deep_gp_uci_s.json")["SGP"][0]["ll"] != \
        _records(out / "deep_gp_uci_p.json")["SGP"][0]["ll"]  # another test set
    with pytest.raises(ValueError, match="was run with"):
        run(TAG="_all", MERGE="deep_gp_uci_p.json,deep_gp_uci_s.json")
    # files written before the scheme was recorded hold published splits
    old = json.loads((out / "deep_gp_uci_p.json").read_text())
    del old["protocol"]["splits"]
    (out / "deep_gp_uci_old.json").write_text(json.dumps(old))
    run(TAG="_all", MERGE="deep_gp_uci_old.json,deep_gp_uci_p.json")
    with pytest.raises(ValueError, match="was run with"):
        run(TAG="_all2", MERGE="deep_gp_uci_old.json", SCHEME="shuffle")
    with pytest.raises(ValueError, match="LVGP_UCI_SCHEME"):
        run(TAG="_x", SCHEME="hl")


def test_learning_rate_schedule_is_part_of_the_protocol(run_example):
    run, out = run_example
    run(TAG="_c", SPLITS=1, MODELS="SGP", ITERS=3)
    run(TAG="_k", SPLITS=1, MODELS="SGP", ITERS=3, SCHEDULE="cosine")
    doc = json.loads((out / "deep_gp_uci_k.json").read_text())
    assert doc["protocol"]["schedule"] == "cosine" and "cosine learning rate" in doc["settings"]
    assert _records(out / "deep_gp_uci_k.json")["SGP"][0]["ll"] != \
        _records(out / "deep_gp_uci_c.json")["SGP"][0]["ll"]  # annealed steps 2 and 3
    with pytest.raises(ValueError, match="was run with"):
        run(TAG="_all", MERGE="deep_gp_uci_c.json,deep_gp_uci_k.json", ITERS=3)
    # files written before the schedule was recorded ran at a constant rate
    old = json.loads((out / "deep_gp_uci_c.json").read_text())
    del old["protocol"]["schedule"]
    (out / "deep_gp_uci_old.json").write_text(json.dumps(old))
    run(TAG="_all", MERGE="deep_gp_uci_old.json,deep_gp_uci_c.json", ITERS=3)
    with pytest.raises(ValueError, match="LVGP_UCI_SCHEDULE"):
        run(TAG="_x", SCHEDULE="linear")
