"""flagctl: the admin CLI of singleton-flags (``flagctl --help``, or ``python -m flagctl --help``): h11 for HTTP,
botocore for credentials and signing."""
