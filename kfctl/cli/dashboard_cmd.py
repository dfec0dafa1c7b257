"""`kfctl dashboard`: forward a local port to the platform's ingress through the API server, and say how to log in."""

from __future__ import annotations

import time
from pathlib import Path

import click

from kfctl.app.cluster import talking_to
from kfctl.app.dashboard import Ingress, Login, find_ingress, forward, login_of, password_of
from kfctl.cli.options import get_options, global_options
from kfctl.cli.output import emit
from kfctl.cli.target import cluster_of, kfdef_target, resolve_kfdef
from kfctl.errors import InterruptedError_
from kfctl.k8s.api import Cluster
from kfctl.k8s.portforward import LocalForward

DEFAULT_PORT = 8080  # upstream's README: kubectl port-forward svc/istio-ingressgateway -n istio-system 8080:80


@click.command()
@kfdef_target
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="The local port on 127.0.0.1 (0: any free one).",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the URL in the default browser.")
@click.option(
    "--show-password", is_flag=True, help="Print the password itself (by default: where it is kept, never the value)."
)
@global_options
def dashboard(
    app_dir: Path | None, kfdef_file: Path | None, port: int, open_browser: bool, show_password: bool
) -> None:
    """Open the platform's dashboard: forward a local port to its ingress and print the URL and the login.

    The ingress is the Service the installed Istio Gateway selects (upstream's istio-system/istio-ingressgateway),
    reached through the API server as `kubectl port-forward` reaches it: no LoadBalancer, no NodePort, no
    /etc/hosts. The login is the user kfctl generated for Dex at install (Secret auth/kfctl-login); its
    password is printed only with --show-password. Runs until Ctrl-C (exit 130). APPDIR is optional: it only
    names the install in the output.

    \b
    Exit codes: 5 the platform has no gateway (the message names what was looked for), 2 the port is in use,
    8 no gateway pod runs, 7 the API server refuses the port-forward, 130 stopped with Ctrl-C.
    -o json prints {"url", "login": {"username", "passwordSecret", "passwordKey"}, "ingress": {…}} once, then
    forwards until stopped.
    Examples:
      kfctl dashboard demo                      # then open http://127.0.0.1:8080/
      kfctl dashboard demo --port 9000 --open
      kfctl dashboard -o json | jq -r .url
    """
    opts = get_options()
    name = ""
    if app_dir is not None or kfdef_file is not None or Path("kfdef.yaml").is_file():
        name = resolve_kfdef(app_dir, kfdef_file).name
    cluster = cluster_of(opts)()

    def progress(text: str) -> None:
        if not opts.quiet:
            click.echo(text, err=True)

    progress("Looking for the platform's ingress (the Istio Gateway, its Service and pod) …")
    with talking_to(cluster, "looking for the platform's ingress"):
        ingress = find_ingress(cluster)
        login = login_of(cluster)
        password = password_of(cluster, login) if show_password and login is not None else ""
    progress(f"Found {ingress.describe()}")
    # A connection that could not be forwarded is said at once, as kubectl port-forward says it: the browser only
    # sees an empty reply. Each connection, with -v.
    local = forward(
        cluster,
        ingress,
        port=port,
        on_event=lambda t: click.echo(t, err=True) if opts.verbose else None,
        on_error=lambda t: click.echo(f"Warning: {t}", err=True),
    )
    with talking_to(cluster, f"opening a port-forward to pod {ingress.namespace}/{ingress.pod}"):
        first = cluster.port_forward(namespace=ingress.namespace, pod=ingress.pod, port=ingress.pod_port)
        first.close()  # the API server lets us: say so now, not at the browser's first request
    with local:
        shown = login.as_dict() | ({"password": password} if show_password else {}) if login else None
        data = {"url": local.url, "login": shown, "ingress": ingress.as_dict()}
        emit(opts, data, _text(local, ingress, login, password, name))
        if open_browser:
            click.launch(local.url)
        try:
            wait_until_interrupted(local, cluster)
        except KeyboardInterrupt:
            raise InterruptedError_(
                f"stopped forwarding {local.url} (Ctrl-C); {local.connections} connection(s) were forwarded"
            ) from None


def wait_until_interrupted(local: LocalForward, _cluster: Cluster) -> None:
    """Until Ctrl-C (KeyboardInterrupt) — the forward serves in its own thread."""
    while True:
        time.sleep(0.5)


def _text(local: LocalForward, ingress: Ingress, login: Login | None, password: str, name: str) -> str:
    what = f"{name}'s dashboard" if name else "Dashboard"
    lines = [f"{what}: {local.url}"]
    if login is None:
        lines.append(
            "Login:    kfctl generated none here (no Secret auth/kfctl-login): log in as the platform's Dex "
            "config says (ConfigMap auth/dex, staticPasswords); re-apply with this kfctl to get a per-install one"
        )
    else:
        lines.append(f"Login:    {login.username}")
        lines.append(f"Password: {password}" if password else f"Password: {login.where}   (or --show-password)")
    lines.append(f"Forwarding {local.host}:{local.port} → {ingress.describe()} through the API server; Ctrl-C stops.")
    return "\n".join(lines)
