"""What the paths of the edited files say about a task: its layer, topics and technologies.

An assistant that passes ``files`` (the files the user is editing) says where the work happens,
and path conventions are shared across projects: ``tests/test_orders.py`` is a Python test,
``migrations/0012_add_phone.py`` a database migration, ``.github/workflows/ci.yml`` a pipeline,
``app/checkout/page.tsx`` a Next.js page in React and TypeScript. These hints count for every index,
including rules without globs (the bundled ones), where ``files`` would otherwise change nothing.

:data:`PATH_LAYERS` are tried in order and the first that matches a path gives its layer (a test of
a component is a test; a README in ``api/`` is documentation); :data:`EXTENSIONS` and
:data:`FILE_NAMES` name technologies as :mod:`.technologies` spells them. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

from .globs import clean_path, is_absolute
from .technologies import TECHNOLOGIES

PATH_LAYERS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    # (regular expression over the lower-cased path, layer, topics)
    (  # before tests: a CI workflow or compose file named for the tests it runs is deployment work
        r"(^|/)(docker|container)file[^/]*$|\.dockerfile$|(^|/)(docker-)?compose[^/]*\.ya?ml$|(^|/)\.github/workflows/"
        r"|(^|/)\.gitlab-ci\.ya?ml$|(^|/)jenkinsfile$|(^|/)\.circleci/|\.(tf|tfvars|hcl)$"
        r"|(^|/)(k8s|kubernetes|helm|charts|manifests|deploy|deployment|deployments|infra|infrastructure|terraform"
        r"|ansible|\.buildkite)/|(^|/)(procfile|fly\.toml|vercel\.json|netlify\.toml|skaffold\.ya?ml"
        r"|render\.ya?ml|railway\.json|serverless\.ya?ml)$|(^|/)\.env(\.[\w-]+)?$",
        "7-Deployment",
        ("devops",),
    ),
    (
        r"(^|/)(tests?|__tests__|__mocks__|specs?|e2e|cypress|playwright|testing)/|(^|/)test_[^/]+$|(^|/)conftest\.py$"
        r"|[._-](test|tests|spec|e2e|cy)\.\w+$",
        "5-Tests",
        ("testing",),
    ),
    (
        r"\.(md|mdx|rst|adoc)$|(^|/)(docs?|documentation|adr|adrs|wiki)/",
        "6-Docs",
        ("documentation",),
    ),
    (
        r"(^|/)(migrations?|alembic|migrate|db|database|repositories|repository|repos|dao|daos|persistence|prisma|sql"
        r"|models)/|\.(sql|prisma)$|(^|/)(models?|repositor(y|ies)|db|database)\.\w+$"
        r"|[._-](repository|repo|dao|entity|model|migration)\.\w+$",
        "4-Persistence",
        ("database",),
    ),
    (  # a UI file is presentation wherever it sits (SvelteKit's routes/+page.svelte, Remix's app/routes/)
        r"\.(css|scss|sass|less|styl|html?|vue|svelte|astro|jsx|tsx|erb|haml|slim|hbs|handlebars|twig|jinja2?|j2"
        r"|heex|leex|razor|cshtml|xib|storyboard)$|\.component\.(ts|js)$",
        "1-Presentation",
        ("frontend",),
    ),
    (
        r"(^|/)(api|apis|routes|routers?|controllers?|handlers?|endpoints?|middlewares?|resolvers|graphql|rpc"
        r"|webhooks?|jobs|workers?|tasks|consumers|commands|cli)/|(^|/)(views|urls|routes|router|serializers"
        r"|controllers?|handlers?|middleware|resolvers?|api|tasks|jobs|worker)\.\w+$"
        r"|(^|/)(app|main|server)\.(py|ts|js|go|rs|rb|java|kt|php|cs|ex)$"
        r"|[._-](controller|handler|router|routes|resolver|middleware|guard|interceptor|service|dto|api"
        r"|endpoint)\.\w+$|(^|/)route\.(ts|js)$",
        "2-Application",
        ("api", "backend"),
    ),
    (
        r"(^|/)(components?|pages|views|templates|screens|widgets|ui|styles|layouts|frontend|static|assets|hooks"
        r"|composables)/",
        "1-Presentation",
        ("frontend",),
    ),
    (
        r"(^|/)(domain|domains|entities|aggregates|value_?objects|business)/",
        "3-Domain",
        (),
    ),
    (
        r"(^|/)(services?|usecases?|use_cases|application|app/services)/",
        "2-Application",
        ("backend",),
    ),
)
"""Where a file sits, in the order tried: the first match gives the path's layer and topics."""

