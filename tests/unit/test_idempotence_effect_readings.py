"""A call in doubt (its worker died while it ran) is repeated unasked only when it is no effect.
sec15: the effect table read the first word past the options it knows as the subcommand and
curl's options one word at a time — `git -c x=y push`, `kubectl -v 9 apply`, `gh -R o/r pr
create`, `docker image push`, `npm --registry URL publish`, `npm pu` (npm's abbreviation of
publish), and curl's clustered `-sd x`, `-sXPOST`, `-sT f`, `--data-ra x` were taken as safe to
run again, and each sends (judged by effect below: curl's request reaches a local server)."""

from __future__ import annotations

import http.server
import shutil
import subprocess
import threading

import pytest

from xsky.security.idempotence import not_repeatable


@pytest.mark.parametrize(
    "command",
    [
        "git -c x=y push",
        "kubectl -v 9 apply -f x",
        "kubectl -s https://k apply -f x",
        "docker --config d push img",
        "docker image push img",
        "npm --registry http://r publish",
        "npm pu",
        "npm publ",
        "gh -R o/r pr create",
        "terraform -chdir infra apply",
        "cargo +nightly publish",
        "curl -dx https://h",
        "curl -sd x https://h",
        "curl -sSd x https://h",
        "curl -sXPOST https://h",
        "curl -sX POST https://h",
        "curl -sT f https://h",
        "curl -Ffile=@x https://h",
        "curl --data-ra x https://h",
        "curl -K cfg https://h",
        "http POST https://h a=b",
        "python3 -m twine upload dist/x.whl",
        "uv publish",
        "poetry publish",
        "helm upgrade --install r c",
        "rsync -a out/ host:/srv/",
    ],
)
def test_an_effect_past_unknown_options_or_in_a_cluster_is_not_repeated(command: str) -> None:
    assert not_repeatable("shell", {"command": command}) is not None


@pytest.mark.parametrize(
    "command",
    [
        "curl -sSL https://h",
        "curl -fsSLo out.tgz https://h",
        "curl -sX GET https://h",
        "curl -o f -w '%{http_code}' https://h",
        "http GET https://h",
        "git -c color.ui=never log",
        "git -C x log",
        "kubectl -v 9 get pods",
        "docker --config d pull img",
        "docker image ls",
        "npm --registry http://r install",
        "npm run build",
        "terraform -chdir infra plan",
        "helm template r c",
        "rsync -a src/ dst/",
        "python3 -m pytest",
    ],
)
def test_reads_and_builds_stay_repeatable(command: str) -> None:
    assert not_repeatable("shell", {"command": command}) is None


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
@pytest.mark.parametrize("options", [["-sd", "x"], ["-sXPOST"], ["--data-ra", "x"]])
def test_the_clustered_forms_do_send(options: list[str]) -> None:
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            seen.append(self.command)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.handle_request, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/"
        subprocess.run(["curl", *options, "-o", "/dev/null", url], timeout=20, check=False)
    finally:
        server.server_close()
    assert seen == ["POST"]
    command = " ".join(["curl", *options, url])
    assert not_repeatable("shell", {"command": command}) is not None
