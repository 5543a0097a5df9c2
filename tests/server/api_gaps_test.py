"""The last gaps of the OpenAI dialect through real clients against `fasa serve -m smollm2-135m`:
vLLM's min_tokens, ignore_eos and stop_token_ids through the openai client's `extra_body`
(min_tokens makes a short answer longer, a stop token ends one), fields that would change the
answer refused (llama-server's grammar), a browser's CORS preflight and request (plain
http.client), `client.models.retrieve`, `client.completions.create(prompt=[...])`, the fasa
stats where LangChain's ChatOpenAI keeps them (response_metadata), and llama-server's timings
and the X-Fasa-* headers.

    run_python_test.sh tests/server/api_gaps_test.py build/fasa
"""

import json
import os
import sys
import unittest

try:
    import openai
    from langchain_openai import ChatOpenAI
except ImportError as e:  # a venv made before these were pinned: scripts/setup.sh updates it
    print(f"api_gaps_test: {e} (run scripts/setup.sh)", file=sys.stderr)
    sys.exit(1 if os.environ.get("FASA_REQUIRE_MODEL") == "1" else 77)

sys.path.insert(0, os.path.dirname(__file__))
from fasa_server import MODEL, Server  # noqa: E402

FASA = None  # the binary, from argv

SHORT = "Is the sky blue? Answer yes or no."  # SmolLM2 answers in two tokens
PROMPT = "The capital of France is"
PAGE = "http://localhost:5173"


def chat(text):
    return [{"role": "user", "content": text}]


class ApiGapsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server(FASA, "--ctx", "512", "--max-tokens", "64", "--parallel", "4",
                         "--api-key", "k", "--cors-origin", PAGE)
        cls.client = openai.OpenAI(base_url=cls.srv.base_url, api_key="k", max_retries=0)

    @classmethod
    def tearDownClass(cls):
        code = cls.srv.stop()
        if code != 0:
            raise RuntimeError(f"fasa serve exited with {code} after SIGTERM")

    def short(self, **extra):
        return self.client.chat.completions.create(model=MODEL, messages=chat(SHORT),
                                                   max_tokens=40, temperature=0, **extra)

    # ---- vLLM's stop controls through extra_body ----

    def test_min_tokens_lengthens_a_short_answer(self):
        plain = self.short()
        self.assertLess(plain.usage.completion_tokens, 5, plain.choices[0].message.content)
        self.assertEqual(plain.choices[0].finish_reason, "stop")
        held = self.short(extra_body={"min_tokens": 12})
        self.assertGreaterEqual(held.usage.completion_tokens, 12)
        self.assertGreater(len(held.choices[0].message.content),
                           len(plain.choices[0].message.content))
        self.assertTrue(held.choices[0].message.content.startswith(
            plain.choices[0].message.content))
        # Streamed with two choices: both held back.
        chunks = list(self.client.chat.completions.create(
            model=MODEL, messages=chat(SHORT), max_tokens=40, temperature=0, n=2, stream=True,
            stream_options={"include_usage": True}, extra_body={"min_tokens": 12}))
        texts = ["", ""]
        for ch in chunks:
            for c in ch.choices:
                texts[c.index] += c.delta.content or ""
        self.assertEqual(texts, [held.choices[0].message.content] * 2)
        self.assertEqual(chunks[-1].usage.completion_tokens, 2 * held.usage.completion_tokens)

    def test_ignore_eos_runs_to_the_limit(self):
        r = self.short(extra_body={"ignore_eos": True})
        self.assertEqual(r.usage.completion_tokens, 40)
        self.assertEqual(r.choices[0].finish_reason, "length")

    def test_stop_token_ids_stop(self):
        plain = self.client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=16,
                                               temperature=0).choices[0].text
        self.assertIn(" United", plain)
        status, _, body = self.srv.request("POST", "/tokenize", {"content": " United"},
                                           {"Authorization": "Bearer k"})
        self.assertEqual(status, 200, body)
        [united] = json.loads(body)["tokens"]
        for stream in (False, True):
            r = self.client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=16,
                                               temperature=0, n=2, stream=stream,
                                               extra_body={"stop_token_ids": [united]})
            texts, finish = ["", ""], [None, None]
            for ch in (r if stream else [r]):
                for c in ch.choices:
                    texts[c.index] += c.text
                    finish[c.index] = c.finish_reason or finish[c.index]
            want = plain[:plain.index(" United")]
            self.assertEqual(texts, [want, want])
            self.assertEqual(finish, ["stop", "stop"])

    def test_bad_stop_controls_and_refused_fields_are_400s(self):
        cases = [({"stop_token_ids": [10 ** 6]}, "outside the vocabulary"),
                 ({"min_tokens": 65}, "'min_tokens' is 65, above"),
                 ({"ignore_eos": "yes"}, "'ignore_eos' must be a boolean"),
                 ({"grammar": 'root ::= "yes"'}, "'grammar' is not supported"),
                 ({"typical_p": 0.5}, "'typical_p' is not supported"),
                 ({"use_beam_search": True}, "'use_beam_search' is not supported")]
        for extra, needle in cases:
            with self.assertRaises(openai.BadRequestError, msg=str(extra)) as cm:
                self.short(extra_body=extra)
            self.assertIn(needle, cm.exception.body["message"])
        # The values that change nothing pass, as llama.cpp's web page sends them.
        r = self.short(extra_body={"typical_p": 1, "mirostat": 0, "grammar": "",
                                   "use_beam_search": False})
        self.assertEqual(r.choices[0].finish_reason, "stop")

    # ---- a web page: CORS ----

    def test_a_browser_preflight_then_the_request(self):
        status, h, body = self.srv.request("OPTIONS", "/v1/chat/completions", headers={
            "Origin": PAGE, "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization,content-type,x-stainless-os"})
        self.assertEqual(status, 204, body)  # no API key needed
        self.assertEqual(h["Access-Control-Allow-Origin"], PAGE)
        self.assertIn("POST", h["Access-Control-Allow-Methods"])
        allowed = [x.strip().lower() for x in h["Access-Control-Allow-Headers"].split(",")]
        for name in ("authorization", "content-type", "x-stainless-os"):
            self.assertIn(name, allowed)
        self.assertGreater(int(h["Access-Control-Max-Age"]), 0)
        req = {"model": MODEL, "messages": chat(SHORT), "max_tokens": 4}
        for stream in (False, True):
            status, h, body = self.srv.request(
                "POST", "/v1/chat/completions", dict(req, stream=stream),
                {"Origin": PAGE, "Authorization": "Bearer k"})
            self.assertEqual(status, 200, body)
            self.assertEqual(h["Access-Control-Allow-Origin"], PAGE)
            self.assertEqual(h["Vary"], "Origin")
            self.assertIn("X-Fasa-Policy", h["Access-Control-Expose-Headers"])
        status, h, _ = self.srv.request("POST", "/v1/chat/completions", req, {"Origin": PAGE})
        self.assertEqual(status, 401)  # the page can read why
        self.assertEqual(h["Access-Control-Allow-Origin"], PAGE)
        status, h, _ = self.srv.request("POST", "/v1/chat/completions", req,
                                        {"Origin": "http://evil.example",
                                         "Authorization": "Bearer k"})
        self.assertNotIn("Access-Control-Allow-Origin", h)
        status, h, _ = self.srv.request("OPTIONS", "/v1/chat/completions",
                                        headers={"Origin": "http://evil.example",
                                                 "Access-Control-Request-Method": "POST"})
        self.assertEqual(status, 403)
        self.assertNotIn("Access-Control-Allow-Origin", h)

    # ---- models, prompt arrays ----

    def test_models_retrieve(self):
        m = self.client.models.retrieve(MODEL)
        self.assertEqual(m.id, MODEL)
        self.assertEqual(m.object, "model")
        self.assertEqual(m.model_dump(), self.client.models.list().data[0].model_dump())
        with self.assertRaises(openai.NotFoundError):
            self.client.models.retrieve("gpt-4o")

    def test_several_prompts(self):
        prompts = [PROMPT, "1, 2, 3, 4,", "Roses are red,"]
        alone = [self.client.completions.create(model=MODEL, prompt=p, max_tokens=6,
                                                temperature=0) for p in prompts]
        r = self.client.completions.create(model=MODEL, prompt=prompts, max_tokens=6,
                                           temperature=0, n=2)
        self.assertEqual([c.index for c in r.choices], list(range(6)))
        for i, a in enumerate(alone):
            for j in range(2):
                self.assertEqual(r.choices[i * 2 + j].text, a.choices[0].text)
        self.assertEqual(r.usage.prompt_tokens, sum(a.usage.prompt_tokens for a in alone))
        self.assertEqual(r.usage.completion_tokens,
                         2 * sum(a.usage.completion_tokens for a in alone))
        texts = {}
        for ch in self.client.completions.create(model=MODEL, prompt=prompts, max_tokens=6,
                                                 temperature=0, n=2, stream=True):
            for c in ch.choices:
                texts[c.index] = texts.get(c.index, "") + c.text
        self.assertEqual([texts[k] for k in range(6)], [c.text for c in r.choices])
        with self.assertRaises(openai.BadRequestError) as cm:
            self.client.completions.create(model=MODEL, prompt=["a"] * 33, max_tokens=1)
        self.assertIn("at most 32", cm.exception.body["message"])

    # ---- where the stats are ----

    def test_langchain_keeps_the_fasa_stats(self):
        llm = ChatOpenAI(base_url=self.srv.base_url, api_key="k", model=MODEL, temperature=0,
                         max_tokens=8, max_retries=0, include_response_headers=True)
        msg = llm.invoke(SHORT)
        fasa = msg.response_metadata["token_usage"]["fasa"]
        self.assertEqual(fasa["policy"], "full")
        self.assertGreater(fasa["kv_bytes_read"], 0)
        self.assertGreater(msg.usage_metadata["output_tokens"], 0)
        headers = msg.response_metadata["headers"]
        self.assertEqual(headers["x-fasa-policy"], "full")
        self.assertEqual(int(headers["x-fasa-kv-bytes-read"]), fasa["kv_bytes_read"])

    def test_timings_and_headers(self):
        raw = self.client.chat.completions.with_raw_response.create(
            model=MODEL, messages=chat(SHORT), max_tokens=8, temperature=0)
        r = raw.parse()
        t = r.model_extra["timings"]
        self.assertEqual(t["predicted_n"], r.usage.completion_tokens)
        self.assertEqual(t["prompt_n"] + t["cache_n"], r.usage.prompt_tokens)
        self.assertGreater(t["prompt_ms"], 0)
        self.assertAlmostEqual(t["predicted_per_token_ms"], t["predicted_ms"] / t["predicted_n"])
        self.assertEqual(r.usage.model_extra["fasa"], r.model_extra["fasa"])
        self.assertEqual(int(raw.headers["x-fasa-kv-bytes-read"]),
                         r.model_extra["fasa"]["kv_bytes_read"])
        chunks = list(self.client.chat.completions.create(
            model=MODEL, messages=chat(SHORT), max_tokens=8, temperature=0, stream=True))
        self.assertIn("timings", chunks[-1].model_extra)
        self.assertTrue(all("timings" not in c.model_extra for c in chunks[:-1]))


if __name__ == "__main__":
    FASA = sys.argv.pop(1)
    unittest.main(verbosity=2)
