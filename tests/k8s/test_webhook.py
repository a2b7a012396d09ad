"""The pod webhook's AdmissionReview handling (berth/k8s/webhook.py), without a cluster: what
each request body is answered with, the serving certificate's errors, and one review over
real HTTPS."""

from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from berth.k8s.webhook import (
    MUTATE_POD,
    WebhookError,
    WebhookOptions,
    WebhookServer,
    respond,
    server_context,
)
from tests.k8s.certs import make_certificates

PATCH = [{"op": "add", "path": "/metadata/annotations", "value": {"a": "b"}}]


def review(version: str = "admission.k8s.io/v1", **request: Any) -> bytes:
    base: dict[str, Any] = {
        "uid": "u-1",
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "operation": "CREATE",
        "namespace": "team",
        "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}},
    }
    base.update(request)
    return json.dumps({"apiVersion": version, "kind": "AdmissionReview", "request": base}).encode()


def patching(pod: dict[str, Any], namespace: str) -> tuple[list[dict[str, Any]], list[str]]:
    assert namespace == "team" and pod["metadata"]["name"] == "p"
    return PATCH, []


def failing(pod: dict[str, Any], namespace: str) -> tuple[list[dict[str, Any]], list[str]]:
    raise KeyError("boom")


def warning(pod: dict[str, Any], namespace: str) -> tuple[list[dict[str, Any]], list[str]]:
    return [], ["berth injected no sidecars: it cannot read the pod (bad quantity)"]


# body, admit, ready → HTTP status, allowed, uid answered, a piece of the message (or None)
CASES = {
    "a pod's creation is patched": (review(), patching, True, 200, True, "u-1", None),
    "v1beta1 is answered in kind": (
        review("admission.k8s.io/v1beta1"),
        patching,
        True,
        200,
        True,
        "u-1",
        None,
    ),
    "not JSON": (b"{not json", patching, True, 400, False, "", "the body is not JSON"),
    "JSON but not an object": (b"[1]", patching, True, 400, False, "", "AdmissionReview object"),
    "another kind": (
        json.dumps({"apiVersion": "v1", "kind": "Pod"}).encode(),
        patching,
        True,
        400,
        False,
        "",
        "expected kind AdmissionReview",
    ),
    "no request": (
        json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}).encode(),
        patching,
        True,
        400,
        False,
        "",
        "request: missing",
    ),
    "no uid": (review(uid=""), patching, True, 400, False, "", "request.uid: missing"),
    "no object": (review(object=None), patching, True, 400, False, "u-1", "request.object"),
    "an object that is not a pod": (
        review(object={"kind": "Service"}),
        patching,
        True,
        400,
        False,
        "u-1",
        "request.object: expected the Pod",
    ),
    "another resource is let through": (
        review(resource={"group": "apps", "version": "v1", "resource": "deployments"}),
        failing,
        True,
        200,
        True,
        "u-1",
        None,
    ),
    "an update is let through": (review(operation="UPDATE"), failing, True, 200, True, "u-1", None),
    "a subresource is let through": (
        review(subResource="status"),
        failing,
        True,
        200,
        True,
        "u-1",
        None,
    ),
    "not synced: a webhook failure": (review(), patching, False, 503, False, "u-1", "not synced"),
    "a failed injection: a webhook failure": (
        review(),
        failing,
        True,
        503,
        False,
        "u-1",
        "sidecar injection failed",
    ),
    "a pod berth cannot read is let through with a warning": (
        review(),
        warning,
        True,
        200,
        True,
        "u-1",
        None,
    ),
}


@pytest.mark.parametrize(
    ("body", "admit", "ready", "status", "allowed", "uid", "message"),
    CASES.values(),
    ids=CASES.keys(),
)
def test_reviews_are_answered(body, admit, ready, status, allowed, uid, message):
    code, answer = respond(body, admit, lambda: ready)
    assert code == status
    assert answer["kind"] == "AdmissionReview"
    response = answer["response"]
    assert response["allowed"] is allowed and response["uid"] == uid
    if message is not None:
        assert message in response["status"]["message"]
        assert response["status"]["code"] == status
    if b"v1beta1" in body:
        assert answer["apiVersion"] == "admission.k8s.io/v1beta1"


