"""Qwen 2.5 Coder's own tool format through the openai client against `fasa serve -m
qwen2.5-coder-1.5b` (opt-in, 1.1 GB: skipped without the model, failed instead under
FASA_REQUIRE_QWEN=1; ctest's name holds Qwen25Coder, which scripts/test.sh leaves out by
default). With tool_choice "auto" the model's call (a bare {"name", "arguments"} object, as this
model writes it instead of <tool_call> tags) comes back as `tool_calls`; "required" keeps it in
<tool_call> blocks; the call sent back with its result is rendered as the template's
<tool_call> and <tool_response>: with "auto" the model calls again (read as a call), with
"none" it answers from the result.

    run_python_test.sh tests/server/tool_calls_qwen_test.py build/fasa
"""

import json
import os
import sys
import unittest
from typing import Literal

try:
    import openai
    import pydantic
except ImportError as e:
    print(f"tool_calls_qwen_test: {e} (run scripts/setup.sh)", file=sys.stderr)
    sys.exit(1 if os.environ.get("FASA_REQUIRE_QWEN") == "1" else 77)

sys.path.insert(0, os.path.dirname(__file__))
from fasa_server import Server  # noqa: E402

FASA = None  # the binary, from argv
QWEN = "qwen2.5-coder-1.5b"


def qwen_present():
    home = os.environ.get("FASA_HOME", os.path.expanduser("~/.cache/fasa"))
    d = os.path.join(home, "models", QWEN)
    return os.path.isdir(d) and any(f.endswith(".gguf") for f in os.listdir(d))


class WeatherArgs(pydantic.BaseModel):
    city: str
    unit: Literal["celsius", "fahrenheit"]


TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city.",
    "parameters": WeatherArgs.model_json_schema()}}]
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


class QwenToolCallsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server(FASA, "--ctx", "2048", "--max-tokens", "120", threads=2, model=QWEN)
        cls.client = openai.OpenAI(base_url=cls.srv.base_url, api_key="unused")

    @classmethod
    def tearDownClass(cls):
        code = cls.srv.stop()
        if code != 0:
            raise RuntimeError(f"fasa serve exited with {code} after SIGTERM")

    def create(self, messages, **kw):
        return self.client.chat.completions.create(
            model=QWEN, messages=messages, tools=TOOLS, temperature=0, max_tokens=120, **kw)

    def test_auto_call_round_trips(self):
        r = self.create(ASK, tool_choice="auto")
        choice = r.choices[0]
        self.assertEqual(choice.finish_reason, "tool_calls", choice.message)
        call = choice.message.tool_calls[0]
        self.assertEqual(call.function.name, "get_weather")
        self.assertIn("Paris", WeatherArgs.model_validate_json(call.function.arguments).city)
        history = ASK + [choice.message.model_dump(exclude_none=True),
                         {"role": "tool", "tool_call_id": call.id,
                          "content": "23 degrees celsius, light rain"}]
        # Sent back, rendered as <tool_call> and <tool_response>: with "auto" this small coder
        # model calls again, in its template's doubled braces {{...}}, read as a call too.
        again = self.create(history, tool_choice="auto").choices[0]
        self.assertEqual(again.finish_reason, "tool_calls", again.message)
        WeatherArgs.model_validate_json(again.message.tool_calls[0].function.arguments)
        # With "none" (the history still in the tool format) it answers from the result.
        final = self.create(history, tool_choice="none").choices[0]
        self.assertEqual(final.finish_reason, "stop", final.message)
        self.assertIsNone(final.message.tool_calls)
        self.assertIn("23", final.message.content)  # the answer read the <tool_response>

    def test_required_is_kept_in_tool_call_blocks(self):
        r = self.create(ASK, tool_choice="required", parallel_tool_calls=False)
        choice = r.choices[0]
        self.assertEqual(choice.finish_reason, "tool_calls", choice.message)
        self.assertEqual(len(choice.message.tool_calls), 1)
        args = json.loads(choice.message.tool_calls[0].function.arguments)
        WeatherArgs.model_validate(args)


if __name__ == "__main__":
    FASA = sys.argv.pop(1)
    if not qwen_present():
        print(f"tool_calls_qwen_test: no {QWEN} in $FASA_HOME/models (fasa pull {QWEN})",
              file=sys.stderr)
        sys.exit(1 if os.environ.get("FASA_REQUIRE_QWEN") == "1" else 77)
    unittest.main(verbosity=2)
