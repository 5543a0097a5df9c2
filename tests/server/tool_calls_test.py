"""Tool calling through real clients against `fasa serve -m smollm2-135m` (SmolLM2's template has
no tool syntax: the generic format, its answer kept in the tool-call grammar). The openai client
with `tools` and tool_choice "required" or a named function gets `tool_calls` whose arguments
parse and validate against the function's pydantic model; streamed, the deltas join into the
same call; LangChain's `bind_tools` agent loop (call, run the tool, send the ToolMessage back,
answer) works, and `with_structured_output(method="function_calling")` returns the pydantic
object. Mistakes come back as 400s naming the field.

    run_python_test.sh tests/server/tool_calls_test.py build/fasa
"""

import json
import os
import sys
import unittest
from typing import Literal

try:
    import openai
    import pydantic
    from langchain_core.messages import HumanMessage, ToolMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
except ImportError as e:  # a venv made before these were pinned: scripts/setup.sh updates it
    print(f"tool_calls_test: {e} (run scripts/setup.sh)", file=sys.stderr)
    sys.exit(1 if os.environ.get("FASA_REQUIRE_MODEL") == "1" else 77)

sys.path.insert(0, os.path.dirname(__file__))
from fasa_server import MODEL, Server  # noqa: E402

FASA = None  # the binary, from argv

ASK = "What is the weather in Paris?"


class WeatherArgs(pydantic.BaseModel):
    city: str
    unit: Literal["celsius", "fahrenheit"]


class Person(pydantic.BaseModel):
    """A person mentioned in the text."""
    name: str
    age: int


def weather_tool():
    return {"type": "function", "function": {
        "name": "get_weather", "description": "Get the current weather in a city.",
        "parameters": WeatherArgs.model_json_schema()}}


def time_tool():
    return {"type": "function", "function": {
        "name": "get_time", "description": "Get the local time in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"]}}}


@tool
def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> str:
    """Get the current weather in a city."""
    return f"22 degrees {unit}, sunny, in {city}"


class ToolCallsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server(FASA, "--ctx", "2048", "--max-tokens", "160", "--parallel", "2")
        cls.client = openai.OpenAI(base_url=cls.srv.base_url, api_key="unused")

    @classmethod
    def tearDownClass(cls):
        code = cls.srv.stop()
        if code != 0:
            raise RuntimeError(f"fasa serve exited with {code} after SIGTERM")

    def create(self, **kw):
        return self.client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": ASK}], temperature=0,
            max_tokens=160, **kw)

    def test_required_answers_with_a_valid_call(self):
        r = self.create(tools=[weather_tool(), time_tool()], tool_choice="required")
        choice = r.choices[0]
        self.assertEqual(choice.finish_reason, "tool_calls", choice.message)
        self.assertIsNone(choice.message.content)
        self.assertGreaterEqual(len(choice.message.tool_calls), 1)
        call = choice.message.tool_calls[0]
        self.assertEqual(call.type, "function")
        self.assertTrue(call.id.startswith("call_"), call.id)
        self.assertIn(call.function.name, ["get_weather", "get_time"])
        args = json.loads(call.function.arguments)  # a JSON string, as OpenAI sends it
        if call.function.name == "get_weather":
            WeatherArgs.model_validate(args)
        self.assertIn("city", args)

    def test_a_named_function_is_the_one_called(self):
        r = self.create(tools=[weather_tool(), time_tool()],
                        tool_choice={"type": "function", "function": {"name": "get_weather"}})
        call = r.choices[0].message.tool_calls[0]
        self.assertEqual(call.function.name, "get_weather")
        args = WeatherArgs.model_validate_json(call.function.arguments)
        self.assertIn("Paris", args.city)

    def test_streamed_deltas_join_into_the_same_call(self):
        kw = {"tools": [weather_tool()], "tool_choice": "required"}
        whole = self.create(**kw).choices[0].message.tool_calls
        calls, content, finish = {}, "", None
        for chunk in self.create(stream=True, **kw):
            if not chunk.choices:
                continue
            delta = chunk.choices[0].delta
            content += delta.content or ""
            for d in delta.tool_calls or []:
                if d.index not in calls:  # the first chunk: id, type, name and empty arguments
                    self.assertEqual(d.type, "function")
                    self.assertEqual(d.function.arguments, "")
                    calls[d.index] = {"id": d.id, "name": d.function.name, "arguments": ""}
                else:
                    calls[d.index]["arguments"] += d.function.arguments or ""
            finish = chunk.choices[0].finish_reason or finish
        self.assertEqual(finish, "tool_calls")
        self.assertEqual(content, "")  # nothing of the call leaks into the content
        self.assertEqual([(c["name"], c["arguments"]) for c in calls.values()],
                         [(c.function.name, c.function.arguments) for c in whole])

    def test_langchain_agent_loop(self):
        llm = ChatOpenAI(base_url=self.srv.base_url, api_key="unused", model=MODEL,
                         temperature=0, max_tokens=160, max_retries=0)
        messages = [HumanMessage(ASK)]
        ai = llm.bind_tools([get_weather], tool_choice="get_weather").invoke(messages)
        self.assertEqual(len(ai.tool_calls), 1, ai)
        self.assertEqual(ai.tool_calls[0]["name"], "get_weather")
        self.assertIn("city", ai.tool_calls[0]["args"])
        messages.append(ai)
        result = get_weather.invoke(ai.tool_calls[0])  # a ToolMessage with the call's id
        self.assertIsInstance(result, ToolMessage)
        messages.append(result)
        # The history holds the assistant's call (content empty) and the tool's result.
        final = llm.bind_tools([get_weather], tool_choice="none").invoke(messages)
        self.assertEqual(final.tool_calls, [])
        self.assertIsInstance(final.content, str)
        self.assertTrue(final.content.strip(), final)
        # With "auto" the same history is accepted too: an answer or another call.
        again = llm.bind_tools([get_weather]).invoke(messages)
        self.assertTrue(again.content or again.tool_calls, again)

    def test_langchain_structured_output_by_function_calling(self):
        llm = ChatOpenAI(base_url=self.srv.base_url, api_key="unused", model=MODEL,
                         temperature=0, max_tokens=100, max_retries=0)
        person = llm.with_structured_output(Person, method="function_calling").invoke(
            "Alice is 30 years old. Extract the person.")
        self.assertIsInstance(person, Person)
        self.assertTrue(person.name)

    def test_mistakes_are_400s_naming_the_field(self):
        cases = [
            ({"tools": [{"type": "retrieval"}]}, "'tools[0].type' must be 'function'"),
            ({"tools": [weather_tool()],
              "tool_choice": {"type": "function", "function": {"name": "nope"}}},
             "'tool_choice' names function 'nope'"),
            ({"tools": [weather_tool()], "tool_choice": "sometimes"}, "'tool_choice' must be"),
            ({"tool_choice": "required"}, "'tool_choice' 'required' needs 'tools'"),
            ({"functions": [{"name": "f", "parameters": {}}]}, "send 'tools'"),
        ]
        for extra, needle in cases:
            with self.assertRaises(openai.BadRequestError, msg=extra) as e:
                self.client.chat.completions.create(
                    model=MODEL, messages=[{"role": "user", "content": ASK}], max_tokens=5,
                    extra_body=extra)
            self.assertIn(needle, e.exception.body["message"])
        with self.assertRaises(openai.BadRequestError) as e:
            self.client.chat.completions.create(
                model=MODEL, max_tokens=5,
                messages=[{"role": "user", "content": ASK},
                          {"role": "tool", "content": "22"}])
        self.assertIn("'messages[1].tool_call_id' is required", e.exception.body["message"])


if __name__ == "__main__":
    FASA = sys.argv.pop(1)
    unittest.main(verbosity=2)
