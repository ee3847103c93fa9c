"""Size-prefixed frame splitting (sans-I/O, in the style of h11/wsproto).

Every Kafka request and response is `int32 size` + `size` bytes. Feed whatever the socket returned into
`receive_data()`, then pull complete frames with `next_frame()` until it returns None:

    fb = FrameBuffer(max_frame_size=100 * 1024 * 1024)
    fb.receive_data(chunk)
    while (frame := fb.next_frame()) is not None:
        header, body = kafkalite_wire.api.parse_request(frame)

The size prefix is validated as soon as its 4 bytes are present -- *before* the body is buffered -- so a peer
announcing a 2 GiB frame (or a negative size, or an HTTP/TLS client talking to the Kafka port) is rejected at once
with `FrameTooLarge` instead of making us buffer it. Frames are returned as memoryviews that stay valid (and
unchanged) after later `receive_data()` calls: when a frame ends the buffered data -- the usual case -- the buffer
itself is handed over without copying; otherwise the frame is copied once.
"""

from __future__ import annotations

from kafkalite_wire.errors import DecodeError

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

    def pending_frame_size(self) -> int | None:
        """The announced size of the frame at the head of the buffer, once its 4-byte prefix is here (None
        before). Lets the caller account for (or refuse) a large frame before its body is buffered."""
        return self._peek_size()

    def next_frame(self) -> memoryview | None:
        """The next complete frame (without its 4-byte size), or None if more data is needed."""
        size = self._peek_size()
        if size is None:
            return None
        start = self._off + _SIZE
        end = start + size
        if end > len(self._buf):
            return None
        if end == len(self._buf):
            # the common case: the buffer ends with this frame -- hand the buffer itself over (zero copy)
            # and start a fresh one, so nothing we hold aliases the returned view
            view = memoryview(self._buf)[start:end]
            self._buf = bytearray()
            self._off = 0
            return view
        with memoryview(self._buf) as mv:
            frame = bytes(mv[start:end])
        self._off = end
        self._peek_size()
        return memoryview(frame)
