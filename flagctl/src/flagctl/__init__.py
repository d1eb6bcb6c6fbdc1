"""flagctl: the admin CLI of singleton-flags (``python -m flagctl --help``). Standard library + botocore."""
