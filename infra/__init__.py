"""The CDK app of singleton-flags: a thin stack composing one construct per concern.

The stack builds the routes, the handler names and the functions' environment from the very code that runs in
Lambda (the installed ``singleton_flags`` package), never retyped.
"""
