"""The trained layer model: shipped up to date, trained on tasks that are not evaluation tasks, used
by task detection (not by the builder's reading of rule text), and strict about its inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ruledex.builder import layer_training as lt
from ruledex.builder.infer import infer_context
from ruledex.reader.detect import detect
from ruledex.reader.layer_model import MODEL_FILE, from_json, shipped_model
from ruledex.reader.text import keywords

from .conftest import REPO


def test_shipped_model_is_the_one_its_tasks_train(capsys: pytest.CaptureFixture[str]) -> None:
    """Editing builder/data/layer_tasks.jsonl without retraining fails here (training is deterministic)."""
    assert lt.main(["--check"]) == 0, capsys.readouterr().err
    model = shipped_model()
    assert model.layers == lt.MODEL_LAYERS and len(model.weights) > 1000


def test_training_tasks_are_balanced_and_are_not_evaluation_tasks() -> None:
    """`ruledex eval`'s labeled sets stay held out: no training task shares most of its words with one."""
    tasks = lt.load_tasks(lt.TASKS_FILE)
    per_layer = {layer: sum(1 for _, got in tasks if got == layer) for layer in lt.MODEL_LAYERS}
    assert min(per_layer.values()) >= 250, per_layer
    held_out = [
        set(keywords(json.loads(line)["task"]))
        for name in ("eval_bundled.jsonl", "eval_cursorrules.jsonl")
        for line in (REPO / "tests" / "data" / name).read_text(encoding="utf-8").splitlines()
    ]
    for task, _ in tasks:
        terms = set(keywords(task))
        closest = max(len(terms & other) / len(terms | other) for other in held_out)
        assert closest < 0.35, f"training task too close to an evaluation task: {task!r}"


@pytest.mark.parametrize(
    ("task", "layer"),
    [
        ("Write a postmortem for yesterday's outage", "6-Docs"),
        ("Prorate the annual plan when a customer upgrades mid-cycle", "3-Domain"),
        ("Orders keep pointing at customers that were deleted", "4-Persistence"),
        ("Pin third-party actions to commit SHAs", "7-Deployment"),
    ],
)
def test_detection_places_tasks_no_dictionary_word_names(task: str, layer: str) -> None:
    assert detect(task, task_model=False).layer is None  # the hand-written dictionaries alone see nothing
    assert detect(task).layer == layer


@pytest.mark.parametrize("task", ["make it better", "hello world", "fix it"])
def test_a_task_with_no_telling_word_gets_no_layer(task: str) -> None:
    """The model adds evidence, not its prior: near-even probabilities claim nothing."""
    assert detect(task).layer is None
    assert all(gain < 0.05 for gain in shipped_model().evidence(["make", "better"]).values())


def test_rule_text_is_placed_without_the_task_model() -> None:
    """The builder reads rule text with the dictionaries only: the model would give every sentence a layer."""
    assert infer_context("Write a postmortem for yesterday's outage").layers == ()
    assert infer_context("Keep each migration reversible and small").layers == ("4-Persistence",)


def test_training_learns_and_is_deterministic() -> None:
    tasks = [
        ("the navbar overlaps the hero banner", "1-Presentation"),
        ("navbar dropdown hidden behind the banner", "1-Presentation"),
        ("the nightly backup of the ledger table failed", "4-Persistence"),
        ("restore the ledger table from last night's backup", "4-Persistence"),
    ] * 3
    model = lt.train(tasks)
    assert model == lt.train(tasks)
    assert lt.accuracy(model, [("banner covers the navbar on phones", "1-Presentation")]) == 1.0
    assert lt.accuracy(model, [("ledger backup is missing rows", "4-Persistence")]) == 1.0


def test_bad_task_lines_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "tasks.jsonl"
    bad.write_text('{"task": "fix the navbar", "layer": "1-Presentation"}\n{"task": "x", "layer": "UI"}\n')
    with pytest.raises(ValueError, match=r"tasks\.jsonl:2: 'layer' is 'UI'; use one of 1-Presentation"):
        lt.load_tasks(bad)
    bad.write_text('{"task": "fix the navbar", "layer": "1-Presentation"}\nnot json\n')
    with pytest.raises(ValueError, match=r"tasks\.jsonl:2: not JSON"):
        lt.load_tasks(bad)
    assert lt.main(["--tasks", str(bad), "--out", str(tmp_path / "m.json")]) == 2
    assert "tasks.jsonl:2" in capsys.readouterr().err and not (tmp_path / "m.json").exists()


def test_cli_writes_a_model_and_check_catches_a_stale_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        "".join(
            json.dumps({"task": t, "layer": layer}) + "\n"
            for t, layer in [
                ("fix the navbar colours", "1-Presentation"),
                ("add a ledger table index", "4-Persistence"),
            ]
            * 2
        )
    )
    out = tmp_path / "model.json"
    assert lt.main(["--tasks", str(tasks), "--out", str(out)]) == 0
    assert from_json(json.loads(out.read_text()), str(out)).layers == lt.MODEL_LAYERS
    assert lt.main(["--tasks", str(tasks), "--out", str(out), "--check"]) == 0
    out.write_text(out.read_text().replace('"format": 1', '"format": 1 '))
    assert lt.main(["--tasks", str(tasks), "--out", str(out), "--check"]) == 1
    assert "stale" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.tmp"))


def test_a_malformed_model_is_refused_with_its_name() -> None:
    good = json.loads(MODEL_FILE.read_text(encoding="utf-8"))
    with pytest.raises(ValueError, match=r"m\.json: format 2"):
        from_json({**good, "format": 2}, "m.json")
    with pytest.raises(ValueError, match="'layers' must name layers"):
        from_json({**good, "layers": ["UI"]}, "m.json")
    with pytest.raises(ValueError, match="one per layer"):
        from_json({**good, "weights": {"navbar": [1.0]}}, "m.json")
