"""Every method of AsyncSbx against a real sbxd, including cancellation: closing an async
stream ends it on the server."""

import asyncio
import re

import pytest

from conftest import inotify_instances, sbxd_log, wait_for
from sbx import (AsyncImages, AsyncSbx, CommandError, ConflictError, NotFoundError,
                 SandboxPausedError, SbxTimeoutError)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 120))


async def eventually(pred, what, timeout=10.0):
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        if await pred():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_async_sandbox_exec_and_files():
    async def main():
        asb = await AsyncSbx.create(template="base", env={"G": "g"}, metadata={"m": "1"},
                                    timeout=120, memory_mb=256)
        try:
            assert asb.info.memory_mb == 256 and asb.info.metadata == {"m": "1"}
            assert (await asb.exec(["true"])).ok
            r = await asb.exec(["python3", "-c", "print(2+2)"], timeout_ms=30_000)
            assert r.check().stdout == "4\n"
            assert (await asb.sh("echo $G && exit 2")).exit_code == 2
            with pytest.raises(CommandError):
                (await asb.sh("exit 2")).check()
            assert (await asb.run_code("print(2+2)", lang="python")).stdout == "4\n"
            assert (await asb.run_code("console.log(7)", lang="node")).stdout == "7\n"
            assert any(s.id == asb.id for s in await AsyncSbx.list())
            other = await AsyncSbx.connect(asb.id)
            assert (await other.get_info()).state == "running"
            await other.close()
            # calls on one sandbox run concurrently
            outs = await asyncio.gather(*[asb.exec(["sh", "-c", f"sleep 0.3; echo {i}"])
                                          for i in range(8)])
            assert sorted(o.stdout for o in outs) == sorted(f"{i}\n" for i in range(8))
            # files
            await asb.files.write("/tmp/a.txt", "x")
            assert await asb.files.read("/tmp/a.txt") == "x"
            await asb.files.write("/tmp/b.bin", b"\x00\xff" * 10)
            assert await asb.files.read_bytes("/tmp/b.bin") == b"\x00\xff" * 10
            assert (await asb.files.stat("/tmp/b.bin")).size == 20
            await asb.files.mkdir("/tmp/dd/ee")
            assert [e.name for e in await asb.files.list("/tmp/dd")] == ["ee"]
            await asb.files.rename("/tmp/a.txt", "/tmp/dd/a.txt")
            assert await asb.files.exists("/tmp/dd/a.txt")
            assert not await asb.files.exists("/tmp/a.txt")
            r = await asb.files.search("/tmp/dd", name="a.*")
            assert [m.path for m in r.matches] == ["/tmp/dd/a.txt"]
            await asb.files.remove("/tmp/dd", recursive=True)
            assert not await asb.files.exists("/tmp/dd")
            # pause and resume
            assert (await asb.pause()).state == "paused"
            with pytest.raises(SandboxPausedError):
                await asb.exec(["true"])
            assert (await asb.resume()).state == "running"
            assert (await asb.exec(["true"])).ok
        finally:
            await asb.kill()
        with pytest.raises(NotFoundError):
            await AsyncSbx.connect(asb.id)
        async with await AsyncSbx.create() as b:
            assert (await b.exec("echo in-block")).stdout == "in-block\n"
        assert all(s.id != b.id for s in await AsyncSbx.list())
    run(main())


def test_async_processes_and_stream_cancellation(sb):
    async def main():
        asb = await AsyncSbx.connect(sb.id)
        try:
            p = await asb.processes.start(["sh", "-c", "for i in 1 2 3; do echo n$i; sleep 0.2; "
                                                       "done; exit 6"])
            got = [c async for c in p.stream()]
            assert b"".join(got) == b"n1\nn2\nn3\n" and len(got) >= 2
            assert (await p.wait(timeout=10)).exit_code == 6
            assert await p.logs(offset=3) == b"n2\nn3\n"
            assert any(x.pid == p.pid for x in await asb.processes.list())
            assert (await asb.processes.get(p.pid)).info.exit_code == 6
            assert (await p.refresh()).status == "exited"
            cat = await asb.processes.start("read a; read b; echo $a$b", stdin=True)
            await cat.write_stdin("x\n")
            await cat.write_stdin(b"y\n", close=True)
            assert (await cat.wait(timeout=10)).exit_code == 0
            assert await cat.logs() == b"xy\n"
            slow = await asb.processes.start('trap "exit 9" INT; while :; do sleep 0.1; done')
            with pytest.raises(SbxTimeoutError):
                await slow.wait(timeout=0.3)
            await slow.signal("SIGINT")
            assert (await slow.wait(timeout=10)).exit_code == 9
            with pytest.raises(ConflictError):
                await slow.signal()
            k = await asb.processes.start("sleep 100")
            await k.kill()
            await k.wait(timeout=10)
            # closing the async iterator ends the follow request on the server
            t = await asb.processes.start("while :; do echo tick; sleep 0.05; done")
            stream = t.stream()
            async for chunk in stream:
                assert chunk.startswith(b"tick")
                break
            await stream.aclose()
            path = f"/v1/sandboxes/{asb.id}/processes/{t.pid}/logs"
            await eventually(lambda: _async(re.search(re.escape(path) + r".*\(aborted\)",
                                                      sbxd_log())), "sbxd to end the request")
            await t.kill()
        finally:
            await asb.close()
    run(main())


async def _async(v):
    return v


def test_async_watch_and_terminal(sb):
    async def main():
        asb = await AsyncSbx.connect(sb.id)
        try:
            await asb.files.mkdir("/tmp/aw")
            async with asb.files.watch("/tmp/aw") as w:
                assert inotify_instances(asb.id) == 1
                await asb.files.write("/tmp/aw/f", "1")
                ev = await w.__anext__()
                assert (ev.type, ev.path, ev.is_dir) == ("create", "/tmp/aw/f", False)
            await eventually(lambda: _async(inotify_instances(asb.id) == 0), "the watch to end")
            # awaited form, iterated, closed by aclose from inside the loop
            w = await asb.files.watch("/tmp/aw", recursive=True)
            await asb.files.write("/tmp/aw/g", "2")
            async for ev in w:
                if ev.path == "/tmp/aw/g":
                    await w.aclose()
            assert w.closed
            await eventually(lambda: _async(inotify_instances(asb.id) == 0), "the watch to end")
            t = await asb.terminal(cols=90, rows=20)
            async with t:
                await t.send("stty size\n")
                await t.expect("20 90")
                await t.resize(100, 25)
                await t.send("stty size; exit 4\n")
                await t.expect("25 100")
                assert await t.wait(timeout=10) == 4
                assert t.exit_code == 4 and await t.recv() == b""
        finally:
            await asb.close()
    run(main())


def test_async_images_list():
    async def main():
        assert isinstance(await AsyncImages.list(), list)
        with pytest.raises(NotFoundError):
            await AsyncImages.get("no-such-image")
    run(main())
