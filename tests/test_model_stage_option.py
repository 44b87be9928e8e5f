"""`options.model_stage` of a vllm model: which model stage runs it (the run's replicas, or Ray Data LLM).

The two stages themselves are measured against each other, on real engines, by bench/bench_model_stage.py;
here only the option's contract (cheap: no engine, no Ray)."""

from __future__ import annotations

import pytest

from cluster.backends.vllm_engine import parse_options
from cluster.ray_data_stage import uses_ray_data


def test_model_stage_defaults_to_the_run_replicas():
    assert parse_options("m", {"model": "x"}).model_stage == "actors"
    assert not uses_ray_data("vllm", {"model": "x"})
    assert not uses_ray_data("vllm", {"model": "x", "model_stage": "actors"})


def test_ray_data_is_chosen_per_vllm_model():
    assert parse_options("m", {"model": "x", "model_stage": "ray-data"}).model_stage == "ray-data"
    assert uses_ray_data("vllm", {"model": "x", "model_stage": "ray-data"})
    # only a vllm model has a Ray Data LLM stage
    assert not uses_ray_data("litellm", {"model_stage": "ray-data"})


def test_an_unknown_model_stage_is_one_line_naming_the_field():
    with pytest.raises(ValueError) as e:
        parse_options("m", {"model": "x", "model_stage": "spark"})
    msg = str(e.value)
    assert "\n" not in msg and "options.model_stage" in msg and "'m'" in msg
