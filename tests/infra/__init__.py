"""Infra tier: the synthesized templates (the stack, the constructs, cdk-nag), the service as deployed before, and
what an application ships of the client."""
