"""generate: prompt in, text out, as `fasa run` does it; whole, or as a stream of pieces."""

from typing import (Any, Callable, Dict, List, Literal, Mapping, Optional, Sequence, Type,
                    Union, overload)

from fasa import _check, _fasa
from fasa._model import Model
from fasa._result import GenerateResult, R, make_result
from fasa._sampling import generate_args
from fasa._session import Session
from fasa._stream import GenerateStream

# With no n_ctx: the prompt plus the tokens to generate (max_tokens -1: plus this many), within
# the model's trained context (`fasa run`'s rule).
_UNTIL_EOS_ROOM = 4096


def _context_size(model: Model, n_prompt: int, max_tokens: int, n_ctx: int) -> int:
    if n_ctx > 0:
        return n_ctx
    model_max = model.config["n_ctx_max"]
    if n_prompt >= model_max:
        raise _fasa.FasaError(
            f"prompt is {n_prompt} tokens, as long as or longer than the model's context of "
            f"{model_max} tokens"
        )
    room = _UNTIL_EOS_ROOM if max_tokens < 0 else max(max_tokens, 1)
    return int(min(model_max, n_prompt + room))


def target_model(func: str, model_or_session: Any) -> Model:
    """The model of generate's or chat's first argument (a Model or a Session)."""
    if isinstance(model_or_session, Session):
        return model_or_session.model
    if isinstance(model_or_session, Model):
        return model_or_session
    raise TypeError(f"{func}: expected a fasa.Model or fasa.Session, got "
                    f"{type(model_or_session).__name__}")


def run(func: str, target: Union[Model, Session], ids: List[int], args: Dict[str, Any],
        policy: Optional[str], n_ctx: int, kv_type: str, lossless: Union[str, int],
        on_text: Optional[Callable[[str], Any]], stream: bool,
        cls: Type[R]) -> Union[R, GenerateStream]:
    """generate's and chat's common part: the session, then the whole generation or a
    stream."""
    policy = None if policy is None else _check.policy(func, "policy", policy)
    n_ctx = _check.integer(func, "n_ctx", n_ctx, 0)
    kv_type = _check.text(func, "kv_type", kv_type, "'f16', 'f32' or 'q8_0'")
    lossless = _check.lossless(func, lossless)
    on_text = _check.callback(func, "on_text", on_text)
    if _check.flag(func, "stream", stream) and on_text is not None:
        raise ValueError(f"{func}: on_text and stream=True: take the pieces from the stream")
    if isinstance(target, Session):
        if policy is not None or n_ctx != 0 or kv_type != "f16":
            raise ValueError("policy, n_ctx and kv_type are the session's own: set them on it")
        session = target
    else:
        ctx = _context_size(target, len(ids), args["max_tokens"], n_ctx)
        session = Session(target, policy or "full", ctx, kv_type)
        if len(ids) > session.n_ctx:
            raise _fasa.FasaError(
                f"prompt is {len(ids)} tokens, longer than the context of {session.n_ctx} tokens"
            )
    seed, n = args["seed"], session.n_ctx

    def finish(r: Dict[str, Any]) -> R:
        return make_result(cls, r, n, seed)

    if stream:
        return GenerateStream(session, _fasa.Stream(session._s, ids, args, lossless), finish)
    return finish(_fasa.generate(session._s, ids, args, lossless, on_text))


@overload
def generate(model_or_session: Union[Model, Session], prompt: Union[str, Sequence[int]],
             max_tokens: int = ..., temperature: float = ..., top_k: int = ...,
             top_p: float = ..., min_p: float = ..., seed: Optional[int] = ...,
             stop: Union[str, Sequence[str]] = ..., chat: bool = ..., system: Optional[str] = ...,
             parse_special: bool = ..., policy: Optional[str] = ..., n_ctx: int = ...,
             kv_type: str = ..., lossless: Union[str, int] = ...,
             on_text: Optional[Callable[[str], Any]] = ..., stream: Literal[False] = ...,
             presence_penalty: float = ..., frequency_penalty: float = ...,
             repetition_penalty: float = ...,
             logit_bias: Optional[Mapping[int, float]] = ...) -> GenerateResult: ...