EXTENSIONS: dict[str, tuple[str, ...]] = {
    "py": ("python",),
    "pyi": ("python",),
    "ipynb": ("python",),
    "ts": ("typescript",),
    "mts": ("typescript",),
    "cts": ("typescript",),
    "tsx": ("typescript", "react"),
    "js": ("javascript",),
    "mjs": ("javascript",),
    "cjs": ("javascript",),
    "jsx": ("javascript", "react"),
    "vue": ("vue",),
    "svelte": ("svelte",),
    "astro": ("astro",),
    "go": ("go",),
    "rs": ("rust",),
    "rb": ("ruby",),
    "erb": ("ruby", "rails"),
    "php": ("php",),
    "java": ("java",),
    "kt": ("kotlin",),
    "kts": ("kotlin",),
    "swift": ("swift",),
    "dart": ("dart",),
    "cs": ("c#",),
    "cshtml": ("c#", "asp.net"),
    "razor": ("c#", "asp.net"),
    "ex": ("elixir",),
    "exs": ("elixir",),
    "heex": ("elixir", "phoenix"),
    "scala": ("scala",),
    "cpp": ("c++",),
    "cc": ("c++",),
    "cxx": ("c++",),
    "hpp": ("c++",),
    "sol": ("solidity",),
    "tf": ("terraform",),
    "tfvars": ("terraform",),
    "prisma": ("prisma",),
    "graphql": ("graphql",),
    "gql": ("graphql",),
    "proto": ("grpc",),
}
"""A file's extension -> the technologies it is written in."""

FILE_NAMES: dict[str, tuple[str, ...]] = {
    "dockerfile": ("docker",),
    "docker-compose.yml": ("docker",),
    "docker-compose.yaml": ("docker",),
    "compose.yml": ("docker",),
    "compose.yaml": ("docker",),
    "cargo.toml": ("rust",),
    "go.mod": ("go",),
    "gemfile": ("ruby",),
    "package.json": ("javascript",),
    "tsconfig.json": ("typescript",),
    "pyproject.toml": ("python",),
    "requirements.txt": ("python",),
    "manage.py": ("python", "django"),
    "urls.py": ("python", "django"),
    "alembic.ini": ("alembic",),
    "conftest.py": ("python", "pytest"),
    "pytest.ini": ("pytest",),
    "composer.json": ("php",),
    "artisan": ("php", "laravel"),
    "pubspec.yaml": ("dart", "flutter"),
    "pom.xml": ("java",),
    "build.gradle": ("java",),
    "build.gradle.kts": ("kotlin",),
    "mix.exs": ("elixir",),
    "next.config.js": ("nextjs",),
    "next.config.mjs": ("nextjs",),
    "next.config.ts": ("nextjs",),
    "nuxt.config.ts": ("nuxt",),
    "nuxt.config.js": ("nuxt",),
    "angular.json": ("angular",),
    "svelte.config.js": ("svelte",),
    "astro.config.mjs": ("astro",),
    "vite.config.ts": ("vite",),
    "vite.config.js": ("vite",),
    "tailwind.config.js": ("tailwind",),
    "tailwind.config.ts": ("tailwind",),
    "jest.config.js": ("jest",),
    "jest.config.ts": ("jest",),
    "vitest.config.ts": ("vitest",),
    "playwright.config.ts": ("playwright",),
    "cypress.config.ts": ("cypress",),
    "chart.yaml": ("helm",),
    "values.yaml": ("helm",),
    "schema.prisma": ("prisma",),
}
"""A file's whole name -> the technologies it belongs to (manifests and framework configs)."""

FOLDER_TECHNOLOGIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"(^|/)\.github/workflows/", ("github-actions",)),
    (r"(^|/)app/(.+/)?(page|layout|loading|error|route)\.(tsx|ts|jsx|js)$", ("nextjs",)),
    (r"\.blade\.php$", ("laravel",)),
    (r"\.component\.(ts|html)$", ("angular",)),
    (r"(^|/)(templates|helm)/.+\.ya?ml$", ("helm",)),
)
"""Path shapes that name a framework (Next.js's app router, Blade templates, Angular components)."""

