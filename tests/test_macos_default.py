"""One --macos default everywhere: the current release (issue 35: 15 in most commands, 26 in `cluster`)."""

from __future__ import annotations

import inspect

from planner import profiles
from planner._model import DEFAULT_MACOS


def test_the_default_is_the_newest_macos_profile():
    newest = max(int(p.stem.split("-")[1]) for p in (profiles.builtin_dir() / "macos").glob("macos-*.yaml"))
    assert DEFAULT_MACOS == str(newest) == "26"
    # its limit names its evidence, printed beside the limit (cli/render.py)
    assert all(r.evidence for r in profiles.load_macos(DEFAULT_MACOS).wired_rules)


def test_every_request_and_entry_point_defaults_to_it():
    from planner.advice import recommend
    from planner.buy import buy
    from planner.cluster import cluster_candidates, plan_cluster
    from planner.finetune import FinetuneRequest
    from planner.models import Query
    from planner.plan import PlanRequest
    from planner.predict import predict_result as predict
    from planner.requests import BuyRequest, ClusterRequest, PredictRequest, RecommendRequest
    from planner.serve_plan import setup

    for model in (PlanRequest, RecommendRequest, BuyRequest, ClusterRequest, PredictRequest, FinetuneRequest):
        assert model.model_fields["macos"].default == DEFAULT_MACOS, model.__name__
    assert Query.__dataclass_fields__["macos"].default == DEFAULT_MACOS if hasattr(Query, "__dataclass_fields__") \
        else Query.model_fields["macos"].default == DEFAULT_MACOS
    for fn in (recommend, buy, plan_cluster, cluster_candidates, setup, predict):
        assert inspect.signature(fn).parameters["macos"].default == DEFAULT_MACOS, fn.__name__


def test_every_cli_command_defaults_to_it():
    import typer.main

    from cli.commands import app

    root = typer.main.get_command(app)
    seen = 0
    for cmd in [root, *root.commands.values()]:
        for p in cmd.params:
            if "--macos" in p.opts:
                assert p.default == DEFAULT_MACOS, cmd.name
                seen += 1
    assert seen >= 7
