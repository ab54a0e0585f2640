"""The event vocabulary (core/events.py): the one place events.jsonl's names are spelt.

A member is its plain string on the wire (events.jsonl keeps its format), the store
refuses a name outside the vocabulary, the shipped examples hold only known names, and
no module of zbench_lib spells an event name itself.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from zbench_lib.core.events import Event, UnknownEvent, event_name
from zbench_lib.sweeps.store import store as store_module
from zbench_lib.sweeps.planning.plan import expand
from zbench_lib.sweeps.spec.sweep_spec import parse_spec
from zbench_lib.sweeps.store.store import Store

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "data" / "examples").glob("*/events.jsonl"))
SPEC_TEXT = (ROOT / "templates" / "sweeps" / "demo.yaml").read_text()
TS = "2026-01-02T03:04:05.000006Z"


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setattr(store_module, "utc_now", lambda: TS)
    s = Store.create(tmp_path, SPEC_TEXT, expand(parse_spec(SPEC_TEXT, name="demo")), sweep_id="events-test")
    yield s
    s.close()


def _lines(store) -> list[bytes]:
    return (store.path / "events.jsonl").read_bytes().splitlines(keepends=True)


# -- the members ------------------------------------------------------------------------------------

def test_values_are_distinct_plain_names():
    values = [e.value for e in Event]
    assert len(values) == len(set(values)) == len(Event)
    assert all(v == v.strip() and v == v.lower() and "  " not in v for v in values)


@pytest.mark.parametrize("member", list(Event), ids=lambda e: e.name)
def test_a_member_is_its_string(member):
    name = member.value
    assert member == name and name == member and hash(member) == hash(name)
    assert str(member) == name and f"{member}" == name and f"{member:>40}" == f"{name:>40}"
    assert json.dumps(member) == json.dumps(name)                      # '"run started"', never 'Event.RUN_STARTED'
    assert json.dumps({"event": member}, sort_keys=True, default=str) == json.dumps({"event": name})
    line = json.loads(json.dumps({"event": name}))                   # as a reader gets it back
    assert line.get("event") == member and line["event"] in {member} and member in {name}
    assert event_name(name) is member and event_name(member) is member


def test_json_dumps_of_run_started():
    assert json.dumps(Event.RUN_STARTED) == '"run started"'


@pytest.mark.parametrize("name", ["run start", "Run Started", "RUN_STARTED", "", "repetitions"])
def test_an_unknown_name_is_refused(name):
    with pytest.raises(UnknownEvent, match="unknown event .*zbench_lib.core.events.Event"):
        event_name(name)


# -- the store ------------------------------------------------------------------------------------

def test_record_refuses_an_unknown_name_and_writes_nothing(store):
    before = _lines(store)
    with pytest.raises(UnknownEvent, match="'pool exploded'"):
        store.record("pool exploded", pool_id="p01")
    assert _lines(store) == before
    assert [e["event"] for e in store.events()] == [Event.STARTED]


def test_record_lines_are_byte_identical_for_member_and_name(store):
    payload = dict(run_id="c1-r01", attempt=1)
    store.record(Event.RUN_STARTED, **payload)
    store.record("run started", **payload)
    entry = store.record(Event.RUN_COMPLETED, **payload)
    first, by_name, completed = _lines(store)[1:]
    assert first == by_name == (b'{"attempt": 1, "event": "run started", "run_id": "c1-r01", '
                                b'"ts": "2026-01-02T03:04:05.000006Z"}\n')
    assert completed == first.replace(b"run started", b"run completed")
    assert type(entry["event"]) is str and entry["event"] == Event.RUN_COMPLETED   # a plain dict, as read back
    assert [e["event"] for e in store.events()] == [Event.STARTED, Event.RUN_STARTED, Event.RUN_STARTED,
                                                    Event.RUN_COMPLETED]


def test_the_stores_own_events_are_members(store):
    path = store.begin_attempt("c1-r01")
    store.discard_incomplete()
    store.finish()
    names = [e["event"] for e in store.events()]
    assert names == [Event.STARTED, Event.RUN_STARTED, Event.RUN_DISCARDED, Event.FINISHED]
    assert path.is_dir()


# -- the shipped examples keep their format -------------------------------------------------------

def test_examples_are_shipped():
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.parent.name)
def test_examples_events_are_all_in_the_vocabulary(path):
    lines = path.read_text().splitlines()
    events = [json.loads(line) for line in lines if line.strip()]
    unknown = sorted({e.get("event") for e in events} - {e.value for e in Event})
    assert not unknown, f"{path}: event names outside core.events.Event: {unknown}"
    # Each line as Store.record writes it with the member in place of the name: byte for byte the same.
    for line, e in zip(lines, events):
        assert json.dumps({**e, "event": Event(e["event"])}, sort_keys=True, default=str) == line


# -- no module spells an event name itself --------------------------------------------------------

def _event_literals(tree: ast.AST) -> list[tuple[int, str]]:
    """String constants written as an event (``.record("...")``) or compared with one
    (``e.get("event") == "..."``, ``e["event"] in (...)``, ``kind == "..."`` after ``kind = e.get("event")``)."""
    def is_event_of(node) -> bool:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            return bool(node.args) and isinstance(node.args[0], ast.Constant) and node.args[0].value == "event"
        if isinstance(node, ast.Subscript):
            return isinstance(node.slice, ast.Constant) and node.slice.value == "event"
        return False

    event_vars = {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) for t, v in _pairs(n)
                  if isinstance(t, ast.Name) and is_event_of(v)}

    def strings(node) -> list[ast.Constant]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node]
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return [c for elt in node.elts for c in strings(elt)]
        return []

    found = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "record" and n.args:
            found += [(c.lineno, c.value) for c in strings(n.args[0])]
            if isinstance(n.args[0], ast.JoinedStr):
                found.append((n.args[0].lineno, "<f-string>"))
        elif isinstance(n, ast.Compare):
            sides = [n.left, *n.comparators]
            if any(is_event_of(s) or (isinstance(s, ast.Name) and s.id in event_vars) for s in sides):
                found += [(c.lineno, c.value) for s in sides for c in strings(s)]
    return found


def _pairs(assign: ast.Assign):
    """(target, value) pairs of an assignment, tuples unpacked element by element."""
    for target in assign.targets:
        if isinstance(target, ast.Tuple) and isinstance(assign.value, ast.Tuple):
            yield from zip(target.elts, assign.value.elts)
        else:
            yield target, assign.value


def test_the_guard_finds_free_text_names():
    code = ('store.record("run started", run_id=r)\nstore.record(f"repetitions {s}")\n'
            'x = e.get("event") == "pool created"\ny = ev["event"] in ("finished", "started")\n'
            'kind, t = ev.get("event"), 0\nz = kind == "resumed"\nstore.record(Event.RUN_STARTED)\n'
            'w = e.get("event") == Event.POOL_CREATED\n')
    assert [v for _, v in _event_literals(ast.parse(code))] == [
        "run started", "<f-string>", "pool created", "finished", "started", "resumed"]


def test_no_free_text_event_names_in_zbench_lib():
    """Every event name is spelt once, in core/events.py (hosts/qmp.py reads QMP's own events)."""
    package = ROOT / "zbench_lib"
    allowed = {package / "core" / "events.py", package / "hosts" / "qmp.py"}
    found = [f"{p.relative_to(ROOT)}:{line}: {value!r}" for p in sorted(package.rglob("*.py")) if p not in allowed
             for line, value in _event_literals(ast.parse(p.read_text()))]
    assert not found, "event names spelt outside core.events.Event:\n" + "\n".join(found)