def test_the_patch_is_base64_json_patch_and_warnings_are_passed_on():
    _, answer = respond(review(), patching, lambda: True)
    response = answer["response"]
    assert response["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(response["patch"])) == PATCH
    _, answer = respond(review(), warning, lambda: True)
    assert "patch" not in answer["response"]
    assert answer["response"]["warnings"] == warning({}, "")[1]


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("pki")
    make_certificates(folder)
    return folder


def test_certificate_problems_name_the_file(pki: Path, tmp_path: Path):
    missing = tmp_path / "absent.crt"
    with pytest.raises(WebhookError, match=f"--webhook-cert {missing}: cannot read"):
        server_context(missing, pki / "serving.key")
    with pytest.raises(WebhookError, match="--webhook-key .*: cannot read"):
        server_context(pki / "serving.crt", tmp_path / "absent.key")
    garbage = tmp_path / "garbage.crt"
    garbage.write_text("not a certificate\n")
    with pytest.raises(WebhookError, match="not a PEM certificate and its private key"):
        server_context(garbage, pki / "serving.key")
    with pytest.raises(WebhookError, match="not a PEM certificate and its private key"):
        server_context(pki / "serving.crt", pki / "admin.key")  # another certificate's key


def test_a_review_over_https(pki: Path):
    options = WebhookOptions(port=0, cert=pki / "serving.crt", key=pki / "serving.key")
    server = WebhookServer(options, patching, lambda: True)
    server.start()
    try:
        context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        url = f"https://127.0.0.1:{server.port}{MUTATE_POD}"
        request = urllib.request.Request(
            url, data=review(), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, context=context, timeout=10) as answer:
            body = json.loads(answer.read())
        assert body["response"]["allowed"] is True and body["response"]["uid"] == "u-1"
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(
                urllib.request.Request(url, data=b"nonsense"), context=context, timeout=10
            )
        assert refused.value.code == 400
    finally:
        server.stop()


def test_a_port_in_use_is_a_clear_error(pki: Path):
    options = WebhookOptions(port=0, cert=pki / "serving.crt", key=pki / "serving.key")
    first = WebhookServer(options, patching, lambda: True)
    try:
        options.port = first.port
        first.socket.listen()
        with pytest.raises(WebhookError, match=f"--webhook-port {first.port}: cannot listen"):
            WebhookServer(options, patching, lambda: True)
    finally:
        first.stop()


# arguments after `berth serve --kubeconfig /nowhere` → the one-line error (exit 1)
FLAG_ERRORS = {
    "no certificate where the default points": (
        ["--kruise"],
        "error: --webhook-cert /etc/berth-webhook/tls.crt: cannot read",
    ),
    "a missing key": (
        ["--kruise", "--webhook-cert", "{pki}/serving.crt", "--webhook-key", "{pki}/none.key"],
        "error: --webhook-key {pki}/none.key: cannot read (No such file or directory)",
    ),
    "a key of another certificate": (
        ["--kruise", "--webhook-cert", "{pki}/serving.crt", "--webhook-key", "{pki}/admin.key"],
        "not a PEM certificate and its private key",
    ),
    "a port out of range": (
        ["--kruise", "--webhook-port", "70000"],
        "error: --webhook-port 70000: expected a port number (0 to 65535)",
    ),
    "webhook flags without --kruise": (
        ["--webhook-port", "9443"],
        "error: --webhook-port needs --kruise",
    ),
}


@pytest.mark.parametrize(("arguments", "message"), FLAG_ERRORS.values(), ids=FLAG_ERRORS.keys())
def test_bad_webhook_flags_are_one_line_errors(arguments, message, pki: Path, capsys):
    from berth.cli import main

    arguments = [a.format(pki=pki) for a in arguments]
    assert main(["serve", "--kubeconfig", "/nowhere", *arguments]) == 1
    err = capsys.readouterr().err
    assert message.format(pki=pki) in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_a_taken_webhook_port_is_a_one_line_error(pki: Path, tmp_path: Path, capsys):
    from berth.cli import main

    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    options = WebhookOptions(port=0, cert=pki / "serving.crt", key=pki / "serving.key")
    taken = WebhookServer(options, patching, lambda: True)
    taken.socket.listen()
    try:
        arguments = ["--kruise", "--webhook-port", str(taken.port), "--metrics-port", "0"]
        arguments += ["--webhook-cert", str(options.cert), "--webhook-key", str(options.key)]
        assert main(["serve", "--kubeconfig", str(kubeconfig), *arguments]) == 1
    finally:
        taken.stop()
    err = capsys.readouterr().err
    assert f"error: --webhook-port {taken.port}: cannot listen" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("flags", "written"),
    [
        ([], False),  # the mounted Secret at the default path: berth writes no caBundle
        (["--webhook-cert", "{pki}/serving.crt", "--webhook-key", "{pki}/serving.key"], True),
    ],
    ids=["the default certificate", "--webhook-cert"],
)
def test_only_a_certificate_named_on_the_command_line_is_written_as_the_ca_bundle(
    flags, written, pki: Path, monkeypatch
):
    from berth.cli import _parser
    from berth.k8s.ca_bundle import CONFIGURATION
    from berth.k8s_cli import _webhook

    monkeypatch.setattr("berth.k8s_cli.WEBHOOK_CERT", str(pki / "serving.crt"))
    monkeypatch.setattr("berth.k8s_cli.WEBHOOK_KEY", str(pki / "serving.key"))
    args = _parser().parse_args(["serve", "--kruise", *(f.format(pki=pki) for f in flags)])
    options = _webhook(args)
    assert isinstance(options, WebhookOptions)
    assert options.configuration == (CONFIGURATION if written else None)
