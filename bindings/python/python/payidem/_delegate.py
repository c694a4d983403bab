"""Read-only attributes that a wrapper class reads from the native object
it wraps (its ``_native``)."""

from __future__ import annotations

from typing import Any, Generic, Optional, TypeVar, Union, cast, overload

_T = TypeVar("_T")


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
