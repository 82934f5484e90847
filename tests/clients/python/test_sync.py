"""Every method of the synchronous client against a real sbxd."""

import os
import re
import threading
import time

import pytest

from conftest import inotify_instances, sbxd_log, wait_for
from sbx import (AuthError, BadRequestError, CommandError, CommandTimeoutError, Config,
                 ConflictError, ForbiddenError, NotFoundError, OutputTooLargeError,
                 PayloadTooLargeError, SandboxPausedError, Sbx, SbxConnectionError,
                 SbxTimeoutError, UnavailableError)


def test_sandbox_lifecycle():
    sb = Sbx.create(template="base", timeout=120, env={"A": "1"}, metadata={"k": "v"},
                    cpu_count=1, memory_mb=512)
    try:
        assert re.fullmatch(r"[a-z0-9]+", sb.id)
        assert (sb.info.template, sb.info.state, sb.info.cpu_count, sb.info.memory_mb) == \
            ("base", "running", 1, 512)
        assert sb.info.metadata == {"k": "v"}
        left = (sb.info.end_at - sb.info.started_at).total_seconds()
        assert 110 <= left <= 121
        assert any(s.id == sb.id for s in Sbx.list())
        other = Sbx.connect(sb.id)
        assert other.get_info().id == sb.id
        other.close()
        assert sb.exec("echo $A").stdout == "1\n"
        # pause keeps the running process and its memory; inside operations say so
        p = sb.processes.start("i=0; while :; do i=$((i+1)); echo $i > /tmp/n; sleep 0.05; done")
        assert sb.pause().state == "paused"
        assert sb.get_info().state == "paused"
        with pytest.raises(SandboxPausedError) as e:
            sb.exec("true")
        assert isinstance(e.value, ConflictError) and e.value.status == 409
        with pytest.raises(ConflictError):
            sb.pause()
        assert sb.resume(timeout=60).state == "running"
        n = int(sb.files.read("/tmp/n"))
        wait_for(lambda: int(sb.files.read("/tmp/n")) > n, what="the counter to go on")
        assert p.refresh().running
    finally:
        sb.kill()
    with pytest.raises(NotFoundError):
        Sbx.connect(sb.id)
    # a with block kills the sandbox
    with Sbx.create() as sb2:
        assert sb2.exec(["true"]).ok
    assert all(s.id != sb2.id for s in Sbx.list())


def test_exec_and_check(sb):
    r = sb.exec(["python3", "-c", "print(2+2)"], timeout_ms=30_000)
    assert r.check() is r and r.stdout == "4\n" and r.ok and r.exit_code == 0
    assert sb.exec(["echo", "$HOME", "*"]).stdout == "$HOME *\n"  # argv: no shell
    out = sb.sh("ls -la /tmp && date")
    assert out.ok and "total" in out.stdout
    assert sb.sh('echo "$GREETING"').stdout == "hi there\n"  # env from create
    assert sb.exec(["id", "-u"], user="root").stdout == "0\n"
    r = sb.sh("echo out; echo err >&2; exit 3")
    assert (r.ok, r.exit_code, r.stdout, r.stderr) == (False, 3, "out\n", "err\n")
    with pytest.raises(CommandError) as e:
        r.check()
    assert (e.value.exit_code, e.value.stdout, e.value.stderr) == (3, "out\n", "err\n")
    assert "exited with code 3" in str(e.value) and "err" in str(e.value)
    t0 = time.monotonic()
    r = sb.sh("echo before; sleep 20", timeout_ms=500)
    assert r.timed_out and r.stdout == "before\n" and time.monotonic() - t0 < 10
    with pytest.raises(CommandTimeoutError) as e:
        r.check()
    assert isinstance(e.value, SbxTimeoutError) and isinstance(e.value, TimeoutError)
    assert sb.exec(["no-such-binary"]).exit_code == 127
    with pytest.raises(TypeError):
        sb.exec([])
    with pytest.raises(TypeError):
        sb.sh(["ls"])


def test_run_code(sb):
    assert sb.run_code("print(2+2)", lang="python").stdout == "4\n"
    assert sb.run_code("print(6*7)").stdout == "42\n"  # python by default
    assert sb.run_code("console.log([1,2].map(x => x * 2).join(','))", lang="node").stdout == "2,4\n"
    assert sb.run_code('x=5; echo "$((x*2))"', lang="bash").stdout == "10\n"
    assert sb.run_code("echo sh-$((1+1))", lang="sh").stdout == "sh-2\n"
    r = sb.run_code("import sys; sys.exit('boom')")
    assert r.exit_code == 1 and "boom" in r.stderr and not r.ok
    with pytest.raises(CommandError):
        r.check()
    assert sb.run_code("import time; time.sleep(5)", timeout_ms=300).timed_out
    with pytest.raises(ValueError):
        sb.run_code("1", lang="cobol")


