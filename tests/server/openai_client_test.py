"""`fasa serve` against the official OpenAI Python client and raw HTTP: completions, chat and
streams equal `fasa run`; per-request policies; every malformed input gets its status and a
message naming the problem; cancellation frees the sequence; the API key; a full queue.

    run_python_test.sh tests/server/openai_client_test.py build/fasa
"""

import json
import socket
import sys
import time
import unittest

import openai

sys.path.insert(0, __import__("os").path.dirname(__file__))
from fasa_server import MODEL, Server, fasa_run  # noqa: E402

FASA = None  # the binary, from argv

PROMPT = "The three primary colors are"
CHAT = "What is the capital of France? Answer in one sentence."


class ServerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server(FASA, "--ctx", "512", "--max-tokens", "64", "--parallel", "4")
        cls.client = openai.OpenAI(base_url=cls.srv.base_url, api_key="unused")

    @classmethod
    def tearDownClass(cls):
        code = cls.srv.stop()
        if code != 0:
            raise RuntimeError(f"fasa serve exited with {code} after SIGTERM")

    # ---- the openai client ----

    def test_completion_equals_fasa_run(self):
        r = self.client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=20,
                                           temperature=0)
        self.assertEqual(r.choices[0].text, fasa_run(FASA, PROMPT, 20, "--ctx", "512"))
        self.assertEqual(r.object, "text_completion")
        self.assertEqual(r.usage.completion_tokens, 20)
        self.assertEqual(r.choices[0].finish_reason, "length")
        self.assertGreater(r.usage.prompt_tokens, 3)
        self.assertEqual(r.usage.total_tokens, r.usage.prompt_tokens + 20)
        fasa = r.model_extra["fasa"]
        self.assertEqual(fasa["policy"], "full")
        self.assertGreater(fasa["kv_bytes_read"], 0)

    def test_chat_equals_fasa_run(self):
        r = self.client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": CHAT}], max_tokens=24,
            temperature=0)
        want = fasa_run(FASA, CHAT, 24, "--chat", "--ctx", "512")
        self.assertEqual(r.choices[0].message.content, want)
        self.assertEqual(r.choices[0].message.role, "assistant")
        self.assertIn("Paris", r.choices[0].message.content)

    def test_streams_equal_the_whole_answers(self):
        whole = self.client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=16,
                                               temperature=0).choices[0].text
        chunks = list(self.client.completions.create(
            model=MODEL, prompt=PROMPT, max_tokens=16, temperature=0, stream=True,
            stream_options={"include_usage": True}))
        self.assertGreater(len(chunks), 3)
        text = "".join(c.choices[0].text for c in chunks if c.choices)
        self.assertEqual(text, whole)
        self.assertEqual([c.choices[0].finish_reason for c in chunks if c.choices][-1], "length")
        self.assertEqual(chunks[-1].usage.completion_tokens, 16)

        whole = self.client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": CHAT}], max_tokens=16,
            temperature=0).choices[0].message.content
        chunks = list(self.client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": CHAT}], max_tokens=16,
            temperature=0, stream=True))
        self.assertEqual(chunks[0].choices[0].delta.role, "assistant")
        text = "".join(c.choices[0].delta.content or "" for c in chunks)
        self.assertEqual(text, whole)

    def test_per_request_policy(self):
        long_prompt = " ".join(f"Item {i} is a {'red' if i % 2 else 'blue'} box." for i in range(40))
        full = self.client.completions.create(model=MODEL, prompt=long_prompt, max_tokens=12,
                                              temperature=0)
        r = self.client.completions.create(
            model=MODEL, prompt=long_prompt, max_tokens=12, temperature=0,
            extra_body={"fasa": {"policy": "streaming", "budget": 32, "sinks": 4}})
        fasa = r.model_extra["fasa"]
        self.assertEqual(fasa["policy"], "streaming:budget=32,sinks=4")
        self.assertEqual(r.choices[0].text,
                         fasa_run(FASA, long_prompt, 12, "--ctx", "512",
                                  "--policy", "streaming:sinks=4", "--budget", "32"))
        # A 32-token budget reads far less KV per step than the whole (~400-token) cache.
        self.assertLess(fasa["kv_bytes_read_per_token"],
                        full.model_extra["fasa"]["kv_bytes_read_per_token"] / 4)

    def test_per_request_lossless(self):
        # A sparse policy drafting, full attention verifying: greedy text equals full's.
        long_prompt = " ".join(f"Line {i}: the {'cat' if i % 3 else 'dog'} sat." for i in range(40))
        full = self.client.completions.create(model=MODEL, prompt=long_prompt, max_tokens=16,
                                              temperature=0).choices[0].text
        for setting in (4, "auto"):
            r = self.client.completions.create(
                model=MODEL, prompt=long_prompt, max_tokens=16, temperature=0,
                extra_body={"fasa": {"policy": "streaming", "budget": 16, "sinks": 4,
                                     "lossless": setting}})
            self.assertEqual(r.choices[0].text, full, setting)
            self.assertEqual(r.usage.completion_tokens, 16)
            lo = r.model_extra["fasa"]["lossless"]
            self.assertEqual(lo["setting"], str(setting))
            self.assertGreater(lo["verifications"], 0)
            self.assertLessEqual(lo["accepted"], lo["drafted"])
            self.assertGreaterEqual(lo["tokens_per_verification"], 1.0)
        # Without the option the answer carries no lossless object.
        self.assertNotIn("lossless", self.client.completions.create(
            model=MODEL, prompt=PROMPT, max_tokens=2, temperature=0).model_extra["fasa"])
        # FASA-M's tiered cache cannot take drafts back: a 400 naming the option, before any
        # calibration is looked for.
        with self.assertRaises(openai.BadRequestError) as e:
            self.client.completions.create(
                model=MODEL, prompt=PROMPT, max_tokens=4,
                extra_body={"fasa": {"policy": "fasa", "variant": "m", "budget": 32,
                                     "lossless": 4}})
        self.assertIn("variant=m", str(e.exception))
        self.assertIn("fasa.lossless", str(e.exception))
        for bad in (15, -1, "fast", 2.5):
            with self.assertRaises(openai.BadRequestError) as e:
                self.client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=4,
                                               extra_body={"fasa": {"lossless": bad}})
            self.assertIn("fasa.lossless", str(e.exception))

    def test_seed_makes_sampling_reproducible(self):
        def sample(seed):
            return self.client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=12,
                                                  temperature=1.0, seed=seed).choices[0].text
        self.assertEqual(sample(7), sample(7))
        self.assertNotEqual(sample(7), sample(8))

    def test_stop_strings(self):
        whole = self.client.completions.create(model=MODEL, prompt="1, 2, 3,", max_tokens=12,
                                               temperature=0).choices[0].text
        self.assertIn(" 5", whole)
        r = self.client.completions.create(model=MODEL, prompt="1, 2, 3,", max_tokens=12,
                                           temperature=0, stop=[" 5"])
        self.assertEqual(r.choices[0].text, whole[:whole.index(" 5")])
        self.assertEqual(r.choices[0].finish_reason, "stop")

    def test_models_and_health(self):
        self.assertEqual([m.id for m in self.client.models.list().data], [MODEL])
        status, _, body = self.srv.request("GET", "/health")
        self.assertEqual((status, json.loads(body)), (200, {"status": "ok"}))

    def test_client_errors_through_the_client(self):
        with self.assertRaises(openai.BadRequestError) as e:
            self.client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=65)
        self.assertIn("max_tokens", str(e.exception))
        with self.assertRaises(openai.NotFoundError) as e:
            self.client.completions.create(model="gpt-4", prompt=PROMPT, max_tokens=4)
        self.assertIn("gpt-4", str(e.exception))
        with self.assertRaises(openai.BadRequestError) as e:
            self.client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=4,
                                           extra_body={"fasa": {"policy": "nope"}})
        self.assertIn("nope", str(e.exception))

    # ---- malformed input, raw HTTP ----

    def expect(self, status, needle, method, path, body=None, headers=None):
        got, _, text = self.srv.request(method, path, body, headers)
        self.assertEqual(got, status, text)
        err = json.loads(text)["error"]
        self.assertIn(needle, err["message"])
        return err

    def test_malformed_requests(self):
        c = "/v1/completions"
        self.expect(400, "not valid JSON (at byte", "POST", c, "{\"prompt\": ")
        self.expect(400, "object", "POST", c, "[1, 2]")
        self.expect(415, "Content-Type: application/json", "POST", c, '{"prompt": "x"}',
                    {"Content-Type": "text/plain"})
        self.expect(400, "json_schema", "POST", c,
                    {"prompt": "x", "response_format": {"type": "json_schema"}})
        self.expect(400, "logit_bias", "POST", c, {"prompt": "x", "logit_bias": {"99999999": 1}})
        self.expect(400, "vocabulary", "POST", c, {"prompt": [1, 99999999]})
        self.expect(400, "fasa.lossless", "POST", c,
                    {"prompt": "x", "logprobs": 1, "fasa": {"lossless": 2}})
        self.expect(400, "temperature", "POST", c, {"prompt": "x", "temperature": "hot"})
        self.expect(400, "prompt", "POST", c, {"max_tokens": 3})
        self.expect(400, "messages", "POST", "/v1/chat/completions", {"messages": []})
        self.expect(400, "messages[0].role", "POST", "/v1/chat/completions",
                    {"messages": [{"role": "robot", "content": "hi"}]})
        self.expect(400, "n", "POST", c, {"prompt": "x", "n": 9})
        self.expect(400, "fasa.calib", "POST", c, {"prompt": "x", "fasa": {"calib": "/etc/x"}})
        self.expect(400, "budget", "POST", c,
                    {"prompt": "x", "fasa": {"policy": "streaming", "budget": -3}})
        self.expect(400, "context", "POST", c, {"prompt": "word " * 600, "max_tokens": 1})
        self.expect(404, "no such endpoint", "GET", "/v2/nothing")
        self.expect(405, "POST", "GET", c)
        self.expect(405, "GET", "POST", "/v1/models", {})

    def test_body_limit_and_raw_protocol_errors(self):
        big = {"prompt": "x" * (2 << 20)}
        self.expect(413, "", "POST", "/v1/completions", big)
        s = socket.create_connection(("127.0.0.1", self.srv.port), timeout=10)
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        reply = s.recv(4096).decode()
        s.close()
        self.assertTrue(reply.startswith("HTTP/1.1 411"), reply)
        s = socket.create_connection(("127.0.0.1", self.srv.port), timeout=10)
        s.sendall(b"THIS IS NOT HTTP\r\n\r\n")
        reply = s.recv(4096).decode()
        s.close()
        self.assertTrue(reply.startswith("HTTP/1.1 400"), reply)
        # ... and the server still answers.
        self.assertEqual(self.srv.request("GET", "/health")[0], 200)

    def test_disconnect_cancels_and_frees_the_sequence(self):
        before = self.srv.metrics().get('fasa_jobs_total{outcome="cancelled"}', 0)
        body = json.dumps({"prompt": "1, 2, 3,", "max_tokens": 64, "temperature": 0,
                           "stream": True}).encode()
        s = socket.create_connection(("127.0.0.1", self.srv.port), timeout=30)
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        got = b""
        while b"data: " not in got:
            got += s.recv(4096)
        s.close()  # mid-stream
        for _ in range(200):
            m = self.srv.metrics()
            if (m['fasa_jobs_total{outcome="cancelled"}'] == before + 1
                    and m["fasa_active_sequences"] == 0 and m["fasa_kv_bytes_allocated"] == 0):
                break
            time.sleep(0.05)
        else:
            self.fail(f"the sequence was not freed: {m}")

    # ---- what other servers accept (issue 24) ----

    def test_unknown_fields_are_ignored_and_named(self):
        status, headers, text = self.srv.request(
            "POST", "/v1/chat/completions",
            {"messages": [{"role": "user", "content": CHAT, "tool_calls": None, "refusal": None}],
             "max_tokens": 2, "bogus": 1, "tools": [], "metadata": {"a": 1}})
        self.assertEqual(status, 200, text)
        ignored = headers["X-Fasa-Ignored-Fields"].split(", ")
        self.assertEqual(sorted(ignored), ["bogus", "messages[0].refusal", "metadata"])
        status, headers, _ = self.srv.request("POST", "/v1/completions",
                                              {"prompt": "x", "max_tokens": 1})
        self.assertNotIn("X-Fasa-Ignored-Fields", headers)

    def tokenize(self, text):
        status, _, body = self.srv.request("POST", "/tokenize", {"content": text})
        self.assertEqual(status, 200, body)
        return json.loads(body)["tokens"]

    def test_tokenize_and_detokenize(self):
        ids = self.tokenize(PROMPT)
        self.assertGreater(len(ids), 3)
        status, _, body = self.srv.request("POST", "/detokenize", {"tokens": ids})
        self.assertEqual((status, json.loads(body)["content"]), (200, PROMPT))
        _, _, body = self.srv.request("POST", "/tokenize", {"content": "hi", "with_pieces": True})
        self.assertEqual("".join(t["piece"] for t in json.loads(body)["tokens"]), "hi")
        self.expect(400, "'content' (a string) is required", "POST", "/tokenize", {})
        self.expect(400, "unknown field 'text'", "POST", "/tokenize", {"content": "x", "text": 1})
        self.expect(400, "tokens[1]", "POST", "/detokenize", {"tokens": [1, -1]})
        self.expect(405, "POST", "GET", "/tokenize")

    def test_vllm_tokenizer_endpoints(self):
        # What lm-eval's remote tokenizer (tokenizer_backend=remote) asks: vLLM's forms.
        status, _, body = self.srv.request("GET", "/tokenizer_info")
        self.assertEqual(status, 200, body)
        info = json.loads(body)
        self.assertRegex(info["eos_token"], r"^<\|\w+\|>$")  # SmolLM2-Instruct's: <|im_end|>
        self.assertEqual(info["model_max_length"], 512)
        self.assertIn("<|im_start|>", info["chat_template"])  # the file's Jinja template
        status, _, body = self.srv.request("POST", "/tokenize",
                                           {"prompt": PROMPT, "add_special_tokens": False})
        self.assertEqual((status, json.loads(body)["tokens"]), (200, self.tokenize(PROMPT)))
        _, _, body = self.srv.request("POST", "/tokenize", {"prompt": info["eos_token"]})
        self.assertEqual(len(json.loads(body)["tokens"]), 1)  # special texts are parsed
        _, _, body = self.srv.request("POST", "/detokenize", {"tokens": self.tokenize(PROMPT)})
        self.assertEqual(json.loads(body)["prompt"], PROMPT)
        self.expect(405, "GET", "POST", "/tokenizer_info")
        self.expect(400, "not both", "POST", "/tokenize", {"prompt": "a", "content": "a"})

    def test_logprobs(self):
        r = self.client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=6,
                                           temperature=0, logprobs=3)
        lp = r.choices[0].logprobs
        self.assertEqual(len(lp.tokens), 6)
        self.assertEqual("".join(lp.tokens), r.choices[0].text)
        for tok, p, top in zip(lp.tokens, lp.token_logprobs, lp.top_logprobs):
            self.assertLessEqual(p, 0.0)
            self.assertLessEqual(len(top), 3)
            best = max(top, key=top.get)  # greedy: the token sampled is the likeliest
            self.assertEqual(best, tok)
            self.assertAlmostEqual(top[best], p, places=5)
        self.assertEqual(lp.text_offset[0], 0)
        # Chat: a boolean and top_logprobs.
        c = self.client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": CHAT}], max_tokens=5,
            temperature=0, logprobs=True, top_logprobs=2)
        content = c.choices[0].logprobs.content
        self.assertEqual(len(content), 5)
        self.assertEqual("".join(t.token for t in content), c.choices[0].message.content)
        self.assertTrue(all(len(t.top_logprobs) == 2 for t in content))
        self.assertEqual(bytes(content[0].bytes).decode(), content[0].token)
        # Streamed: every token's logprob arrives in some chunk.
        chunks = list(self.client.completions.create(
            model=MODEL, prompt=PROMPT, max_tokens=6, temperature=0, logprobs=1, stream=True))
        streamed = [t for ch in chunks if ch.choices and ch.choices[0].logprobs
                    for t in ch.choices[0].logprobs.token_logprobs]
        self.assertEqual(len(streamed), 6)
        for a, b in zip(streamed, lp.token_logprobs):
            self.assertAlmostEqual(a, b, places=5)

    def test_echo_scores_the_prompt(self):
        gen = self.client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=4,
                                             temperature=0, logprobs=0)
        ids = self.tokenize(PROMPT)
        # The same tokens as a prompt: their echoed logprobs equal the generated ones.
        gen_ids = self.tokenize(PROMPT + gen.choices[0].text)[len(ids):]
        e = self.client.completions.create(model=MODEL, prompt=ids + gen_ids, max_tokens=0,
                                           echo=True, logprobs=1, temperature=0)
        lp = e.choices[0].logprobs
        self.assertEqual(e.choices[0].text, PROMPT + gen.choices[0].text)
        self.assertIsNone(lp.token_logprobs[0])
        self.assertEqual(len(lp.tokens), len(ids) + len(gen_ids))
        if len(gen_ids) == 4:  # the text re-tokenizes to the same ids
            for a, b in zip(lp.token_logprobs[len(ids):], gen.choices[0].logprobs.token_logprobs):
                self.assertAlmostEqual(a, b, delta=2e-3)
        self.assertEqual(e.usage.completion_tokens, 0)
        # A prompt that starts like a scored one takes its whole 32-token chunks (the scorer
        # keeps scored prompts) and gives the same logprobs for them.
        longer = ids * (64 // len(ids) + 1)
        before = self.srv.metrics()
        a = self.client.completions.create(model=MODEL, prompt=longer + [ids[0]], max_tokens=0,
                                           echo=True, logprobs=1, temperature=0)
        b = self.client.completions.create(model=MODEL, prompt=longer + [ids[1]], max_tokens=0,
                                           echo=True, logprobs=1, temperature=0)
        after = self.srv.metrics()
        self.assertEqual(a.choices[0].logprobs.token_logprobs[:len(longer)],
                         b.choices[0].logprobs.token_logprobs[:len(longer)])
        self.assertEqual(after["fasa_echo_prompts_total"] - before["fasa_echo_prompts_total"], 2)
        self.assertGreaterEqual(after["fasa_echo_cache_tokens_total"]
                                - before["fasa_echo_cache_tokens_total"], 32)
        # Echo with generation: the prompt's text, then the answer's.
        both = self.client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=4,
                                              temperature=0, echo=True)
        self.assertEqual(both.choices[0].text, PROMPT + gen.choices[0].text)

    def test_n_choices(self):
        r = self.client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=6, n=3,
                                           temperature=0.9, seed=11)
        self.assertEqual([c.index for c in r.choices], [0, 1, 2])
        self.assertEqual(r.usage.completion_tokens, 18)
        again = self.client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=6, n=3,
                                               temperature=0.9, seed=11)
        self.assertEqual([c.text for c in r.choices], [c.text for c in again.choices])
        greedy = self.client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": CHAT}], max_tokens=6, n=2,
            temperature=0)
        self.assertEqual(greedy.choices[0].message.content, greedy.choices[1].message.content)
        chunks = list(self.client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=5,
                                                     n=2, temperature=0, stream=True))
        texts = ["", ""]
        for ch in chunks:
            for c in ch.choices:
                texts[c.index] += c.text
        whole = self.client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=5,
                                               temperature=0).choices[0].text
        self.assertEqual(texts, [whole, whole])

    def test_penalties_and_logit_bias(self):
        forced = self.tokenize(" banana")[-1]
        r = self.client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=1,
                                           temperature=0, logit_bias={str(forced): 100})
        self.assertEqual(r.choices[0].text, " banana")
        plain = self.client.completions.create(model=MODEL, prompt="1, 1, 1, 1, 1,",
                                               max_tokens=8, temperature=0).choices[0].text
        pen = self.client.completions.create(model=MODEL, prompt="1, 1, 1, 1, 1,", max_tokens=8,
                                             temperature=0, frequency_penalty=2.0,
                                             presence_penalty=2.0).choices[0].text
        self.assertNotEqual(plain, pen)
        rep = self.client.completions.create(model=MODEL, prompt="1, 1, 1, 1, 1,", max_tokens=8,
                                             temperature=0,
                                             extra_body={"repetition_penalty": 3.0})
        self.assertNotEqual(plain, rep.choices[0].text)

    def test_json_object(self):
        r = self.client.chat.completions.create(
            model=MODEL, max_tokens=60, temperature=0,
            messages=[{"role": "user",
                       "content": "Describe a cat as a JSON object with keys name and age."}],
            response_format={"type": "json_object"})
        text = r.choices[0].message.content
        self.assertTrue(text.lstrip().startswith("{"), text)
        if r.choices[0].finish_reason == "stop":
            self.assertIsInstance(json.loads(text), dict)

    def test_metrics(self):
        self.client.completions.create(model=MODEL, prompt=PROMPT, max_tokens=2)
        m = self.srv.metrics()
        self.assertGreater(m['fasa_requests_total{endpoint="/v1/completions",status="200"}'], 0)
        for name in ["fasa_tokens_per_second", "fasa_queue_depth", 'fasa_kv_bytes_resident{tier="ram"}',
                     'fasa_kv_bytes_resident{tier="disk"}', 'fasa_policy_kv_bytes_read_per_token{policy="full"}',
                     "fasa_process_peak_resident_bytes", "fasa_slots"]:
            self.assertIn(name, m)
        self.assertEqual(m["fasa_slots"], 4)
        self.assertGreater(m["fasa_time_to_first_token_seconds_count"], 0)
        self.assertEqual(m['fasa_time_to_first_token_seconds_bucket{le="+Inf"}'],
                         m["fasa_time_to_first_token_seconds_count"])
        self.assertGreater(m["fasa_time_per_output_token_seconds_count"], 0)
        self.assertGreater(m['fasa_policy_kv_bytes_read_per_token{policy="full"}'], 0)


