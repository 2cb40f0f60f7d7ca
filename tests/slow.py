"""Which tests are slow, read from their code so that no test file has to say it.

A test is slow when it starts Python processes (a simulator, a runner, the app in tmux, a bench
script), or drives the app in this process (Textual's `run_test`, a snapshot): seconds each,
and in-process app tests were two thirds of the fast loop's CPU (2026-12-03). It is found by
the names its code uses, followed through the helpers and fixtures of tests/ it calls, so a
new test that calls `running_sim` or a helper that does is marked without anyone remembering
to. A test this misses still cannot slip into the fast loop when it starts Python: the
process audit in conftest fails a test that started Python without the mark.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from types import CodeType, FunctionType
from typing import Any

import pytest

# Names that start processes when called: the stdlib's, and the project's own launchers (by
# name, not identity, so that moving them between modules keeps this true).
STARTERS = frozenset({
    "subprocess", "Popen", "create_subprocess_exec", "create_subprocess_shell", "fork",
    "ServerProcess", "Runner", "RunnerProcess", "StartRequest", "make_driver", "make_server",
    "preflight", "_start_of",  # preflight asks bench.python whether the client imports
})
# What drives the app in this process: Textual's pilot, and the snapshot plugin's fixture.
APP_DRIVERS = frozenset({"run_test"})
APP_FIXTURES = frozenset({"snap_compare"})
OURS = "tests"


def starts_processes(item: pytest.Item) -> bool:
    return _uses(item, STARTERS)


def drives_the_app(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is not None and APP_FIXTURES.intersection(info.names_closure):
        return True
    return _uses(item, APP_DRIVERS)


def _uses(item: pytest.Item, names: frozenset[str]) -> bool:
    function = getattr(item, "function", None)
    if function is None:
        return False
    seen: set[int] = set()
    roots = [function, *_fixture_functions(item)]
    return any(_uses_name(root, names, seen) for root in roots)


def _fixture_functions(item: pytest.Item) -> Iterator[Callable[..., Any]]:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return
    for name in info.names_closure:
        for definition in info.name2fixturedefs.get(name, ()):
            func = definition.func
            if getattr(func, "__module__", "").startswith(OURS):
                yield func


def _uses_name(obj: Any, names: frozenset[str], seen: set[int]) -> bool:
    obj = inspect.unwrap(obj)
    if id(obj) in seen:
        return False
    seen.add(id(obj))
    if inspect.isclass(obj):
        return any(_uses_name(member, names, seen) for member in vars(obj).values()
                   if isinstance(member, FunctionType))
    if not isinstance(obj, FunctionType):
        return False
    return _code_uses_name(obj.__code__, obj.__globals__, names, seen)


def _code_uses_name(code: CodeType, scope: dict[str, Any], names: frozenset[str],
                    seen: set[int]) -> bool:
    if names.intersection(code.co_names):
        return True
    for const in code.co_consts:  # lambdas, nested functions, comprehensions
        if isinstance(const, CodeType) and _code_uses_name(const, scope, names, seen):
            return True
    for name in code.co_names:
        helper = scope.get(name)
        if _is_ours(helper) and _uses_name(helper, names, seen):
            return True
    return False


def _is_ours(obj: Any) -> bool:
    module = getattr(inspect.unwrap(obj), "__module__", None) if callable(obj) else None
    return isinstance(module, str) and (module == OURS or module.startswith(OURS + "."))
