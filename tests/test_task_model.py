"""The trained task model (layers and topics): shipped up to date, trained on tasks that are not
evaluation tasks, used by task detection (not by the builder's reading of rule text), and strict
about its inputs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ruledex.builder import task_training as tt
from ruledex.builder.infer import infer_context
from ruledex.reader.detect import DETECTION_WEIGHTS, DetectionWeights, detect, task_terms
from ruledex.reader.index import Index
from ruledex.reader.query import detect_in_index, first_pass
from ruledex.reader.task_model import MODEL_FILE, NO_NEIGHBOURS, from_arrays, read_model, shipped_model, to_arrays
from ruledex.reader.text import keywords
from ruledex.reader.vocab import TASK_LAYERS, TOPICS

from .conftest import REPO


def test_shipped_model_is_the_one_its_tasks_train(capsys: pytest.CaptureFixture[str]) -> None:
    """Editing builder/data/tasks.jsonl without retraining fails here (training is deterministic)."""
    assert tt.main(["--check"]) == 0, capsys.readouterr().err
    model = shipped_model()
    assert model.layers.classes == TASK_LAYERS and len(model.layers.terms) > 1000
    assert model.topics.classes == TOPICS and model.topics.terms == model.layers.terms


HELD_OUT_SETS = (
    "eval_bundled",
    "eval_cursorrules",
    "blind_bundled",
    "blind2_bundled",
    "blind_cursorrules",
    "named_bundled",
    "named_cursorrules",
    "team_tasks",
)
"""Every task set that measures detection and ranking and is never trained on (``train_*.jsonl`` are
training tasks, held out per run by ``bench.tune --held-out-model``)."""


def test_training_tasks_are_balanced_and_are_not_evaluation_tasks() -> None:
    """The measuring sets stay held out: no training task shares 35% or more of its words with one."""
    tasks = tt.load_tasks(tt.TASKS_FILE)
    per_layer = {layer: sum(1 for t in tasks if t.layer == layer) for layer in TASK_LAYERS}
    assert min(per_layer.values()) >= 250, per_layer
    per_topic = {topic: sum(1 for t in tasks if topic in t.topics) for topic in TOPICS}
    assert min(per_topic.values()) >= 30, per_topic
    held_out = [
        set(keywords(json.loads(line)["task"]))
        for name in HELD_OUT_SETS
        for line in (REPO / "tests" / "data" / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    sharing: dict[str, list[int]] = {}  # term -> held-out tasks with it: compare only tasks that share a word
    for i, terms in enumerate(held_out):
        for term in terms:
            sharing.setdefault(term, []).append(i)
    for t in tasks:
        terms = set(keywords(t.task))
        near = {i for term in terms for i in sharing.get(term, ())}
        closest = max((len(terms & held_out[i]) / len(terms | held_out[i]) for i in near), default=0.0)
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
    """The model adds evidence, not its prior: near-even probabilities claim nothing.

    "fix" is a word of the quality topic's dictionary, and the training tasks nearest a lone "fix"
    are mostly tests and quality chores, so "fix it" may name topics (as it does with any index's
    retrieval feedback); no layer, though.
    """
    assert detect(task).layer is None
    assert all(gain < 0.05 for gain in shipped_model().layer_evidence(["make", "better"]).values())
    if task != "fix it":
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
    out = tmp_path / "model.npz"
    assert tt.main(["--tasks", str(tasks), "--out", str(out)]) == 0
    loaded = read_model(out)
    assert loaded.layers.classes == TASK_LAYERS and loaded.topics.classes == TOPICS
    assert loaded == tt.train(tt.load_tasks(tasks))  # the file holds exactly the trained weights
    assert tt.main(["--tasks", str(tasks), "--out", str(out), "--check"]) == 0
    tasks.write_text("".join(json.dumps(row) + "\n" for row in [*rows, *rows, rows[0]]))
    assert tt.main(["--tasks", str(tasks), "--out", str(out), "--check"]) == 1
    assert "stale" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.tmp"))


def test_a_malformed_model_is_refused_with_its_name(tmp_path: Path) -> None:
    good = to_arrays(shipped_model())
    assert from_arrays(good) == shipped_model()
    with pytest.raises(ValueError, match=r"m\.npz: format \[2\], expected \[3\]"):
        from_arrays({**good, "format": np.array([2])}, "m.npz")
    with pytest.raises(ValueError, match="missing the 'topic_weights' array"):
        from_arrays({k: v for k, v in good.items() if k != "topic_weights"}, "m.npz")
    with pytest.raises(ValueError, match=r"'layer_classes' must name entries"):
        from_arrays({**good, "layer_classes": np.frombuffer(b"UI", np.uint8)}, "m.npz")
    with pytest.raises(ValueError, match=r"'topic' needs 16 biases and a \d+ x 16 weight matrix"):
        from_arrays({**good, "topic_weights": good["topic_weights"][:, :3]}, "m.npz")
    with pytest.raises(ValueError, match="missing the 'neighbour_topics' array"):
        from_arrays({k: v for k, v in good.items() if k != "neighbour_topics"}, "m.npz")
    for name, bad in (
        ("neighbour_starts", good["neighbour_starts"][:-1]),  # one entry short
        ("neighbour_tasks", good["neighbour_tasks"] + len(good["neighbour_layers"])),  # names no task
        ("neighbour_layers", np.full_like(good["neighbour_layers"], 7)),  # no such layer
        ("neighbour_topics", good["neighbour_topics"][:-1]),  # one task without topics
    ):
        with pytest.raises(ValueError, match=r"m\.npz: the neighbour arrays are inconsistent"):
            from_arrays({**good, name: bad}, "m.npz")
    broken = tmp_path / "broken.npz"
    broken.write_bytes(MODEL_FILE.read_bytes()[:1000])
    with pytest.raises(ValueError, match=r"broken\.npz: not a task model file"):
        read_model(broken)


def test_model_weights_round_trip_exactly_and_refuse_what_int16_cannot_hold() -> None:
    model = tt.train([_task("navbar overlaps the banner", "1-Presentation", "frontend")] * 4)
    assert from_arrays(to_arrays(model)) == model
    huge = tt.TermWeights.from_rows(
        model.layers.classes, model.layers.bias, dict.fromkeys(model.layers.terms, [40.0] * 7)
    )
    with pytest.raises(ValueError, match="beyond"):
        to_arrays(type(model)(huge, model.topics))


def test_sparse_training_is_the_dense_logistic_regression() -> None:
    """The trainer's gathers and segment sums compute the documented full-batch gradient descent."""
    rows = [[0, 2], [1], [], [0, 1, 2], [2], [1, 2]]
    y = np.eye(3)[[0, 1, 2, 0, 2, 1]]
    options = tt.TrainingOptions(steps=40, decimals=9)
    x = np.zeros((len(rows), 3))
    for r, cols in enumerate(rows):
        x[r, cols] = 1.0
    for softmax in (True, False):
        w, b = np.zeros((3, 3)), np.zeros(3)
        for _ in range(options.steps):
            z = x @ w + b
            p = np.exp(z - z.max(axis=1, keepdims=True)) if softmax else 1 / (1 + np.exp(-z))
            p = p / p.sum(axis=1, keepdims=True) if softmax else p
            grad = (p - y) / len(rows)
            w -= options.learning_rate * (x.T @ grad + options.l2 * w)
            b -= options.learning_rate * grad.sum(axis=0)
        got_w, got_b = tt._fit(tt._Features.from_rows(rows), 3, y, options, softmax=softmax)
        assert np.allclose(got_w, w, atol=1e-8) and np.allclose(got_b, b, atol=1e-8)


