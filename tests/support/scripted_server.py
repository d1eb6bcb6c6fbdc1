"""A server on 127.0.0.1 that answers scripted bytes: the hostile or broken API a client must survive.

Each connection gets the script ``answer(index)`` returns for it: the server reads the request (its head, and a
body of the Content-Length it names), records it, then sends the script's chunks as they are (a float in the
chunks is a pause in seconds), then, if asked, drips one byte every ``drip_every`` seconds until the client goes
away (or ``drip_for`` seconds have passed), and closes. ``connections`` counts every connection accepted, read
or not: a server that must never be contacted is one whose count stays 0. ``tls_context`` wraps each connection
in TLS first; ``tls_files`` makes a test certificate authority and a server certificate for ``localhost``
(``cryptography``, which moto brings).
"""

from __future__ import annotations

import contextlib
import datetime
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

HEAD_LIMIT = 256 * 1024
IO_TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True)
class Script:
    chunks: Sequence[bytes | float] = ()
    read_request: bool = True
    drip: bytes = b""  # after the chunks, this byte sequence one byte at a time, looped, until the client leaves
    drip_every: float = 0.2
    drip_for: float = 15.0  # then stop dripping and close: a client that waits for ever still ends
    hold: float = 0.0  # then keep the connection open (sending nothing) this long before closing


@dataclass
class ScriptedServer:
    answer: Callable[[int], Script]
    tls_context: ssl.SSLContext | None = None
    connections: int = 0
    received: list[bytes] = field(default_factory=list)
    _listener: socket.socket | None = None
    _port: int = 0
    _stopping: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def port(self) -> int:
        return self._port

    def url(self, scheme: str = "http", host: str = "127.0.0.1") -> str:
        return f"{scheme}://{host}:{self.port}"

    def start(self) -> ScriptedServer:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._port = int(self._listener.getsockname()[1])
        self._listener.settimeout(0.5)
        self._spawn(self._accept)
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread at once (Linux)
        for thread in list(self._threads):
            thread.join(timeout=IO_TIMEOUT_SECONDS)
        if self._listener is not None:
            self._listener.close()

    def _spawn(self, target: Callable[..., None], *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        assert self._listener is not None
        while not self._stopping.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # shut down
            with self._lock:
                index = self.connections
                self.connections += 1
            self._spawn(self._serve, connection, index)

    def _serve(self, connection: socket.socket, index: int) -> None:
        script = self.answer(index)
        with contextlib.closing(connection):
            try:
                connection.settimeout(IO_TIMEOUT_SECONDS)
                if self.tls_context is not None:
                    connection = self.tls_context.wrap_socket(connection, server_side=True)
                if script.read_request:
                    self.received.append(_read_request(connection))
                for chunk in script.chunks:
                    if isinstance(chunk, float):
                        self._stopping.wait(chunk)
                    else:
                        connection.sendall(chunk)
                self._drip(connection, script)
                if script.hold:
                    self._stopping.wait(script.hold)
            except (OSError, ValueError):
                return  # the client went away (as it should, at its deadline) or sent nothing readable

    def _drip(self, connection: socket.socket, script: Script) -> None:
        position, until = 0, time.monotonic() + script.drip_for
        while script.drip and not self._stopping.is_set() and time.monotonic() < until:
            connection.sendall(script.drip[position : position + 1])
            position = (position + 1) % len(script.drip)
            self._stopping.wait(script.drip_every)


def _read_request(connection: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(65536)
        if not chunk or len(data) > HEAD_LIMIT:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")[1:]
            if line.lower().startswith(b"content-length:")
        ),
        0,
    )
    while len(body) < length:
        chunk = connection.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


@contextlib.contextmanager
def scripted_server(
    answer: Callable[[int], Script] | Script, tls_context: ssl.SSLContext | None = None
) -> Iterator[ScriptedServer]:
    """A started server answering ``answer`` (one script for every connection, or one per connection index)."""
    server = ScriptedServer(answer if callable(answer) else (lambda _index: answer), tls_context).start()
    try:
        yield server
    finally:
        server.stop()


def request_headers(raw: bytes) -> dict[str, str]:
    """The header fields of a recorded request, names lowercased."""
    head = raw.partition(b"\r\n\r\n")[0].decode("latin-1")
    fields = (line.partition(":") for line in head.split("\r\n")[1:])
    return {name.strip().lower(): value.strip() for name, _, value in fields}


@dataclass(frozen=True)
class TlsFiles:
    ca: str  # the test authority's certificate, for a client context that trusts it
    certificate: str  # the server's chain, issued by that authority for ``localhost`` only
    key: str

    def server_context(self, on_name: Callable[[str | None], None] | None = None) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.certificate, self.key)
        if on_name is not None:
            context.sni_callback = lambda _socket, name, _context: on_name(name)
        return context

    def client_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=self.ca)


def tls_files(directory: Path) -> TlsFiles:
    """A certificate authority made for the test, and a server certificate it issued for ``localhost``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)

    def issue(
        subject: str, key: ec.EllipticCurvePrivateKey, issuer: x509.Name | None, signer: ec.EllipticCurvePrivateKey
    ) -> x509.Certificate:
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
        builder = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(issuer or name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
        )
        if issuer is None:
            builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        else:
            builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        return builder.sign(signer, hashes.SHA256())

    ca_key, server_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    authority = issue("scripted-server test authority", ca_key, None, ca_key)
    server = issue("localhost", server_key, authority.subject, ca_key)
    paths = TlsFiles(str(directory / "ca.pem"), str(directory / "server.pem"), str(directory / "server.key"))
    Path(paths.ca).write_bytes(authority.public_bytes(serialization.Encoding.PEM))
    Path(paths.certificate).write_bytes(server.public_bytes(serialization.Encoding.PEM))
    Path(paths.key).write_bytes(
        server_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return paths