PATH_VOTE = 6.0
"""Layer votes of the edited files' paths (shared among them); their topics get half. Chosen by
``ruledex eval --files`` on the even lines of both labeled sets, with the files a developer would
have open (``tests/data/files_*.jsonl``): 0 / 3 / 6 / 9 / 12 give nDCG@10 0.856 / 0.866 / 0.868 /
0.866 / 0.868 (bundled) and 0.905 / 0.909 / 0.913 / 0.914 / 0.914 (Cursor corpus); 6 is the one
at which neither set loses layer accuracy (docs/relevance.md)."""


@dataclass(frozen=True)
class PathEvidence:
    """What the edited files say: layer and topic votes, and the technologies they are written in."""

    layers: dict[str, float] = field(default_factory=dict)
    topics: dict[str, float] = field(default_factory=dict)
    technologies: tuple[str, ...] = ()


_RANK = {name: i for i, name in enumerate(TECHNOLOGIES)}
_PATH_LAYERS = tuple((re.compile(pattern), layer, topics) for pattern, layer, topics in PATH_LAYERS)
_SHAPES = tuple((re.compile(pattern), names) for pattern, names in FOLDER_TECHNOLOGIES)
CLASS_NAMES: tuple[tuple[re.Pattern[str], str, tuple[str, ...]], ...] = (
    (re.compile(r"[a-z0-9](Tests?|Spec|IT)\.(cs|java|kt|swift|scala|php|dart|groovy)$"), "5-Tests", ("testing",)),
    (re.compile(r"[a-z0-9](Repository|Dao|Entity|Mapper)\.(cs|java|kt|scala|php)$"), "4-Persistence", ("database",)),
    (
        re.compile(r"[a-z0-9](Controller|Resource|Endpoint|Handler|Service)\.(cs|java|kt|scala|php)$"),
        "2-Application",
        ("api", "backend"),
    ),
)
"""Class-per-file languages name a file by its role (``OrderServiceTest.java``, ``OrderRepository.kt``,
``OrdersController.cs``): read as written, since lower-cased ``latest.go`` would match ``Test`` too.
Tried before :data:`PATH_LAYERS`."""


ABSOLUTE_TAIL = 4
"""Of an absolute path, only the file and its three nearest folders are read: where the repository
starts is unknown, and ``/Users/test/shop/...`` must not read as a test."""


def normalise(path: str) -> str:
    """Lower case, forward slashes, no leading ``./``; an absolute path cut to its last :data:`ABSOLUTE_TAIL` parts."""
    out = clean_path(path).lower()
    if is_absolute(out):
        out = "/".join(part for part in out.split("/") if part)
        out = "/".join(out.split("/")[-ABSOLUTE_TAIL:])
    return out.lstrip("/")


@lru_cache(maxsize=1024)
def path_hint(path: str) -> tuple[str | None, tuple[str, ...], tuple[str, ...]]:
    """(layer, topics, technologies) of one path; layer None when no convention places it."""
    clean = normalise(path)
    name = clean.rsplit("/", 1)[-1]
    techs = set(FILE_NAMES.get(name, ()))
    if name.startswith(("dockerfile", "docker-compose")) or name.endswith(".dockerfile"):  # Dockerfile.prod
        techs.add("docker")
    if "." in name:
        techs.update(EXTENSIONS.get(name.rsplit(".", 1)[-1], ()))
    for pattern, names in _SHAPES:
        if pattern.search(clean):
            techs.update(names)
    ordered = tuple(sorted(techs, key=_RANK.__getitem__))
    for pattern, layer, topics in CLASS_NAMES:
        if pattern.search(path.strip()):
            return layer, topics, ordered
    for pattern, layer, topics in _PATH_LAYERS:
        if pattern.search(clean):
            return layer, topics, ordered
    return None, (), ordered


