"""The PostgreSQL fixtures (``pg_server``, ``pg_url``) live in ``tests/conftest.py``, shared with the index tests."""
