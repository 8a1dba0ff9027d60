"""The languages added with issue 30, parsed from tests/fixtures/polyglot (one file per language,
in the language the walk gives it): exact definition rows, docs, and references that resolve
through each constructor convention."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeqa.core.records import FileParse
from codeqa.indexing.file_rows import file_rows
from codeqa.parsing.repo_files import walk_repo
from codeqa.parsing.languages import LANGUAGES
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
    "csharp/Billing/PaymentGateway.cs": {
        ("class", "PaymentGateway", 6),
        ("constructor", "PaymentGateway.PaymentGateway", 10),
        ("method", "PaymentGateway.Charge", 16),
        ("interface", "ICardProcessor", 24),
        ("method", "ICardProcessor.Authorize", 26),
        ("struct", "ChargeReceipt", 29),
        ("constructor", "ChargeReceipt.ChargeReceipt", 31),
        ("method", "ChargeReceipt.Render", 33),
        ("enum", "ChargeStatus", 36),
        ("record", "CardPayment", 38),
    },
    "dart/lib/cart_total.dart": {
        ("class", "CartTotal", 4),
        ("constructor", "CartTotal.CartTotal", 7),
        ("method", "CartTotal.sum", 10),
        ("class", "ShippingRates", 15),
        ("method", "ShippingRates.rateFor", 16),
        ("enum", "ShippingSpeed", 19),
        ("trait", "FreeShipping", 21),
        ("method", "FreeShipping.isFree", 22),
        ("function", "parseItem", 25),
    },
    "elixir/lib/billing/dunning_scheduler.ex": {
        ("namespace", "Billing.DunningScheduler", 1),
        ("method", "Billing.DunningScheduler.schedule", 12),
        ("method", "Billing.DunningScheduler.days_overdue", 17),
        ("method", "Billing.DunningScheduler.with_grace_period", 21),
    },
    "haskell/src/Discount.hs": {
        ("type", "Tier", 10),
        ("interface", "Loyal", 16),
        ("method", "Loyal.points", 17),
        ("type", "Customer", 19),
        ("function", "discountFor", 22),  # its type signature's line
        ("function", "goldTier", 27),
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
    "php/src/TaxCalculator.php": {
        ("class", "TaxCalculator", 10),
        ("constructor", "TaxCalculator.__construct", 14),
        ("method", "TaxCalculator.vatFor", 22),
        ("interface", "TaxRule", 29),
        ("method", "TaxRule.apply", 31),
        ("trait", "RoundsToCents", 34),
        ("method", "RoundsToCents.roundCents", 36),
        ("function", "vat_country_code", 42),
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
    "swift/Sources/Billing/SubscriptionRenewal.swift": {
        ("class", "SubscriptionRenewal", 4),
        ("constructor", "SubscriptionRenewal.init", 7),
        ("method", "SubscriptionRenewal.dueForRenewal", 12),
        ("struct", "Subscription", 17),
        ("interface", "RenewalNotifier", 22),
        ("method", "RenewalNotifier.notify", 23),
        ("enum", "BillingPeriod", 26),
        ("impl", "SubscriptionRenewal", 31),
        ("method", "SubscriptionRenewal.renewToday", 32),
        ("function", "monthlySubscription", 37),
    },
    "objc/ReceiptPrinter.h": {  # a header: Objective-C by its #import and @interface
        ("class", "ReceiptPrinter", 4),
        ("method", "ReceiptPrinter.initWithPrinterName", 8),
        ("method", "ReceiptPrinter.printReceipt", 9),
    },
    "objc/ReceiptPrinter.m": {
        ("impl", "ReceiptPrinter", 3),
        ("method", "ReceiptPrinter.initWithPrinterName", 5),
        ("method", "ReceiptPrinter.printReceipt", 14),
        ("method", "ReceiptPrinter.feedPaper", 19),
        ("method", "ReceiptPrinter.defaultPrinter", 23),
    },
    "julia/churn.jl": {
        ("namespace", "Churn", 1),
        ("method", "Churn.churn_rate", 10),
        ("struct", "Churn.Cohort", 14),
        ("method", "Churn.retained", 19),  # the short form f(x) = ...
    },
    "ocaml/late_fees.ml": {
        ("type", "fee", 3),
        ("function", "late_fee", 6),
        ("namespace", "Policy", 10),
        ("constant", "Policy.grace_days", 11),
        ("method", "Policy.applies", 13),
        ("function", "fee_if_due", 16),
    },
    "zig/src/money.zig": {
        ("struct", "Money", 4),
        ("method", "Money.init", 8),
        ("method", "Money.add", 13),
        ("enum", "Rounding", 18),
        ("function", "total", 21),
    },
}


WALKED = {found.path: found.language for found in walk_repo(POLYGLOT).files}


def parse(path: str) -> ParsedFile:
    return parse_source((POLYGLOT / path).read_text(encoding="utf-8"), WALKED[path], path)


def doc_of(parsed: ParsedFile, qualified_name: str) -> str:
    return next(d.doc for d in parsed.definitions if d.qualified_name == qualified_name)


@pytest.mark.parametrize("path", sorted(DEFINITIONS))
def test_every_language_has_exact_definition_rows(path: str) -> None:
    parsed = parse(path)
    assert {(d.kind, d.qualified_name, d.start_line) for d in parsed.definitions} == DEFINITIONS[path]
    assert not parsed.has_errors


@pytest.mark.parametrize(("path", "qualified_name", "doc"), [
    ("csharp/Billing/PaymentGateway.cs", "PaymentGateway.Charge",
     "<summary>Charges a card and returns the authorization receipt.</summary>"),
    ("ruby/lib/billing/invoice_mailer.rb", "Billing.InvoiceMailer",  # a comment the grammar puts in `module`
     "Sends finished invoices to customers by email."),
    ("ruby/lib/billing/invoice_mailer.rb", "Billing.InvoiceMailer.deliver", "Delivers one invoice and records the delivery."),
    ("php/src/TaxCalculator.php", "TaxCalculator.vatFor", "The VAT owed on a net amount sold into a country."),
    ("kotlin/src/main/kotlin/billing/CouponValidator.kt", "CouponValidator.rejectExpired",
     "Drops coupons whose end date has passed."),
    ("swift/Sources/Billing/SubscriptionRenewal.swift", "SubscriptionRenewal",
     "Renews subscriptions when their billing period ends, after the free trial."),
    ("scala/src/main/scala/billing/LedgerExport.scala", "LedgerExport.toCsv",
     "One CSV line per entry, amounts in the export currency."),
    ("bash/deploy.sh", "roll_out", "Rolls the new image out and waits for it to be ready."),
    ("lua/rate_limiter.lua", "RateLimiter.take", "Takes one token; false when the bucket is empty."),
    ("elixir/lib/billing/dunning_scheduler.ex", "Billing.DunningScheduler",  # @moduledoc
     "Schedules payment reminders for overdue invoices (dunning)."),
    ("elixir/lib/billing/dunning_scheduler.ex", "Billing.DunningScheduler.schedule",  # @doc, then @spec
     "Plans the next reminder for an overdue invoice."),
    ("haskell/src/Discount.hs", "discountFor", "The discount a customer gets after a number of orders."),
    ("haskell/src/Discount.hs", "Tier", "A loyalty tier and its percentage off."),  # a haddock the grammar puts in the imports
    ("zig/src/money.zig", "Money.add", "Adds cents to the amount."),
    ("dart/lib/cart_total.dart", "CartTotal.sum", "The price of all items plus shipping."),
    ("objc/ReceiptPrinter.h", "ReceiptPrinter", "Prints paper receipts on the shop's thermal printer."),
    ("objc/ReceiptPrinter.m", "ReceiptPrinter.printReceipt", "Sends one receipt to the thermal printer."),
    ("julia/churn.jl", "Churn.churn_rate",  # the docstring before the function
     "    churn_rate(cancelled, active)\n\nThe share of customers who cancelled their subscription this month."),
    ("ocaml/late_fees.ml", "late_fee", "The fee for paying [days] days late: one percent a day, at most thirty."),
])
def test_doc_comments(path: str, qualified_name: str, doc: str) -> None:
    assert doc_of(parse(path), qualified_name) == doc


def test_module_docs_leave_the_shebang_out() -> None:
    assert parse("bash/deploy.sh").module_doc == "Deploys the billing service to the staging cluster."
    assert parse("haskell/src/Discount.hs").module_doc == "Loyalty discount tiers for returning customers."


def test_dart_methods_span_their_body_and_hold_its_references() -> None:
    parsed = parse("dart/lib/cart_total.dart")
    total = next(d for d in parsed.definitions if d.name == "sum")
    assert (total.start_line, total.end_line) == (10, 12)
    assert total.code.rstrip().endswith("}")
    mapped = next(r for r in parsed.references if r.name == "map")
    assert (mapped.qualifier, mapped.enclosing) == ("items", "CartTotal.sum")


@pytest.mark.parametrize(("path", "imports"), [
    ("csharp/Billing/PaymentGateway.cs", ["System.Collections.Generic"]),
    ("ruby/lib/billing/invoice_mailer.rb", ["billing/smtp_relay"]),
    ("php/src/TaxCalculator.php", ["Billing\\Tax\\RateTable"]),
    ("kotlin/src/main/kotlin/billing/CouponValidator.kt", ["java.time.LocalDate"]),
    ("swift/Sources/Billing/SubscriptionRenewal.swift", ["Foundation"]),
    ("scala/src/main/scala/billing/LedgerExport.scala", ["java.time.LocalDate"]),
    ("elixir/lib/billing/dunning_scheduler.ex", ["Billing.Reminders"]),
    ("haskell/src/Discount.hs", ["Data.List"]),
    ("zig/src/money.zig", ["std"]),
    ("dart/lib/cart_total.dart", ["package:shop/item.dart"]),
])
def test_imports(path: str, imports: list[str]) -> None:
    assert parse(path).imports == imports


@pytest.fixture(scope="module")
def uses() -> dict[tuple[str, str, str], set[tuple[str, int, str]]]:
    """(file, qualified name, kind) of each definition -> {(citing file, line, use kind)}, over
    the whole fixture, resolved as the indexer resolves them."""
    report = walk_repo(POLYGLOT)
    parses: list[FileParse] = [file_rows("polyglot", f, 0).manifest.parse for f in report.read_all()
                               if f.language in LANGUAGES]
    symbols = [s for p in parses for s in p.symbols]
    found = resolve_references(symbols, parses)
    by_id = {s.id: (s.file_path, s.qualified_name, s.kind) for s in symbols}
    return {by_id[key]: {(u.file_path, u.line, u.kind) for u in use_list} for key, use_list in found.items()}


@pytest.mark.parametrize(("definition", "use"), [
    # new Foo(...): C#, PHP, Scala
    (("csharp/Billing/PaymentGateway.cs", "ChargeReceipt", "struct"), ("csharp/Billing/PaymentGateway.cs", 18, "new")),
    (("scala/src/main/scala/billing/LedgerExport.scala", "LedgerExport", "class"),
     ("scala/src/main/scala/billing/LedgerExport.scala", 20, "new")),
    # Foo.new: Ruby (runs initialize), Lua by convention; Money.init(): Zig
    (("ruby/lib/billing/invoice_mailer.rb", "Billing.DeliveryReceipt", "class"),
     ("ruby/lib/billing/invoice_mailer.rb", 16, "new")),
    (("lua/rate_limiter.lua", "RateLimiter", "class"), ("lua/rate_limiter.lua", 26, "new")),
    (("zig/src/money.zig", "Money", "struct"), ("zig/src/money.zig", 22, "new")),
    # Foo(...): Kotlin, Swift, Scala case classes, Dart; Haskell data constructors
    (("kotlin/src/main/kotlin/billing/CouponValidator.kt", "Coupon", "class"),
     ("kotlin/src/main/kotlin/billing/CouponValidator.kt", 34, "new")),
    (("swift/Sources/Billing/SubscriptionRenewal.swift", "Subscription", "struct"),
     ("swift/Sources/Billing/SubscriptionRenewal.swift", 39, "new")),
    (("swift/Sources/Billing/SubscriptionRenewal.swift", "SubscriptionRenewal", "class"),
     ("swift/Sources/Billing/SubscriptionRenewal.swift", 33, "new")),
    (("scala/src/main/scala/billing/LedgerExport.scala", "Entry", "class"),
     ("scala/src/main/scala/billing/LedgerExport.scala", 22, "new")),
    (("dart/lib/cart_total.dart", "CartTotal", "class"), ("dart/lib/cart_total.dart", 22, "new")),
    (("haskell/src/Discount.hs", "Tier", "type"), ("haskell/src/Discount.hs", 28, "new")),
    # calls, qualified or not
    (("php/src/TaxCalculator.php", "TaxRule.apply", "method"), ("php/src/TaxCalculator.php", 25, "call")),
    (("kotlin/src/main/kotlin/billing/CouponValidator.kt", "CouponValidator.forToday", "method"),
     ("kotlin/src/main/kotlin/billing/CouponValidator.kt", 29, "call")),
    (("elixir/lib/billing/dunning_scheduler.ex", "Billing.DunningScheduler.days_overdue", "method"),
     ("elixir/lib/billing/dunning_scheduler.ex", 13, "call")),
    (("bash/deploy.sh", "build_image", "function"), ("bash/deploy.sh", 14, "call")),
    (("zig/src/money.zig", "Money.add", "method"), ("zig/src/money.zig", 23, "call")),
    (("ruby/lib/billing/invoice_mailer.rb", "Billing.DeliveryReceipt.render", "method"),
     ("ruby/lib/billing/invoice_mailer.rb", 17, "call")),
    (("objc/ReceiptPrinter.h", "ReceiptPrinter", "class"), ("objc/ReceiptPrinter.m", 24, "new")),  # [Foo alloc]
    (("objc/ReceiptPrinter.m", "ReceiptPrinter.feedPaper", "method"), ("objc/ReceiptPrinter.m", 16, "call")),
    (("julia/churn.jl", "Churn.churn_rate", "method"), ("julia/churn.jl", 19, "call")),
    (("ocaml/late_fees.ml", "Policy.applies", "method"), ("ocaml/late_fees.ml", 17, "call")),
    # type uses
    (("haskell/src/Discount.hs", "Customer", "type"), ("haskell/src/Discount.hs", 22, "type")),
    (("csharp/Billing/PaymentGateway.cs", "CardPayment", "record"), ("csharp/Billing/PaymentGateway.cs", 16, "type")),
])
def test_references_resolve_through_each_languages_conventions(uses, definition, use) -> None:
    assert use in uses.get(definition, set())
