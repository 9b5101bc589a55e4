"""The trained task model (layers and topics): shipped up to date, trained on tasks that are not
evaluation tasks, used by task detection (not by the builder's reading of rule text), and strict
about its inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ruledex.builder import task_training as tt
from ruledex.builder.infer import infer_context
from ruledex.reader.detect import detect
from ruledex.reader.task_model import MODEL_FILE, from_json, shipped_model
from ruledex.reader.text import keywords
from ruledex.reader.vocab import TASK_LAYERS, TOPICS

from .conftest import REPO


def test_shipped_model_is_the_one_its_tasks_train(capsys: pytest.CaptureFixture[str]) -> None:
    """Editing builder/data/tasks.jsonl without retraining fails here (training is deterministic)."""
    assert tt.main(["--check"]) == 0, capsys.readouterr().err
    model = shipped_model()
    assert model.layers.classes == TASK_LAYERS and len(model.layers.weights) > 1000
    assert model.topics.classes == TOPICS and model.topics.weights.keys() == model.layers.weights.keys()


def test_training_tasks_are_balanced_and_are_not_evaluation_tasks() -> None:
    """`ruledex eval`'s labeled sets stay held out: no training task shares most of its words with one."""
    tasks = tt.load_tasks(tt.TASKS_FILE)
    per_layer = {layer: sum(1 for t in tasks if t.layer == layer) for layer in TASK_LAYERS}
    assert min(per_layer.values()) >= 250, per_layer
    per_topic = {topic: sum(1 for t in tasks if topic in t.topics) for topic in TOPICS}
    assert min(per_topic.values()) >= 30, per_topic
    held_out = [
        set(keywords(json.loads(line)["task"]))
        for name in ("eval_bundled.jsonl", "eval_cursorrules.jsonl")
        for line in (REPO / "tests" / "data" / name).read_text(encoding="utf-8").splitlines()
    ]
    for t in tasks:
        terms = set(keywords(t.task))
        closest = max(len(terms & other) / len(terms | other) for other in held_out)
        assert closest < 0.35, f"training task too close to an evaluation task: {t.task!r}"


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


@pytest.mark.parametrize(
    ("task", "topic"),
    [
        ("Write a postmortem for yesterday's outage", "documentation"),
        ("Pin third-party actions to commit SHAs", "devops"),
    ],
)
def test_detection_finds_topics_no_dictionary_word_names(task: str, topic: str) -> None:
    assert topic not in detect(task, task_model=False).topics
    assert topic in detect(task).topics


@pytest.mark.parametrize("task", ["make it better", "hello world", "fix it"])
def test_a_task_with_no_telling_word_gets_no_layer(task: str) -> None:
    """The model adds evidence, not its prior: near-even probabilities claim nothing."""
    assert detect(task).layer is None
    assert all(gain < 0.05 for gain in shipped_model().layer_evidence(["make", "better"]).values())
    assert detect(task).topics == ()


def test_rule_text_is_placed_without_the_task_model() -> None:
    """The builder reads rule text with the dictionaries only: the model would give every sentence a layer."""
    assert infer_context("Write a postmortem for yesterday's outage").layers == ()
    assert infer_context("Keep each migration reversible and small").layers == ("4-Persistence",)


def _task(text: str, layer: str, *topics: str) -> tt.LabeledTask:
    return tt.LabeledTask(text, layer, topics)


def test_training_learns_and_is_deterministic() -> None:
    tasks = [
        _task("the navbar overlaps the hero banner", "1-Presentation", "frontend"),
        _task("navbar dropdown hidden behind the banner", "1-Presentation", "frontend", "accessibility"),
        _task("the nightly backup of the ledger table failed", "4-Persistence", "database", "reliability"),
        _task("restore the ledger table from last night's backup", "4-Persistence", "database"),
    ] * 3
    model = tt.train(tasks)
    assert model == tt.train(tasks)
    assert tt.layer_accuracy(model, [_task("banner covers the navbar on phones", "1-Presentation")]) == 1.0
    assert tt.layer_accuracy(model, [_task("ledger backup is missing rows", "4-Persistence")]) == 1.0
    evidence = model.topic_evidence(["ledger", "backup"])
    assert max(evidence, key=evidence.__getitem__) == "database" and evidence["frontend"] == 0.0


def test_bad_task_lines_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "tasks.jsonl"
    good = '{"task": "fix the navbar", "layer": "1-Presentation", "topics": ["frontend"]}\n'
    bad.write_text(good + '{"task": "x", "layer": "UI", "topics": ["frontend"]}\n')
    with pytest.raises(ValueError, match=r"tasks\.jsonl:2: 'layer' is 'UI'; use one of 1-Presentation"):
        tt.load_tasks(bad)
    bad.write_text(good + '{"task": "x", "layer": "1-Presentation", "topics": ["css"]}\n')
    with pytest.raises(ValueError, match=r"tasks\.jsonl:2: 'topics' is \['css'\]; give 1 to 3 of security"):
        tt.load_tasks(bad)
    bad.write_text(good + "not json\n")
    with pytest.raises(ValueError, match=r"tasks\.jsonl:2: not JSON"):
        tt.load_tasks(bad)
    assert tt.main(["--tasks", str(bad), "--out", str(tmp_path / "m.json")]) == 2
    assert "tasks.jsonl:2" in capsys.readouterr().err and not (tmp_path / "m.json").exists()


def test_cli_writes_a_model_and_check_catches_a_stale_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tasks = tmp_path / "tasks.jsonl"
    rows = [
        {"task": "fix the navbar colours", "layer": "1-Presentation", "topics": ["frontend"]},
        {"task": "add a ledger table index", "layer": "4-Persistence", "topics": ["database", "performance"]},
    ]
    tasks.write_text("".join(json.dumps(row) + "\n" for row in rows * 2))
    out = tmp_path / "model.json"
    assert tt.main(["--tasks", str(tasks), "--out", str(out)]) == 0
    loaded = from_json(json.loads(out.read_text()), str(out))
    assert loaded.layers.classes == TASK_LAYERS and loaded.topics.classes == TOPICS
    assert tt.main(["--tasks", str(tasks), "--out", str(out), "--check"]) == 0
    out.write_text(out.read_text().replace('"format": 1', '"format": 1 '))
    assert tt.main(["--tasks", str(tasks), "--out", str(out), "--check"]) == 1
    assert "stale" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.tmp"))


def test_a_malformed_model_is_refused_with_its_name() -> None:
    good = json.loads(MODEL_FILE.read_text(encoding="utf-8"))
    with pytest.raises(ValueError, match=r"m\.json: format 2"):
        from_json({**good, "format": 2}, "m.json")
    with pytest.raises(ValueError, match="missing the 'topics' model"):
        from_json({k: v for k, v in good.items() if k != "topics"}, "m.json")
    with pytest.raises(ValueError, match=r"'layers\.classes' must name entries"):
        from_json({**good, "layers": {**good["layers"], "classes": ["UI"]}}, "m.json")
    with pytest.raises(ValueError, match="one per class"):
        from_json({**good, "topics": {**good["topics"], "weights": {"navbar": [1.0]}}}, "m.json")
