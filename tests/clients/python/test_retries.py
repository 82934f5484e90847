"""Retries do what the API says (api/openapi/sbx-v1.yaml, "Retrying"), against sbxd instances
of this test's own: a create refused at --max-sandboxes (429 + Retry-After) is sent again; when
sbxd dies mid-call, an exec (which may have run) is not repeated, while an idempotent call is,
and succeeds once sbxd is back."""

import threading
import time

import pytest

from conftest import Sbxd, wait_for
from sbx import LimitError, Sbx, SbxConnectionError, TooManyRequestsError, UnavailableError

@pytest.fixture
def limited():
    d = Sbxd("--max-sandboxes", "1", "--create-wait", "0")
    yield d
    d.close()


def test_create_refused_at_the_limit_is_retried_after_retry_after(limited):
    a = Sbx.create(config=limited.config(0))
    with pytest.raises(TooManyRequestsError) as e:
        Sbx.create(config=limited.config(0))
    assert e.value.status == 429 and e.value.code == "too_many_requests"
    assert isinstance(e.value, LimitError)
    # with retries the create gets the room a kill makes while it waits
    threading.Timer(0.3, a.kill).start()
    t0 = time.monotonic()
    b = Sbx.create(config=limited.config(3))
    assert time.monotonic() - t0 >= 0.9  # it waited Retry-After (1 s) at least once
    assert b.exec("echo second").stdout == "second\n"
    b.kill()


@pytest.fixture
def restartable():
    d = Sbxd()
    yield d
    d.close()


def test_a_broken_exec_is_not_repeated_an_idempotent_wait_is(restartable):
    d = restartable
    sb = Sbx.create(config=d.config(5))
    p = sb.processes.start("sleep 4; echo finished")
    outcome = {}

    def run_exec():
        try:
            outcome["exec"] = sb.exec("echo ran >> /tmp/ran; sleep 2")
        except Exception as e:  # noqa: BLE001
            outcome["exec"] = e

    def run_wait():
        try:
            outcome["wait"] = p.wait(timeout=60)
        except Exception as e:  # noqa: BLE001
            outcome["wait"] = e
    ts = [threading.Thread(target=run_exec), threading.Thread(target=run_wait)]
    for t in ts:
        t.start()
    wait_for(lambda: sb.exec("cat /tmp/ran 2>/dev/null").stdout == "ran\n", 10, "the exec")
    d.crash()
    time.sleep(0.5)
    d.start()  # adopts the sandbox, same port
    for t in ts:
        t.join(60)
    assert isinstance(outcome["exec"], SbxConnectionError), outcome
    assert isinstance(outcome["exec"], UnavailableError)
    assert sb.files.read("/tmp/ran") == "ran\n"  # it ran once, and only once
    assert not isinstance(outcome["wait"], Exception), outcome
    assert outcome["wait"].exit_code == 0
    assert p.logs() == b"finished\n"
    sb.kill()
