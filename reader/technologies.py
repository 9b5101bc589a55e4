"""Which technologies a text names: languages, frameworks, libraries, stores, platforms and tools.

Detection reports them for a task, the builder for a rule (from its title and description), and
ranking compares the two through their stacks (:mod:`.stacks`). A name is a whole word ("react",
"tokio") or, when it holds a symbol, a dot or a space, a substring ("c#", "next.js", "react native").
Names that are everyday words count only where the text uses them as names. Pure.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Iterable

from .stacks import LIBRARIES, PARENTS, stack_of
from .text import words as word_list

TECHNOLOGIES: tuple[str, ...] = (
    "python",
    "typescript",
    "javascript",
    "java",
    "kotlin",
    "go",
    "golang",
    "rust",
    "ruby",
    "php",
    "c#",
    "c++",
    "swift",
    "react",
    "vue",
    "svelte",
    "angular",
    "nextjs",
    "next.js",
    "django",
    "flask",
    "fastapi",
    "express",
    "nestjs",
    "spring",
    "rails",
    "laravel",
    "node",
    "nodejs",
    "postgres",
    "postgresql",
    "mysql",
    "sqlite",
    "mongodb",
    "redis",
    "kafka",
    "rabbitmq",
    "graphql",
    "grpc",
    "docker",
    "kubernetes",
    "k8s",
    "helm",
    "terraform",
    "aws",
    "gcp",
    "azure",
    "github-actions",
    "pytest",
    "jest",
    "vitest",
    "cypress",
    "playwright",
    "tailwind",
    "prisma",
    "sqlalchemy",
    "alembic",
    "celery",
    "openapi",
    # beyond the mainstream web stack: more languages, UI kits, frameworks, stores, data and ML
    # tools, platforms and test tools that tasks name by name
    "scala",
    "elixir",
    "r",
    "dart",
    "solidity",
    "nuxt",
    "remix",
    "astro",
    "htmx",
    "redux",
    "zustand",
    "pinia",
    "tanstack",
    "apollo",
    "flutter",
    "swiftui",
    "jetpack",
    "react-native",
    "react native",
    "spring boot",
    "jetpack compose",
    "expo",
    "vite",
    "webpack",
    "storybook",
    "fastify",
    "gin",
    "actix",
    "axum",
    "ktor",
    "phoenix",
    "quarkus",
    "asp.net",
    "dotnet",
    "deno",
    "supabase",
    "firebase",
    "firestore",
    "dynamodb",
    "cassandra",
    "elasticsearch",
    "snowflake",
    "bigquery",
    "clickhouse",
    "duckdb",
    "typeorm",
    "sequelize",
    "mongoose",
    "drizzle",
    "hibernate",
    "jpa",
    "pytorch",
    "tensorflow",
    "keras",
    "scikit-learn",
    "pandas",
    "numpy",
    "spark",
    "pyspark",
    "airflow",
    "dbt",
    "langchain",
    "ansible",
    "pulumi",
    "vercel",
    "netlify",
    "heroku",
    "cloudflare",
    "nginx",
    "istio",
    "knative",
    "argocd",
    "jenkins",
    "gitlab",
    "selenium",
    "mocha",
    "rspec",
    "junit",
    "testcontainers",
    *LIBRARIES,  # the libraries and tools of each ecosystem, with their stacks (reader/stacks.py)
)
"""Every technology detection can name; the order is the order it reports them in."""

AMBIGUOUS_TECHNOLOGIES = frozenset(
    {"go", "node", "spring", "express", "expo", "spark", "rails", "gin", "apollo", "dart", "swift", "rust", "mocha"}
    | {"jest", "drizzle", "remix", "phoenix", "helm"}
    | {"electron", "rollup", "yarn", "stimulus", "hypothesis", "prefect", "poetry", "cats", "echo", "fiber", "chi"}
    | {"cobra", "diesel", "clap", "criterion", "rocket", "warp", "eloquent", "renovate", "bevy", "yew", "livewire"}
    | {"chai"}
)
"""Technology names that are also everyday words ("go out to Kafka", "the node ran out of memory"):
they name the technology only when written with a capital, as a file extension ("main.go"), or beside
another technology of their stack ("Elixir phoenix")."""


def _as_names(found: set[str], text: str) -> set[str]:
    """``found`` without the everyday words among them that ``text`` does not use as names."""
    kept = found - AMBIGUOUS_TECHNOLOGIES
    for tech in found & AMBIGUOUS_TECHNOLOGIES:
        word = re.escape(tech)
        capitalised = any(m.group(0) != tech for m in re.finditer(rf"(?<![\w-]){word}(?![\w-])", text, re.IGNORECASE))
        named = capitalised or re.search(rf"\.{word}\b", text, re.IGNORECASE) is not None  # main.go, .go files
        others = stack_of(found - {tech})
        if named or tech in others or not others.isdisjoint(PARENTS.get(tech, ())):
            kept.add(tech)
    return kept


_RANK = {name: i for i, name in enumerate(TECHNOLOGIES)}
_SYMBOLS = tuple(t for t in TECHNOLOGIES if not t.isalnum())
"""Technologies with a symbol, a dot or a space (c#, node.js, react native): found in the text as written."""


WRITTEN_NAMES: dict[str, tuple[str, re.Pattern[str]]] = {
    # technology: (the letters it is written with, a cheap test first; the pattern that decides)
    "r": ("R", re.compile(r"(?<![\w./&'-])R(?![\w/&'-])")),
    "typescript": ("TS", re.compile(r"(?<![\w./&'-])TS(?![\w/&'-])")),
    "javascript": ("JS", re.compile(r"(?<![\w./&'-])JS(?![\w/&'-])")),
    "dotnet": (".NET", re.compile(r"(?<![\w.])\.NET\b")),
    "nestjs": ("Nest", re.compile(r"(?<![.!?]\s)(?<=\s)Nest(?![\w/&'-])")),
}
"""Names found only as written, case and all: one letter, which the word tokenizer drops ("our R
scripts", not "R&D" or "r u sure"); short forms ("a TS type", "the JS bundle", "the .NET API", "our
Nest app", but not "ts" or "nest the routes" or a sentence that opens with "Nest")."""


API_NAMES: dict[str, tuple[str, ...]] = {
    # JavaScript and TypeScript
    "javascript": ("console.log", "addEventListener", "querySelector", "JSON.stringify", "localStorage"),
    "typescript": ("tsconfig", "keyof", "noImplicitAny", "strictNullChecks", "@ts-ignore", "@ts-expect-error", ".d.ts"),
    "react": (
        "useEffect",
        "useLayoutEffect",
        "useMemo",
        "useCallback",
        "useReducer",
        "useRef",
        "useSyncExternalStore",
        "componentDidMount",
        "componentWillUnmount",
        "dangerouslySetInnerHTML",
    ),
    "nextjs": (
        "getServerSideProps",
        "getStaticProps",
        "generateStaticParams",
        "generateMetadata",
        "NextResponse",
        "NextRequest",
        "usePathname",
        "revalidatePath",
        "revalidateTag",
        "next/navigation",
        "next/image",
    ),
    "react-native": (
        "FlatList",
        "SectionList",
        "TouchableOpacity",
        "SafeAreaView",
        "KeyboardAvoidingView",
        "AsyncStorage",
    ),
    "expo": ("expo-router", "npx expo", "EAS Build", "eas.json"),
    "redux": ("createSlice", "configureStore", "createAsyncThunk", "useSelector", "useDispatch", "mapStateToProps"),
    "zustand": ("useShallow",),
    "tanstack": ("useQueryClient", "QueryClient", "QueryClientProvider", "invalidateQueries", "queryKey", "queryFn"),
    "apollo": ("ApolloClient", "ApolloProvider", "InMemoryCache"),
    "graphql": ("typeDefs", "__typename"),
    "vue": (
        "defineProps",
        "defineEmits",
        "defineModel",
        "defineExpose",
        "<script setup>",
        "v-model",
        "v-if",
        "v-for",
        "watchEffect",
        "onMounted",
        "onUnmounted",
        "shallowRef",
        "toRefs",
    ),
    "nuxt": (
        "useAsyncData",
        "defineNuxtConfig",
        "useRuntimeConfig",
        "defineEventHandler",
        "navigateTo",
        "definePageMeta",
        "NuxtLink",
        "useNuxtApp",
    ),
    "pinia": ("defineStore", "storeToRefs", "mapStores", "acceptHMRUpdate"),
    "svelte": ("$state", "$derived", "$effect", "$bindable", "$inspect"),
    "sveltekit": ("+page.server.ts", "+layout.server.ts", "+page.ts", "+layout.svelte", "+page.svelte"),
    "angular": (
        "ngOnInit",
        "ngOnDestroy",
        "ngOnChanges",
        "ngAfterViewInit",
        "ngFor",
        "ngIf",
        "ngModel",
        "@NgModule",
        "@ViewChild",
        "@HostListener",
        "providedIn",
        "ActivatedRoute",
        "ChangeDetectionStrategy",
        "ng serve",
    ),
    "astro": ("client:load", "client:visible", "client:idle", "defineCollection", "getCollection"),
    "htmx": ("hx-get", "hx-post", "hx-target", "hx-swap", "hx-trigger", "hx-boost", "HX-Request"),
    "node": ("__dirname", "process.nextTick", "child_process", "worker_threads", "fs.readFileSync"),
    "express": ("express.Router", "express.json", "express.static", "express.urlencoded"),
    "nestjs": ("NestFactory", "@UseGuards", "@UseInterceptors", "@InjectRepository", "ValidationPipe"),
    "prisma": ("PrismaClient", "findUnique", "@relation"),
    "drizzle": ("drizzle-kit", "pgTable", "sqliteTable", "mysqlTable"),
    "jest": ("jest.mock", "jest.fn", "jest.spyOn", "jest.useFakeTimers"),
    "vitest": ("vi.mock", "vi.fn", "vi.spyOn", "vi.useFakeTimers"),
    "cypress": (
        "cy.intercept",
        "cy.get",
        "cy.visit",
        "cy.wait",
        "cy.request",
        "cy.contains",
        "cy.fixture",
        "cy.session",
    ),
    "playwright": ("page.getByRole", "page.route", "toHaveScreenshot", "toHaveURL", "test.describe", "storageState"),
    "storybook": ("StoryObj", "argTypes", ".stories."),
    "vite": ("import.meta.env", "import.meta.glob"),
    "tailwind": ("@apply", "twMerge"),
    # Python
    "python": (
        "__init__",
        "__name__",
        "pip install",
        "asyncio",
        "@dataclass",
        "AttributeError",
        "ModuleNotFoundError",
        "ImportError",
        "Traceback (most recent call last)",
    ),
    "django": (
        "select_related",
        "prefetch_related",
        "get_object_or_404",
        "makemigrations",
        "ModelForm",
        "INSTALLED_APPS",
        "APIView",
        "ModelSerializer",
        "JsonResponse",
        "on_delete",
        "get_queryset",
        "runserver",
        "collectstatic",
    ),
    "flask": ("@app.route", "render_template", "before_request", "jsonify", "current_app"),
    "fastapi": ("Depends(", "APIRouter", "response_model", "BackgroundTasks", "@router.get", "@router.post"),
    "pydantic": ("field_validator", "model_validator", "model_dump", "ConfigDict", "BaseSettings"),
    "pytest": ("monkeypatch", "capsys", "caplog"),
    "sqlalchemy": (
        "sessionmaker",
        "declarative_base",
        "DeclarativeBase",
        "mapped_column",
        "selectinload",
        "joinedload",
        "create_engine",
    ),
    "alembic": ("op.add_column", "op.create_table"),
    "celery": ("@shared_task", "apply_async"),
    "pandas": ("pd.read_csv", "pd.DataFrame", "pd.merge", "pd.concat", ".iloc", ".loc[", "SettingWithCopyWarning"),
    "numpy": ("np.array", "np.zeros", "ndarray", "np.where", "np.random", "np.linalg"),
    "scikit-learn": (
        "sklearn",
        "train_test_split",
        "GridSearchCV",
        "cross_val_score",
        "fit_transform",
        "predict_proba",
    ),
    "pytorch": ("torch", "nn.Module", "nn.Linear", "state_dict", "zero_grad", "no_grad", "autograd"),
    "tensorflow": ("tf.function", "tf.data", "tf.Tensor", "tf.Variable", "GradientTape", "SavedModel", "TFLite"),
    "spark": ("SparkSession", "SparkContext", "spark-submit", "withColumn", "RDD"),
    "pyspark": ("F.col",),
    "airflow": ("PythonOperator", "BashOperator", "XCom", "xcom_push", "xcom_pull", "schedule_interval"),
    "dbt": ("{{ ref(", "{{ source(", "{{ config("),
    "langchain": ("ChatOpenAI", "RunnablePassthrough", "StrOutputParser", "LCEL", "LangGraph", "AgentExecutor"),
    "selenium": ("find_element", "WebDriverWait", "By.XPATH", "By.CSS_SELECTOR"),
    # the JVM
    "java": ("NullPointerException", "@Override", "System.out.println", "public static void main", "CompletableFuture"),
    "spring": (
        "@Autowired",
        "@RestController",
        "@GetMapping",
        "@PostMapping",
        "@RequestMapping",
        "@SpringBootApplication",
        "@Bean",
        "@Configuration",
        "@PathVariable",
        "@RequestBody",
        "ResponseEntity",
        "JpaRepository",
        "SecurityFilterChain",
        "@SpringBootTest",
        "@MockBean",
    ),
    "jpa": ("@GeneratedValue", "@PersistenceContext"),
    "hibernate": ("LazyInitializationException",),
    "junit": ("@BeforeEach", "@AfterEach", "@ParameterizedTest", "@DisplayName", "@ExtendWith", "assertThrows"),
    "mockito": ("@InjectMocks", "@Mock"),
    "testcontainers": ("PostgreSQLContainer",),
    "kotlin": ("suspend fun", "lateinit", "companion object", "runBlocking", "viewModelScope", "MutableStateFlow"),
    "jetpack compose": (
        "@Composable",
        "LaunchedEffect",
        "DisposableEffect",
        "rememberSaveable",
        "mutableStateOf",
        "derivedStateOf",
        "LazyColumn",
        "LazyRow",
        "collectAsState",
        "collectAsStateWithLifecycle",
        "MaterialTheme",
        "hiltViewModel",
    ),
    "ktor": ("embeddedServer", "call.respond", "call.respondText", "call.receive"),
    "scala": ("case class", "build.sbt", "sbt", "implicit def"),
    "kafka": ("KafkaConsumer", "KafkaProducer", "KafkaTemplate", "@KafkaListener", "ConsumerRecord"),
    # other languages and their frameworks
    "go": (
        "goroutine",
        "context.Context",
        "http.HandlerFunc",
        "ServeMux",
        "WaitGroup",
        "gofmt",
        "golangci-lint",
        "err != nil",
        "fmt.Errorf",
        "errors.Is",
        "errgroup",
    ),
    "gin": ("gin.Context", "gin.Default", "gin.H"),
    "echo": ("echo.Context",),
    "fiber": ("fiber.Ctx",),
    "chi": ("chi.NewRouter",),
    "rust": (
        "Cargo.lock",
        "cargo clippy",
        "cargo build",
        "cargo test",
        "clippy",
        ".unwrap()",
        "#[derive",
        "Box<dyn",
        "&mut self",
        "borrow checker",
    ),
    "ruby": ("bundle exec", "attr_accessor", "RuboCop", "gem install"),
    "rails": (
        "ActiveRecord",
        "ActiveJob",
        "ActionCable",
        "ActiveSupport",
        "before_action",
        "ApplicationController",
        "params.require",
    ),
    "rspec": ("let(:", "to eq(", "to receive("),
    "php": ("<?php", "$this->", "PHPStan", "declare(strict_types=1)"),
    "laravel": ("php artisan", "$fillable", "Schema::create", "Route::get", "Route::post", "Illuminate\\"),
    "livewire": ("wire:model",),
    "c#": ("IEnumerable", "LINQ", "ILogger<"),
    "asp.net": ("[HttpGet]", "[HttpPost]", "IActionResult", "appsettings.json"),
    "dotnet": (".csproj", "NuGet", "IServiceCollection"),
    "entity framework": ("DbContext",),
    "swift": ("guard let", "@MainActor", "DispatchQueue", "URLSession", "Codable", "@escaping", "Xcode"),
    "swiftui": (
        "onAppear",
        "onDisappear",
        "@State",
        "@Binding",
        "@StateObject",
        "@ObservedObject",
        "@EnvironmentObject",
        "ZStack",
        "LazyVStack",
        "NavigationStack",
    ),
    "flutter": (
        "StatelessWidget",
        "StatefulWidget",
        "BuildContext",
        "initState",
        "didChangeDependencies",
        "MaterialApp",
        "ListView.builder",
        "FutureBuilder",
        "StreamBuilder",
        "ChangeNotifier",
        "BlocProvider",
        "MediaQuery.of",
        "Navigator.push",
        "TextEditingController",
    ),
    "riverpod": ("ConsumerWidget",),
    "elixir": ("GenServer", "defmodule", "iex", "Plug.Conn"),
    "phoenix": ("phx.server", "phx-click"),
    "c++": (
        "std::vector",
        "std::unique_ptr",
        "std::shared_ptr",
        "std::move",
        "unique_ptr",
        "shared_ptr",
        "nullptr",
        "constexpr",
    ),
    "r": ("data.frame", "tibble", "Rscript", "CRAN", "testthat", "renv", "roxygen2", "purrr", "ggplot("),
    "solidity": (
        "msg.sender",
        "msg.value",
        "tx.origin",
        "block.timestamp",
        "onlyOwner",
        "uint256",
        "mapping(address",
        "delegatecall",
        "ERC20",
        "ERC721",
        "OpenZeppelin",
        "forge test",
        "foundry.toml",
        "hardhat",
    ),
    # stores, platforms and tools
    "postgres": (
        "jsonb",
        "psql",
        "pg_dump",
        "pg_stat_statements",
        "tsvector",
        "pg_trgm",
        "pgbouncer",
        "INDEX CONCURRENTLY",
    ),
    "mongodb": ("ObjectId", "insertOne", "updateOne", "$lookup"),
    "redis": ("ioredis", "ZADD", "HGETALL", "SETNX", "LPUSH", "XADD"),
    "snowflake": ("Snowpark", "SnowSQL", "Snowpipe", "LATERAL FLATTEN"),
    "firestore": ("getDoc", "getDocs", "setDoc", "addDoc", "serverTimestamp"),
    "firebase": ("onAuthStateChanged",),
    "supabase": ("auth.uid()", "createServerClient", "createBrowserClient"),
    "docker": (".dockerignore", "HEALTHCHECK"),
    "kubernetes": (
        "kubectl",
        "ConfigMap",
        "StatefulSet",
        "DaemonSet",
        "PersistentVolumeClaim",
        "HorizontalPodAutoscaler",
        "CrashLoopBackOff",
        "ImagePullBackOff",
        "livenessProbe",
        "readinessProbe",
        "kustomize",
    ),
    "istio": ("VirtualService", "DestinationRule", "istioctl"),
    "terraform": ("tfstate", "tflint"),
    "aws": ("S3", "EC2", "SQS", "boto3", "CloudFormation", "CloudWatch", "Fargate", "EKS"),
    "gcp": ("gcloud", "GKE", "Cloud Run"),
    "azure": ("AKS", "Cosmos DB"),
    "github-actions": ("runs-on", "actions/checkout", "workflow_dispatch", "GITHUB_TOKEN"),
    "nginx": ("proxy_pass", "server_name", "proxy_set_header", "worker_connections"),
}
"""Technology -> API identifiers that name it, written as its code writes them: "useEffect runs
twice" is React work, "@Autowired field is null" Spring work, "cy.intercept never matches" Cypress
work, though none names the technology. Each is used by essentially one ecosystem (``setState``,
React and Flutter, and ``@Controller``, NestJS and Spring, are left out), is matched case and all
as a whole identifier (a plural "s" allowed), and names its technology even where the name itself
is an everyday word (``jest.mock``, ``gin.Context``). Files of a known name are :mod:`.paths`'."""


@functools.cache
def _api_pattern(identifier: str) -> re.Pattern[str]:
    """``identifier`` standing alone, so ``torch`` is not found in ``pytorch``.

    Nor ``$state`` in ``store.$state`` or ``@Mock`` in ``@MockBean``; a plural "s" is allowed (``goroutines``).
    Compiled on first use: compiling all of them would add ~20 ms to every ``ruledex query`` process.
    """
    head = r"(?<![\w$@.])" if identifier[0].isalnum() or identifier[0] in "_$@" else ""
    tail = r"s?(?!\w)" if identifier[-1].isalpha() else r"(?!\w)" if identifier[-1].isalnum() else ""
    return re.compile(head + re.escape(identifier) + tail)


def _anchor(identifier: str) -> str:
    """The longest lower-cased word of ``identifier``: a task that uses it has that word among its words."""
    return max(word_list(identifier), key=len)


_API_BY_ANCHOR: dict[str, tuple[tuple[str, str], ...]] = {}
for _tech, _identifiers in API_NAMES.items():
    for _identifier in _identifiers:
        _entry = (_identifier, _tech)
        _base = _anchor(_identifier)
        for _word in (_base, _base + "s"):  # "goroutines" holds "goroutine"
            _API_BY_ANCHOR[_word] = (*_API_BY_ANCHOR.get(_word, ()), _entry)
_API_ANCHORS = frozenset(_API_BY_ANCHOR)
"""A word of the task -> the identifiers that hold it: the cheap test first (a set lookup per word),
then a substring test, then the pattern, only for identifiers whose word the task has."""


def api_technologies(text: str, words: Iterable[str]) -> set[str]:
    """The technologies whose API identifiers (:data:`API_NAMES`) ``text`` uses."""
    found: set[str] = set()
    for anchor in _API_ANCHORS.intersection(words):
        for identifier, tech in _API_BY_ANCHOR[anchor]:
            if tech not in found and identifier in text and _api_pattern(identifier).search(text):
                found.add(tech)
    return found


def named_technologies(text: str, words: Collection[str], apis: set[str] | None = None) -> tuple[str, ...]:
    """The technologies ``text`` (whose lower-cased ``words`` are given) names, in :data:`TECHNOLOGIES` order.

    A technology an API identifier names stays named though its name is an everyday word, and
    confirms the everyday words of its stack ("the go handler's gin.Context"). ``apis``: what
    :func:`api_technologies` already found in ``text`` (detection needs it earlier; not found twice).
    """
    lowered = text.lower()
    found = {w for w in words if w in _RANK} | {t for t in _SYMBOLS if t in lowered}
    found |= {name for name, (letters, pattern) in WRITTEN_NAMES.items() if letters in text and pattern.search(text)}
    apis = api_technologies(text, words) if apis is None else apis
    found |= apis
    if not found.isdisjoint(AMBIGUOUS_TECHNOLOGIES):
        found = _as_names(found, text) | apis
    return tuple(sorted(found, key=_RANK.__getitem__))
