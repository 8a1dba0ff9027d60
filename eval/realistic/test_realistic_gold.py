"""Diff → changed pre-fix lines → gold symbols (no git, no model)."""

from __future__ import annotations

import pytest

from codeqa.parsing.treesitter import parse_source

from eval.realistic.gold import FileChange, Insertion, Span, gold_spans, parse_diff

pytestmark = pytest.mark.unit

PYTHON = """\
class Cart:
    def add(self, item):
        self.items.append(item)

    def total(self):
        return sum(self.items)


def helper():
    return 1
"""

DIFF = """\
diff --git a/shop/cart.py b/shop/cart.py
index 1111111..2222222 100644
--- a/shop/cart.py
+++ b/shop/cart.py
@@ -2,5 +2,6 @@ class Cart:
     def add(self, item):
-        self.items.append(item)
+        if item:
+            self.items.append(item)
 
     def total(self):
         return sum(self.items)
@@ -9,2 +10,5 @@ def total(self):
 def helper():
     return 1
+
+def added():
+    return 2
diff --git a/tests/test_cart.py b/tests/test_cart.py
new file mode 100644
index 0000000..3333333
--- /dev/null
+++ b/tests/test_cart.py
@@ -0,0 +1,2 @@
+def test_add():
+    pass
"""


def spans(source: str, language: str = "python") -> list[Span]:
    return [Span(d.qualified_name, d.kind, d.start_line, d.end_line)
            for d in parse_source(source, language).definitions]


def names(found: list[Span]) -> list[str]:
    return [s.qualified_name for s in found]


def test_parse_diff_gives_pre_fix_lines_and_insertion_points() -> None:
    cart, test = parse_diff(DIFF)
    assert (cart.path, cart.status, cart.changed_lines) == ("shop/cart.py", "modified", ((3, 3),))
    assert cart.insertions == (Insertion(after=10, indent=0),)  # a replacement is not an insertion
    assert (test.path, test.status) == ("tests/test_cart.py", "added")


def test_changed_line_belongs_to_the_innermost_definition() -> None:
    cart = parse_diff(DIFF)[0]
    assert names(gold_spans(spans(PYTHON), cart, PYTHON)) == ["Cart.add"]


def test_code_appended_to_a_function_belongs_to_it() -> None:
    change = FileChange("x.py", "modified", (), (Insertion(after=6, indent=8),))
    assert names(gold_spans(spans(PYTHON), change, PYTHON)) == ["Cart.total"]


def test_a_method_appended_to_a_class_belongs_to_the_class() -> None:
    change = FileChange("x.py", "modified", (), (Insertion(after=6, indent=4),))
    assert names(gold_spans(spans(PYTHON), change, PYTHON)) == ["Cart"]


def test_module_level_code_belongs_to_no_symbol() -> None:
    change = FileChange("x.py", "modified", (), (Insertion(after=7, indent=0), Insertion(after=10, indent=0)))
    assert gold_spans(spans(PYTHON), change, PYTHON) == []


def test_insertion_inside_a_brace_body_belongs_to_its_function() -> None:
    source = "int f(int x) {\n    return x;\n}\n\nint g(void) {\n    return 0;\n}\n"
    inside = FileChange("a.c", "modified", (), (Insertion(after=1, indent=4),))
    after = FileChange("a.c", "modified", (), (Insertion(after=3, indent=0),))
    assert names(gold_spans(spans(source, "c"), inside, source)) == ["f"]
    assert gold_spans(spans(source, "c"), after, source) == []
