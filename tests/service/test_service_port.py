"""``hoprag serve`` finds out it cannot listen before it says it is serving: exit 2, one line, the flag to change."""

from __future__ import annotations

import errno
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from hoprag.errors import ConfigError
from hoprag.service.address import check_listen_address

pytestmark = pytest.mark.integration

HOPRAG = Path(sys.executable).with_name("hoprag")


def test_a_port_in_use_is_refused_before_serving(enterprise_index: Path, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = subprocess.run([str(HOPRAG), "serve", str(enterprise_index), "--port", str(port),
                               "--store", str(tmp_path / "store.db")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "serving" not in done.stdout + done.stderr and "Errno" not in done.stderr
    assert f"port {port} on 127.0.0.1 is already in use" in done.stderr
    assert "Fix: pass another --port" in " ".join(done.stderr.split())


def test_a_free_port_passes_and_stays_free() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    check_listen_address("127.0.0.1", port)
    with socket.socket() as again:  # the check let go of it: uvicorn can bind it next
        again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        again.bind(("127.0.0.1", port))


def test_a_privileged_port_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self, address):  # what an unprivileged user meets on port 80
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(socket.socket, "bind", refuse)
    with pytest.raises(ConfigError, match=r"port 80 needs administrator privileges .*Fix: pass --port 8000"):
        check_listen_address("127.0.0.1", 80)


@pytest.mark.parametrize(("host", "words"), [
    ("no-such-host.invalid", "is not an address or a name this machine resolves"),
    ("192.0.2.1", "is not an address of this machine"),  # TEST-NET-1: never configured on a real interface
    ("", "--host is empty"),
])
def test_a_bad_host_says_so(host: str, words: str) -> None:
    with pytest.raises(ConfigError, match=rf"{words}.*Fix: pass --host 127\.0\.0\.1"):
        check_listen_address(host, 8000)
