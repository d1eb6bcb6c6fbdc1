"""The CDK app of singleton-flags: a thin stack composing one construct per concern, and ``FlagsService``, the same
service in another stack.

The stack builds the routes, the handler names and the functions' environment from the very code that runs in
Lambda (the installed ``singleton_flags_service`` package), never retyped.
"""
