"""End-to-end tier: the local runner over HTTP, flagctl and its console, the console in Chromium, and the
distributions installed by path into empty virtual environments."""
