"""The :class:`Handler` base class a plugin subclasses, and
:func:`export_plugin`, which names the class the component exports."""

from __future__ import annotations

from typing import Optional, Type, TypeVar

from herald_sdk.admission import AdmissionReview, Mutation, Verdict
from herald_sdk.errors import HandlerError
from herald_sdk.event import Event, Update
from herald_sdk.manifest import Manifest

H = TypeVar("H", bound="Handler")


class Handler:
    """A Herald plugin: a manifest plus what to do with each notification,
    and with each write it admits (:mod:`herald_sdk.admission`).

    The host creates one instance (with no arguments) before the first
    notification and keeps it for the life of the plugin instance, so
    attributes carry state from one call to the next (the host discards the
    instance, and the state, when it reloads the plugin or after a trap).
    Calls never overlap.

    Every handler defaults to doing nothing. Raising any ``Exception`` is a
    handler failure that the host records and retries with backoff a
    bounded number of times; :class:`~herald_sdk.HandlerError` controls the
    exact message. ``validate`` and ``mutate`` are called only for the
    webhooks the manifest declares; an exception there is a fault the host
    answers by the webhook's failure policy (no retry).
    """

    #: Whether updates carry the old state beside the new one
    #: (``event.old``). A plugin that never reads it sets ``OLD_STATE =
    #: False`` and the host does not copy it into the plugin at all.
    OLD_STATE: bool = True

    #: The most notifications the host may hand over in one call (each
    #: still reaches ``on_add``, ``on_update`` or ``on_delete`` on its own,
    #: in order; a failure stops the batch there and the host retries that
    #: notification alone, then the rest). Every-event subscriptions only:
    #: coalesced ones stay one per call. A trap loses what the instance
    #: knew, so the batch is delivered again one notification at a time.
    MAX_BATCH: int = 1

    @classmethod
    def manifest(cls) -> Manifest:
        """Describes the plugin: called once per load, before any handler
        call. :func:`herald_sdk.config.get` already works here, so the
        operator's configuration may shape the subscriptions."""
        raise NotImplementedError(f"{cls.__name__} must define manifest()")

    def on_add(self, event: Event) -> None:
        """An object was first seen, or replayed to a plugin joining an
        informer that had already synced (``event.is_initial_list``)."""

    def on_update(self, event: Update) -> None:
        """An object changed; on a periodic resync (``event.is_resync``) old
        and new are the same state."""

    def on_delete(self, event: Event) -> None:
        """An object was deleted; the event carries its last known state
        (``event.final_state_unknown`` when the deletion was inferred)."""

    def validate(self, review: AdmissionReview) -> Verdict:
        """Decides on a write the manifest's validating webhook covers
        (:meth:`~herald_sdk.Manifest.validating`): return
        :meth:`Verdict.allow() <herald_sdk.admission.Verdict.allow>` or
        :meth:`Verdict.deny(message) <herald_sdk.admission.Verdict.deny>`.
        Undefined, it raises: the plugin does not admit."""
        raise HandlerError(f"the plugin does not admit: {type(self).__name__} defines no validate()")

    def mutate(self, review: AdmissionReview) -> Mutation:
        """Decides on, and may change, a write the manifest's mutating
        webhook covers (:meth:`~herald_sdk.Manifest.mutating`): return a
        :class:`~herald_sdk.admission.Mutation`. Undefined, it raises: the
        plugin does not admit."""
        raise HandlerError(f"the plugin does not admit: {type(self).__name__} defines no mutate()")


_exported: Optional[type] = None


def export_plugin(handler_class: Type[H]) -> Type[H]:
    """Names ``handler_class`` as the plugin the component exports. Call it
    once, in the module you build (also usable as a class decorator)::

        herald_sdk.export_plugin(LabelAudit)

    Exporting a second, different class raises ``RuntimeError``.
    """
    global _exported
    if not (isinstance(handler_class, type) and issubclass(handler_class, Handler)):
        raise TypeError(f"export_plugin takes a subclass of herald_sdk.Handler, got {handler_class!r}")
    if _exported is not None and _exported is not handler_class:
        raise RuntimeError(
            f"a module exports {_exported.__name__} already; one plugin per component")
    _exported = handler_class
    return handler_class


def exported_plugin() -> Optional[type]:
    """The class :func:`export_plugin` named, or ``None``."""
    return _exported
