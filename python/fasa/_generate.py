"""generate: prompt in, text out, as `fasa run` does it."""

import secrets
from dataclasses import dataclass, field

from fasa import _fasa
from fasa._model import Model
from fasa._session import Session

# With no n_ctx: the prompt plus the tokens to generate (max_tokens -1: plus this many), within
# the model's trained context (`fasa run`'s rule).
_UNTIL_EOS_ROOM = 4096


@dataclass
class GenerateResult:
    """One generation: the emitted text, the generated ids (an end-of-generation token is not
    among them), why it stopped ("eos", "stop", "length", "context"), and its statistics
    (n_prompt, prefill_ms, decode_ms, tokens per second, n_ctx, seed, attn: the decode steps'
    reads)."""

    text: str
    tokens: list
    stop_reason: str
    stats: dict = field(default_factory=dict)


def _context_size(model, n_prompt, max_tokens, n_ctx):
    if n_ctx > 0:
        return n_ctx
    model_max = model.config["n_ctx_max"]
    if n_prompt >= model_max:
        raise _fasa.FasaError(
            f"prompt is {n_prompt} tokens, as long as or longer than the model's context of "
            f"{model_max} tokens"
        )
    room = _UNTIL_EOS_ROOM if max_tokens < 0 else max(max_tokens, 1)
    return min(model_max, n_prompt + room)


def generate(
    model_or_session,
    prompt,
    max_tokens=128,
    temperature=0.0,
    top_k=40,
    top_p=0.95,
    min_p=0.05,
    seed=None,
    stop=(),
    chat=False,
    system=None,
    parse_special=False,
    policy=None,
    n_ctx=0,
    kv_type="f16",
    lossless="off",
    on_text=None,
):
    """Generates from `prompt` (text, or a list of token ids) and returns a GenerateResult.

    On a Model: a fresh session with `policy` (default "full"), `n_ctx` (0 = the prompt plus
    max_tokens) and `kv_type`, the prompt made as `fasa run` makes it (`chat`, `system`,
    `parse_special`). On a Session: the prompt is appended to what the session holds (policy,
    n_ctx and kv_type are the session's). `max_tokens` -1 runs until the end of generation or of
    the context; `temperature` 0 is greedy; `seed` None draws one (stats["seed"] records it);
    `stop`: strings that end the text (not included); `lossless` off|auto|K (docs/LOSSLESS.md);
    `on_text(piece)` receives the text as it becomes final.
    """
    if seed is None:
        seed = secrets.randbits(63)
    if isinstance(prompt, str):
        if isinstance(model_or_session, Session):
            ids = model_or_session.model.prompt_tokens(prompt, chat, system, parse_special)
        else:
            ids = model_or_session.prompt_tokens(prompt, chat, system, parse_special)
    else:
        if chat or system is not None:
            raise ValueError("chat and system apply to a text prompt, not to token ids")
        ids = [int(i) for i in prompt]
    if isinstance(model_or_session, Session):
        if policy is not None or n_ctx != 0 or kv_type != "f16":
            raise ValueError("policy, n_ctx and kv_type are the session's own: set them on it")
        session = model_or_session
    elif isinstance(model_or_session, Model):
        ctx = _context_size(model_or_session, len(ids), max_tokens, n_ctx)
        session = Session(model_or_session, policy or "full", ctx, kv_type)
        if len(ids) > session.n_ctx:
            raise _fasa.FasaError(
                f"prompt is {len(ids)} tokens, longer than the context of {session.n_ctx} tokens"
            )
    else:
        raise TypeError(
            f"generate: expected a fasa.Model or fasa.Session, got {type(model_or_session).__name__}"
        )
    r = _fasa.generate(
        session._s,
        ids,
        int(max_tokens),
        float(temperature),
        int(top_k),
        float(top_p),
        float(min_p),
        int(seed),
        list(stop),
        str(lossless),
        on_text,
    )
    n_gen = len(r["tokens"])
    stats = {
        "n_prompt": r["n_prompt"],
        "n_generated": n_gen,
        "prefill_ms": r["prefill_ms"],
        "decode_ms": r["decode_ms"],
        "prefill_tokens_per_s": r["n_prompt"] * 1000.0 / max(r["prefill_ms"], 1e-9),
        "decode_tokens_per_s": n_gen * 1000.0 / max(r["decode_ms"], 1e-9) if n_gen else 0.0,
        "n_ctx": session.n_ctx,
        "seed": seed,
        "attn": r["attn"],
    }
    if "lossless" in r:
        stats["lossless"] = r["lossless"]
    return GenerateResult(r["text"], r["tokens"], r["stop_reason"], stats)
