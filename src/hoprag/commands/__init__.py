"""CLI commands by capability; each module defines ``register(app)`` and is loaded by ``hoprag.cli``."""
