"""Issue 30 end to end: tests/fixtures/polyglot (one file per new language plus configuration,
data, build and infrastructure files) indexed with the real parser, embedder and LanceDB, then
searched in plain language: every file comes back in the top 3."""

from __future__ import annotations

import pytest

from codeqa.store import registry
from codeqa.store.connection import connect
from codeqa.indexing.indexer import index_repo
from codeqa.search.retrieval import Retriever
from codeqa.search.options import SearchOptions
from conftest import ROOT, settings_for

pytestmark = pytest.mark.integration

POLYGLOT = ROOT / "tests" / "fixtures" / "polyglot"

# A question in plain words (no identifier of the file) for each file of the fixture.
QUESTIONS = {
    "ruby/lib/billing/invoice_mailer.rb": "send finished invoices to customers by email",
    "csharp/Billing/PaymentGateway.cs": "charge a credit card through the card processor",
    "php/src/TaxCalculator.php": "value added tax owed for a country",
    "kotlin/src/main/kotlin/billing/CouponValidator.kt": "reject coupons that have expired",
    "swift/Sources/Billing/SubscriptionRenewal.swift": "renew subscriptions after the free trial",
    "scala/src/main/scala/billing/LedgerExport.scala": "export ledger entries as CSV for the accountants",
    "bash/deploy.sh": "deploy the service to the staging cluster",
    "lua/rate_limiter.lua": "token bucket rate limiting of API requests",
    "elixir/lib/billing/dunning_scheduler.ex": "payment reminders for overdue invoices",
    "haskell/src/Discount.hs": "loyalty discount tiers for returning customers",
    "zig/src/money.zig": "money amounts in whole cents without floating point rounding",
    "dart/lib/cart_total.dart": "shopping cart total with shipping costs",
    "deploy/k8s/worker-deployment.yaml": "how many replicas of the invoice worker run in kubernetes",
    "config/billing.toml": "database connection pool size setting",
    "web/package.json": "which charting library does the web dashboard depend on",
    "db/schema.sql": "database tables for customers and invoices",
    "Dockerfile": "container image build stages for the API",
    "Makefile": "run the unit tests with the race detector",
    "infra/storage.tf": "storage bucket that archives old invoices",
    "proto/refunds.proto": "service that refunds a charge in part",
    "web/schema.graphql": "customer portal API to pay an unpaid invoice",
    "web/templates/help.html": "help page: why was I charged twice",
    "web/static/dashboard.css": "dark theme colours of the revenue chart",
    "config/.env.example": "SMTP credentials for sending invoice emails",
    "scripts/rotate-logs": "compress and rotate log files every night",
    "legacy/exchange_rates.nim": "convert amounts between currencies with exchange rates",
    "objc/ReceiptPrinter.h": "interface of the class that prints paper receipts",
    "objc/ReceiptPrinter.m": "feed paper through the thermal receipt printer",
    "matlab/forecast_revenue.m": "project revenue forward with the average monthly growth",
    "julia/churn.jl": "share of customers who cancelled their subscription",
    "ocaml/late_fees.ml": "late fee for an invoice paid after its due date",
}


@pytest.fixture(scope="module")
def polyglot(tmp_path_factory):
    settings = settings_for(tmp_path_factory.mktemp("polyglot") / "data")
    report = index_repo(POLYGLOT, settings, name="polyglot", progress=False)
    return settings, report


def test_every_file_is_indexed_in_its_language(polyglot) -> None:
    settings, report = polyglot
    assert report.added == len(QUESTIONS) and not report.skipped
    assert {"csharp", "ruby", "php", "kotlin", "swift", "scala", "bash", "lua", "elixir", "haskell", "zig",
            "dart", "objc", "julia", "ocaml", "yaml", "toml", "json", "sql", "dockerfile", "makefile", "hcl",
            "protobuf", "graphql", "html", "css", "ini", "matlab", "python", "other"} == set(report.files_by_language)
    assert "1 files indexed as text (no grammar for them): .nim (1)" in report.notices
    db = connect(settings)
    files = registry.open_table(db, registry.get_repo(db, "polyglot"), "modules").to_arrow()
    assert set(QUESTIONS) <= {row["file_path"] for row in files.to_pylist() if row["kind"] == "file"}


@pytest.mark.parametrize("path", sorted(QUESTIONS))
def test_a_plain_language_search_finds_each_file_in_the_top_3(polyglot, path: str) -> None:
    settings, _ = polyglot
    result = Retriever(settings).search("polyglot", QUESTIONS[path], SearchOptions(k=5, rerank=False))
    assert path in [f.path for f in result.files[:3]], [f.path for f in result.files]
