"""Training the ranking models: the examples they learn from and how they are scored (synthetic groups)."""

from __future__ import annotations

import pytest

from codeqa.search.ranking import FEATURES, LinearRanker

from training.train_ranker import MODELS, fit, hit_at

pytestmark = pytest.mark.unit
FILES, DEFINITIONS = MODELS["files"], MODELS["definitions"]


def group(gold: str, candidates: dict[str, dict[str, float]], features: tuple[str, ...] = FEATURES,
          repo: str = "o/r") -> dict:
    return {"repo": repo, "candidates": [(name == gold, [values.get(f, 0.0) for f in features])
                                         for name, values in candidates.items()]}


def test_the_model_learns_which_evidence_points_at_the_fix_and_ranks_by_it() -> None:
    # Gold files are found by whole-file BM25; lucky rows in the symbol pool are noise.
    groups = [group(f"gold{i}.py", {f"gold{i}.py": {"bm25_rr": 1.0}, f"noise{i}.py": {"sym_rr": 1.0},
                                    f"other{i}.py": {"sym_rr": 0.5, "test": 1.0}}) for i in range(30)]
    learned = fit(groups, FILES)
    assert learned.weights["bm25_rr"] > 0 > learned.weights["test"]
    assert learned.weights["bm25_rr"] > learned.weights["sym_rr"]
    assert hit_at(groups, learned, FILES) == 1.0


def test_the_definition_model_learns_from_definitions_of_gold_files() -> None:
    # The changed function matches the report's words; its siblings only sit high in the pool.
    groups = [group("fix", {"fix": {"bm25_rr": 1.0, "cos_rr": 0.5}, "a": {"pool_rr": 1.0, "cos_rr": 1.0},
                            "b": {"pool_rr": 0.5}, "c": {"pool_rr": 0.3}, "d": {"pool_rr": 0.2}},
                    DEFINITIONS.features) for _ in range(30)]
    learned = fit(groups, DEFINITIONS)
    assert learned.weights["bm25_rr"] > learned.weights["pool_rr"]
    assert hit_at(groups, learned, DEFINITIONS) == 1.0


def test_hit_at_counts_a_positive_among_the_models_top_only() -> None:
    ranker = LinearRanker({"sym_rr": 1.0})
    files = {f"f{i}.py": {"sym_rr": 1.0 / i} for i in range(1, 8)}
    assert hit_at([group("f5.py", files)], ranker, FILES) == 1.0
    assert hit_at([group("f6.py", files)], ranker, FILES) == 0.0
    definitions = {f"d{i}": {"pool_rr": 1.0 / i} for i in range(1, 6)}
    assert hit_at([group("d3", definitions, DEFINITIONS.features)], LinearRanker({"pool_rr": 1.0}), DEFINITIONS) == 1.0
    assert hit_at([group("d4", definitions, DEFINITIONS.features)], LinearRanker({"pool_rr": 1.0}), DEFINITIONS) == 0.0


def test_an_ablation_refits_without_the_removed_features() -> None:
    from eval.realistic.ablate import FEATURE_GROUPS

    # BM25 points at the fix; without it the model must fall back on the pool's rows.
    groups = [group(f"gold{i}.py", {f"gold{i}.py": {"bm25_rr": 1.0, "sym_rr": 0.5}, f"noise{i}.py": {"sym_rr": 0.2},
                                    f"other{i}.py": {"test": 1.0}}) for i in range(30)]
    removed = FEATURE_GROUPS["whole-file-bm25"][1]
    without = fit(groups, FILES, removed)
    assert not removed & set(without.weights) and set(without.weights) == set(FEATURES) - removed
    assert without.weights["sym_rr"] > 0 and hit_at(groups, without, FILES) == 1.0
    assert set(fit(groups, FILES).weights) == set(FEATURES)


def test_every_ablation_group_names_features_the_models_weigh() -> None:
    from eval.realistic.ablate import FEATURE_GROUPS

    for name, (_, files, definitions) in FEATURE_GROUPS.items():
        assert files <= set(FILES.features) and definitions <= set(DEFINITIONS.features), name
        assert files | definitions, name


@pytest.mark.parametrize("argv", [["--howto-only"], ["--howto-only", "--howto-cache", "h"],
                                  ["--howto-only", "--howto-cache", "h", "--model", "definitions"]])
def test_howto_only_trains_the_file_model_from_how_questions_alone(argv, capsys) -> None:
    from training.train_ranker import main
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2 and "--howto-only trains the file model" in capsys.readouterr().err
