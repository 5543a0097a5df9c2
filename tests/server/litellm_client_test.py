"""LiteLLM's OpenAI provider against `fasa serve -m smollm2-135m`: `litellm.completion(model=
"openai/<id>", api_base=...)` plain and streamed gives the answer the openai client gets, with
its usage, and sends no field the server ignores.

    run_python_test.sh tests/server/litellm_client_test.py build/fasa
"""

import os
import sys
import unittest
import warnings

# The model price list ships with the package: no download at import.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

try:
    import litellm
    import openai
except ImportError as e:  # a venv made before litellm was pinned: scripts/setup.sh updates it
    print(f"litellm_client_test: {e} (run scripts/setup.sh)", file=sys.stderr)
    sys.exit(1 if os.environ.get("FASA_REQUIRE_MODEL") == "1" else 77)

litellm.suppress_debug_info = True  # no help banner with each refusal
# LiteLLM's own pydantic deprecation and serializer warnings are not this test's subject.
warnings.simplefilter("ignore")

sys.path.insert(0, os.path.dirname(__file__))
from fasa_server import MODEL, Server  # noqa: E402

FASA = None  # the binary, from argv

MESSAGES = [{"role": "user", "content": "What is the capital of France? Answer in one sentence."}]


class LiteLLMTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server(FASA, "--ctx", "512", "--max-tokens", "64", "--api-key", "k")
        cls.want = openai.OpenAI(base_url=cls.srv.base_url, api_key="k").chat.completions.create(
            model=MODEL, messages=MESSAGES, max_tokens=20, temperature=0)

    @classmethod
    def tearDownClass(cls):
        code = cls.srv.stop()
        if code != 0:
            raise RuntimeError(f"fasa serve exited with {code} after SIGTERM")

    def ask(self, **kw):
        return litellm.completion(model=f"openai/{MODEL}", api_base=self.srv.base_url,
                                  api_key="k", messages=MESSAGES, max_tokens=20, temperature=0,
                                  num_retries=0, **kw)

    def test_completion(self):
        r = self.ask()
        self.assertEqual(r.choices[0].message.content, self.want.choices[0].message.content)
        self.assertIn("Paris", r.choices[0].message.content)
        self.assertEqual(r.choices[0].finish_reason, self.want.choices[0].finish_reason)
        self.assertEqual(r.usage.prompt_tokens, self.want.usage.prompt_tokens)
        self.assertEqual(r.usage.completion_tokens, self.want.usage.completion_tokens)

    def test_streamed_completion(self):
        text, finish = "", None
        for chunk in self.ask(stream=True, stream_options={"include_usage": True}):
            for c in chunk.choices:
                text += c.delta.content or ""
                finish = c.finish_reason or finish
        self.assertEqual(text, self.want.choices[0].message.content)
        self.assertEqual(finish, self.want.choices[0].finish_reason)

    def test_fields_it_sends_are_all_known(self):
        self.ask()
        self.ask(stream=True)
        lines = [l for l in self.srv.log if "/v1/chat/completions" in l]
        self.assertGreaterEqual(len(lines), 2)
        for line in lines:
            self.assertNotIn("ignored=", line)

    def test_vllm_extras_and_refusals_pass_through(self):
        r = self.ask(extra_body={"ignore_eos": True})
        self.assertEqual(r.usage.completion_tokens, 20)
        self.assertEqual(r.choices[0].finish_reason, "length")
        with self.assertRaises(litellm.BadRequestError) as cm:
            self.ask(extra_body={"grammar": 'root ::= "Paris"'})
        self.assertIn("is not supported: GBNF grammars", str(cm.exception))


if __name__ == "__main__":
    FASA = sys.argv.pop(1)
    unittest.main(verbosity=2)
