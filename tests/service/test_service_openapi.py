"""schemathesis against /openapi.json: no generated input makes the service answer 5xx."""

from __future__ import annotations

import pytest

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_no_server_error_for_any_generated_input(server) -> None:
    schema = schemathesis.openapi.from_url(server.url + "/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 10
    failures: list[str] = []
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True,
                  database=None)
        def check(case) -> None:
            for headers in (server.auth("internal"), {}):
                response = case.call(headers=headers, timeout=30)
                where = f"{case.method} {case.formatted_path} -> {response.status_code}"
                if response.status_code >= 500 or "Traceback" in response.text:
                    failures.append(f"{where}: {response.text[:200]}")
                elif response.status_code >= 400 and response.text.startswith("{"):
                    body = response.json()
                    if case.path.startswith("/v1/"):  # the Chat Completions API's shape, the fix inside
                        shaped = set(body) == {"error"} and {"message", "fix"} <= set(body["error"])
                    else:
                        shaped = set(body) == {"error", "fix"}
                    if not shaped:
                        failures.append(f"{where}: error body {response.text[:200]}")

        check()
    assert failures == []
