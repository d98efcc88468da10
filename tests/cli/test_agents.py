"""`plan mcp` and `plan api` answer the CLI's questions with the CLI's JSON (cli/questions.py).

Rules pinned: a real MCP client (the SDK's ClientSession over stdio, launching `python -m cli.main mcp`) lists one
tool per question with the request model as its input schema, and the `plan` tool's answer equals the parsed
output of `plan --model llama-3.1-8b --ram 64 --json`; bad input is a tool error of one line. The HTTP API answers
the same question with the same JSON, bad input is 400 {"schema_version", "error": {"code", "message"}} (the
command line's --json error), an oversized body 413.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli.main import main
from cli.questions import QUESTIONS, QuestionError, answer

ROOT = Path(__file__).resolve().parents[2]
QUESTION = {"model": "llama-3.1-8b", "ram": 64}


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("MAC_LLM_PLANNER_FAKE_DARWIN", None)
    return env


@pytest.fixture(scope="module")
def cli_json():
    out = subprocess.run([sys.executable, "-m", "cli.main", "--model", "llama-3.1-8b", "--ram", "64", "--json"],
                         capture_output=True, text=True, env=_env(), cwd=ROOT, timeout=300, check=True)
    return json.loads(out.stdout)


def test_questions_cover_the_five_and_schemas_are_the_request_models():
    assert set(QUESTIONS) == {"plan", "what_runs", "recommend", "buy", "serve"}
    for q in QUESTIONS.values():
        schema = q.input_schema()
        assert schema["type"] == "object"
        assert set(schema["properties"]) == set(q.request.model_fields)
    assert "model" in QUESTIONS["plan"].input_schema()["required"]


@pytest.mark.parametrize("args, field", [({"model": "llama-3.1-8b", "ram": -1}, "ram"),
                                         ({"model": "llama-3.1-8b", "ram": 64, "colour": "red"}, "colour"),
                                         ({"ram": 64}, "model"),
                                         ({"model": "llama-3.1-8b", "ram": 64, "context": "long"}, "context")])
def test_bad_input_is_one_line_naming_the_field(args, field):
    with pytest.raises(QuestionError) as e:
        answer("plan", args)
    msg = str(e.value)
    assert "\n" not in msg and field in msg and "Traceback" not in msg


@pytest.mark.parametrize("question, args", [("plan", {"model": "no-such-model-zz", "ram": 64}),
                                            ("serve", {"model": "no-such-model-zz", "chip": "M4 Max"})])
def test_an_unknown_model_is_named_once(question, args):
    # the agents spell the --model input as `model`: the message said "unknown model model 'no-such-model-zz'"
    with pytest.raises(QuestionError) as e:
        answer(question, args)
    assert "unknown model 'no-such-model-zz'" in str(e.value) and "model model" not in str(e.value)


@pytest.mark.parametrize("question, args, field", [
    ("buy", {"model": ["llama-3.1-8b"], "link": "tb4"}, "link"),                  # the clusters' link, no clusters
    ("plan", {"model": "qwen3-8b", "ram": 64, "thinking_tokens": 500}, "thinking_tokens"),  # the wait needs a chip
])
def test_an_argument_that_would_be_ignored_is_refused_naming_it(question, args, field):
    """As on the command line (tests/cli/test_contract.py): refused with one line naming the argument, not ignored."""
    with pytest.raises(QuestionError) as e:
        answer(question, args)
    msg = str(e.value)
    assert field in msg and "--" not in msg and "\n" not in msg


@pytest.mark.parametrize("args, field", [({"seed": -1}, "seed"), ({"rate": "fast"}, "rate"),
                                         ({"duration": "-1h"}, "duration")])
def test_serve_bad_input_names_the_argument_as_the_agents_spell_it(args, field):
    # seed -1 reached numpy ("serve: expected non-negative integer", no input named); rate and duration were named
    # by the command line's --rate / --duration
    with pytest.raises(QuestionError) as e:
        answer("serve", {"model": "llama-3.1-8b", "chip": "M4 Max", **args})
    msg = str(e.value)
    assert f"serve: {field} " in msg and "--" not in msg and "\n" not in msg


@pytest.mark.parametrize("question, args, field", [
    ("buy", {"model": ["llama-3.1-8b"], "kwh_price": float("nan")}, "kwh_price"),
    ("buy", {"model": ["llama-3.1-8b"], "busy_hours": float("nan")}, "busy_hours"),
    ("what_runs", {"ram": 64, "max_params": float("nan")}, "max_params"),
    ("what_runs", {"ram": 64, "max_params": float("inf")}, "max_params"),
    ("serve", {"model": "llama-3.1-8b", "chip": "M4 Max", "max_ttft_p95": float("inf")}, "max_ttft_p95"),
])
def test_non_finite_numbers_are_said_to_be_so(question, args, field):
    # NaN failed only a bound ("busy_hours nan: Input should be less than or equal to 24"), and an infinite
    # max_params / max_ttft_p95 was taken as asked
    with pytest.raises(QuestionError) as e:
        answer(question, args)
    assert f"{field} " in str(e.value) and "finite number" in str(e.value)
    if question == "buy":
        flag = "--" + field.replace("_", "-")
        assert main(["buy", "--model", "llama-3.1-8b", flag, "nan"]) == 2


def test_unknown_question_and_non_object_arguments():
    with pytest.raises(QuestionError, match="unknown question"):
        answer("fly", {})
    with pytest.raises(QuestionError, match="JSON object"):
        answer("plan", ["llama-3.1-8b"])  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------------------------- MCP
def test_mcp_client_lists_tools_and_gets_the_cli_answer(cli_json):
    pytest.importorskip("mcp")
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "cli.main", "mcp"], env=_env(), cwd=ROOT)

    async def talk():
        with anyio.fail_after(240):
            return await _talk()

    async def _talk():
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
            good = await session.call_tool("plan", QUESTION)
            bad = await session.call_tool("plan", {"model": "llama-3.1-8b", "ram": "sixty-four"})
            unknown = await session.call_tool("plan", {"model": "no-such-model-anywhere", "ram": 64})
            return tools, good, bad, unknown

    tools, good, bad, unknown = anyio.run(talk)
    by_name = {t.name: t for t in tools}
    assert set(by_name) == set(QUESTIONS)
    assert by_name["plan"].input_schema["properties"].keys() == QUESTIONS["plan"].request.model_fields.keys()
    assert not good.is_error
    assert json.loads(good.content[0].text) == cli_json
    assert good.structured_content == cli_json
    for res, field in ((bad, "ram"), (unknown, "no-such-model-anywhere")):
        assert res.is_error
        text = res.content[0].text
        assert "\n" not in text and field in text and "Traceback" not in text


# ---------------------------------------------------------------------------------------------------- HTTP
@pytest.fixture(scope="module")
def api():
    from cli.http_api import serve_in_thread

    server, thread = serve_in_thread("127.0.0.1", 0)
    yield server.server_address[:2]
    server.shutdown()
    server.server_close()


def _request(addr, method, path, body=None, raw: bytes | None = None):
    conn = http.client.HTTPConnection(*addr, timeout=240)
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    payload = json.loads(r.read())
    conn.close()
    return r.status, payload


def test_http_binds_localhost_by_default():
    from cli.http_api import make_server

    s = make_server(port=0)
    try:
        assert s.server_address[0] == "127.0.0.1"
    finally:
        s.server_close()


def test_http_health_and_the_cli_answer(api, cli_json):
    status, body = _request(api, "GET", "/health")
    assert status == 200 and body["status"] == "ok" and set(body["questions"]) == set(QUESTIONS)
    status, body = _request(api, "POST", "/plan", QUESTION)
    assert status == 200 and body == cli_json
    status, body = _request(api, "GET", "/questions")
    assert status == 200 and body["plan"]["input_schema"] == QUESTIONS["plan"].input_schema()


@pytest.mark.parametrize("path, body, raw, status", [
    ("/plan", {"model": "llama-3.1-8b", "ram": 0}, None, 400),
    ("/plan", None, b"{not json", 400),
    ("/plan", None, b"[1, 2]", 400),
    ("/fly", {}, None, 404),
    ("/plan", {"model": "llama-3.1-8b", "ram": 64, "kv_type": "f16\nx"}, None, 400),
    ("/plan", None, b" " * (65 * 1024), 413),
    ("/plan", None, b"[" * 60000, 400),                      # was a RecursionError traceback, connection dropped
    ("/plan", None, b'{"model": "qwen3-8b", "ram": 64, "model": "llama-3.1-8b"}', 400),  # was: the last one
])
def test_http_bad_input_is_one_line(api, path, body, raw, status):
    got, payload = _request(api, "POST", path, body, raw)
    assert got == status
    # the command line's --json error object (issue 32): {"schema_version", "error": {"code", "message"}}
    assert set(payload) == {"schema_version", "error"} and set(payload["error"]) >= {"code", "message"}
    assert "\n" not in payload["error"]["message"] and payload["error"]["message"] and payload["error"]["code"]


@pytest.mark.parametrize("name, args, argv", [
    ("what_runs", {"ram": 16}, ["models", "--ram", "16"]),
    ("plan", {"model": "phi3", "ram": 48, "quants": ["4bit"], "runtimes": ["llama.cpp"]},
     ["--model", "phi3", "--ram", "48", "--quant", "4bit", "--runtime", "llama.cpp"]),
    ("recommend", {"model": "qwen3-8b", "chip": "M4 Pro", "gpu_cores": 20, "ram": 48},
     ["recommend", "--model", "qwen3-8b", "--chip", "M4 Pro", "--gpu-cores", "20", "--ram", "48"]),
    ("buy", {"model": ["qwen3-8b"], "budget": 3000}, ["buy", "--model", "qwen3-8b", "--budget", "3000"]),
    ("serve", {"model": "qwen3-8b", "chip": "M4 Pro", "gpu_cores": 20, "ram": 48, "duration": "10min",
               "sweep": False},
     ["serve", "--model", "qwen3-8b", "--chip", "M4 Pro", "--gpu-cores", "20", "--ram", "48", "--duration", "10min",
      "--no-sweep"]),
])
def test_every_question_answers_as_its_command(name, args, argv, monkeypatch):
    out = subprocess.run([sys.executable, "-m", "cli.main", *argv, "--json"], capture_output=True, text=True,
                         env=_env(), cwd=ROOT, timeout=300, check=True)
    from cli import words

    own = answer(name, args)
    # the same answer; only the inputs a note names are spelled as the question's arguments, not as flags
    monkeypatch.setattr(words, "arg_names", lambda question=None: words.FLAGS)
    assert answer(name, args) == json.loads(out.stdout)
    assert own.keys() == json.loads(out.stdout).keys()


def test_the_plan_questions_notes_name_its_arguments_not_flags():
    # qa: the plan question answered the command line's JSON, its notes spelled as flags ("give --model with the
    # tag", "--quant 4bit is a mlx format") where every other question names its arguments
    notes = answer("plan", {"model": "phi3", "ram": 48, "quants": ["4bit"], "runtimes": ["llama.cpp"]})["notes"]
    assert any("give model with the tag" in n for n in notes) and any(n.startswith("quants 4bit") for n in notes)
    assert not any("--" in n for n in notes)


def test_http_other_methods_are_405_json(api):
    status, payload = _request(api, "DELETE", "/plan")
    assert status == 405 and "\n" not in payload["error"]["message"] and payload["error"]["code"] == "method"
