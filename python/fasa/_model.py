"""Model: a loaded GGUF model, its config and tokenizer; where a model name points."""

import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from fasa import _check, _fasa
from fasa._messages import message_pairs


def set_threads(n: int) -> None:
    """Threads the engine computes with, for the whole process (0 = every core)."""
    _fasa.set_threads(_check.integer("set_threads", "n", n, 0))


def num_threads() -> int:
    """Threads the engine computes with."""
    return int(_fasa.num_threads())


def model_path(path_or_name: Union[str, os.PathLike[str]]) -> str:
    """The GGUF file a model argument stands for, as the CLI's -m resolves it: a path as given,
    or the file of a known model pulled into the cache (`fasa pull NAME`; $FASA_HOME, default
    ~/.cache/fasa). Raises FasaError saying what was tried (and, for a known model not pulled
    yet, to run `fasa pull NAME`)."""
    return str(_fasa.model_path(_check.path("model_path", "path_or_name", path_or_name)))


class Model:
    """A GGUF model: a file path, or the name of a known model already pulled into the cache
    (`fasa pull NAME`, $FASA_HOME or ~/.cache/fasa). `threads` sets the process's thread count
    (set_threads) when given. Immutable; any number of sessions and threads may share it."""

    def __init__(self, path_or_name: Union[str, os.PathLike[str]],
                 threads: Optional[int] = None) -> None:
        where = _check.path("Model", "path_or_name", path_or_name)
        if threads is not None:
            set_threads(threads)
        self._m = _fasa.Model(where)
        self._config: Dict[str, Any] = self._m.config

    @property
    def path(self) -> str:
        """The GGUF file."""
        return str(self._m.path)

    @property
    def config(self) -> Dict[str, Any]:
        """The model's shape and metadata as a dict (a copy)."""
        return dict(self._config)

    @property
    def n_vocab(self) -> int:
        return int(self._config["n_vocab"])

    @property
    def bos_id(self) -> int:
        return int(self._m.bos_id)

    @property
    def eos_id(self) -> int:
        return int(self._m.eos_id)

    def is_eog(self, token: int) -> bool:
        """Whether the token ends a generation (EOS, EOT or a chat turn's end)."""
        return bool(self._m.is_eog(_check.integer("Model.is_eog", "token", token)))

    def sha256(self) -> str:
        """sha256 of the model file (the identity calibrations and results are bound to)."""
        return str(self._m.sha256())

    def tokenize(self, text: str, add_special: bool = True,
                 parse_special: bool = False) -> List[int]:
        """Text to token ids (list of int). `add_special`: BOS first when the model adds one;
        `parse_special`: special-token texts such as "<|im_start|>" become those tokens."""
        f = "Model.tokenize"
        return list(self._m.tokenize(_check.text(f, "text", text),
                                     _check.flag(f, "add_special", add_special),
                                     _check.flag(f, "parse_special", parse_special)))

    def detokenize(self, ids: Sequence[int], show_special: bool = False) -> str:
        """Token ids to text (invalid UTF-8 replaced by U+FFFD); control tokens are shown only
        with `show_special`."""
        f = "Model.detokenize"
        return str(self._m.detokenize(_check.token_ids(f, "ids", ids),
                                      _check.flag(f, "show_special", show_special)))

    def prompt_tokens(self, prompt: str, chat: bool = False, system: Optional[str] = None,
                      parse_special: bool = False) -> List[int]:
        """A prompt's ids as `fasa run` makes them: the text with BOS, or with `chat` one user
        turn (after the system text, if any) in the model's chat format."""
        f = "Model.prompt_tokens"
        prompt = _check.text(f, "prompt", prompt)
        system = _check.optional_text(f, "system", system)
        parse_special = _check.flag(f, "parse_special", parse_special)
        if not _check.flag(f, "chat", chat):
            if system is not None:
                raise ValueError("system is for chat prompts (chat=True)")
            return list(self._m.text_prompt(prompt, parse_special))
        messages = ([("system", system)] if system is not None else []) + [("user", prompt)]
        return list(self._m.chat_prompt(messages, parse_special))

    def chat_tokens(self, messages: Sequence[Mapping[str, Any]],
                    parse_special: bool = False) -> List[int]:
        """The ids of a conversation (OpenAI-style {"role", "content"} dicts) in the model's
        chat format, ending with the assistant's turn opener: what fasa.chat prefills. The
        contents are plain text (a message holding "<|im_end|>" cannot end its turn) unless
        `parse_special`."""
        f = "Model.chat_tokens"
        return list(self._m.chat_prompt(message_pairs(f, messages),
                                        _check.flag(f, "parse_special", parse_special)))

    def __repr__(self) -> str:
        return f"fasa.Model({self.path!r})"
