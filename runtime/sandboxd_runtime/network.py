# SPDX-License-Identifier: MIT
"""Network egress inside the sandbox (docs/NETWORK.md).

An execution or session with a network policy gets a job member
{"proxy": "http://127.0.0.1:3128", "caFile": "/etc/ssl/certs/ca-certificates.crt"}:
sandboxd's proxy listens on this sandbox's own loopback, and the proxy is the
only way out. This module points the variables every HTTP client reads (urllib,
requests, httpx, pip, curl) at it, and the certificate variables at the bundle
sandboxd put in, before any user code runs. Without the member nothing changes:
there is no network at all.
"""
import os

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
CA_VARIABLES = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "PIP_CERT")


def apply(net):
    if not isinstance(net, dict) or not isinstance(net.get("proxy"), str):
        return
    for name in PROXY_VARIABLES:
        os.environ[name] = net["proxy"]
    for name in ("NO_PROXY", "no_proxy"):
        os.environ.pop(name, None)  # everything goes through the proxy; it decides
    if isinstance(net.get("caFile"), str):
        for name in CA_VARIABLES:
            os.environ[name] = net["caFile"]
