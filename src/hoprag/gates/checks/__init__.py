"""Built-in checks; importing this package registers each one as a hook of its stage."""

from hoprag.gates.checks import chunks, data, embeddings, feedback, generation, indexing, retrieval  # noqa: F401
