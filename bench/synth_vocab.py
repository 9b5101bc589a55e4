"""Vocabulary of the synthetic rule generator: per-topic nouns, verbs, places, reasons and sections.

Drawn from the bundled rules' own language (rules/*.md) so synthetic directives read like real
ones and the keyword and embedding indexes see a realistic mix of common and rare terms. Each
entry is a ``|``-separated string to keep the table compact; :func:`split` turns it into a tuple.
"""

from __future__ import annotations


def split(text: str) -> tuple[str, ...]:
    """``"a | b | c"`` -> ``("a", "b", "c")`` (whitespace trimmed, empties dropped)."""
    return tuple(part.strip() for part in text.split("|") if part.strip())


# Each topic: layers it usually belongs to, sections, nouns (what a directive is about), verbs
# (what to do), places (where), reasons (why), techs, situations (when_to_apply) and tasks.
TOPIC_DATA: dict[str, dict[str, str]] = {
    "security": {
        "layers": "2-Application | 3-Domain | *",
        "sections": "Input validation | Authentication and passwords | Secrets | Sessions and tokens | Authorization | Transport security | Dependency hygiene",
        "nouns": "request body | query parameter | session cookie | API key | password hash | access token | refresh token | CSRF token | OAuth scope | role check | permission boundary | secret | TLS certificate | signing key | webhook signature | upload filename | redirect URL | SQL parameter | JWT claim | rate limit",
        "verbs": "validate | reject | rotate | hash | encrypt | sign | verify | revoke | sanitise | escape | scope | audit",
        "places": "at the API boundary | in the authentication middleware | before it reaches the domain layer | in every request handler | in the secret manager | at the load balancer | in the session store | on every privileged route",
        "reasons": "unvalidated input is the root of injection and mass-assignment bugs | leaked credentials are exploited within minutes of a push | attackers enumerate accounts through inconsistent error messages | a stolen token must stop working quickly | defence in depth limits the blast radius of one bug",
        "techs": "bcrypt | argon2 | OAuth 2.1 | OpenID Connect | Vault | AWS KMS | Pydantic | Zod | helmet | OWASP ZAP",
        "situations": "handling user input, sessions, passwords, tokens or secrets | adding or changing an endpoint that accepts external data | storing or rotating credentials and API keys | changing who may access a resource",
        "tasks": "Add user registration API endpoint | Store the Stripe API key for the billing service | Add two-factor login with one-time codes | Check permissions before deleting a project | Sanitise uploaded file names",
    },
    "testing": {
        "layers": "5-Tests",
        "sections": "Unit tests | Integration tests | End-to-end tests | Fixtures and test data | Flaky tests | Coverage",
        "nouns": "unit test | integration test | test fixture | factory | mock | regression test | snapshot | end-to-end scenario | test database | fake clock | contract test | property-based test | coverage report | test name | assertion",
        "verbs": "write | isolate | seed | reset | parametrize | assert | mock | quarantine | run | name",
        "places": "in the CI pipeline | next to the module under test | in the shared fixtures package | against a real database container | before merging a pull request | in the nightly job",
        "reasons": "a test that fails one run in fifty trains everyone to ignore red builds | shared state between tests makes failures depend on order | mocks that drift from the real service hide integration bugs | a failing test must say what broke without a debugger",
        "techs": "pytest | Jest | Vitest | Playwright | Cypress | Testcontainers | Hypothesis | factory_boy",
        "situations": "writing or changing tests | fixing a flaky or slow test | adding test fixtures or test data | reproducing a bug with a regression test",
        "tasks": "Fix the flaky checkout test | Write unit tests for the discount calculation | Add an end-to-end test for the signup flow | Speed up the integration test suite",
    },
    "performance": {
        "layers": "2-Application | 4-Persistence | 1-Presentation",
        "sections": "Measuring | Caching | Queries and N+1 | Payload size | Background work | Frontend performance",
        "nouns": "hot path | cache entry | cache key | N+1 query | response payload | bundle size | batch job | connection pool | latency budget | profile | p95 latency | memory allocation | thread pool | image asset",
        "verbs": "measure | profile | cache | batch | paginate | compress | stream | preload | bound | invalidate",
        "places": "before optimising anything | on the critical request path | in the read model | at the CDN edge | in the background worker | in the list endpoints",
        "reasons": "optimising without a measurement usually speeds up the wrong code | unbounded caches become memory leaks | one query per row turns a page load into hundreds of round trips | users feel the p95, not the average",
        "techs": "Redis | py-spy | Lighthouse | pg_stat_statements | Varnish | Brotli | webpack-bundle-analyzer",
        "situations": "a page, endpoint or job is slow | adding a cache or changing cache invalidation | loading lists or large payloads | optimising bundle size or rendering",
        "tasks": "The orders page takes five seconds to load, fix it | Add a Redis cache for product prices | Reduce the JavaScript bundle size | Profile the nightly export job",
    },
    "api": {
        "layers": "2-Application",
        "sections": "Resources and URLs | Errors | Pagination | Versioning | Idempotency | Webhooks | OpenAPI",
        "nouns": "endpoint | resource URL | status code | error body | problem details response | cursor | page size | API version | idempotency key | webhook | request schema | response schema | deprecation header | OpenAPI document | query filter",
        "verbs": "version | paginate | document | deprecate | return | accept | name | limit | expose | describe",
        "places": "in the public API | in every list endpoint | in the OpenAPI specification | at the API gateway | in the webhook dispatcher | in the client SDK",
        "reasons": "clients can handle every error in one place | breaking a published contract breaks integrations you cannot see | unbounded lists time out as data grows | retries must not create duplicate payments",
        "techs": "OpenAPI 3.1 | RFC 9457 | GraphQL | gRPC | FastAPI | Express | Spring Boot | JSON Schema",
        "situations": "adding or changing an HTTP endpoint | designing error responses or status codes | adding pagination, filtering or sorting | versioning or deprecating an API",
        "tasks": "Add pagination to the orders endpoint | Return problem details for validation errors | Deprecate the v1 invoices API | Add an idempotency key to the payment endpoint",
    },
    "database": {
        "layers": "4-Persistence",
        "sections": "Schema design | Migrations | Indexes | Queries | Transactions | Connections",
        "nouns": "migration | foreign key | unique constraint | index | column | transaction | connection pool | query plan | backfill | primary key | lock timeout | read replica | ORM session | timestamp column | soft delete",
        "verbs": "migrate | index | constrain | backfill | parameterize | lock | batch | partition | vacuum | denormalise",
        "places": "in a versioned migration file | in the repository layer | on the primary database | inside one transaction | in the reporting replica | in the schema",
        "reasons": "application-level checks race under concurrency | a locking ALTER on a large table stops every write | a failed deploy needs a rollback path that was exercised | string-built SQL is the classic injection",
        "techs": "PostgreSQL | MySQL | SQLAlchemy | Alembic | Prisma | Flyway | SQLite | MongoDB",
        "situations": "adding or changing a table, column, index or constraint | writing or optimising SQL or ORM queries | using transactions, locking or connection settings",
        "tasks": "Add a migration that adds a phone column to the users table | Add an index to speed up searching orders by status | Rename the full_name column to display_name | Fix the deadlock in the stock reservation query",
    },
    "frontend": {
        "layers": "1-Presentation",
        "sections": "Components | State | Forms | Styling | Loading and errors | Routing",
        "nouns": "component | form field | loading state | error state | client-side state | design token | modal dialog | button | route | skeleton screen | toast | data table | layout grid | image",
        "verbs": "render | show | disable | debounce | memoise | lazy-load | style | compose | validate | announce",
        "places": "in the shared component library | on every page | in the form component | in the design system | in the router | in the checkout flow",
        "reasons": "users must always see that something is happening | duplicated state drifts out of sync | one-off colours break the theme and dark mode | a double submit creates two orders",
        "techs": "React | Vue | Svelte | Tailwind CSS | TanStack Query | Next.js | Storybook | CSS modules",
        "situations": "building or changing UI components, pages or forms | handling loading, empty and error states | styling or theming the interface",
        "tasks": "Add a login button to the header | Show a loading spinner while orders load | Build the account settings form | Add a dark mode toggle",
    },
    "backend": {
        "layers": "2-Application | 3-Domain",
        "sections": "Services | Background jobs | Configuration | Dependency injection | Queues",
        "nouns": "service | background job | message queue | worker | configuration value | use case | command handler | retry policy | scheduler | feature flag | domain event | dependency",
        "verbs": "inject | schedule | enqueue | configure | split | retry | orchestrate | publish | consume | time out",
        "places": "in the application service | in the job runner | at start-up | in the composition root | in the message consumer | in the orchestration layer",
        "reasons": "hidden global state makes services impossible to test | a job that runs twice must not double-charge | configuration read at import time cannot be changed in tests | one slow dependency should not exhaust every worker",
        "techs": "Celery | Sidekiq | RabbitMQ | Kafka | Django | Flask | NestJS | Go",
        "situations": "adding a service, job, queue consumer or scheduler | changing configuration or dependency wiring | orchestrating several domain operations",
        "tasks": "Move invoice generation to a background job | Add a Kafka consumer for shipment events | Wire the payment gateway through dependency injection | Schedule the nightly report",
    },
    "devops": {
        "layers": "7-Deployment",
        "sections": "Containers | CI pipelines | Releases | Infrastructure as code | Environments | Rollbacks",
        "nouns": "Dockerfile | container image | CI pipeline | deployment | release tag | Helm chart | Terraform module | environment variable | health check | rollback plan | canary release | build cache | base image | secret in CI",
        "verbs": "pin | build | deploy | promote | roll back | tag | scan | provision | cache | gate",
        "places": "in the deploy pipeline | in the Dockerfile | in every environment | before promoting to production | in the infrastructure repository | on the staging cluster",
        "reasons": "an unpinned base image changes under you between two builds | a release you cannot roll back in minutes is an outage waiting | snowflake servers drift from what the code describes | secrets in build logs leak to everyone with CI access",
        "techs": "Docker | Kubernetes | Helm | Terraform | GitHub Actions | Argo CD | GitLab CI | AWS ECS",
        "situations": "changing CI, containers, infrastructure or deployment | releasing or rolling back a service | adding an environment or configuration",
        "tasks": "Set up the GitHub Actions deploy pipeline with Docker | Add a Helm chart for the orders service | Pin the base image in the Dockerfile | Roll back the failed release",
    },
    "documentation": {
        "layers": "6-Docs",
        "sections": "README | API documentation | Decision records | Changelog | Code comments | Runbooks",
        "nouns": "README | architecture decision record | changelog entry | docstring | code comment | runbook | API reference | setup guide | diagram | example",
        "verbs": "document | record | explain | update | link | date | review | write | keep | version",
        "places": "in the repository root | next to the code it describes | in the docs folder | in the pull request | in the on-call handbook | in the public API reference",
        "reasons": "a new developer should run the project in ten minutes | decisions without recorded reasons get relitigated every year | outdated docs are worse than none | on-call engineers read runbooks at three in the morning",
        "techs": "MkDocs | Sphinx | Docusaurus | Mermaid | Keep a Changelog | ADR tools",
        "situations": "writing or updating documentation, READMEs or runbooks | recording an architecture decision | changing public behaviour that users rely on",
        "tasks": "Improve the README with setup instructions | Write an ADR for choosing PostgreSQL | Add a runbook for the payment outage | Update the changelog for the release",
    },
    "accessibility": {
        "layers": "1-Presentation",
        "sections": "Semantics | Keyboard | Colour and contrast | Forms | Images and media | Announcements",
        "nouns": "form label | focus order | colour contrast | alt text | ARIA attribute | keyboard shortcut | focus trap | skip link | heading structure | error message | live region | touch target",
        "verbs": "label | announce | focus | describe | contrast | caption | associate | expose | support | test",
        "places": "on every interactive element | in modal dialogs | in the form components | on every page template | in charts and images | in the navigation menu",
        "reasons": "screen reader users cannot see placeholder text | keyboard users are stuck without a visible focus | low contrast text is unreadable for many users | WCAG 2.2 AA is a legal requirement in many markets",
        "techs": "WCAG 2.2 | axe-core | ARIA | NVDA | VoiceOver | eslint-plugin-jsx-a11y",
        "situations": "building UI that people must read, operate or navigate | adding forms, dialogs, images or media | choosing colours and focus styles",
        "tasks": "Make the checkout form accessible to screen readers | Fix keyboard navigation in the modal | Add alt text to product images | Check colour contrast of the new theme",
    },
    "architecture": {
        "layers": "3-Domain | 2-Application | *",
        "sections": "Layers and boundaries | Modules | Dependencies | Domain model | Integration | Decisions",
        "nouns": "module boundary | domain entity | value object | aggregate | layer | public interface | dependency direction | adapter | port | bounded context | shared kernel | invariant",
        "verbs": "depend | isolate | encapsulate | model | expose | split | decouple | enforce | name | own",
        "places": "in the domain layer | between bounded contexts | at the module's public interface | in the adapters | in the core package | across service boundaries",
        "reasons": "dependencies that point inward keep business rules testable without infrastructure | a change in one module should not ripple through ten others | anaemic models scatter invariants across services | a shared database couples teams' release schedules",
        "techs": "hexagonal architecture | domain-driven design | import-linter | ArchUnit | event sourcing | CQRS",
        "situations": "designing modules, layers or service boundaries | adding a dependency between modules | modelling entities, value objects and invariants",
        "tasks": "Split the monolith's billing module into its own package | Model the order cancellation invariant | Refactor the payment service behind an interface | Decide where the pricing rules live",
    },
    "quality": {
        "layers": "*",
        "sections": "Naming | Functions | Types | Linting | Code review | Duplication",
        "nouns": "function | variable name | type hint | linter rule | pull request | magic number | dead code | public API | formatter | cyclomatic complexity | code review comment",
        "verbs": "name | extract | type | lint | format | review | delete | simplify | inline | split",
        "places": "in every module | before requesting review | in the CI lint step | in shared utilities | in the public interface | in new code",
        "reasons": "code is read far more often than it is written | reviewers catch design problems that tools cannot | a formatter ends style debates | dead code misleads the next reader",
        "techs": "ruff | mypy | ESLint | Prettier | TypeScript strict mode | SonarQube | pre-commit",
        "situations": "writing or refactoring any code | reviewing a pull request | adding lint, format or type checks",
        "tasks": "Refactor the 300-line checkout function | Add type hints to the payments module | Remove dead code from the reporting package | Set up pre-commit with ruff",
    },
    "observability": {
        "layers": "2-Application | 7-Deployment",
        "sections": "Logging | Metrics | Tracing | Alerts | Dashboards",
        "nouns": "structured log line | log level | correlation id | metric | trace span | alert | dashboard | service level objective | error budget | health endpoint | audit log",
        "verbs": "log | emit | trace | alert | tag | correlate | sample | redact | dashboard | monitor",
        "places": "in every request handler | at service boundaries | in the worker | on the on-call dashboard | in the logging middleware | for every external call",
        "reasons": "unstructured logs cannot be searched during an incident | an alert nobody acts on trains people to ignore alerts | a trace shows where the time went across services | without a correlation id one request's logs cannot be found",
        "techs": "OpenTelemetry | Prometheus | Grafana | Datadog | Sentry | structlog | Loki",
        "situations": "adding logging, metrics, traces or alerts | investigating an incident or outage | adding a health check or dashboard",
        "tasks": "Add structured logging to the worker | Add a latency metric to the checkout endpoint | Set up an alert for failed payments | Trace requests across the order services",
    },
    "reliability": {
        "layers": "2-Application | 7-Deployment",
        "sections": "Timeouts and retries | Error handling | Idempotency | Graceful degradation | Backups",
        "nouns": "timeout | retry with backoff | circuit breaker | idempotency key | fallback | exception | error boundary | dead-letter queue | backup | graceful shutdown | bulkhead",
        "verbs": "time out | retry | fail fast | degrade | recover | back up | restore | catch | propagate | drain",
        "places": "on every outbound call | in the message consumer | at the edge of the domain | in the payment integration | during shutdown | in the nightly backup job",
        "reasons": "a call without a timeout waits forever and holds a worker | retries without backoff turn a blip into an outage | swallowed exceptions hide the real failure | a backup that was never restored is a hope, not a backup",
        "techs": "tenacity | resilience4j | Polly | Envoy | pgBackRest | AWS Backup",
        "situations": "calling another service, a queue or a third-party API | handling errors, retries and failures | planning backups, restores or shutdowns",
        "tasks": "Add retries with backoff to the shipping API client | Handle payment gateway timeouts | Restore the database from last night's backup | Make the webhook handler idempotent",
    },
    "privacy": {
        "layers": "3-Domain | 4-Persistence | *",
        "sections": "Personal data | Consent | Retention | Data subject requests | Anonymisation",
        "nouns": "personal data | email address | consent record | retention period | data export | deletion request | pseudonymised id | analytics event | data processing agreement | PII field",
        "verbs": "minimise | pseudonymise | delete | export | record | mask | encrypt | expire | classify | restrict",
        "places": "in logs and analytics | in the user table | in the data warehouse | in backups | in third-party integrations | in support tooling",
        "reasons": "data you do not keep cannot leak | GDPR gives users the right to erasure within a month | personal data in logs spreads to every log sink | consent must be provable per purpose",
        "techs": "GDPR | CCPA | Presidio | Snowflake masking policies | Segment",
        "situations": "collecting, storing, logging or sharing personal data | handling deletion or export requests | adding analytics or third-party tracking",
        "tasks": "Delete a user's data on request | Mask email addresses in the logs | Add a consent banner for analytics | Set a retention period for support tickets",
    },
    "git": {
        "layers": "*",
        "sections": "Commits | Branches | Pull requests | Reviews | Releases",
        "nouns": "commit message | branch | pull request | code owner | merge strategy | release branch | tag | rebase | CI check | review approval",
        "verbs": "commit | rebase | squash | review | tag | protect | sign | link | describe | revert",
        "places": "on the main branch | in every pull request | in the CODEOWNERS file | before merging | in the release process | in the commit history",
        "reasons": "a clean history makes bisecting a regression possible | small pull requests get real reviews | a protected main branch always builds | a revert is the fastest fix for a bad merge",
        "techs": "Conventional Commits | GitHub | GitLab | git bisect | semantic-release",
        "situations": "committing, branching or opening a pull request | reviewing or merging changes | tagging a release",
        "tasks": "Write a good commit message for the fix | Set up branch protection on main | Split the large pull request | Tag the 2.3.0 release",
    },
}

