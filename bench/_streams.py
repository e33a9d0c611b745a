"""Hold N event streams open against a server, in a process of its own (bench/http.py runs it).

`python -m bench._streams HOST PORT TOKEN COUNT SECONDS`: opens COUNT streams at once (each
asking for an hour), prints `open N refused M` once they were answered, reads and counts every
frame until SECONDS pass, then prints `frames N` and exits. Only loopback is ever dialled.
"""

from __future__ import annotations

import asyncio
import sys

LOOPBACK = ("127.0.0.1", "localhost", "::1")
MAX_SECONDS = 3600  # the longest a stream may be asked to last


class Frames:
    """The frames every stream received, and the tasks reading them."""

    def __init__(self) -> None:
        self.received = 0
        self.readers: set[asyncio.Task[None]] = set()

    async def count(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while chunk := await reader.read(65536):
                self.received += chunk.count(b"\n\n")
        finally:
            writer.close()


async def hold(host: str, port: int, token: str, frames: Frames) -> int:
    """One stream: its status, then (in a task of its own) its frames counted."""
    reader, writer = await asyncio.open_connection(host, port)
    request = (
        f"GET /api/events/stream?max_seconds={MAX_SECONDS} HTTP/1.1\r\n"
        f"Host: {host}:{port}\r\nAuthorization: Bearer {token}\r\n\r\n"
    )
    writer.write(request.encode())
    await writer.drain()
    status = int((await reader.readline()).split()[1])
    if status == 200:
        frames.readers.add(asyncio.create_task(frames.count(reader, writer)))
    else:
        writer.close()
    return status


async def main(host: str, port: int, token: str, count: int, seconds: float) -> None:
    if host not in LOOPBACK:
        raise SystemExit("streams are held against loopback only")
    frames = Frames()
    opening = (hold(host, port, token, frames) for _ in range(count))
    statuses = await asyncio.gather(*opening)
    refused = len([s for s in statuses if s != 200])
    print(f"open {statuses.count(200)} refused {refused}", flush=True)
    await asyncio.sleep(seconds)
    print(f"frames {frames.received}", flush=True)


if __name__ == "__main__":
    host, port, token, count, seconds = sys.argv[1:6]
    asyncio.run(main(host, int(port), token, int(count), float(seconds)))
