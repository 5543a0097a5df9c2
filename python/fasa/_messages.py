"""Chat messages as OpenAI's API gives them ({"role", "content"} dicts), checked as the server
checks a request's, into the (role, content) pairs the engine renders in the model's chat
format (src/fasa/tokenizer/chat.h)."""

from typing import Any, List, Mapping, Sequence, Tuple

from fasa._check import shown

ROLES = ("system", "developer", "user", "assistant")


def _content(func: str, where: str, value: Any) -> str:
    """A str, or a list of text parts {"type": "text", "text": ...} taken as their
    concatenation."""
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        out = []
        for j, part in enumerate(value):
            at = f"{where}[{j}]"
            if not isinstance(part, Mapping) or part.get("type") != "text":
                raise ValueError(f"{func}: {at} must be a text part "
                                 f"{{'type': 'text', 'text': ...}} (got {shown(part)}): only "
                                 "text content is supported")
            if not isinstance(part.get("text"), str):
                raise TypeError(f"{func}: {at}['text'] must be a str "
                                f"(got {shown(part.get('text'))})")
            out.append(part["text"])
        return "".join(out)
    raise TypeError(f"{func}: {where} must be a str or a list of text parts (got {shown(value)})")


def message_pairs(func: str, messages: Any) -> List[Tuple[str, str]]:
    """[(role, content)]: roles system (or developer), user and assistant; other keys (name,
    tool_calls: None, ...) are ignored."""
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence):
        raise TypeError(f"{func}: messages must be a list of {{'role', 'content'}} dicts "
                        f"(got {shown(messages)})")
    if not messages:
        raise ValueError(f"{func}: messages is empty")
    pairs = []
    for i, m in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(m, Mapping):
            raise TypeError(f"{func}: {where} must be a dict {{'role', 'content'}} "
                            f"(got {shown(m)})")
        role = m.get("role")
        if role not in ROLES:
            raise ValueError(f"{func}: {where}['role'] must be one of {', '.join(ROLES)} "
                             f"(got {shown(role)})")
        if "content" not in m:
            raise ValueError(f"{func}: {where} has no 'content'")
        pairs.append(("system" if role == "developer" else role,
                      _content(func, f"{where}['content']", m["content"])))
    return pairs
