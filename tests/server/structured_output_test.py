"""Structured outputs through real clients against `fasa serve -m smollm2-135m`: the openai SDK's
`client.beta.chat.completions.parse(response_format=PydanticModel)` returns `.parsed`, an
instance of the model; LangChain's `ChatOpenAI(...).with_structured_output(PydanticModel,
method="json_schema")` returns one too. The model has an enum field and an Optional one, so its
schema holds $defs, $ref and anyOf. vLLM's guided_choice through `extra_body`, and a schema
keyword outside the subset answered with a 400 that names it.

    run_python_test.sh tests/server/structured_output_test.py build/fasa
"""

import enum
import json
import os
import sys
import unittest
from typing import Optional

try:
    import openai
    import pydantic
    from langchain_openai import ChatOpenAI
except ImportError as e:  # a venv made before these were pinned: scripts/setup.sh updates it
    print(f"structured_output_test: {e} (run scripts/setup.sh)", file=sys.stderr)
    sys.exit(1 if os.environ.get("FASA_REQUIRE_MODEL") == "1" else 77)

sys.path.insert(0, os.path.dirname(__file__))
from fasa_server import MODEL, Server  # noqa: E402

FASA = None  # the binary, from argv

ASK = "Describe the city of Paris: its name, country and population."


class Kind(str, enum.Enum):
    capital = "capital"
    town = "town"


class City(pydantic.BaseModel):
    name: str
    country: str
    population: int
    is_capital: bool
    kind: Kind
    motto: Optional[str] = None


class StructuredOutputTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server(FASA, "--ctx", "1024", "--max-tokens", "200", "--parallel", "2")
        cls.client = openai.OpenAI(base_url=cls.srv.base_url, api_key="unused")

    @classmethod
    def tearDownClass(cls):
        code = cls.srv.stop()
        if code != 0:
            raise RuntimeError(f"fasa serve exited with {code} after SIGTERM")

    def test_the_schema_has_defs_ref_and_anyof(self):
        schema = json.dumps(City.model_json_schema())
        for part in ('"$defs"', '"$ref"', '"anyOf"'):
            self.assertIn(part, schema)

    def test_openai_parse_returns_the_pydantic_model(self):
        r = self.client.beta.chat.completions.parse(
            model=MODEL, messages=[{"role": "user", "content": ASK}], response_format=City,
            temperature=0, max_tokens=200)
        choice = r.choices[0]
        self.assertEqual(choice.finish_reason, "stop", choice.message.content)
        self.assertIsInstance(choice.message.parsed, City, choice.message.content)
        self.assertIn("Paris", choice.message.parsed.name)
        self.assertEqual(City.model_validate_json(choice.message.content), choice.message.parsed)

    def test_langchain_with_structured_output_returns_the_pydantic_model(self):
        llm = ChatOpenAI(base_url=self.srv.base_url, api_key="unused", model=MODEL,
                         temperature=0, max_tokens=200, max_retries=0)
        city = llm.with_structured_output(City, method="json_schema").invoke(ASK)
        self.assertIsInstance(city, City)
        self.assertIn("Paris", city.name)

    def test_guided_choice(self):
        r = self.client.chat.completions.create(
            model=MODEL, temperature=0, max_tokens=10,
            messages=[{"role": "user", "content": "Is Paris in France? Answer yes or no."}],
            extra_body={"guided_choice": ["yes", "no"]})
        self.assertIn(r.choices[0].message.content, ["yes", "no"])
        self.assertEqual(r.choices[0].finish_reason, "stop")

    def test_an_unsupported_keyword_is_a_400_naming_it(self):
        class Code(pydantic.BaseModel):
            code: str = pydantic.Field(pattern="^[A-Z]{3}$")

        with self.assertRaises(openai.BadRequestError) as e:
            self.client.beta.chat.completions.parse(
                model=MODEL, messages=[{"role": "user", "content": "A code?"}],
                response_format=Code, max_tokens=20)
        self.assertIn("'pattern' at #/properties/code/pattern", e.exception.body["message"])


if __name__ == "__main__":
    FASA = sys.argv.pop(1)
    unittest.main(verbosity=2)