ENTITIES = split(
    "order | invoice | user account | payment | cart | shipment | subscription | tenant | report | product | "
    "customer | refund | coupon | warehouse | supplier | ticket | notification | document | project | team | "
    "booking | reservation | claim | policy | ledger entry | price list | inventory item | audit record"
)
"""Business nouns that directives mention ("... for every invoice")."""

QUANTIFIERS = split("every | each | all | any new | the | no | shared | public | internal | critical")

CONNECTIVES = split(
    "and reject anything else | and log the outcome with the request id | unless a documented exception exists | "
    "and cover it with a test | and document the choice in the README | so that on-call engineers can act on it | "
    "before the change is merged | and review it every quarter | even in internal tools | and fail the build otherwise"
)

RISKS = split(
    "string concatenation | copy-pasted configuration | a shared mutable global | silent fallbacks | "
    "catching every exception | hard-coded credentials | unbounded retries | manual production changes | "
    "an untested migration | a one-off script"
)

SYLLABLES = split(
    "bil | led | ger | or | der | pay | ment | cat | alo | gue | ship | ping | in | vent | ory | acc | ount | "
    "tax | rate | cart | fleet | route | slot | quote | pric | ing | search | index | feed | hub | pulse | "
    "nova | atlas | orbit | delta | echo | forge | ridge | lumen | vault"
)
"""Syllables for project-specific service names: the long tail of rare terms a real corpus has."""