def test_files(sb):
    sb.files.write("/tmp/a.txt", "x")
    assert sb.files.read("/tmp/a.txt") == "x"
    blob = bytes(range(256)) * 1000
    sb.files.write("/tmp/d/e/blob.bin", blob)  # parents are created
    assert sb.files.read_bytes("/tmp/d/e/blob.bin") == blob
    sb.files.write("rel.txt", "héllo")  # relative to /home/user
    assert sb.files.read("/home/user/rel.txt") == "héllo"
    st = sb.files.stat("/tmp/d/e/blob.bin")
    assert (st.type, st.size, st.name, st.path) == ("file", 256000, "blob.bin", "/tmp/d/e/blob.bin")
    assert sb.files.stat("/tmp/d").is_dir
    assert sb.files.exists("/tmp/a.txt") and not sb.files.exists("/tmp/nope")
    sb.files.mkdir("/tmp/m/n/o")
    assert [e.name for e in sb.files.list("/tmp/m")] == ["n"]
    sb.files.rename("/tmp/a.txt", "/tmp/m/a2.txt")
    assert sb.files.read("/tmp/m/a2.txt") == "x" and not sb.files.exists("/tmp/a.txt")
    with pytest.raises(ConflictError):
        sb.files.remove("/tmp/m")  # not empty
    sb.files.remove("/tmp/m", recursive=True)
    assert not sb.files.exists("/tmp/m")
    with pytest.raises(NotFoundError):
        sb.files.read("/tmp/nope")
    with pytest.raises(ForbiddenError):
        sb.files.write("/etc/owned-by-root", "x")
    sb.files.write("/etc/by-root", "ok", user="root")
    assert sb.files.stat("/etc/by-root", user="root").size == 2
    with pytest.raises(UnicodeDecodeError):
        sb.files.read("/tmp/d/e/blob.bin")


def test_search(sb):
    sb.files.write("/tmp/s/one.py", "import os\nprint('needle here')\n")
    sb.files.write("/tmp/s/sub/two.py", "needle again\n")
    sb.files.write("/tmp/s/three.txt", "nothing\n")
    r = sb.files.search("/tmp/s", name="*.py")
    assert sorted(m.path for m in r.matches) == ["/tmp/s/one.py", "/tmp/s/sub/two.py"]
    r = sb.files.search("/tmp/s", content="needle")
    assert sorted((m.path, m.line) for m in r.matches) == [("/tmp/s/one.py", 2),
                                                           ("/tmp/s/sub/two.py", 1)]
    assert r.matches[0].text and "needle" in r.matches[0].text and not r.truncated
    r = sb.files.search("/tmp/s", name="*", max_results=1)
    assert len(r.matches) == 1 and r.truncated
    with pytest.raises(ValueError):
        sb.files.search("/tmp/s")


def test_watch_iterates_and_close_stops_it_on_the_server(sb):
    sb.files.mkdir("/tmp/w")
    assert inotify_instances(sb.id) == 0
    with sb.files.watch("/tmp/w", recursive=True) as w:
        assert inotify_instances(sb.id) == 1
        sb.files.write("/tmp/w/new.txt", "1")
        sb.files.mkdir("/tmp/w/sub")
        sb.files.write("/tmp/w/sub/deep.txt", "2")
        seen = []
        for ev in w:
            seen.append((ev.type, ev.path, ev.is_dir))
            if ev.path == "/tmp/w/sub/deep.txt":
                break
        assert ("create", "/tmp/w/new.txt", False) in seen
        assert ("create", "/tmp/w/sub", True) in seen
    assert w.closed
    wait_for(lambda: inotify_instances(sb.id) == 0, what="the watch to end in the sandbox")
    with pytest.raises(NotFoundError):
        sb.files.watch("/tmp/not-a-dir")


def test_processes(sb):
    p = sb.processes.start(["sh", "-c", "for i in 1 2 3; do echo line$i; sleep 0.2; done; "
                                        "echo done >&2; exit 4"], env={"X": "y"}, cwd="/tmp")
    assert p.pid > 0 and p.info.running
    assert any(x.pid == p.pid for x in sb.processes.list())
    chunks = list(p.stream())
    assert b"".join(chunks) == b"line1\nline2\nline3\ndone\n"
    assert len(chunks) >= 3  # streamed as written, not at the end
    info = p.wait(timeout=10)
    assert (info.status, info.exit_code, info.log_bytes) == ("exited", 4, 23)
    assert p.logs() == b"line1\nline2\nline3\ndone\n"
    assert p.logs(offset=6) == b"line2\nline3\ndone\n"
    assert sb.processes.get(p.pid).info.exit_code == 4
    # env and cwd reach it
    q = sb.processes.start('echo "$X $(pwd)"', env={"X": "y"}, cwd="/tmp")
    q.wait(timeout=10)
    assert q.logs() == b"y /tmp\n"
    # stdin
    cat = sb.processes.start(["sh", "-c", "while read l; do echo got:$l; done; echo eof"],
                             stdin=True)
    assert cat.info.stdin
    cat.write_stdin("one\n")
    cat.write_stdin(b"two\n")
    cat.close_stdin()
    assert cat.wait(timeout=10).exit_code == 0
    assert cat.logs() == b"got:one\ngot:two\neof\n"
    # signals, wait timeouts, kill
    srv = sb.processes.start(["sh", "-c", 'trap "echo term; exit 3" TERM; echo ready; '
                                          "while :; do sleep 0.1; done"])
    wait_for(lambda: b"ready" in srv.logs(), what="ready")
    with pytest.raises(SbxTimeoutError):
        srv.wait(timeout=0.3)
    srv.signal("SIGTERM")
    assert srv.wait(timeout=10).exit_code == 3
    with pytest.raises(ConflictError):
        srv.signal("TERM")  # exited
    hang = sb.processes.start("sleep 1000")
    hang.kill()
    assert hang.wait(timeout=10).exit_code != 0
    hang.kill()  # an exited one is forgotten
    with pytest.raises(NotFoundError):
        sb.processes.get(hang.pid)
    with pytest.raises(ConflictError):
        sb.processes.start("true").write_stdin("x")  # no stdin pipe
    with pytest.raises(BadRequestError):
        srv.signal("SIGNOPE")


