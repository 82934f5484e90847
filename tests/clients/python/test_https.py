"""The client over HTTPS (sbxd --tls-cert, a test CA passed as ``verify``), as an operator runs
it on a network: REST calls sync and async, a streamed process output, a watch, and the terminal
over wss://."""

import asyncio
import subprocess

import pytest

from conftest import Sbxd
from sbx import AsyncSbx, Config, Sbx, SbxConnectionError


def make_certs(d):
    def ossl(*a):
        subprocess.run(["openssl", *a], cwd=d, check=True, capture_output=True)
    ossl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=sbx test CA")
    ossl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", "key.pem", "-out", "req.csr", "-subj", "/CN=sbx.localhost")
    (d / "ext").write_text("subjectAltName=DNS:sbx.localhost,DNS:*.sbx.localhost,IP:127.0.0.1\n")
    ossl("x509", "-req", "-in", "req.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
         "-out", "cert.pem", "-days", "2", "-extfile", "ext")
    return str(d / "cert.pem"), str(d / "key.pem"), str(d / "ca.pem")


@pytest.fixture
def tls(tmp_path):
    d = Sbxd(tls=make_certs(tmp_path))
    yield d
    d.close()


def test_https_sync_async_and_wss_terminal(tls):
    assert tls.url.startswith("https://")
    with Sbx.create(config=tls.config(2)) as sb:
        assert sb.exec(["echo", "over tls"]).check().stdout == "over tls\n"
        sb.files.write("/tmp/t.bin", bytes(range(256)))
        assert sb.files.read_bytes("/tmp/t.bin") == bytes(range(256))
        p = sb.processes.start("echo a; sleep 0.2; echo b")
        assert b"".join(p.stream()) == b"a\nb\n"
        with sb.files.watch("/tmp") as w:
            sb.files.write("/tmp/seen", "1")
            assert next(w).path == "/tmp/seen"
        with sb.terminal(cols=70, rows=10) as t:
            t.send("stty size; exit 2\n")
            t.expect("10 70")
            assert t.wait(timeout=10) == 2

        async def aio():
            asb = await AsyncSbx.connect(sb.id, config=tls.config(2))
            try:
                assert (await asb.exec(["true"])).ok
                t = await asb.terminal()
                async with t:
                    await t.send("echo via-wss\n")
                    await t.expect("via-wss\r\n")
            finally:
                await asb.close()
        asyncio.run(aio())
    # without the CA the certificate is refused, for the API and the terminal alike
    with pytest.raises(SbxConnectionError):
        Sbx.list(config=Config.resolve(url=tls.url, api_key=tls.key, max_retries=0))
