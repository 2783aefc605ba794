"""Images and runs through a real OCI registry (Debian's docker-registry, started here on 127.0.0.1):
push and pull with and without basic auth, an interrupted push, tampered layers refused with
nothing imported. Host-only: no VM boots (the VM side, `fslab reproduce REF`, is in test_vm_run.py)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import local_registry
import pytest
from local_registry import LocalRegistry
from test_bundle_reproduce import image_with_inputs, store_state
from token_server import TokenServer

from harness.errors import FslabError
from harness.image import image_registry, oci
from harness.image import store as images
from harness.run import reproduce, run_registry

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(local_registry.missing() is not None, reason=str(local_registry.missing()))


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path):
    monkeypatch.setenv("FSLAB_IMAGE_STORE", str(tmp_path / "cache" / "store"))
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))  # never the user's own logins
    for var in (oci.USER_ENV, oci.PASSWORD_ENV):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def registry(tmp_path):
    reg = LocalRegistry(tmp_path / "registry").start()
    yield reg
    reg.kill()


@pytest.fixture
def built(tmp_path) -> images.Image:
    """A fake image outside the store (as on the machine that built it)."""
    return image_with_inputs(tmp_path / "built" / "debian-12-abababababababab")


def fslab(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=300)


def test_image_push_then_pull_into_an_empty_store(registry, built):
    ref = oci.parse_ref(f"{registry.host}/fslab/debian-12:v1")
    first = image_registry.push(built, ref)
    assert (first.sent, first.present) == (6, 0)  # manifest.json, 3 image files, listing, 1 input
    again = image_registry.push(built, ref)
    assert (again.sent, again.present, again.digest) == (0, 6, first.digest)  # same bytes, same manifest
    assert store_state() == ["(no store)"]
    got = image_registry.pull(ref, "debian-12")
    assert not got.already and got.ref == ref.at(first.digest) and got.image.digest == built.digest
    images.verify(got.image)
    for name in ("disk.qcow2", "vmlinuz", "initrd.img", "tree.tsv.gz", "inputs/images/debian-12/packages.txt"):
        assert (got.image.dir / name).read_bytes() == (built.dir / name).read_bytes(), name
    assert image_registry.pull(ref.at(first.digest), "debian-12").already  # by digest; nothing changes
    # the registry's digests are the image manifest's: what the layers say is what the image says
    manifest = oci.Client(ref).get_manifest(first.digest)[0]
    layer = {d["annotations"][oci.TITLE]: d["digest"] for d in manifest["layers"]}
    assert layer["disk.qcow2"] == built.digest and manifest["config"]["mediaType"] == image_registry.IMAGE_TYPE


def test_pull_of_another_image_name_or_kind_is_one_line(registry, built, tmp_path):
    ref = f"{registry.host}/fslab/debian-12:v1"
    image_registry.push(built, oci.parse_ref(ref))
    cp = fslab("image", "pull", "debian-12-zfs", ref)
    assert cp.returncode == 2 and cp.stderr.strip().count("\n") == 0, cp.stderr
    assert f"{ref}: holds image 'debian-12', not 'debian-12-zfs'" in cp.stderr
    cp = fslab("results", "pull", ref, "--results-dir", str(tmp_path / "r"))
    assert cp.returncode == 2 and "not an fslab run (its config media type is" in cp.stderr, cp.stderr
    cp = fslab("image", "pull", "debian-12", f"{registry.host}/fslab/nothing:here")
    assert cp.returncode == 2 and "not in the registry (no such manifest)" in cp.stderr, cp.stderr
    assert store_state() == ["(no store)"]


def test_cli_push_and_pull(registry, built):
    ref = f"{registry.host}/lab/img:one"
    cp = fslab("image", "push", str(built.dir), ref)
    assert cp.returncode == 0, cp.stderr
    assert f"pushed to {ref} (6 layer(s) sent, 0 already there)" in cp.stdout
    exact = cp.stdout.strip().splitlines()[-1]
    assert exact.startswith(f"{registry.host}/lab/img@sha256:")
    cp = fslab("image", "pull", "debian-12", exact)
    assert cp.returncode == 0, cp.stderr
    assert "every layer matches its digest and the image's manifest; added to the store" in cp.stdout


# --- basic auth ------------------------------------------------------------------------------------


def test_basic_auth(tmp_path, built):
    reg = LocalRegistry(tmp_path / "authreg", user="lab", password="s3cret").start()
    try:
        ref = f"{reg.host}/fslab/debian-12:v1"
        cp = fslab("image", "push", str(built.dir), ref)
        assert cp.returncode == 2 and len(cp.stderr.strip().splitlines()) == 1, cp.stderr
        assert f"registry {reg.host} asks for a login" in cp.stderr and "FSLAB_REGISTRY_USER" in cp.stderr
        wrong = {oci.USER_ENV: "lab", oci.PASSWORD_ENV: "nope"}
        cp = fslab("image", "push", str(built.dir), ref, env=wrong)
        assert cp.returncode == 2 and f"registry {reg.host} refused the credentials (HTTP 401" in cp.stderr, cp.stderr
        right = {oci.USER_ENV: "lab", oci.PASSWORD_ENV: "s3cret"}
        cp = fslab("image", "push", str(built.dir), ref, env=right)
        assert cp.returncode == 0, cp.stderr
        # a pull with the login docker/oras/podman write (~/.docker/config.json; here DOCKER_CONFIG)
        docker = Path(os.environ["DOCKER_CONFIG"])
        docker.mkdir()
        (docker / "config.json").write_text(json.dumps(
            {"auths": {reg.host: {"auth": base64.b64encode(b"lab:s3cret").decode()}}}))
        cp = fslab("image", "pull", "debian-12", ref)
        assert cp.returncode == 0, cp.stderr
        assert images.find_by_digest(built.digest) is not None
    finally:
        reg.kill()


# --- token (Bearer) auth: what GHCR, Harbor and Docker Hub ask for -----------------------------------


def test_token_auth(tmp_path, built, monkeypatch):
    """A registry behind a token service (the Docker token flow; tests/token_server.py issues the
    RS256 JWTs the registry is configured to trust): no login and a wrong password each refused in
    one line; with the right login an image and a run (with its image) are pushed and pulled back
    into an empty store and results directory, the login sent only to the token service, each
    token asked for the scope the registry named; a read-only account pulls, its push is denied."""
    tokens = TokenServer(tmp_path / "token", "lab", "s3cret", reader=("guest", "look")).start()
    reg = LocalRegistry(tmp_path / "tokenreg", token=tokens).start()
    right = {oci.USER_ENV: "lab", oci.PASSWORD_ENV: "s3cret"}

    def refused(*args: str, env: dict[str, str] | None = None) -> str:
        cp = fslab(*args, env=env)
        said = [ln for ln in cp.stderr.strip().splitlines() if not ln.startswith("fslab: pushing ")]  # progress
        assert cp.returncode == 2 and len(said) == 1 and said[0].startswith("fslab: error: "), cp.stdout + cp.stderr
        return cp.stderr

    try:
        ref = f"{reg.host}/fslab/debian-12:v1"
        msg = refused("image", "push", str(built.dir), ref)
        assert f"registry {reg.host} asks for a login (a token service)" in msg, msg
        msg = refused("image", "push", str(built.dir), ref, env={oci.USER_ENV: "lab", oci.PASSWORD_ENV: "nope"})
        assert f"registry {reg.host} refused the credentials (its token service {tokens.realm} answered HTTP " \
               "401)" in msg, msg
        cp = fslab("image", "push", str(built.dir), ref, env=right)
        assert cp.returncode == 0 and "(6 layer(s) sent, 0 already there)" in cp.stdout, cp.stdout + cp.stderr
        # the registry names the actions in either order (CI saw "push,pull"): compare them as a set
        asked = [(user, scope.rpartition(":")[0], set(scope.rpartition(":")[2].split(",")))
                 for user, scope in tokens.requests]
        assert ("lab", "repository:fslab/debian-12", {"pull", "push"}) in asked, asked
        assert store_state() == ["(no store)"]
        cp = fslab("image", "pull", "debian-12", ref, env=right)
        assert cp.returncode == 0 and "added to the store" in cp.stdout, cp.stdout + cp.stderr
        assert images.find_by_digest(built.digest) is not None
        # a run, its image pushed beside it; then another machine: empty store, empty results directory
        run = fake_run(tmp_path / "results", built)
        runs = f"{reg.host}/fslab/runs:smoke"
        cp = fslab("results", "push", str(run), runs, env=right)
        assert cp.returncode == 0 and f"its image: {reg.host}/fslab/runs@sha256:" in cp.stdout, cp.stdout + cp.stderr
        shutil.rmtree(images.store_dir())
        out = tmp_path / "elsewhere"
        assert "refused the credentials" in refused("results", "pull", runs, "--results-dir", str(out),
                                                    env={oci.USER_ENV: "lab", oci.PASSWORD_ENV: "nope"})
        assert not out.exists() or not list(out.iterdir())
        cp = fslab("results", "pull", runs, "--results-dir", str(out), env=right)
        assert cp.returncode == 0, cp.stdout + cp.stderr
        assert tree(out / run.name) == tree(run)
        # the run's image, pulled by digest from where the run says, as `fslab reproduce REF` does
        for var, value in right.items():
            monkeypatch.setenv(var, value)
        pulled = run_registry.pull(oci.parse_ref(runs), out)
        assert pulled.already and pulled.image_digest == built.digest
        seen: list[str] = []
        image = reproduce.find_image(reproduce.read_run(pulled.run_dir), None, seen.append, pulled.image_ref)
        assert image.digest == built.digest and seen[0].startswith(f"fslab: pulled image {built.digest} from ")
        for var in right:
            monkeypatch.delenv(var)
        # a read-only account: pulls, but may not push
        reader = {oci.USER_ENV: "guest", oci.PASSWORD_ENV: "look"}
        cp = fslab("image", "pull", "debian-12", ref, env=reader)
        assert cp.returncode == 0, cp.stdout + cp.stderr
        msg = refused("image", "push", str(built.dir), f"{reg.host}/fslab/other:v1", env=reader)
        assert f"registry {reg.host} denied " in msg and "insufficient_scope" in msg, msg
        assert all(user in (None, "lab", "guest") for user, _ in tokens.requests)
    finally:
        reg.kill()
        tokens.stop()


# --- an interrupted push ---------------------------------------------------------------------------


def test_an_interrupted_push_tags_nothing_and_a_second_push_finishes(registry, built, monkeypatch):
    """The registry dies while the disk layer is half sent: one line, nothing tagged; the same push
    again (registry back) sends what is missing, and the pull gets the whole image."""
    disk = built.dir / "disk.qcow2"
    with open(disk, "wb") as f:  # 64 MiB, sent in 1 MiB chunks
        for i in range(64):
            f.write(hashlib.sha256(str(i).encode()).digest() * (1 << 15))
    m = dict(built.manifest, files=dict(built.manifest["files"], **{"disk.qcow2": {
        "sha256": images.sha256_file(disk), "size": disk.stat().st_size}}))
    m["digest"] = "sha256:" + m["files"]["disk.qcow2"]["sha256"]
    (built.dir / "manifest.json").write_text(json.dumps(m))
    built = images.load(built.dir)
    monkeypatch.setattr(oci, "CHUNK", 1 << 20)
    ref = oci.parse_ref(f"{registry.host}/fslab/debian-12:v1")
    uploads = registry.storage / "docker" / "registry" / "v2" / "repositories" / "fslab" / "debian-12" / "_uploads"
    outcome: list[BaseException | oci.Pushed] = []

    def push() -> None:
        try:
            outcome.append(image_registry.push(built, ref))
        except BaseException as e:  # noqa: B036 - handed to the test's thread
            outcome.append(e)

    t = threading.Thread(target=push)
    t.start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and t.is_alive():
        if any(p.stat().st_size >= 4 << 20 for p in uploads.glob("*/data")) if uploads.is_dir() else False:
            registry.kill()  # mid-layer: 4 of 64 MiB arrived
            break
        time.sleep(0.005)
    t.join(120)
    assert len(outcome) == 1 and isinstance(outcome[0], FslabError), outcome
    msg = str(outcome[0])
    assert f"push to {ref} stopped after 1 of 6 layers, nothing was tagged: registry {registry.host}:" in msg, msg
    assert "push again: the layers the registry already has are not sent again" in msg
    registry.start()  # the same storage, the same port
    with pytest.raises(FslabError, match=r"not in the registry \(no such manifest\)"):
        image_registry.pull(ref, "debian-12")
    again = image_registry.push(built, ref)
    assert again.present == 1 and again.sent == 5  # manifest.json had arrived whole
    got = image_registry.pull(ref, "debian-12")
    assert (got.image.dir / "disk.qcow2").read_bytes() == disk.read_bytes()


# --- tampered layers -------------------------------------------------------------------------------


def test_a_tampered_layer_is_refused_and_nothing_is_imported(registry, built):
    ref = oci.parse_ref(f"{registry.host}/fslab/debian-12:v1")
    image_registry.push(built, ref)
    blob = registry.blob_path("sha256:" + built.manifest["files"]["vmlinuz"]["sha256"])
    blob.write_bytes(b"fake vmlinuz\n".replace(b"fake", b"evil"))  # same size, other bytes
    before = store_state()
    with pytest.raises(FslabError) as e:
        image_registry.pull(ref, "debian-12")
    assert "refused, nothing was added to the store: vmlinuz: the registry sent 13 bytes with sha256" in str(e.value)
    assert "tampered or damaged" in str(e.value)
    assert store_state() == before == ["(no store)"]
    assert not list(images.store_dir().parent.glob(".fslab-pull-*"))  # no scratch left behind


def test_a_layer_swapped_in_the_manifest_is_refused(registry, built, tmp_path):
    """A manifest whose layer descriptors are self-consistent (the registry's checks pass) but whose
    initrd is not the one the image's manifest.json vouches for."""
    ref = oci.parse_ref(f"{registry.host}/fslab/debian-12:v1")
    image_registry.push(built, ref)
    other = tmp_path / "initrd.img"
    other.write_bytes(b"another initrd\n")
    layers = [oci.Layer.of("initrd.img", other, image_registry.FILE_LAYER) if layer.title == "initrd.img" else layer
              for layer in image_registry.layers(built)]
    oci.push(ref, image_registry.IMAGE_TYPE, layers, image_registry.image_annotations(built))
    with pytest.raises(FslabError, match=r"initrd.img: the layer's digest [0-9a-f]{16}\.\.\. is not the sha256 "
                                         r"manifest.json gives"):
        image_registry.pull(ref, "debian-12")
    assert store_state() == ["(no store)"]


# --- runs ------------------------------------------------------------------------------------------


def fake_run(results: Path, image: images.Image) -> Path:
    """tests/data/runs/smoke-tcg, as if it had run on `image`."""
    run = results / "20261122-080315-smoke-8eb0"
    shutil.copytree(ROOT / "tests" / "data" / "runs" / "smoke-tcg", run)
    m = json.loads((run / "manifest.json").read_text())
    m["image"] = dict(m["image"], digest=image.digest, input_hash=image.input_hash)
    (run / "manifest.json").write_text(json.dumps(m, indent=2) + "\n")
    return run


def tree(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def test_results_push_pull_and_the_image_reproduce_pulls(registry, built, tmp_path):
    """A run pushed with its image (beside it, from the store), pulled into an empty results
    directory, and its image pulled by digest into an empty store as `fslab reproduce REF` does."""
    shutil.copytree(built.dir, images.store_dir() / built.dir.name)  # the run's machine has its image
    run = fake_run(tmp_path / "results", built)
    cp = fslab("results", "push", str(run), f"{registry.host}/fslab/runs:smoke")
    assert cp.returncode == 0, cp.stderr
    image_at = f"{registry.host}/fslab/runs@sha256:"
    assert f"its image: {image_at}" in cp.stdout and "(pushed)" in cp.stdout
    shutil.rmtree(images.store_dir())  # another machine: an empty store, an empty results directory
    pulled = run_registry.pull(oci.parse_ref(f"{registry.host}/fslab/runs:smoke"), tmp_path / "elsewhere")
    assert pulled.run_dir == tmp_path / "elsewhere" / run.name and not pulled.already
    assert tree(pulled.run_dir) == tree(run)
    assert str(pulled.image_ref).startswith(image_at) and pulled.image_digest == built.digest
    assert run_registry.pull(pulled.ref, tmp_path / "elsewhere").already
    recorded = reproduce.read_run(pulled.run_dir)
    seen: list[str] = []
    image = reproduce.find_image(recorded, None, seen.append, pulled.image_ref)
    assert image.digest == built.digest and seen[0].startswith(f"fslab: pulled image {built.digest} from {image_at}")
    # pushed again with --image naming where the image is: only the run is sent, and it says so
    cp = fslab("results", "push", str(run), f"{registry.host}/fslab/runs:again", "--image", str(pulled.image_ref))
    assert cp.returncode == 0 and "(0 layer(s) sent, 2 already there)" in cp.stdout, cp.stdout + cp.stderr
    cp = fslab("results", "push", str(run), f"{registry.host}/fslab/runs:bad",
               "--image", f"{registry.host}/fslab/runs:smoke")
    assert cp.returncode == 2 and "not an fslab image" in cp.stderr, cp.stderr


def test_a_tampered_run_is_refused_and_nothing_is_written(registry, built, tmp_path):
    shutil.copytree(built.dir, images.store_dir() / built.dir.name)
    run = fake_run(tmp_path / "results", built)
    got = run_registry.push(run, oci.parse_ref(f"{registry.host}/fslab/runs:smoke"))
    manifest = oci.Client(got.run.ref).get_manifest(got.run.digest)[0]
    (files,) = [d for d in manifest["layers"] if d["annotations"][oci.TITLE] == run_registry.FILES]
    blob = registry.blob_path(files["digest"])
    data = bytearray(blob.read_bytes())
    data[100] ^= 1
    blob.write_bytes(bytes(data))
    out = tmp_path / "elsewhere"
    cp = fslab("results", "pull", f"{registry.host}/fslab/runs:smoke", "--results-dir", str(out))
    assert cp.returncode == 2 and len(cp.stderr.strip().splitlines()) == 1, cp.stderr
    assert f"refused, nothing was written to {out}: run.tar.gz: the registry sent" in cp.stderr
    assert not out.exists()  # the results directory the command made goes with its refusal


def test_a_running_run_is_not_pushed(registry, built, tmp_path):
    run = fake_run(tmp_path / "results", built)
    m = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps(dict(m, status="running")))
    with pytest.raises(FslabError, match=r"the run is still running"):
        run_registry.push(run, oci.parse_ref(f"{registry.host}/fslab/runs:x"))


def test_references():
    assert oci.parse_ref("ghcr.io/lab/fslab:debian-12").plain_http is False
    assert oci.parse_ref("docker.io/lab/fslab:x").host == "registry-1.docker.io"
    assert oci.parse_ref("harbor.lab:8443/a/b", plain_http=True).plain_http
    for bad in ("results/run1", "ghcr.io/Lab/x", "ghcr.io/x:", "ghcr.io/x@sha256:12", ""):
        with pytest.raises(FslabError, match=r"is not a registry reference; allowed: HOST\[:PORT\]/REPOSITORY"):
            oci.parse_ref(bad)