def test_process_stream_close_ends_it_on_the_server(sb):
    p = sb.processes.start("while :; do echo tick; sleep 0.1; done")
    s = p.stream()
    first = next(s)
    assert first.startswith(b"tick")
    path = f"/v1/sandboxes/{sb.id}/processes/{p.pid}/logs"
    s.close()
    wait_for(lambda: re.search(re.escape(path) + r".*\(aborted\)", sbxd_log()),
             what="sbxd to end the follow request")
    p.kill()


def test_terminal(sb):
    with sb.terminal(cols=100, rows=30) as t:
        t.send("stty size; echo u=$(id -un)\n")
        t.expect("30 100")
        t.expect("u=user")
        t.resize(120, 40)
        t.send("stty size\n")
        t.expect(re.compile(r"40 120"))
        t.send("printf 'a%sb\\n' -; exit 5\n")
        assert "a-b" in t.expect("a-b")
        assert t.wait(timeout=10) == 5
        assert t.exit_code == 5 and t.recv() == b""
    # closing kills the shell
    t = sb.terminal()
    t.send("echo $$ > /tmp/term.pid; sleep 1000\n")
    wait_for(lambda: sb.files.exists("/tmp/term.pid"), what="the shell's pid")
    t.close()
    wait_for(lambda: "gone" in sb.sh("kill -0 $(cat /tmp/term.pid) 2>/dev/null && echo alive "
                                     "|| echo gone").stdout, what="the shell to die")
    with sb.terminal(user="root") as t:
        t.send("id -u\n")
        t.expect(re.compile(r"\r0\r\n"))
    with pytest.raises(SbxTimeoutError):
        with sb.terminal() as t:
            t.recv(timeout=0.01) and t.recv(timeout=0.01) and t.expect("never", timeout=0.3)


def test_errors_map_to_types(sb):
    key = os.environ["E2B_API_KEY"]
    with pytest.raises(AuthError) as e:
        Sbx.list(api_key="e2b_" + "0" * 40)
    assert e.value.status == 401 and e.value.code == "unauthorized"
    with pytest.raises(AuthError):
        Sbx.connect(sb.id, api_key="wrong").terminal()
    with pytest.raises(NotFoundError) as e:
        Sbx.connect("nosuchbox")
    assert e.value.code == "not_found" and "nosuchbox" in e.value.message
    with pytest.raises(NotFoundError):
        Sbx.create(template="no-such-template")
    with pytest.raises(BadRequestError):
        Sbx.create(timeout=0)
    with pytest.raises(BadRequestError):
        Sbx.create(cpu_count=1000)
    with pytest.raises(BadRequestError):
        sb.exec("true", timeout_ms=300_001)
    with pytest.raises(OutputTooLargeError) as e:
        sb.sh("head -c 20000000 /dev/zero")
    assert e.value.status == 422
    with pytest.raises(PayloadTooLargeError):
        sb.run_code("#" * (4 * 1024 * 1024 + 1))
    # nothing listens there: no answer at all
    with pytest.raises(SbxConnectionError) as e:
        Sbx.list(config=Config.resolve(url="http://127.0.0.1:1", api_key=key, max_retries=0))
    assert isinstance(e.value, UnavailableError)
    with pytest.raises(ValueError):
        sb.exec("true", user="mallory")


def test_concurrent_calls_share_one_sandbox(sb):
    out, errs = [], []

    def run(i):
        try:
            out.append(sb.exec(["sh", "-c", f"echo {i}"]).stdout)
        except Exception as e:  # noqa: BLE001
            errs.append(e)
    ts = [threading.Thread(target=run, args=(i,)) for i in range(16)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errs and sorted(out) == sorted(f"{i}\n" for i in range(16))
