"""Size-prefixed frame splitting (sans-I/O, in the style of h11/wsproto).

Every Kafka request and response is `int32 size` + `size` bytes. Feed whatever the socket returned into
`receive_data()`, then pull complete frames with `next_frame()` until it returns None:

    fb = FrameBuffer(max_frame_size=100 * 1024 * 1024)
    fb.receive_data(chunk)
    while (frame := fb.next_frame()) is not None:
        header, body = wire.api.parse_request(frame)

The size prefix is validated as soon as its 4 bytes are present -- *before* the body is buffered -- so a peer
announcing a 2 GiB frame (or a negative size, or an HTTP/TLS client talking to the Kafka port) is rejected at once
with `FrameTooLarge` instead of making us buffer it. Frames are returned as memoryviews over private bytes that
stay valid after later `receive_data()` calls.
"""

from __future__ import annotations

from wire.errors import DecodeError

_SIZE = 4


class FrameTooLarge(DecodeError):
    """The size prefix is negative or above the configured maximum."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"frame size {size} outside 0..{limit}")
        self.size = size
        self.limit = limit


class FrameBuffer:
    __slots__ = ("_buf", "_off", "max_frame_size")

    def __init__(self, max_frame_size: int = 100 * 1024 * 1024) -> None:
        self.max_frame_size = max_frame_size
        self._buf = bytearray()
        self._off = 0

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as frames."""
        return len(self._buf) - self._off

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        """Append bytes from the peer. Raises FrameTooLarge as soon as a bad size prefix is visible."""
        if self._off and self._off >= len(self._buf) // 2:
            del self._buf[: self._off]
            self._off = 0
        self._buf += data
        self._peek_size()

    def _peek_size(self) -> int | None:
        if len(self._buf) - self._off < _SIZE:
            return None
        size = int.from_bytes(self._buf[self._off : self._off + _SIZE], "big", signed=True)
        if size < 0 or size > self.max_frame_size:
            raise FrameTooLarge(size, self.max_frame_size)
        return size

    def next_frame(self) -> memoryview | None:
        """The next complete frame (without its 4-byte size), or None if more data is needed."""
        size = self._peek_size()
        if size is None:
            return None
        start = self._off + _SIZE
        end = start + size
        if end > len(self._buf):
            return None
        frame = bytes(self._buf[start:end])
        self._off = end
        if self._off == len(self._buf):
            self._buf.clear()
            self._off = 0
        else:
            self._peek_size()
        return memoryview(frame)
