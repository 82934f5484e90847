"""Images through the client, as users bring them (tests/lib/images: Debian minbase with python3
and an app layer, saved as a ``docker save`` archive; a musl image as an OCI layout, zstd
layer): imported streamed from a path, a file and bytes, listed, read, used as templates
(sandboxes run as ``user`` in /home/user whatever the image says, as E2B's do; the image
record keeps its own WorkingDir), removed."""

import asyncio
import os
import subprocess

import pytest

from conftest import TOP
from registry import docker_archive, layout_digests, user_images
from sbx import AsyncImages, AsyncSbx, BadRequestError, Images, NotFoundError, Sbx

HELLO = "app on python 3\n"


def oci_tar(layout, path):
    """An OCI layout as the tar the API takes."""
    subprocess.run(["tar", "-C", layout, "-cf", path, "."], check=True)
    return path


def test_images_import_list_get_use_delete(tmp_path):
    imgs = user_images()
    path = docker_archive(imgs["minbase-app"], str(tmp_path / "app.tar"),
                          "registry.example.com/team/app:v1")
    img = Images.import_archive("py-img", path)  # a path: streamed from the file
    try:
        assert (img.name, img.tag, img.template, img.format) == ("py-img", "latest", "py-img",
                                                                 "docker")
        assert len(img.layers) == 2 and img.digest.startswith("sha256:")
        # a docker save archive carries its layers uncompressed
        assert [x.digest for x in img.layers] == layout_digests(imgs["minbase-app"])["diff_ids"]
        # the image's own settings, kept in its record
        assert (img.user, img.working_dir) == ("", "/app")
        assert img.cmd == ["python3", "/app/hello.py"] and "LANG=C.UTF-8" in img.env
        assert img.source is None  # imported, not pulled
        with open(path, "rb") as f:  # the same layers again, under a tag: all reused
            again = Images.import_archive("py-img", f, tag="v2")
        assert again.template == "py-img:v2" and all(x.reused for x in again.layers)
        assert again.written_bytes == 0
        names = [i.template for i in Images.list()]
        assert "py-img" in names and "py-img:v2" in names
        assert Images.get("py-img:v2").digest == again.digest
        with Sbx.create(template="py-img") as sb:
            # E2B's defaults: the user "user" in /home/user, whatever the image's
            assert sb.exec(["id", "-un"]).stdout == "user\n"
            assert sb.sh("pwd").stdout == "/home/user\n"
            assert sb.sh("echo $LANG").stdout == "C.UTF-8\n"  # the image's Env
            assert sb.exec(["python3", "/app/hello.py"]).check().stdout == HELLO
            sb.files.write("notes.txt", "mine")  # relative: in /home/user, as user
            assert sb.sh("stat -c %U /home/user/notes.txt").stdout == "user\n"
        evil = str(tmp_path / "evil.tar")
        subprocess.run(["python3", os.path.join(TOP, "tests/integration/fixtures/mkimage.py"),
                        evil, "--evil", "dotdot"], check=True)
        with pytest.raises(BadRequestError) as e:
            with open(evil, "rb") as f:
                Images.import_archive("py-evil", f.read())
        assert e.value.code == "bad_image"
        asyncio.run(_async_roundtrip(oci_tar(imgs["musl"], str(tmp_path / "musl.tar"))))
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
    assert (img.template, img.format) == ("py-aimg", "oci")
    assert (await AsyncImages.get("py-aimg")).digest == img.digest
    assert any(i.template == "py-aimg" for i in await AsyncImages.list())
    async with await AsyncSbx.create(template="py-aimg") as asb:
        # no libc of the host's: the image's own musl, and a user the image did not have
        assert (await asb.exec(["musl-hello"])).stdout == "hello from musl\n"
        assert (await asb.exec(["id", "-un"])).stdout == "user\n"
        assert (await asb.sh("pwd")).stdout == "/home/user\n"
    await AsyncImages.delete("py-aimg")
    with pytest.raises(NotFoundError):
        await AsyncImages.get("py-aimg")
