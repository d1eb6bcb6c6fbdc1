"""Unit tier: the client, the service's modules and handlers, the local runner's parts and flagctl, against moto in
process (no socket)."""
