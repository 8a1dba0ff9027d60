"""The languages added with issue 30, parsed from tests/fixtures/polyglot (one file per language):
exact definition rows, docs, and references that resolve through each constructor convention."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeqa.core.records import FileParse
from codeqa.indexing.indexer import file_rows
from codeqa.indexing.repo_files import walk_repo
from codeqa.parsing.languages import code_language
from codeqa.parsing.references import resolve_references
from codeqa.parsing.treesitter import ParsedFile, parse_source

pytestmark = pytest.mark.unit

POLYGLOT = Path(__file__).parent / "fixtures" / "polyglot"

# path -> every definition as (kind, qualified name, first line); a row per definition.
DEFINITIONS = {
    "bash/deploy.sh": {
        ("function", "build_image", 6),
        ("function", "roll_out", 13),
    },
    "csharp/Billing/InvoiceMailer.cs": {
        ("class", "InvoiceMailer", 6),
        ("constructor", "InvoiceMailer.InvoiceMailer", 10),
        ("method", "InvoiceMailer.Deliver", 16),
        ("interface", "IRelay", 23),
        ("method", "IRelay.Send", 25),
        ("struct", "DeliveryReceipt", 28),
        ("constructor", "DeliveryReceipt.DeliveryReceipt", 30),
        ("method", "DeliveryReceipt.Render", 32),
        ("enum", "DeliveryStatus", 35),
        ("record", "Invoice", 37),
    },
    "dart/lib/coupon_validator.dart": {
        ("class", "CouponValidator", 4),
        ("constructor", "CouponValidator.CouponValidator", 7),
        ("method", "CouponValidator.rejectExpired", 10),
        ("class", "CouponSource", 15),
        ("method", "CouponSource.load", 16),
        ("enum", "CouponKind", 19),
        ("trait", "Validating", 21),
        ("method", "Validating.validate", 22),
        ("function", "parseCoupon", 25),
    },
    "elixir/lib/billing/invoice_mailer.ex": {
        ("namespace", "Billing.InvoiceMailer", 1),
        ("method", "Billing.InvoiceMailer.deliver", 12),
        ("method", "Billing.InvoiceMailer.render_receipt", 17),
        ("method", "Billing.InvoiceMailer.with_retry", 21),
    },
    "haskell/src/Ledger.hs": {
        ("type", "Entry", 10),
        ("interface", "Bookable", 16),
        ("method", "Bookable.toEntry", 17),
        ("type", "Account", 19),
        ("function", "balance", 22),  # its type signature's line
        ("function", "openingEntry", 27),
    },
    "kotlin/src/main/kotlin/billing/CouponValidator.kt": {
        ("class", "CouponValidator", 8),
        ("method", "CouponValidator.rejectExpired", 11),
        ("method", "CouponValidator.forToday", 16),  # in the companion object
        ("class", "Coupon", 20),
        ("interface", "CouponSource", 22),
        ("method", "CouponSource.load", 23),
        ("enum", "CouponKind", 26),
        ("class", "CouponRegistry", 28),
        ("method", "CouponRegistry.validate", 29),
        ("function", "parseCoupon", 32),
    },
    "lua/rate_limiter.lua": {
        ("class", "RateLimiter", 2),
        ("method", "RateLimiter.new", 6),
        ("method", "RateLimiter.take", 14),
        ("function", "refill", 22),
    },
    "php/src/InvoiceMailer.php": {
        ("class", "InvoiceMailer", 10),
        ("constructor", "InvoiceMailer.__construct", 14),
        ("method", "InvoiceMailer.deliver", 22),
        ("interface", "Relay", 29),
        ("method", "Relay.send", 31),
        ("trait", "LogsDeliveries", 34),
        ("method", "LogsDeliveries.logDelivery", 36),
        ("function", "format_invoice_number", 42),
    },
    "ruby/lib/billing/invoice_mailer.rb": {
        ("namespace", "Billing", 5),
        ("class", "Billing.InvoiceMailer", 7),
        ("constant", "Billing.InvoiceMailer.RETRY_LIMIT", 8),
        ("constructor", "Billing.InvoiceMailer.initialize", 10),
        ("method", "Billing.InvoiceMailer.deliver", 15),
        ("method", "Billing.InvoiceMailer.default", 20),
        ("class", "Billing.DeliveryReceipt", 26),
        ("constructor", "Billing.DeliveryReceipt.initialize", 27),
        ("method", "Billing.DeliveryReceipt.render", 31),
    },
    "scala/src/main/scala/billing/LedgerExport.scala": {
        ("class", "LedgerExport", 6),
        ("method", "LedgerExport.toCsv", 9),
        ("class", "Entry", 13),
        ("trait", "Exporter", 15),
        ("method", "Exporter.export", 16),
        ("class", "LedgerExport", 19),  # the companion object
        ("method", "LedgerExport.euro", 20),
        ("method", "LedgerExport.sample", 22),
    },
    "swift/Sources/Billing/CouponValidator.swift": {
        ("class", "CouponValidator", 4),
        ("constructor", "CouponValidator.init", 7),
        ("method", "CouponValidator.rejectExpired", 12),
        ("struct", "Coupon", 17),
        ("interface", "CouponSource", 22),
        ("method", "CouponSource.load", 23),
        ("enum", "CouponKind", 26),
        ("impl", "CouponValidator", 31),
        ("method", "CouponValidator.validateToday", 32),
        ("function", "parseCoupon", 37),
    },
    "zig/src/ledger.zig": {
        ("struct", "Ledger", 4),
        ("method", "Ledger.init", 8),
        ("method", "Ledger.book", 13),
        ("enum", "Currency", 18),
        ("function", "sum", 21),
    },
}


def parse(path: str) -> ParsedFile:
    language = code_language(path)
    assert language is not None, path
    return parse_source((POLYGLOT / path).read_text(encoding="utf-8"), language, path)


def doc_of(parsed: ParsedFile, qualified_name: str) -> str:
    return next(d.doc for d in parsed.definitions if d.qualified_name == qualified_name)


@pytest.mark.parametrize("path", sorted(DEFINITIONS))
def test_every_language_has_exact_definition_rows(path: str) -> None:
    parsed = parse(path)
    assert {(d.kind, d.qualified_name, d.start_line) for d in parsed.definitions} == DEFINITIONS[path]
    assert not parsed.has_errors


@pytest.mark.parametrize(("path", "qualified_name", "doc"), [
    ("csharp/Billing/InvoiceMailer.cs", "InvoiceMailer.Deliver",
     "<summary>Delivers one invoice and records the delivery.</summary>"),
    ("ruby/lib/billing/invoice_mailer.rb", "Billing.InvoiceMailer",  # a comment the grammar puts in `module`
     "Sends finished invoices to customers by email."),
    ("ruby/lib/billing/invoice_mailer.rb", "Billing.InvoiceMailer.deliver", "Delivers one invoice and records the delivery."),
    ("php/src/InvoiceMailer.php", "InvoiceMailer.deliver", "Delivers one invoice and records the delivery."),
    ("kotlin/src/main/kotlin/billing/CouponValidator.kt", "CouponValidator.rejectExpired",
     "Drops coupons whose end date has passed."),
    ("swift/Sources/Billing/CouponValidator.swift", "CouponValidator", "Checks coupons before an invoice applies them."),
    ("scala/src/main/scala/billing/LedgerExport.scala", "LedgerExport.toCsv",
     "One CSV line per entry, amounts in the export currency."),
    ("bash/deploy.sh", "roll_out", "Rolls the new image out and waits for it to be ready."),
    ("lua/rate_limiter.lua", "RateLimiter.take", "Takes one token; false when the bucket is empty."),
    ("elixir/lib/billing/invoice_mailer.ex", "Billing.InvoiceMailer",  # @moduledoc
     "Sends finished invoices to customers by email."),
    ("elixir/lib/billing/invoice_mailer.ex", "Billing.InvoiceMailer.deliver",  # @doc, then @spec
     "Delivers one invoice and records the delivery."),
    ("haskell/src/Ledger.hs", "balance", "The sum of all entries of one account."),  # above the signature
    ("haskell/src/Ledger.hs", "Entry", "One booked amount."),  # a haddock the grammar puts in the imports
    ("zig/src/ledger.zig", "Ledger.book", "Books one amount into the ledger."),
    ("dart/lib/coupon_validator.dart", "CouponValidator.rejectExpired", "Drops coupons whose end date has passed."),
])
def test_doc_comments(path: str, qualified_name: str, doc: str) -> None:
    assert doc_of(parse(path), qualified_name) == doc


def test_module_docs_leave_the_shebang_out() -> None:
    assert parse("bash/deploy.sh").module_doc == "Deploys the billing service to the staging cluster."
    assert parse("haskell/src/Ledger.hs").module_doc == "Ledger balances for the billing service."


def test_dart_methods_span_their_body_and_hold_its_references() -> None:
    parsed = parse("dart/lib/coupon_validator.dart")
    reject = next(d for d in parsed.definitions if d.name == "rejectExpired")
    assert (reject.start_line, reject.end_line) == (10, 12)
    assert reject.code.rstrip().endswith("}")
    where = next(r for r in parsed.references if r.name == "where")
    assert (where.qualifier, where.enclosing) == ("coupons", "CouponValidator.rejectExpired")


@pytest.mark.parametrize(("path", "imports"), [
    ("csharp/Billing/InvoiceMailer.cs", ["System.Collections.Generic"]),
    ("ruby/lib/billing/invoice_mailer.rb", ["billing/smtp_relay"]),
    ("php/src/InvoiceMailer.php", ["Billing\\Mail\\SmtpRelay"]),
    ("kotlin/src/main/kotlin/billing/CouponValidator.kt", ["java.time.LocalDate"]),
    ("swift/Sources/Billing/CouponValidator.swift", ["Foundation"]),
    ("scala/src/main/scala/billing/LedgerExport.scala", ["java.time.LocalDate"]),
    ("elixir/lib/billing/invoice_mailer.ex", ["Billing.SmtpRelay"]),
    ("haskell/src/Ledger.hs", ["Data.List"]),
    ("zig/src/ledger.zig", ["std"]),
    ("dart/lib/coupon_validator.dart", ["package:billing/coupon.dart"]),
])
def test_imports(path: str, imports: list[str]) -> None:
    assert parse(path).imports == imports


@pytest.fixture(scope="module")
def uses() -> dict[tuple[str, str, str], set[tuple[str, int, str]]]:
    """(file, qualified name, kind) of each definition -> {(citing file, line, use kind)}, over
    the whole fixture, resolved as the indexer resolves them."""
    report = walk_repo(POLYGLOT)
    parses: list[FileParse] = [file_rows("polyglot", f, 0).manifest.parse for f in report.read_all()]
    symbols = [s for p in parses for s in p.symbols]
    found = resolve_references(symbols, parses)
    by_id = {s.id: (s.file_path, s.qualified_name, s.kind) for s in symbols}
    return {by_id[key]: {(u.file_path, u.line, u.kind) for u in use_list} for key, use_list in found.items()}


@pytest.mark.parametrize(("definition", "use"), [
    # new Foo(...): C#, PHP, Scala
    (("csharp/Billing/InvoiceMailer.cs", "DeliveryReceipt", "struct"), ("csharp/Billing/InvoiceMailer.cs", 18, "new")),
    (("scala/src/main/scala/billing/LedgerExport.scala", "LedgerExport", "class"),
     ("scala/src/main/scala/billing/LedgerExport.scala", 20, "new")),
    # Foo.new: Ruby (runs initialize), Lua by convention; Ledger.init(): Zig
    (("ruby/lib/billing/invoice_mailer.rb", "Billing.DeliveryReceipt", "class"),
     ("ruby/lib/billing/invoice_mailer.rb", 16, "new")),
    (("lua/rate_limiter.lua", "RateLimiter", "class"), ("lua/rate_limiter.lua", 26, "new")),
    (("zig/src/ledger.zig", "Ledger", "struct"), ("zig/src/ledger.zig", 22, "new")),
    # Foo(...): Kotlin, Swift, Scala case classes, Dart; Haskell data constructors
    (("kotlin/src/main/kotlin/billing/CouponValidator.kt", "Coupon", "class"),
     ("kotlin/src/main/kotlin/billing/CouponValidator.kt", 34, "new")),
    (("swift/Sources/Billing/CouponValidator.swift", "Coupon", "struct"),
     ("swift/Sources/Billing/CouponValidator.swift", 39, "new")),
    (("scala/src/main/scala/billing/LedgerExport.scala", "Entry", "class"),
     ("scala/src/main/scala/billing/LedgerExport.scala", 22, "new")),
    (("dart/lib/coupon_validator.dart", "CouponValidator", "class"), ("dart/lib/coupon_validator.dart", 22, "new")),
    (("haskell/src/Ledger.hs", "Entry", "type"), ("haskell/src/Ledger.hs", 28, "new")),
    # calls, qualified or not
    (("php/src/InvoiceMailer.php", "Relay.send", "method"), ("php/src/InvoiceMailer.php", 25, "call")),
    (("kotlin/src/main/kotlin/billing/CouponValidator.kt", "CouponValidator.forToday", "method"),
     ("kotlin/src/main/kotlin/billing/CouponValidator.kt", 29, "call")),
    (("elixir/lib/billing/invoice_mailer.ex", "Billing.InvoiceMailer.render_receipt", "method"),
     ("elixir/lib/billing/invoice_mailer.ex", 13, "call")),
    (("bash/deploy.sh", "build_image", "function"), ("bash/deploy.sh", 14, "call")),
    (("zig/src/ledger.zig", "Ledger.book", "method"), ("zig/src/ledger.zig", 23, "call")),
    (("ruby/lib/billing/invoice_mailer.rb", "Billing.DeliveryReceipt.render", "method"),
     ("ruby/lib/billing/invoice_mailer.rb", 17, "call")),
    # type uses
    (("haskell/src/Ledger.hs", "Account", "type"), ("haskell/src/Ledger.hs", 22, "type")),
    (("csharp/Billing/InvoiceMailer.cs", "Invoice", "record"), ("csharp/Billing/InvoiceMailer.cs", 16, "type")),
])
def test_references_resolve_through_each_languages_conventions(uses, definition, use) -> None:
    assert use in uses.get(definition, set())