class ApiKeyTest(unittest.TestCase):
    def test_api_key(self):
        with Server(FASA, "--api-key", "s3cret", "--ctx", "256") as srv:
            bad = openai.OpenAI(base_url=srv.base_url, api_key="wrong")
            with self.assertRaises(openai.AuthenticationError):
                bad.completions.create(model=MODEL, prompt=PROMPT, max_tokens=2)
            status, headers, _ = srv.request("GET", "/v1/models")
            self.assertEqual(status, 401)
            self.assertEqual(headers.get("WWW-Authenticate"), "Bearer")
            self.assertEqual(srv.request("GET", "/health")[0], 200)  # health stays open
            good = openai.OpenAI(base_url=srv.base_url, api_key="s3cret")
            r = good.completions.create(model=MODEL, prompt=PROMPT, max_tokens=2)
            self.assertEqual(r.usage.completion_tokens, 2)


class QueueTest(unittest.TestCase):
    def test_full_queue_answers_503(self):
        with Server(FASA, "--parallel", "1", "--queue", "0", "--ctx", "512") as srv:
            client = openai.OpenAI(base_url=srv.base_url, api_key="x", max_retries=0)
            stream = client.completions.create(model=MODEL, prompt="1, 2, 3,", max_tokens=200,
                                               temperature=0, stream=True)
            next(iter(stream))  # the one slot is busy now
            status, headers, body = srv.request("POST", "/v1/completions",
                                                {"prompt": "hi", "max_tokens": 2})
            self.assertEqual(status, 503, body)
            self.assertEqual(headers.get("Retry-After"), "1")
            self.assertIn("busy", json.loads(body)["error"]["message"])
            stream.close()


if __name__ == "__main__":
    FASA = sys.argv.pop(1)
    unittest.main(verbosity=2)
