"""References resolved by what the receiver is, on real parses: the click case from issue 34
(`runner.invoke` on a `CliRunner` is no use of `Context.invoke`), receivers per language, and
name matches kept apart from resolved uses."""

from __future__ import annotations

import pytest

from codeqa.core.records import FileParse, SymbolInfo
from codeqa.parsing.references import NAME_MATCH, resolve_references
from codeqa.parsing.treesitter import parse_source

pytestmark = pytest.mark.unit

CLICK = {
    "click/core.py": '''\
class Context:
    def invoke(self, callback, *args):
        return callback(*args)

    def forward(self, cmd):
        return self.invoke(cmd)
''',
    "click/testing.py": '''\
class CliRunner:
    def invoke(self, cli, args=None):
        return cli(args)
''',
    "tests/test_commands.py": '''\
from click.core import Context
from click.testing import CliRunner


def test_runner(cli):
    runner = CliRunner()
    runner.invoke(cli, ["a"])
    runner.invoke(cli, ["b"])
    runner.invoke(cli, ["c"])


def test_context(ctx: Context, cmd):
    ctx.invoke(cmd)


def test_fixture(runner, cli):
    runner.invoke(cli)
''',
}


def parse_files(sources: dict[str, str], language: str) -> tuple[list[SymbolInfo], list[FileParse]]:
    """Parse real source text into what the indexer hands to resolution."""
    symbols, files = [], []
    for path, source in sources.items():
        parsed = parse_source(source, language, path)
        infos = tuple(SymbolInfo(f"{path}:{d.qualified_name}", path, language, d.kind, d.name, d.qualified_name,
                                 d.parent) for d in parsed.definitions)
        symbols += infos
        files.append(FileParse(path, language, infos, tuple(parsed.references), tuple(parsed.imports),
                               tuple(parsed.imported_names), tuple(parsed.bindings)))
    return symbols, files


def uses_of(sources: dict[str, str], language: str) -> dict[str, set[tuple[str, int, str]]]:
    """definition id -> {(citing file, line, resolution)} for calls."""
    found = resolve_references(*parse_files(sources, language))
    calls = {key: {(u.file_path, u.line, u.resolution) for u in uses if u.kind == "call"}
             for key, uses in found.items()}
    return {key: sites for key, sites in calls.items() if sites}


def test_click_runner_invoke_is_no_use_of_context_invoke() -> None:
    found = uses_of(CLICK, "python")
    test = "tests/test_commands.py"
    assert found["click/core.py:Context.invoke"] == {
        ("click/core.py", 6, "self"), (test, 13, "typed"), (test, 17, NAME_MATCH)}
    assert found["click/testing.py:CliRunner.invoke"] == {
        (test, 7, "typed"), (test, 8, "typed"), (test, 9, "typed"), (test, 17, NAME_MATCH)}


def test_self_reaches_a_base_classes_method_and_an_override_wins() -> None:
    found = uses_of({"shop.py": '''\
class Base:
    def save(self):
        pass

    def load(self):
        pass


class Cart(Base):
    def load(self):
        pass

    def fill(self):
        self.save()
        self.load()
        self.render()
'''}, "python")
    assert found["shop.py:Base.save"] == {("shop.py", 14, "self")}
    assert found["shop.py:Cart.load"] == {("shop.py", 15, "self")}
    assert "shop.py:Base.load" not in found  # overridden: Cart.load is what self.load() runs


def test_a_receiver_of_a_known_outside_type_uses_nothing_here() -> None:
    found = uses_of({"a.py": '''\
from pathlib import Path


class Store:
    def open(self):
        pass

    def read_text(self):
        pass


def main(store: Store):
    p = Path("x")
    p.read_text()
    store.open()
'''}, "python")
    assert found == {"a.py:Store.open": {("a.py", 15, "typed")}}


def test_fields_and_attributes_carry_their_types() -> None:
    found = uses_of({"app.py": '''\
class Engine:
    def run(self):
        pass


class Car:
    def run(self):
        pass

    def __init__(self):
        self.engine = Engine()

    def start(self):
        self.engine.run()
'''}, "python")
    assert found["app.py:Engine.run"] == {("app.py", 14, "typed")}
    assert "app.py:Car.run" not in found


@pytest.mark.parametrize("language, sources, target, expected", [
    ("java", {"A.java": '''\
class Runner { void invoke() {} }
class Context { void invoke() {} }
class T {
  private Context ctx;
  void t(Runner r) { r.invoke(); var s = new Runner(); s.invoke(); ctx.invoke(); this.ctx.invoke(); }
}
'''}, "A.java:Context.invoke", {("A.java", 5, "typed")}),
    ("go", {"a.go": '''\
package a
type Runner struct{}
type Context struct{ runner *Runner }
func (r *Runner) Invoke() {}
func (c *Context) Invoke() { c.runner.Invoke() }
func T(c *Context) { r := &Runner{}; r.Invoke(); c.Invoke() }
'''}, "a.go:Context.Invoke", {("a.go", 6, "typed")}),
    ("rust", {"a.rs": '''\
struct Runner {}
struct Context { runner: Runner }
impl Runner { fn new() -> Runner { Runner {} } fn invoke(&self) {} }
impl Context { fn invoke(&self) { self.runner.invoke(); } fn again(&self) { self.invoke(); } }
fn t(c: &Context) { let r = Runner::new(); r.invoke(); c.invoke(); }
'''}, "a.rs:Context.invoke", {("a.rs", 4, "self"), ("a.rs", 5, "typed")}),
    ("javascript", {"a.js": '''\
class Runner { invoke() {} }
class Context { invoke() {} again() { this.invoke(); } }
function t() { const r = new Runner(); r.invoke(); const c = new Context(); c.invoke(); }
'''}, "a.js:Context.invoke", {("a.js", 2, "self"), ("a.js", 3, "typed")}),
])
def test_receivers_in_each_language(language, sources, target, expected) -> None:
    assert uses_of(sources, language)[target] == expected

