"""The web side's guard: the worker's /metrics under an exporter-toolkit web config
file (TLS and bcrypt basic auth), refused without the right credentials or over plain HTTP, the
security headers on every answer, and the real Prometheus scraping it with the config
craps_streams/metrics/scrape_config.py writes. No broker: the worker's web app over a real metrics
registry."""
from __future__ import annotations

import asyncio
import base64
import json
import pathlib
import shutil
import ssl
import subprocess
import time
import urllib.parse
import urllib.request
from types import SimpleNamespace

import bcrypt
import pytest
import yaml

from craps_streams.app.web import make_web_app
from craps_streams.app.web_security import CSP, WebConfigError, load_web_config, start_site
from craps_streams.metrics.exporter import FloorMetrics
from craps_streams.metrics.scrape_config import secured_scrape_config
from tests.conftest import free_port

ROOT = pathlib.Path(__file__).resolve().parents[2]
PASSWORD = "correct horse battery staple"


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> pathlib.Path:
    d = tmp_path_factory.mktemp("pki")
    run = lambda *a: subprocess.run(a, cwd=d, check=True, capture_output=True)  # noqa: E731
    run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
        "-days", "2", "-subj", "/CN=craps test CA")
    run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
        "-subj", "/CN=127.0.0.1")
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    run("openssl", "x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "server.crt", "-days", "2", "-extfile", "san.ext")
    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=10)).decode().replace("$2b$", "$2y$", 1)
    (d / "web.yml").write_text(yaml.safe_dump({
        "tls_server_config": {"cert_file": "server.crt", "key_file": "server.key"},
        "basic_auth_users": {"prometheus": hashed}}))
    (d / "password").write_text(PASSWORD + "\n")
    return d


def serve(config_path, port):
    """The worker's web app (no partitions owned) on `port`, in a thread with its own loop."""
    import threading

    config = load_web_config(config_path)
    metrics = FloorMetrics()
    metrics.events.labels("applied").inc(7)
    ready, stop = threading.Event(), threading.Event()

    def run():
        async def main():
            runner = await start_site(make_web_app(SimpleNamespace(owners={}), metrics, config), port, config)
            ready.set()
            while not stop.is_set():
                await asyncio.sleep(0.1)
            await runner.cleanup()
        asyncio.run(main())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(20)
    return stop, thread


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def fetch(url, context=None, auth=None):
    request = urllib.request.Request(url)
    if auth:
        request.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=context), _NoRedirect)
    try:
        with opener.open(request, timeout=10) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def test_metrics_need_tls_and_the_right_password(pki):
    port = free_port()
    stop, thread = serve(pki / "web.yml", port)
    try:
        trust = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        url = f"https://127.0.0.1:{port}/metrics"
        status, headers, _ = fetch(url, trust)
        assert status == 401 and headers["WWW-Authenticate"].startswith("Basic")
        assert headers["Content-Security-Policy"] == CSP
        assert fetch(url, trust, "prometheus:wrong")[0] == 401
        assert fetch(url, trust, "nobody:" + PASSWORD)[0] == 401
        status, headers, body = fetch(url, trust, "prometheus:" + PASSWORD)
        assert status == 200 and 'craps_events_total{verdict="applied"} 7.0' in body
        assert headers["X-Content-Type-Options"] == "nosniff"
        # Plain HTTP to the TLS port, and a client that does not trust the certificate: no answer.
        with pytest.raises((urllib.error.URLError, ConnectionError)):
            fetch(f"http://127.0.0.1:{port}/metrics", auth="prometheus:" + PASSWORD)
        with pytest.raises(urllib.error.URLError):
            fetch(url, ssl.create_default_context(), "prometheus:" + PASSWORD)
        # / sends the browser to the floor view: the worker has no floor page of its own.
        status, headers, _ = fetch(f"https://127.0.0.1:{port}/", trust, "prometheus:" + PASSWORD)
        assert status == 302 and headers["Location"] == "http://127.0.0.1:6070/"
    finally:
        stop.set()
        thread.join(10)


@pytest.mark.parametrize("text,error", [
    ("basic_auth_users: {a: plaintext}\n", "not a bcrypt hash"),
    ("tls_server_config: {cert_file: x.crt}\n", "needs cert_file and key_file"),
    ("tls_config: {}\n", "unknown keys"),
    ("tls_server_config: {cert_file: a, key_file: b, client_auth: x}\n", "unknown tls_server_config keys"),
])
def test_a_bad_web_config_is_refused_with_a_reason(tmp_path, text, error):
    (tmp_path / "web.yml").write_text(text)
    with pytest.raises(WebConfigError, match=error):
        load_web_config(tmp_path / "web.yml")


def test_no_web_config_is_plain_http_on_localhost():
    config = load_web_config(None)
    assert config.ssl_context is None and not config.users


@pytest.mark.timeout(120)
def test_prometheus_scrapes_the_secured_metrics(pki, tmp_path):
    assert shutil.which("prometheus"), "prometheus is not installed: apt-get install prometheus (CI does)"
    worker_port, prom_port = free_port(), free_port()
    stop, thread = serve(pki / "web.yml", worker_port)
    config = secured_scrape_config(ROOT / "infra" / "prometheus" / "prometheus.yml", username="prometheus",
                                   password_file=pki / "password", ca_file=pki / "ca.crt")
    job = next(j for j in config["scrape_configs"] if j["job_name"] == "craps-workers")
    assert job["scheme"] == "https" and job["basic_auth"]["username"] == "prometheus"
    job["static_configs"] = [{"targets": [f"127.0.0.1:{worker_port}"]}]
    job.pop("file_sd_configs", None)
    job["scrape_interval"] = job["scrape_timeout"] = "1s"
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    prom = subprocess.Popen(["prometheus", f"--config.file={tmp_path / 'prometheus.yml'}",
                             f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{prom_port}"],
                            stdout=open(tmp_path / "prometheus.log", "wb"), stderr=subprocess.STDOUT)
    try:
        value = None
        for _ in range(120):
            try:
                url = f"http://127.0.0.1:{prom_port}/api/v1/query?" + urllib.parse.urlencode(
                    {"query": 'craps_events_total{verdict="applied"}'})
                with urllib.request.urlopen(url, timeout=5) as r:
                    result = json.load(r)["data"]["result"]
                value = float(result[0]["value"][1]) if result else None
            except OSError:
                pass
            if value is not None:
                break
            time.sleep(0.5)
        assert value == 7.0, (tmp_path / "prometheus.log").read_text()[-2000:]
    finally:
        prom.terminate()
        prom.wait(20)
        stop.set()
        thread.join(10)