@overload
def generate(model_or_session: Union[Model, Session], prompt: Union[str, Sequence[int]],
             max_tokens: int = ..., temperature: float = ..., top_k: int = ...,
             top_p: float = ..., min_p: float = ..., seed: Optional[int] = ...,
             stop: Union[str, Sequence[str]] = ..., chat: bool = ..., system: Optional[str] = ...,
             parse_special: bool = ..., policy: Optional[str] = ..., n_ctx: int = ...,
             kv_type: str = ..., lossless: Union[str, int] = ...,
             on_text: None = ..., *, stream: Literal[True],
             presence_penalty: float = ..., frequency_penalty: float = ...,
             repetition_penalty: float = ...,
             logit_bias: Optional[Mapping[int, float]] = ...) -> GenerateStream: ...


@overload
def generate(model_or_session: Union[Model, Session], prompt: Union[str, Sequence[int]],
             max_tokens: int = ..., temperature: float = ..., top_k: int = ...,
             top_p: float = ..., min_p: float = ..., seed: Optional[int] = ...,
             stop: Union[str, Sequence[str]] = ..., chat: bool = ..., system: Optional[str] = ...,
             parse_special: bool = ..., policy: Optional[str] = ..., n_ctx: int = ...,
             kv_type: str = ..., lossless: Union[str, int] = ...,
             on_text: Optional[Callable[[str], Any]] = ..., stream: bool = ...,
             presence_penalty: float = ..., frequency_penalty: float = ...,
             repetition_penalty: float = ...,
             logit_bias: Optional[Mapping[int, float]] = ...
             ) -> Union[GenerateResult, GenerateStream]: ...


def generate(
    model_or_session: Union[Model, Session],
    prompt: Union[str, Sequence[int]],
    max_tokens: int = 128,
    temperature: float = 0.0,
    top_k: int = 40,
    top_p: float = 0.95,
    min_p: float = 0.05,
    seed: Optional[int] = None,
    stop: Union[str, Sequence[str]] = (),
    chat: bool = False,
    system: Optional[str] = None,
    parse_special: bool = False,
    policy: Optional[str] = None,
    n_ctx: int = 0,
    kv_type: str = "f16",
    lossless: Union[str, int] = "off",
    on_text: Optional[Callable[[str], Any]] = None,
    stream: bool = False,
    presence_penalty: float = 0.0,
    frequency_penalty: float = 0.0,
    repetition_penalty: float = 1.0,
    logit_bias: Optional[Mapping[int, float]] = None,
) -> Union[GenerateResult, GenerateStream]:
    """Generates from `prompt` (text, or a list of token ids) and returns a GenerateResult, or
    with `stream` a GenerateStream of text pieces (its `result` at the end).

    On a Model: a fresh session with `policy` (default "full"), `n_ctx` (0 = the prompt plus
    max_tokens) and `kv_type`, the prompt made as `fasa run` makes it (`chat`, `system`,
    `parse_special`). On a Session: the prompt is appended to what the session holds (policy,
    n_ctx and kv_type are the session's). `max_tokens` -1 runs until the end of generation or of
    the context; `temperature` 0 is greedy; `seed` None draws one (stats["seed"] records it);
    `stop`: a string or strings that end the text (not included); `presence_penalty`,
    `frequency_penalty` (over the generated tokens, in [-2, 2]), `repetition_penalty` (over
    the context and the generated tokens, > 0, 1 = off) and `logit_bias` ({id: bias in
    [-100, 100]}) as OpenAI's API and vLLM apply them; `lossless` off|auto|K: the policy drafts
    K tokens, full attention verifies them (docs/POLICIES.md, "Lossless decoding"; not with
    penalties or logit_bias); `on_text(piece)` receives the text as it becomes final.
    Ctrl-C stops the engine promptly and raises KeyboardInterrupt (a Session then holds the
    tokens appended before it).
    """
    f = "generate"
    model = target_model(f, model_or_session)
    args = generate_args(
        f, model.n_vocab, max_tokens, stop, temperature=temperature, top_k=top_k, top_p=top_p,
        min_p=min_p, seed=seed, presence_penalty=presence_penalty,
        frequency_penalty=frequency_penalty, repetition_penalty=repetition_penalty,
        logit_bias=logit_bias)
    chat = _check.flag(f, "chat", chat)
    system = _check.optional_text(f, "system", system)
    parse_special = _check.flag(f, "parse_special", parse_special)
    if isinstance(prompt, str):
        ids = model.prompt_tokens(prompt, chat, system, parse_special)
    else:
        ids = _check.token_ids(f, "prompt", prompt, "a str or a list of token ids")
        if chat or system is not None:
            raise ValueError("chat and system apply to a text prompt, not to token ids")
    return run(f, model_or_session, ids, args, policy, n_ctx, kv_type, lossless, on_text,
               stream, GenerateResult)