def path_evidence(paths: Iterable[str], vote: float = PATH_VOTE) -> PathEvidence:
    """Votes and technologies of the edited files; each file's vote is shared by all of them."""
    unique: dict[str, str] = {}
    for p in paths:  # the same file once, however it is written (./a, a, a\\b); read as written
        unique.setdefault(normalise(p), p)
    hints = [path_hint(p) for p in unique.values()]
    placed = [h for h in hints if h[0] is not None]
    layers: dict[str, float] = {}
    topics: dict[str, float] = {}
    for layer, names, _ in placed:
        share = vote / len(placed)
        layers[layer] = layers.get(layer, 0.0) + share
        for name in names:
            topics[name] = topics.get(name, 0.0) + share / 2
    techs = {t for _, _, found in hints for t in found}
    return PathEvidence(layers, topics, tuple(sorted(techs, key=_RANK.__getitem__)))


MENTION_EXTENSIONS = frozenset(EXTENSIONS) | {
    "css", "scss", "sass", "less", "html", "htm", "md", "mdx", "rst", "sql", "yml", "yaml", "json", "toml", "ini",
    "sh", "lock", "gradle", "xml", "feature",
}  # fmt: skip
"""Extensions that make a word of a task a file name ("the crash in checkout/page.tsx")."""

LIBRARY_NAMES = frozenset({
    "next", "node", "vue", "react", "express", "nest", "nuxt", "chart", "three", "d3", "ember", "alpine", "backbone",
    "p5", "anime", "solid", "preact", "angular", "knockout", "moment", "day", "lodash", "underscore", "jquery", "pixi",
    "babylon", "phaser", "electron", "meteor", "deno", "bun",
})  # fmt: skip
"""Names written like files that are libraries ("Next.js", "Chart.js"): never read as a file."""

MAX_NAMED = 20
"""At most this many files named in a task are read (a pasted file listing says no more than its first)."""

_TOKEN = re.compile(r"[^\s`'\"<>,;|*{}]+")
_MAYBE_FILE = re.compile(r"\.\w|" + "|".join(re.escape(n) for n in sorted(FILE_NAMES) if "." not in n), re.IGNORECASE)
"""A dot before a letter, or a file name without one: most tasks have neither, and skip the tokenizing."""


def named_files(task: str, given: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The file paths a task's text names, in order, leaving out those already ``given``.

    "Fix the crash in app/products/[id]/page.tsx" names a file the user is about to edit, so it counts
    as an edited file. A word is a file when it ends in a known extension (:data:`MENTION_EXTENSIONS`)
    or is a known file name (:data:`FILE_NAMES`, ``Dockerfile.prod``); a pytest node id names its file.
    URLs, npm scopes, library names written like files ("Next.js") and words with nothing before the
    dot (``.env``) are not. Chosen on the even lines of the labeled sets: the Cursor corpus gains
    (0.888 -> 0.890 nDCG@10, layer accuracy 0.884 -> 0.899), the bundled set is unchanged; on 120
    fresh tasks that each name a file, 0.877 -> 0.894 (docs/relevance.md).
    """
    if not _MAYBE_FILE.search(task):
        return ()
    found: dict[str, None] = {}
    for token in _TOKEN.findall(task):
        token = token.split("::", 1)[0].strip(".:!?()")  # a pytest node id names its file: tests/test_x.py::test_y
        if not token or "://" in token or token.startswith("@") or token in given:
            continue
        name = token.rsplit("/", 1)[-1].lower()
        stem, dot, ext = name.rpartition(".")
        known = name in FILE_NAMES or name.startswith(("dockerfile", "docker-compose"))
        if not known and not (dot and stem and ext in MENTION_EXTENSIONS):
            continue
        if "/" not in token and ext == "js" and stem in LIBRARY_NAMES:
            continue
        found.setdefault(token, None)
    return tuple(found)[:MAX_NAMED]


@dataclass(frozen=True)
class EditedFiles:
    """The files a request is about: those given (``options.files``), then those its text names."""

    given: tuple[str, ...]
    named: tuple[str, ...]
    evidence: PathEvidence | None
    """What their paths say (None without any file)."""

    @property
    def files(self) -> tuple[str, ...]:
        """Given, then named."""
        return self.given + self.named

    def notes(self) -> list[str]:
        """The diagnostics note that says which files the text named (none when it named none)."""
        return [f"files named in the text, read as edited files: {', '.join(self.named)}"] if self.named else []


def edited_files(text: str, given: tuple[str, ...] = ()) -> EditedFiles:
    """The files a task or text edits, and their path evidence: one reading for query, detect and the tools."""
    named = named_files(text, given)
    files = given + named
    return EditedFiles(given, named, path_evidence(files) if files else None)
