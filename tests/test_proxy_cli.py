"""``workbench proxy`` on the command line: how it stops, and what it says when it cannot start.

The command runs as a subprocess in front of the fake upstream (tests/fake_upstream.py), as a
user or a service manager would run it.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import openai
import pytest

import workbench as wb
from tests.fake_upstream import Answer, completion, fake_upstream
from workbench.cli import main

KEY = "sk-test-secret-4e1f9a"
ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "workbench.cli", "proxy", *args]


def test_sigterm_stops_the_command_as_ctrl_c_does(tmp_path: Path) -> None:
    """A service manager's stop writes the last step and ends the run, and says what it wrote."""
    path = tmp_path / "runs.sqlite"
    pong = lambda body, headers: Answer(body=completion("pong"))  # noqa: E731
    with fake_upstream(pong) as upstream:
        args = command("--upstream", upstream.url, "--port", "0", "--store", str(path))
        with subprocess.Popen(args, stdout=subprocess.PIPE, text=True, env=ENV) as process:
            assert process.stdout is not None
            url = process.stdout.readline().split(" on ")[1].split(" ")[0]
            with openai.OpenAI(base_url=url, api_key=KEY, max_retries=0) as client:
                client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "ping"}]
                )
            process.send_signal(signal.SIGTERM)
            out = process.stdout.read()
            assert process.wait(timeout=10) == 0
    (run_id,) = [line.split()[-1] for line in out.splitlines() if line.startswith("recorded")]
    run = wb.RunStore(path).load(run_id)
    assert run.status is wb.ExecutionStatus.COMPLETED and run.output == "pong"
    assert len(run.steps) == 1


def test_a_port_in_use_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(wb.UsageError, match=f"cannot listen on 127.0.0.1:{port}"):
            wb.proxy("http://127.0.0.1:9/v1", port=port, store=wb.RunStore(":memory:"))
        args = ["proxy", "--upstream", "http://127.0.0.1:9/v1", "--port", str(port)]
        assert main([*args, "--store", ":memory:"]) == 2
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err


def test_until_step_without_an_upstream_names_the_options(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["proxy", "--replay", "last", "--until-step", "1", "--store", ":memory:"]) == 2
    said = capsys.readouterr().err
    assert "--until-step N" in said and "--upstream URL" in said and "upstream=" not in said


def test_an_upstream_that_is_no_url_or_a_negative_grace_is_refused_by_name(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """'notaurl' raised a ValueError from inside (a relative URL to the proxy's client), and
    '--grace -5' started a proxy that gave its calls -5 s."""
    for given, said in [
        (["--upstream", "notaurl"], "argument --upstream: 'notaurl' is not an http:// or https://"),
        (["--upstream", "http://[::1/v1"], "argument --upstream: 'http://[::1/v1' is not a URL"),
        (["--upstream", "http://h/v1", "--grace", "-5"], "argument --grace: '-5': give seconds"),
        (["--upstream", "http://h/v1", "--grace", "nan"], "argument --grace: 'nan': give seconds"),
    ]:
        with pytest.raises(SystemExit) as exit_:
            main(["proxy", *given, "--port", "0", "--store", ":memory:"])
        assert exit_.value.code == 2
        assert said in capsys.readouterr().err
    with pytest.raises(wb.InvalidURL, match=r"^upstream: 'notaurl' is not an http:// or https://"):
        wb.proxy("notaurl", store=wb.RunStore(":memory:"))  # one rule for both: `urls.http_url`


def test_the_command_says_which_run_it_replays(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    store = wb.RunStore(path)
    pong = lambda body, headers: Answer(body=completion("pong"))  # noqa: E731
    with (
        fake_upstream(pong) as upstream,
        wb.proxy(upstream.url, store=store) as proxy,
        openai.OpenAI(base_url=proxy.url, api_key=KEY, max_retries=0) as client,
    ):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "ping"}])
    store.close()
    args = command("--replay", "last", "--port", "0", "--store", str(path))
    with subprocess.Popen(args, stdout=subprocess.PIPE, text=True, env=ENV) as process:
        assert process.stdout is not None
        first = process.stdout.readline()
        process.send_signal(signal.SIGINT)
        process.stdout.read()
        assert process.wait(timeout=10) == 0
    assert f"replaying {proxy.run_ids[0]}" in first


@pytest.mark.parametrize("grace", ["5", "0"])
def test_sigterm_with_a_call_in_flight_waits_for_it_or_cuts_it_off(
    tmp_path: Path, grace: str
) -> None:
    """The call under way when the stop comes is recorded: answered within the grace, or cut off.

    The upstream answers only once the command says it is stopping (or, past a grace of none,
    once it has stopped), so the stop comes first however loaded the machine is. The command
    ends cleanly either way, without a traceback.
    """
    path = tmp_path / "runs.sqlite"
    arrived, release = threading.Event(), threading.Event()

    def held(body: object, headers: object) -> Answer:
        arrived.set()
        release.wait(30)  # a failing test's bound: the release comes once the stop is seen
        return Answer(body=completion("pong"))

    answers: list[object] = []

    def agent(url: str) -> None:
        with openai.OpenAI(base_url=url, api_key=KEY, max_retries=0) as client:
            try:
                answer = client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "ping"}]
                )
                answers.append(answer.choices[0].message.content)
            except openai.APIStatusError as exc:
                answers.append(exc.status_code)

    with fake_upstream(held) as upstream:
        args = command(
            "--upstream", upstream.url, "--port", "0", "--store", str(path), "--grace", grace
        )
        with subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV
        ) as process:
            assert process.stdout is not None
            url = process.stdout.readline().split(" on ")[1].split(" ")[0]
            calling = threading.Thread(target=agent, args=(url,))
            calling.start()
            assert arrived.wait(30)
            process.send_signal(signal.SIGTERM)
            said = [process.stdout.readline() for _ in range(2)]
            assert said[1].startswith(f"stopping: calls in flight get {grace} s to end"), said
            if grace != "0":
                release.set()  # the answer comes within the grace
            calling.join()
            out, err = process.communicate(timeout=10)
            assert process.returncode == 0
        release.set()  # the call was cut off: the held upstream may go
    assert "Traceback" not in err, err
    (run_id,) = [line.split()[-1] for line in out.splitlines() if line.startswith("recorded")]
    run = wb.RunStore(path).load(run_id)
    assert len(run.steps) == 1
    if grace == "0":
        assert answers == [503]
        assert run.status is wb.ExecutionStatus.ABORTED and run.steps[0].response is None
    else:
        assert answers == ["pong"]
        assert run.status is wb.ExecutionStatus.COMPLETED and run.output == "pong"
