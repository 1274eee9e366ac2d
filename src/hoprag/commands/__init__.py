"""CLI commands by capability; each module defines ``register(app)`` and is loaded by ``hoprag.cli``."""

STORE_HELP = "run store URL (postgresql://… or a SQLite path); default $HOPRAG_STORE or .hoprag/hoprag.db"
