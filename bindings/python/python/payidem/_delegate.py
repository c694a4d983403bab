"""What the classes wrapping one native object (their ``_native``) share:
read-only attributes read from it, their ``repr``, and the context manager
of the ones that must be ended."""

from __future__ import annotations

from types import TracebackType
from typing import Any, Generic, Optional, Type, TypeVar, Union, cast, overload

_T = TypeVar("_T")
_R = TypeVar("_R", bound="NativeResource")


class native_attribute(Generic[_T]):
    """A read-only attribute whose value is the wrapped ``_native``
    object's attribute of the same name; ``doc`` is its documentation.
    Setting or deleting it raises :class:`AttributeError`, as for a
    property without a setter."""

    def __init__(self, doc: str) -> None:
        self.__doc__ = doc
        self._name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, obj: None, owner: Optional[type] = None) -> native_attribute[_T]: ...

    @overload
    def __get__(self, obj: object, owner: Optional[type] = None) -> _T: ...

    def __get__(
        self, obj: Optional[object], owner: Optional[type] = None
    ) -> Union[native_attribute[_T], _T]:
        if obj is None:
            return self
        return cast(_T, getattr(cast(Any, obj)._native, self._name))

    def __set__(self, obj: object, value: object) -> None:
        raise AttributeError(f"{self._name!r} of {type(obj).__name__!r} object is read-only")

    def __delete__(self, obj: object) -> None:
        raise AttributeError(f"{self._name!r} of {type(obj).__name__!r} object is read-only")


class NativeWrapper:
    """A class wrapping one native object (its ``_native``): shown as it."""

    __slots__ = ()

    def __repr__(self) -> str:
        return repr(cast(Any, self)._native)


class NativeResource(NativeWrapper):
    """A :class:`NativeWrapper` that must be ended (closed, cancelled), and
    is as a context manager: ``with`` refuses one already ended
    (:meth:`_check_usable`) and ends it on exit (:meth:`_on_exit`), whatever
    happened in the block."""

    __slots__ = ()

    def _check_usable(self) -> None:
        """Raises when the resource cannot start a ``with`` block."""

    def _on_exit(self) -> None:
        raise NotImplementedError

    def __enter__(self: _R) -> _R:
        self._check_usable()
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self._on_exit()
