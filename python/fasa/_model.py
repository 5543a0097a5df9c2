"""Model: a loaded GGUF model, its config and tokenizer."""

import os

from fasa import _fasa


def set_threads(n):
    """Threads the engine computes with, for the whole process (0 = every core)."""
    _fasa.set_threads(int(n))


def num_threads():
    """Threads the engine computes with."""
    return _fasa.num_threads()


class Model:
    """A GGUF model: a file path, or the name of a known model already pulled into the cache
    (`fasa pull NAME`, $FASA_HOME or ~/.cache/fasa). `threads` sets the process's thread count
    (set_threads) when given. Immutable; any number of sessions and threads may share it."""

    def __init__(self, path_or_name, threads=None):
        if threads is not None:
            set_threads(threads)
        self._m = _fasa.Model(os.fspath(path_or_name))
        self._config = self._m.config

    @property
    def path(self):
        """The GGUF file."""
        return self._m.path

    @property
    def config(self):
        """The model's shape and metadata as a dict (a copy)."""
        return dict(self._config)

    @property
    def n_vocab(self):
        return self._config["n_vocab"]

    @property
    def bos_id(self):
        return self._m.bos_id

    @property
    def eos_id(self):
        return self._m.eos_id

    def is_eog(self, token):
        """Whether the token ends a generation (EOS, EOT or a chat turn's end)."""
        return self._m.is_eog(int(token))

    def sha256(self):
        """sha256 of the model file (the identity calibrations and results are bound to)."""
        return self._m.sha256()

    def tokenize(self, text, add_special=True, parse_special=False):
        """Text to token ids (list of int). `add_special`: BOS first when the model adds one;
        `parse_special`: special-token texts such as "<|im_start|>" become those tokens."""
        return self._m.tokenize(text, add_special, parse_special)

    def detokenize(self, ids, show_special=False):
        """Token ids to text (invalid UTF-8 replaced by U+FFFD); control tokens are shown only
        with `show_special`."""
        return self._m.detokenize([int(i) for i in ids], show_special)

    def prompt_tokens(self, prompt, chat=False, system=None, parse_special=False):
        """A prompt's ids as `fasa run` makes them: the text with BOS, or with `chat` one user
        turn (after the system text, if any) in the model's chat format."""
        if not chat:
            if system is not None:
                raise ValueError("system is for chat prompts (chat=True)")
            return self._m.text_prompt(prompt, parse_special)
        messages = ([("system", system)] if system is not None else []) + [("user", prompt)]
        return self._m.chat_prompt(messages, parse_special)

    def __repr__(self):
        return f"fasa.Model({self.path!r})"
