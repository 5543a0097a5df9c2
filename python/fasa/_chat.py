"""chat: a conversation (OpenAI-style messages) in, the assistant's reply out."""

from typing import Any, Callable, Literal, Mapping, Optional, Sequence, Union, overload

from fasa import _check
from fasa._generate import run, target_model
from fasa._messages import message_pairs
from fasa._model import Model
from fasa._result import ChatResult
from fasa._sampling import generate_args
from fasa._session import Session
from fasa._stream import GenerateStream

Messages = Sequence[Mapping[str, Any]]


@overload
def chat(model_or_session: Union[Model, Session], messages: Messages, max_tokens: int = ...,
         temperature: float = ..., top_k: int = ..., top_p: float = ..., min_p: float = ...,
         seed: Optional[int] = ..., stop: Union[str, Sequence[str]] = ...,
         parse_special: bool = ..., policy: Optional[str] = ..., n_ctx: int = ...,
         kv_type: str = ..., lossless: Union[str, int] = ...,
         on_text: Optional[Callable[[str], Any]] = ..., stream: Literal[False] = ...,
         presence_penalty: float = ..., frequency_penalty: float = ...,
         repetition_penalty: float = ...,
         logit_bias: Optional[Mapping[int, float]] = ...) -> ChatResult: ...


@overload
def chat(model_or_session: Union[Model, Session], messages: Messages, max_tokens: int = ...,
         temperature: float = ..., top_k: int = ..., top_p: float = ..., min_p: float = ...,
         seed: Optional[int] = ..., stop: Union[str, Sequence[str]] = ...,
         parse_special: bool = ..., policy: Optional[str] = ..., n_ctx: int = ...,
         kv_type: str = ..., lossless: Union[str, int] = ..., on_text: None = ..., *,
         stream: Literal[True], presence_penalty: float = ...,
         frequency_penalty: float = ..., repetition_penalty: float = ...,
         logit_bias: Optional[Mapping[int, float]] = ...) -> GenerateStream: ...


@overload
def chat(model_or_session: Union[Model, Session], messages: Messages, max_tokens: int = ...,
         temperature: float = ..., top_k: int = ..., top_p: float = ..., min_p: float = ...,
         seed: Optional[int] = ..., stop: Union[str, Sequence[str]] = ...,
         parse_special: bool = ..., policy: Optional[str] = ..., n_ctx: int = ...,
         kv_type: str = ..., lossless: Union[str, int] = ...,
         on_text: Optional[Callable[[str], Any]] = ..., stream: bool = ...,
         presence_penalty: float = ..., frequency_penalty: float = ...,
         repetition_penalty: float = ..., logit_bias: Optional[Mapping[int, float]] = ...
         ) -> Union[ChatResult, GenerateStream]: ...


def chat(
    model_or_session: Union[Model, Session],
    messages: Messages,
    max_tokens: int = 128,
    temperature: float = 0.0,
    top_k: int = 40,
    top_p: float = 0.95,
    min_p: float = 0.05,
    seed: Optional[int] = None,
    stop: Union[str, Sequence[str]] = (),
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
) -> Union[ChatResult, GenerateStream]:
    """The assistant's reply to `messages`, a list of {"role", "content"} dicts as OpenAI's
    API takes them (roles system or developer, user, assistant; content a str or a list of
    {"type": "text", "text"} parts). The conversation is rendered in the model's chat format
    (Model.chat_tokens: the contents stay plain text unless `parse_special`) and generated from
    as generate does, with the same arguments; returns a ChatResult (a GenerateResult whose
    `message` is the reply as the next message of the conversation), or with `stream` a
    GenerateStream of text pieces. On a Session the rendered conversation is appended to what
    the session holds. FasaError when the model has no chat template the engine knows.
    """
    f = "chat"
    model = target_model(f, model_or_session)
    args = generate_args(
        f, model.n_vocab, max_tokens, stop, temperature=temperature, top_k=top_k, top_p=top_p,
        min_p=min_p, seed=seed, presence_penalty=presence_penalty,
        frequency_penalty=frequency_penalty, repetition_penalty=repetition_penalty,
        logit_bias=logit_bias)
    pairs = message_pairs(f, messages)
    ids = list(model._m.chat_prompt(pairs, _check.flag(f, "parse_special", parse_special)))
    return run(f, model_or_session, ids, args, policy, n_ctx, kv_type, lossless, on_text,
               stream, ChatResult)
