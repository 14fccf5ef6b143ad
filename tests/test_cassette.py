"""Cassettes: record a real HTTP model once, replay with the server gone, never fall through."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import workbench as wb
from tests._chat_server import chat_server, closed_port_url

SECRET_KEY = "sk-live0123456789abcdefghij"


@wb.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def calculator(model: wb.Model) -> wb.Agent:
    return wb.Agent(model=model, name="calculator", tools=[add], stop=wb.MaxSteps(4), store=False)


def openai(base_url: str) -> wb.OpenAIModel:
    return wb.OpenAIModel("calculator-1", base_url=base_url, api_key=SECRET_KEY, max_retries=0)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_recorded_against_a_server_replayed_with_it_gone(tmp_path: Path, stream: bool) -> None:
    path = tmp_path / "calc.json"
    settings: wb.ModelSettings = {"temperature": 0, "stream": stream}
    live_deltas: list[str] = []
    with chat_server() as server:
        recording = wb.cassette(path, openai(server.base_url), mode="record")
        live = calculator(recording).run_sync(
            "What is 17 + 25?", settings=settings, on_text_delta=live_deltas.append
        )
    assert live.output == "17 + 25 = 42" and len(server.bodies) == 2
    assert server.authorizations == [f"Bearer {SECRET_KEY}"] * 2  # the key was really sent

    replay = wb.cassette(path, openai(closed_port_url()), mode="replay")
    replayed_deltas: list[str] = []
    again = calculator(replay).run_sync(
        "What is 17 + 25?", settings=settings, on_text_delta=replayed_deltas.append
    )
    assert again.status is wb.ExecutionStatus.COMPLETED and again.output == live.output
    assert [s.tool_calls for s in again.steps] == [s.tool_calls for s in live.steps]
    assert again.usage.total_tokens == live.usage.total_tokens == 50
    assert replayed_deltas == live_deltas
    assert (len(live_deltas) > 1) is stream  # the answer came in 3-character pieces
    replay.assert_complete()
    assert len(server.bodies) == 2 and len(replay.calls) == 2


def test_the_file_is_readable_versioned_json_without_secrets(tmp_path: Path) -> None:
    path = tmp_path / "calc.json"
    with chat_server() as server:
        model = wb.cassette(path, openai(server.base_url), mode="record", redact=[r"acct-\d+"])
        agent = wb.Agent(
            model=model,
            system_prompt=f"Use account acct-12345. Authorization: Bearer {SECRET_KEY}",
            tools=[add],
            store=False,
        )
        agent.run_sync("What is 2 + 3? my password=hunter2hunter")
    text = path.read_text()
    for secret in (SECRET_KEY, "hunter2hunter", "acct-12345"):
        assert secret not in text
    data = json.loads(text)
    assert (data["format"], data["version"]) == ("workbench-cassette", 1)
    assert data["model"] == {"name": "calculator-1", "provider": "openai"}
    first = data["interactions"][0]
    system, user = first["request"]["messages"]
    assert system["parts"][0]["text"] == (
        "Use account [REDACTED]. Authorization: Bearer [REDACTED]"
    )
    assert user == {
        "role": "user",
        "parts": [{"kind": "text", "text": "What is 2 + 3? my password=[REDACTED]"}],
    }
    assert first["request"]["definitions"][0]["name"] == "add"
    assert first["response"]["parts"][0]["arguments"] == {"a": 2, "b": 3}
    assert text.startswith("{\n  ")  # indented: reviewable in a diff

    # the redacted request still matches: a replay of the same run works
    replay = wb.cassette(path, mode="replay", redact=[r"acct-\d+"])
    again = wb.Agent(
        model=replay, system_prompt=agent.system_prompt, tools=[add], store=False
    ).run_sync("What is 2 + 3? my password=hunter2hunter")
    assert again.output == "2 + 3 = 5"
    assert replay.name == "calculator-1" and replay.provider == "openai"


def test_a_secret_split_across_stream_deltas_is_not_written(tmp_path: Path) -> None:
    deltas = ["the key is sk-live01234", "56789abcdefghij ok"]

    def streaming(messages: object, request: wb.ModelRequest) -> wb.ModelResponse:
        assert request.on_text_delta is not None
        for piece in deltas:
            request.on_text_delta(piece)
        return wb.ModelResponse.text("".join(deltas))

    path = tmp_path / "split.json"
    seen: list[str] = []
    agent = wb.Agent(model=wb.cassette(path, wb.FunctionModel(streaming)), store=False)
    result = agent.run_sync("key?", on_text_delta=seen.append)
    assert seen == deltas and result.output == "".join(deltas)  # the live run is untouched
    assert "sk-live" not in path.read_text()
    stored = json.loads(path.read_text())["interactions"][0]
    assert stored["stream"] == ["the key is [REDACTED] ok"]


def test_once_records_when_missing_and_replays_after(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "once.json"
    with chat_server() as server:
        first = wb.cassette(path, openai(server.base_url))
        assert first.mode == "record"
        calculator(first).run_sync("What is 1 + 2?")
        second = wb.cassette(path, openai(server.base_url))
        assert second.mode == "replay"
        assert calculator(second).run_sync("What is 1 + 2?").output == "1 + 2 = 3"
    assert len(server.bodies) == 2  # the second run asked the server nothing


def test_a_miss_is_a_divergence_with_the_diff_and_the_model_is_never_called(
    tmp_path: Path,
) -> None:
    path = tmp_path / "calc.json"
    with chat_server() as server:
        calculator(wb.cassette(path, openai(server.base_url))).run_sync("What is 1 + 2?")

    fallback = wb.ScriptedModel(["should never be used"])
    result = calculator(wb.cassette(path, fallback, mode="replay")).run_sync("What is 1 + 3?")
    assert result.status is wb.ExecutionStatus.FAILED and result.error is not None
    assert result.error.type == "ReplayDivergence"
    assert result.error.message.endswith(
        "message 0 (user), part 0\n"
        "- recorded: text 'What is 1 + 2?'\n"
        "+ sent:     text 'What is 1 + 3?'"
    )
    assert f"cassette {path}, request 1" in result.error.message
    assert fallback.calls == []


async def test_asking_past_the_recording_is_a_divergence(tmp_path: Path) -> None:
    path = tmp_path / "one.json"
    model = wb.ScriptedModel(["hello"])
    calculator(wb.cassette(path, model)).run_sync("Hi")
    replay = wb.cassette(path, mode="replay")
    request = wb.ModelRequest(messages=[wb.Message.user("Hi")], tools=(add.definition,))
    assert (await replay.request(request)).text_content == "hello"
    with pytest.raises(wb.ReplayDivergence, match="holds 1 requests, all answered; request 2"):
        await replay.request(request)


async def test_a_changed_setting_misses(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    request = wb.ModelRequest(messages=[wb.Message.user("Hi")], settings={"temperature": 0})
    await wb.cassette(path, wb.ScriptedModel(["hello"])).request(request)
    hotter = wb.ModelRequest(messages=[wb.Message.user("Hi")], settings={"temperature": 1})
    with pytest.raises(wb.ReplayDivergence) as caught:
        await wb.cassette(path).request(hotter)
    assert caught.value.diff == wb.RequestDiff(
        kind="setting", where="setting 'temperature'", recorded="0", sent="1"
    )


async def test_a_changed_tool_description_misses_with_both_texts(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    request = wb.ModelRequest(messages=[wb.Message.user("Hi")], tools=(add.definition,))
    await wb.cassette(path, wb.ScriptedModel(["hello"])).request(request)

    def add2(a: int, b: int) -> int:
        """Add two whole numbers."""
        return a + b

    changed = wb.ModelRequest(
        messages=[wb.Message.user("Hi")], tools=(wb.tool(add2, name="add").definition,)
    )
    with pytest.raises(wb.ReplayDivergence) as caught:
        await wb.cassette(path).request(changed)
    assert str(caught.value.diff) == (
        "tool 'add' (description): recorded '\"Add two integers.\"', "
        "sent '\"Add two whole numbers.\"'"
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"format": "workbench-cassette", "version": 1, "inter', "is damaged: not JSON"),
        ('{"format": "workbench-cassette", "version": 2, "model": {}}', "has version 2"),
        ('{"format": "workbench-cassette", "version": "1"}', "has version '1'"),
        ('{"interactions": []}', "is not a workbench cassette"),
        ("[1, 2]", "is not a workbench cassette"),
        (
            '{"format": "workbench-cassette", "version": 1, "model": {"name": "m", '
            '"provider": "p"}, "interactions": [{"request": {"messages": [], "tools": []}}]}',
            "is damaged at interactions.0.response: Field required",
        ),
    ],
    ids=["truncated", "future", "version-text", "foreign", "not-an-object", "no-response"],
)
def test_bad_files_are_clear_errors(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(wb.CassetteError, match=message) as caught:
        wb.cassette(path, mode="replay")
    assert str(path) in str(caught.value)


def test_a_place_a_cassette_cannot_be_written_is_said_before_the_model_is_asked(
    tmp_path: Path,
) -> None:
    """It was found at the first answer's writing: the model had answered (a paid call), and
    the run failed with "FileNotFoundError: ... '/proc/.c.json.x1nfpayw'", a file nobody named."""
    model = wb.ScriptedModel(["never asked"])
    (tmp_path / "a-directory").mkdir()
    for path, why in [
        (Path("/proc/workbench-test/c.json"), "cannot be written: "),  # no directory can be made
        (tmp_path / "a-directory", "cannot be written: it is a directory"),
    ]:
        with pytest.raises(wb.CassetteError, match=f"cassette {path} {why}"):
            wb.cassette(path, model, mode="record")
    assert model.calls == []
    assert list((tmp_path / "a-directory").iterdir()) == []


def test_a_cassette_that_cannot_be_written_mid_recording_fails_the_run_saying_so(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.json"

    def take_its_place() -> str:
        """Where the cassette was written after the first answer, a directory now stands."""
        path.unlink()
        path.mkdir()
        return "done"

    model = wb.ScriptedModel([wb.ModelResponse.tool_call("take_its_place", {}), "the end"])
    agent = wb.Agent(model=wb.cassette(path, model, mode="record"), tools=[take_its_place])
    result = agent.run_sync("go")
    assert result.status is wb.ExecutionStatus.FAILED and result.error is not None
    assert result.error.type == "CassetteError"
    assert f"cassette {path} cannot be written: Is a directory" in result.error.message
    assert [p.name for p in tmp_path.iterdir()] == ["c.json"]  # no temporary file left behind


def test_a_missing_file_in_replay_mode_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(wb.CassetteError, match="cannot be read"):
        wb.cassette(tmp_path / "nowhere.json", mode="replay")


def test_wrong_use_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(wb.UsageError, match="pass the model to record"):
        wb.cassette(tmp_path / "missing.json")  # once, no file, nothing to record from
    with pytest.raises(wb.UsageError, match="mode must be"):
        wb.cassette(tmp_path / "x.json", wb.ScriptedModel([]), mode="rewind")  # type: ignore[arg-type]


def test_a_stream_recorded_without_a_listener_still_replays_its_deltas(tmp_path: Path) -> None:
    path = tmp_path / "quiet.json"
    settings: wb.ModelSettings = {"stream": True}
    with chat_server() as server:
        calculator(wb.cassette(path, openai(server.base_url))).run_sync(
            "What is 4 + 5?", settings=settings
        )
    deltas: list[str] = []
    replayed = calculator(wb.cassette(path, mode="replay")).run_sync(
        "What is 4 + 5?", settings=settings, on_text_delta=deltas.append
    )
    assert replayed.output == "4 + 5 = 9" and deltas == ["4 +", " 5 ", "= 9"]


def test_the_wrapped_models_own_key_is_kept_out_of_the_file_and_the_spans(tmp_path: Path) -> None:
    key = "corp0123456789"  # no built-in pattern knows this shape; the model knows its key
    path = tmp_path / "key.json"
    telemetry = wb.Telemetry(capture_content=True)
    with chat_server() as server:
        model = wb.OpenAIModel("calculator-1", base_url=server.base_url, api_key=key)
        agent = wb.Agent(
            model=wb.cassette(path, model, mode="record"),
            system_prompt=f"The deployment key is {key}.",
            tools=[add],
            telemetry=telemetry,
            store=False,
        )
        assert agent.run_sync("What is 2 + 3?").output == "2 + 3 = 5"
        assert server.authorizations[0] == f"Bearer {key}"
    assert key not in path.read_text()
    assert "The deployment key is [REDACTED]." in path.read_text()
    attributes = [str(span.attributes) for span in telemetry.spans]
    assert any("deployment key" in a for a in attributes)  # the content is captured...
    assert not any(key in a for a in attributes)  # ...without the key, as without a cassette

    with chat_server() as server:  # replayed with the same model: the same redaction matches
        model = wb.OpenAIModel("calculator-1", base_url=server.base_url, api_key=key)
        replay = wb.cassette(path, model, mode="replay")
        again = wb.Agent(
            model=replay, system_prompt=agent.system_prompt, tools=[add], store=False
        ).run_sync("What is 2 + 3?")
        assert again.output == "2 + 3 = 5" and server.bodies == []


def test_assert_complete_holds_on_the_recording_run_too(tmp_path: Path) -> None:
    path = tmp_path / "hi.json"
    for _ in range(2):  # once: the first run records, the second replays; the test is the same
        model = wb.cassette(path, wb.ScriptedModel([wb.ModelResponse.text("hi")]))
        assert wb.Agent(model=model, store=False).run_sync("x").output == "hi"
        model.assert_complete()
    unused = wb.cassette(path, mode="replay")
    with pytest.raises(AssertionError, match="replayed 0 of its 1 answers"):
        unused.assert_complete()
