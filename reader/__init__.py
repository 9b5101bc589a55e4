"""ruledex reader: open an index file and answer "which rules matter for this task?".

Light dependencies only (numpy, msgpack, tokenizers; mcp for the server). Never imports the builder's.
"""

from .errors import ArtifactError, ConfigError, RuledexError, RuleError
from .index import Index
from .query import QueryOptions, query_directives

__all__ = ["ArtifactError", "ConfigError", "Index", "QueryOptions", "RuleError", "RuledexError", "query_directives"]
