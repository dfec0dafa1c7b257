"""Apply, wait, retry, prune and delete against a cluster, reporting events; the engine never prints."""
