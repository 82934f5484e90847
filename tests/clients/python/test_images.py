"""Images through the client: an OCI archive (tests/integration/fixtures/mkimage.py) imported
streamed from a file and from bytes, listed, read, used as a template, removed."""

import asyncio
import os
import subprocess

import pytest

from conftest import TOP
from sbx import AsyncImages, BadRequestError, Images, NotFoundError, Sbx

AGENT = os.environ.get("SBX_AGENT") or os.path.join(TOP, "build", "guest-agent", "sbx-agent")


def mkimage(tmp_path, name, *args):
    out = str(tmp_path / name)
    subprocess.run(["python3", os.path.join(TOP, "tests/integration/fixtures/mkimage.py"), out,
                    "--agent", AGENT, *args], check=True)
    return out


def test_images_import_list_get_use_delete(tmp_path):
    path = mkimage(tmp_path, "oci.tar")
    img = Images.import_archive("py-img", path)  # a path: streamed from the file
    try:
        assert (img.name, img.tag, img.template, img.format) == ("py-img", "latest", "py-img",
                                                                 "oci")
        assert len(img.layers) == 2 and img.digest.startswith("sha256:")
        assert img.user == "app" and img.working_dir == "/data"
        with open(path, "rb") as f:  # the same layers again, under a tag: all reused
            again = Images.import_archive("py-img", f, tag="v2")
        assert again.template == "py-img:v2" and all(x.reused for x in again.layers)
        names = [i.template for i in Images.list()]
        assert "py-img" in names and "py-img:v2" in names
        assert Images.get("py-img:v2").digest == again.digest
        with Sbx.create(template="py-img") as sb:
            assert sb.exec(["id", "-un"]).stdout == "app\n"
            assert sb.files.read("/data/keep.txt") == "kept\n"
        with pytest.raises(BadRequestError):
            Images.import_archive("py-evil", open(mkimage(tmp_path, "evil.tar", "--evil",
                                                          "dotdot"), "rb").read())
        asyncio.run(_async_roundtrip(path))
    finally:
        for name in ("py-img", "py-img:v2", "py-aimg"):
            try:
                Images.delete(name)
            except NotFoundError:
                pass
    with pytest.raises(NotFoundError):
        Images.get("py-img")


async def _async_roundtrip(path):
    with open(path, "rb") as f:
        img = await AsyncImages.import_archive("py-aimg", f)
    assert img.template == "py-aimg"
    assert (await AsyncImages.get("py-aimg")).digest == img.digest
    assert any(i.template == "py-aimg" for i in await AsyncImages.list())
    await AsyncImages.delete("py-aimg")
    with pytest.raises(NotFoundError):
        await AsyncImages.get("py-aimg")
