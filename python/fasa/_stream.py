"""GenerateStream: what generate(..., stream=True) and chat(..., stream=True) return."""

from types import TracebackType
from typing import Any, Callable, Dict, Iterator, Optional, Type

from fasa._result import GenerateResult
from fasa._session import Session


class GenerateStream(Iterator[str]):
    """The generated text in pieces, as an iterator: each next() runs the engine until a piece
    of text is final (the first one prefills the prompt), so generation advances only as you
    iterate. A piece never splits a UTF-8 character, nor holds text that may still become a
    stop string. At the end `result` is the GenerateResult (ChatResult for chat) that the
    call without stream=True returns; until then it is None.

    Breaking out of a loop over the stream (or close(), or leaving a `with` block) ends the
    generation: the session it made is freed, and a Session given to it is free for other
    calls again (while a stream is open on a Session, other calls that append to it raise
    FasaError). A KeyboardInterrupt during next() (Ctrl-C in a long prefill) closes the stream.
    """

    def __init__(self, session: Session, native: Any,
                 finish: Callable[[Dict[str, Any]], GenerateResult]) -> None:
        self.result: Optional[GenerateResult] = None
        self._session: Optional[Session] = session
        self._native: Optional[Any] = native
        self._finish = finish

    def __iter__(self) -> "GenerateStream":
        return self

    def __next__(self) -> str:
        native = self._native
        if native is None:
            raise StopIteration
        try:
            while True:
                piece, done = native.next()
                if done:
                    self.result = self._finish(native.outcome())
                    self.close()
                if piece:
                    return str(piece)
                if done:
                    break
        except BaseException:
            self.close()
            raise
        raise StopIteration

    def close(self) -> None:
        """Ends the generation (a no-op once it ended): the session is free again."""
        if self._native is not None:
            self._native.close()
        self._native = None
        self._session = None

    def __enter__(self) -> "GenerateStream":
        return self

    def __exit__(self, kind: Optional[Type[BaseException]], value: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.close()
