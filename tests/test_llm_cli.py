"""``mnemonic llm test`` against the scripted server (and a closed port): one real round
trip, a diagnosis that names the fix, and sysexits codes; ``mnemonic llm status`` asks a
real daemon."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from support.cli import Run
from support.daemon_proc import TOKEN, free_port, running
from support.openai_server import OpenAIServer, Reply, Request, chat_reply, error_reply

CHAT = "/v1/chat/completions"
PONG = '{"ok": true, "word": "pong"}'


def env_for(
    tmp_path: Path, base_url: str, model: str = "test-model", **extra: str
) -> dict[str, str]:
    return {
        "MNEMONIC_HOME": str(tmp_path / "home"),
        "MNEMONIC_LLM__PROVIDER": "openai",
        "MNEMONIC_LLM__BASE_URL": base_url,
        "MNEMONIC_LLM__MODEL": model,
        **extra,
    }


def test_a_good_round_trip(run: Run, tmp_path: Path) -> None:
    with OpenAIServer(default_chat_reply=PONG) as server:
        code, out, err = run(env_for(tmp_path, server.base_url), "llm", "test")
        code_json, out_json, _ = run(env_for(tmp_path, server.base_url), "llm", "test", "--json")
        sent = server.requests_to(CHAT)[0].json()
    assert code == 0, err
    assert out.startswith("ok: test-model at http://127.0.0.1:")
    assert "response_format json_schema: yes" in out
    assert sent["model"] == "test-model" and "response_format" in sent
    assert code_json == 0
    result = json.loads(out_json)
    assert result["ok"] is True and result["answer"] == {"ok": True, "word": "pong"}
    assert result["exit_code"] == 0 and result["latency_ms"] > 0


def test_a_closed_port_says_cannot_connect(run: Run, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    code, out, err = run(env_for(tmp_path, url), "llm", "test")
    assert code == 69
    assert f"cannot connect to {url}: " in err and "is the server running?" in err
    code, out, _ = run(env_for(tmp_path, url), "llm", "test", "--json")
    assert code == 69
    result = json.loads(out)
    assert result["ok"] is False and result["error"] == "connect"


def test_a_wrong_model_name_lists_what_the_server_offers(run: Run, tmp_path: Path) -> None:
    def by_model(request: Request) -> Reply:
        model = request.json()["model"]
        if model != "llama3.2:3b":
            return error_reply(404, f"model '{model}' not found")
        return chat_reply(PONG)

    with OpenAIServer(model_name="llama3.2:3b") as server:
        server.set_handler(CHAT, by_model)
        code, _, err = run(env_for(tmp_path, server.base_url, "lama3.2"), "llm", "test")
        good, _, _ = run(env_for(tmp_path, server.base_url, "llama3.2:3b"), "llm", "test")
    assert code == 78, err
    assert "model 'lama3.2' not found; the server offers: llama3.2:3b" in err
    assert good == 0


def test_a_rejected_key_names_the_variable(run: Run, tmp_path: Path) -> None:
    with OpenAIServer() as server:
        server.set_handler(CHAT, lambda r: error_reply(401, "invalid api key"))
        code, _, err = run(
            env_for(tmp_path, server.base_url, MNEMONIC_LLM_API_KEY="sk-wrong-key-123456"),
            "llm",
            "test",
        )
        sent = server.requests_to(CHAT)[0]
    assert code == 78
    assert "refused the API key (HTTP 401)" in err and "MNEMONIC_LLM_API_KEY" in err
    assert sent.header("Authorization") == "Bearer sk-wrong-key-123456"
    assert "sk-wrong-key-123456" not in err


def test_a_slow_model_times_out(run: Run, tmp_path: Path) -> None:
    with OpenAIServer() as server:
        server.set_handler(CHAT, lambda r: Reply(body=chat_reply(PONG).body, delay=2.0))
        code, _, err = run(env_for(tmp_path, server.base_url), "llm", "test", "--timeout", "0.3")
    assert code == 75
    assert "did not answer within 0.3 s" in err


def test_an_answer_that_is_not_json_is_a_data_error(run: Run, tmp_path: Path) -> None:
    with OpenAIServer(default_chat_reply="Pong! Happy to help.") as server:
        code, _, err = run(env_for(tmp_path, server.base_url), "llm", "test")
    assert code == 65
    assert "not with the JSON asked for" in err and "json_mode: prompt" in err


def test_no_llm_configured_is_a_config_error(run: Run, tmp_path: Path) -> None:
    code, _, err = run({"MNEMONIC_HOME": str(tmp_path / "home")}, "llm", "test")
    assert code == 78
    assert "no LLM configured (llm.provider: none)" in err


@pytest.mark.skipif(
    importlib.util.find_spec("litellm") is not None, reason="litellm is installed here"
)
def test_litellm_configured_but_not_installed_says_how_to_install(run: Run, tmp_path: Path) -> None:
    env = {
        "MNEMONIC_HOME": str(tmp_path / "home"),
        "MNEMONIC_LLM__PROVIDER": "litellm",
        "MNEMONIC_LLM__MODEL": "anthropic/claude-3-5-haiku",
    }
    code, _, err = run(env, "llm", "test")
    assert code == 78
    assert "pip install 'mnemonic[litellm]'" in err


def test_status_without_a_daemon_is_unavailable(run: Run, tmp_path: Path) -> None:
    env = {"MNEMONIC_HOME": str(tmp_path / "home"), "MNEMONIC_PORT": str(free_port())}
    code, _, err = run(env, "llm", "status")
    assert code == 69 and "not running" in err


def test_status_and_usage_from_a_running_daemon(run: Run, tmp_path: Path) -> None:
    with OpenAIServer(default_chat_reply=PONG) as server:
        llm_env = {
            "MNEMONIC_LLM__PROVIDER": "openai",
            "MNEMONIC_LLM__BASE_URL": server.base_url,
            "MNEMONIC_LLM__MODEL": "test-model",
        }
        home = tmp_path / "home"
        with running(home, env=llm_env) as daemon:
            env = {
                "MNEMONIC_HOME": str(home),
                "MNEMONIC_PORT": str(daemon.port),
                "MNEMONIC_TOKEN": TOKEN,
                **llm_env,
            }
            code, out, err = run(env, "llm", "status", "--json")
            text_code, text, _ = run(env, "llm", "status")
            usage_code, usage, _ = run(env, "llm", "usage", "--json")
    assert code == 0, err
    status = json.loads(out)
    assert status["configured"] is True and status["mode"] == "llm"
    assert status["model"] == "test-model" and status["breaker"]["state"] == "closed"
    assert text_code == 0 and "mode: llm" in text and "breaker: closed" in text
    assert usage_code == 0 and json.loads(usage)["totals"]["calls"] == 0
