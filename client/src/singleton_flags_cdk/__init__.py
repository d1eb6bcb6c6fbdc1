"""Bind your functions to a deployed singleton-flags service (extra ``singleton-flags[cdk]``): its read grant, the
client's variables and the client's layer. Never in a function's layer or asset: aws-cdk-lib is a synth-time
dependency only.
"""

from singleton_flags_cdk.construct import (
    ARCHITECTURES,
    READ_ACTIONS,
    SingletonFlags,
    client_layer_version,
    discovery_parameter,
    read_condition,
)

__all__ = [
    "ARCHITECTURES",
    "READ_ACTIONS",
    "SingletonFlags",
    "client_layer_version",
    "discovery_parameter",
    "read_condition",
]
