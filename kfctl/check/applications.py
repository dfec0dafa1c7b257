"""Category "health" of `kfctl check`: one check per application, what `kfctl status` knows of it (the health
of every object kfctl recorded, or of what an `external: true` application must provide). Reads only: the
context's ``health`` reads the cluster once for all of them."""

from __future__ import annotations

from collections.abc import Callable

from kfctl.check.model import InstalledContext, Outcome


def application_health(application: str) -> Callable[[InstalledContext], Outcome]:
    def run(ctx: InstalledContext) -> Outcome:
        apps = ctx.health()
        if apps is None:
            return Outcome(
                "fail",
                "not installed: kfctl has no record of this platform on the cluster",
                "install it with kfctl apply APPDIR (or point --kubeconfig/--context at the cluster it is on)",
            )
        health = apps.get(application)
        if health is None:
            return Outcome(
                "fail",
                "not installed: no object of it is recorded",
                "kfctl apply APPDIR installs it",
            )
        if health.ready:
            return Outcome("pass", health.message)
        return Outcome(
            "fail",
            f"{health.state}: {health.message}",
            "kfctl status APPDIR lists every object and why it is not ready; kfctl apply APPDIR waits for it",
        )

    return run
