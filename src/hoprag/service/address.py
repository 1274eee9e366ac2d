"""Whether ``hoprag serve`` can listen where it is asked to, found out before it says it is serving.

uvicorn binds only once the app is built and the "serving on http://…" line is printed, and then
reports a port in use as ``[Errno 98]`` and exit 3. :func:`check_listen_address` binds the address
itself first (with the same ``SO_REUSEADDR`` uvicorn sets, so a port left in TIME_WAIT is not
refused), releases it, and turns every reason it cannot into a ConfigError with the flag to change.
"""

from __future__ import annotations

import errno
import socket

from hoprag.errors import ConfigError

__all__ = ["bind_listening_socket", "check_listen_address"]

#: ports below this need privileges (root or CAP_NET_BIND_SERVICE) on Unix
PRIVILEGED_BELOW = 1024


def check_listen_address(host: str, port: int) -> None:
    """Raise a ConfigError naming ``--host``/``--port`` when ``host:port`` cannot be listened on."""
    name = host.strip().strip("[]")
    if not name:
        raise ConfigError("--host is empty. Fix: pass --host 127.0.0.1 (this machine only) or an address of it")
    try:
        infos = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc) or "unknown name"
        raise ConfigError(f"--host {host!r} is not an address or a name this machine resolves ({reason}). "
                          "Fix: pass --host 127.0.0.1, or an address of one of this machine's interfaces") from None
    family, kind, proto, _, address = infos[0]
    try:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(address)
            probe.listen(1)
    except OSError as exc:
        raise ConfigError(_why(host, port, exc)) from None


def bind_listening_socket(host: str, port: int) -> socket.socket:
    """The socket the worker processes of ``hoprag serve --workers N`` accept on, bound and listening
    before the server says it is serving; a ConfigError naming the flag when it cannot be."""
    family, kind, proto, _, address = socket.getaddrinfo(host.strip().strip("[]"), port, type=socket.SOCK_STREAM,
                                                         flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise ConfigError(_why(host, port, exc)) from None
    sock.set_inheritable(True)  # the forked workers accept on it
    return sock


def _why(host: str, port: int, exc: OSError) -> str:
    where = f"{host}:{port}"
    if exc.errno == errno.EADDRINUSE:
        return (f"port {port} on {host} is already in use (another hoprag serve, or another server). "
                f"Fix: pass another --port (e.g. --port {port + 1 if port < 65535 else 8000}), or stop what listens there")
    if exc.errno in (errno.EACCES, errno.EPERM):
        if port < PRIVILEGED_BELOW:
            return (f"listening on port {port} needs administrator privileges (ports below {PRIVILEGED_BELOW} are "
                    "reserved). Fix: pass --port 8000 (or any port from 1024), and put a proxy in front for port "
                    f"{port}")
        return f"listening on {where} is not permitted ({exc.strerror}). Fix: pass another --port or --host"
    if exc.errno == errno.EADDRNOTAVAIL:
        return (f"--host {host} is not an address of this machine, so nothing can listen on it. "
                "Fix: pass --host 127.0.0.1, or the address of one of this machine's interfaces")
    return f"cannot listen on {where} ({exc.strerror or exc}). Fix: pass another --host or --port"
