"""An OpenFeature provider over the embedded client (extra ``singleton-flags[openfeature]``).

Every evaluation is one ``Flags`` read (cached, fresh, stale or fallbacks), so the provider behaves exactly as
the client does. Reasons map one to one (STATIC, CACHED, STALE, DEFAULT); variants and ``flag_metadata`` are
OFREP's, key for key (``singleton_flags.snapshot.flag_variant`` and ``flag_metadata``: ``flagSetId``, ``version``
as a number, ``fetchedAt``, ``type``, ``contextIgnored``; a key without a value is absent, never null). The
evaluation context is not used: the flags are application-wide, with no targeting.

It fails closed. A fallback (the item missing, DynamoDB failing past ``max_stale``, a flag missing or unusable
in the item) is returned as a value with reason DEFAULT and **no error code**: with an error code the SDK would
hand the caller the default it passed, and ``get_boolean_value("maintenance_mode", False)`` would then read
"no maintenance" exactly when the flags cannot be read. Error codes are for the caller's mistakes only:
FLAG_NOT_FOUND for an undeclared name, TYPE_MISMATCH for a typed evaluation of a flag of another type.

Events, emitted only on transitions seen by an evaluation (the SDK emits READY itself after ``initialize``):
PROVIDER_STALE when it starts serving stale values, PROVIDER_ERROR when it starts serving the fallbacks,
PROVIDER_READY when it reads the table again after either, PROVIDER_CONFIGURATION_CHANGED (with the keys whose
values changed) when a read sees a new version.

Register it with ``register(flags)`` (``api.set_provider_and_wait``): until the provider is READY the SDK answers
every evaluation with the caller's default, and ``initialize`` is one read. ``initialize`` never raises, and no
read failure makes the provider NOT_READY or FATAL (the two states in which the SDK answers with the caller's
default): a table that cannot be read is served as the declared fallbacks, reason DEFAULT.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from openfeature import api
from openfeature.evaluation_context import EvaluationContext
from openfeature.event import ProviderEventDetails
from openfeature.exception import ErrorCode
from openfeature.flag_evaluation import FlagResolutionDetails, FlagValueType, Reason as OpenFeatureReason
from openfeature.provider import AbstractProvider, Metadata

from singleton_flags.client import Flags
from singleton_flags.snapshot import FlagState, flag_metadata, flag_reason, flag_variant
from singleton_flags.vocabulary import DEFAULT, DEFAULT_SERVICE, STALE

__all__ = ["PROVIDER_NAME", "SingletonFlagsProvider", "register"]

logger = logging.getLogger(__name__)
PROVIDER_NAME = "singleton-flags"
_READING, _STALE, _FALLING_BACK = "reading", "stale", "falling back"


class SingletonFlagsProvider(AbstractProvider):
    """OpenFeature's view of a ``Flags`` client (create the client once, at module scope)."""

    def __init__(self, flags: Flags, flag_set_id: str = DEFAULT_SERVICE) -> None:
        """``flag_set_id``: the metadata's ``flagSetId``; the service's name by default, as OFREP answers it."""
        super().__init__()
        self.flags = flags
        self.flag_set_id = flag_set_id
        self._mode = _READING  # what the SDK believes after READY
        self._version: int | None = None
        self._values: dict[str, Any] = {}

    def get_metadata(self) -> Metadata:
        return Metadata(name=PROVIDER_NAME)

    def initialize(self, evaluation_context: EvaluationContext) -> None:
        """Warm the cache with one read; never raises (a table that cannot be read is served as fallbacks, and a
        client without declarations answers each evaluation with that error: READY either way)."""
        try:
            state = self.flags.state()
        except Exception:  # noqa: BLE001 - a raise here would leave the provider in ERROR or FATAL
            logger.warning("the flags could not be read at initialize", exc_info=True)
            return
        if state.reason not in (STALE, DEFAULT):
            self._version, self._values = state.version, dict(state.values)

    # -- evaluations --------------------------------------------------------------------------------------------

    def resolve_boolean_details(
        self, flag_key: str, default_value: bool, evaluation_context: EvaluationContext | None = None
    ) -> FlagResolutionDetails[bool]:
        return self._resolve(flag_key, default_value, "bool")

    def resolve_string_details(
        self, flag_key: str, default_value: str, evaluation_context: EvaluationContext | None = None
    ) -> FlagResolutionDetails[str]:
        return self._resolve(flag_key, default_value, "string")

    def resolve_integer_details(
        self, flag_key: str, default_value: int, evaluation_context: EvaluationContext | None = None
    ) -> FlagResolutionDetails[int]:
        return self._resolve(flag_key, default_value, "int")

    def resolve_float_details(
        self, flag_key: str, default_value: float, evaluation_context: EvaluationContext | None = None
    ) -> FlagResolutionDetails[float]:
        return self._resolve(flag_key, default_value, "float")

    def resolve_object_details(
        self,
        flag_key: str,
        default_value: Sequence[FlagValueType] | Mapping[str, FlagValueType],
        evaluation_context: EvaluationContext | None = None,
    ) -> FlagResolutionDetails[Sequence[FlagValueType] | Mapping[str, FlagValueType]]:
        return self._resolve(flag_key, default_value, "object")  # no flag is an object: not found or a mismatch

    def _resolve(self, flag_key: str, default_value: Any, flag_type: str) -> FlagResolutionDetails[Any]:
        spec = self.flags.declarations.get(flag_key)
        if spec is None:
            return FlagResolutionDetails(
                value=default_value,
                error_code=ErrorCode.FLAG_NOT_FOUND,
                error_message=f"no flag named {flag_key!r} is declared",
                reason=OpenFeatureReason.ERROR,
            )
        if spec.type != flag_type:
            return FlagResolutionDetails(
                value=default_value,
                error_code=ErrorCode.TYPE_MISMATCH,
                error_message=f"flag {flag_key!r} is declared as {spec.type}, not {flag_type}",
                reason=OpenFeatureReason.ERROR,
            )
        state = self.flags.state()
        self._observe(state)
        return FlagResolutionDetails(
            value=state.values[flag_key],
            reason=OpenFeatureReason(flag_reason(state, flag_key).value),
            variant=flag_variant(state, flag_key),
            flag_metadata=flag_metadata(state, spec.type, self.flag_set_id),
        )

    # -- events ---------------------------------------------------------------------------------------------

    def _observe(self, state: FlagState) -> None:
        mode = _STALE if state.reason == STALE else _FALLING_BACK if state.reason == DEFAULT else _READING
        if mode != self._mode:
            self._mode = mode
            if mode == _STALE:
                self.emit_provider_stale(ProviderEventDetails(message="the table cannot be read: stale values"))
            elif mode == _FALLING_BACK:
                self.emit_provider_error(
                    ProviderEventDetails(
                        message="the flags cannot be read: serving the declared fallbacks",
                        error_code=ErrorCode.GENERAL,
                    )
                )
            else:
                self.emit_provider_ready(ProviderEventDetails(message="reading the table again"))
        if mode != _READING or state.version is None:
            return
        if self._version is not None and state.version != self._version:
            changed = sorted(name for name, value in state.values.items() if self._values.get(name) != value)
            self.emit_provider_configuration_changed(
                ProviderEventDetails(flags_changed=changed, metadata={"version": state.version})
            )
        self._version, self._values = state.version, dict(state.values)


def register(flags: Flags, domain: str | None = None, flag_set_id: str = DEFAULT_SERVICE) -> SingletonFlagsProvider:
    """Set a provider over ``flags`` (for ``domain``, else as the default one) and return once it is ready."""
    provider = SingletonFlagsProvider(flags, flag_set_id)
    wait = getattr(api, "set_provider_and_wait", None)  # 0.10+: set_provider initializes in a thread
    if wait is not None and domain is not None:
        wait(provider, domain)
    elif wait is not None:
        wait(provider)
    elif domain is not None:
        api.set_provider(provider, domain)
    else:
        api.set_provider(provider)
    return provider