def test_detection_can_use_a_retrained_model_at_other_weights() -> None:
    tasks = [
        _task("zorblax the quarterly frobnicator", "6-Docs", "documentation"),
        _task("zorblax every frobnicator twice", "6-Docs", "documentation"),
        _task("glimmer the widget palette", "1-Presentation", "frontend"),
        _task("glimmer the widget spacing", "1-Presentation", "frontend"),
    ] * 3
    model = tt.train(tasks)
    assert detect("zorblax it").layer is None
    assert detect("zorblax it", task_model=model).layer == "6-Docs"
    off = DetectionWeights(layer_model=0.0, layer_neighbours=0.0)
    assert detect("zorblax it", task_model=model, weights=off).layer is None


def _write_tasks(path: Path, rows: list[tuple[str, str, str, str]]) -> Path:
    lines = [
        {"task": t, "layer": layer, "topics": [topic], **({"batch": b} if b else {})} for t, layer, topic, b in rows
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_held_out_trains_without_each_batch_and_measures_it(
    bundled_index: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--held-out` measures how detection places a kind of task the model never saw."""
    rows = [
        ("restore the ledger table from backup", "4-Persistence", "database", ""),
        ("the ledger backup job failed", "4-Persistence", "database", ""),
        ("navbar overlaps the banner", "1-Presentation", "frontend", ""),
        ("banner hides the navbar", "1-Presentation", "frontend", ""),
        ("ledger backup is missing rows", "4-Persistence", "database", "ledgers"),
        ("navbar banner flickers", "1-Presentation", "frontend", "ledgers"),
        ("zorblax the frobnicator", "6-Docs", "documentation", "unknown-words"),
    ]
    tasks = tt.load_tasks(_write_tasks(Path(bundled_index).with_name("held.jsonl"), rows * 2))
    assert {t.batch for t in tasks} == {"", "ledgers", "unknown-words"}
    with Index(bundled_index) as index:
        got = tt.held_out(tasks, {"bundled": index}, (DETECTION_WEIGHTS, DetectionWeights(layer_model=4.0)))
    assert [(r.batch, r.tasks) for r in got] == [("ledgers", 4), ("unknown-words", 2)]
    assert got[0].model_alone == 1.0 and got[1].model_alone == 0.0  # words seen in training / never seen
    assert set(got[0].detection) == set(got[0].topics) == {("bundled", "shipped"), ("bundled", "layer_model=4")}
    assert all(0.0 <= v <= 1.0 for r in got for v in [*r.detection.values(), *r.topics.values()])
    assert got[0].topics[("bundled", "shipped")] > 0.0
    path = str(Path(bundled_index).with_name("held.jsonl"))
    argv = ["--tasks", path, "--held-out", "--index", str(bundled_index), "--weights", "topic_neighbours=8"]
    assert tt.main(argv) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == [
        "batch",
        "tasks",
        "model",
        "alone",
        "bundled.ruledex",
        "topic_neighbours=8",
        "layer",
        "bundled.ruledex",
        "topic_neighbours=8",
        "topic",
        "F1",
    ]
    assert table[-1].split()[:3] == ["all", "6", "0.667"]
    assert tt.main([*argv[:-1], "topic_neigbours=8"]) == 2
    assert "unknown weight 'topic_neigbours'" in capsys.readouterr().err
    assert tt.main([*argv[:-1], "layer_model=high"]) == 2
    assert "'layer_model=high' needs a number" in capsys.readouterr().err


def test_held_out_needs_named_batches_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain = _write_tasks(tmp_path / "tasks.jsonl", [("fix the navbar", "1-Presentation", "frontend", "")])
    assert tt.main(["--tasks", str(plain), "--held-out"]) == 2
    assert "no task names its 'batch'" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task": "x", "layer": "5-Tests", "topics": ["testing"], "batch": 3}\n')
    with pytest.raises(ValueError, match=r"bad\.jsonl:1: 'batch' is 3; give the batch's name as a string"):
        tt.load_tasks(bad)


def test_layer_evidence_is_measured_from_the_models_prior() -> None:
    """A training set with more tasks of one layer must not hand that layer to every vague task."""
    model = shipped_model()
    assert len(set(model.layers.bias)) > 1  # the layers' priors differ
    assert all(gain == 0.0 for gain in model.layer_evidence([]).values())
    assert all(gain == 0.0 for gain in model.layer_evidence(["no-such-term-anywhere"]).values())


def _neighbour_tasks() -> list[tt.LabeledTask]:
    """Two kinds of "write" task: docs and containers. Word by word, "write" is a docs word."""
    return [
        _task("write the onboarding guide for the billing service", "6-Docs", "documentation"),
        _task("write a runbook for the billing service", "6-Docs", "documentation"),
        _task("write the readme section on billing", "6-Docs", "documentation"),
        _task("write release notes for billing", "6-Docs", "documentation"),
        _task("write a dockerfile for the worker image", "7-Deployment", "devops"),
        _task("dockerfile for the worker image is too large", "7-Deployment", "devops"),
        _task("the navbar overlaps the banner", "1-Presentation", "frontend"),
        _task("the banner hides the navbar", "1-Presentation", "frontend", "accessibility"),
    ]


def test_neighbours_vote_with_the_layers_and_topics_of_the_nearest_training_tasks() -> None:
    model = tt.train(_neighbour_tasks())
    assert model.neighbours is not None
    found = model.neighbours.evidence(task_terms("write a dockerfile for the worker image")[1], k=2)
    assert max(found.layers, key=found.layers.__getitem__) == "7-Deployment"
    assert found.layers["7-Deployment"] == pytest.approx(1.0 - 2 / 8)  # both neighbours, above the 2-in-8 share
    assert found.layers["6-Docs"] == 0.0 and found.topics["devops"] == pytest.approx(1.0 - 2 / 8)
    assert found.topics["documentation"] == 0.0
    assert model.neighbours.evidence({"zorblax"}) == NO_NEIGHBOURS  # no known term: nothing to say
    assert model.neighbours.evidence(["navbar", "banner"]) == model.neighbours.evidence(("banner", "navbar"))


def test_neighbours_ties_go_to_the_earlier_task() -> None:
    """Equal similarity is broken by the task's position, so an answer never depends on hashing."""
    tasks = [
        _task("rotate the banner", "1-Presentation", "frontend"),
        _task("rotate the ledger", "4-Persistence", "database"),
        _task("banner ledger audit", "6-Docs", "documentation"),
    ] * 2
    model = tt.train(tasks)
    assert model.neighbours is not None
    found = model.neighbours.evidence(task_terms("rotate")[1], k=1)
    assert found.layers["1-Presentation"] > 0.0 and found.layers["4-Persistence"] == 0.0


def test_neighbours_add_their_evidence_but_never_place_a_task_alone() -> None:
    """The nearest tasks' layer and topics gain; with nothing else pointing anywhere, they claim nothing."""
    model = tt.train(_neighbour_tasks() * 2)
    alone = DetectionWeights(layer_model=0.0, topic_model=0.0)
    words_only = DetectionWeights(layer_neighbours=0.0, topic_neighbours=0.0)
    task = "write a dockerfile for the worker"
    before, after = detect(task, task_model=model, weights=words_only), detect(task, task_model=model)
    assert after.layer == "7-Deployment"
    assert after.layer_scores["7-Deployment"] > before.layer_scores["7-Deployment"] + 5.0
    assert after.layer_scores["6-Docs"] == before.layer_scores["6-Docs"]
    assert after.topic_scores["devops"] > before.topic_scores["devops"] + 5.0
    assert detect("it overlaps and hides", task_model=model, weights=alone).layer is None
    assert detect("it overlaps and hides", task_model=model, weights=alone).topics == ()


@pytest.mark.parametrize("task", ["fix it", "hello world", "make it better"])
def test_with_an_index_neighbours_still_add_nothing_to_a_task_with_no_telling_word(
    bundled_index: Path, task: str
) -> None:
    """Retrieval feedback always names some layer; the neighbours must not turn that into a confident guess."""
    off = DetectionWeights(layer_neighbours=0.0, topic_neighbours=0.0)
    with Index(bundled_index) as index:
        first = first_pass(index, task)
        shipped = detect_in_index(index, task, None, first.vector, first.votes(index))
        without = detect_in_index(index, task, None, first.vector, first.votes(index), weights=off)
    assert shipped.layer_scores == without.layer_scores
    assert shipped.confidence == without.confidence < 0.65  # below every strict-layer threshold
