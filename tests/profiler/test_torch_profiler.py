"""The torch.profiler API (``dualgrad.profiler``) over the autograd profiler: schedules, ``step()``, trace
hand-over, handlers and exports, compared with torch 2.13 (pinned results, and live when installed)."""

from __future__ import annotations

import gzip
import json
import warnings

import pytest

import dualgrad as dg
from dualgrad.profiler import ProfilerAction, ProfilerActivity, profile, record_function, schedule

# (schedule arguments, steps) -> ProfilerStep* count of each trace handed to on_trace_ready (torch 2.13)
SCHEDULES = [
    ({"wait": 1, "warmup": 1, "active": 2, "repeat": 2, "skip_first": 1}, 12, [2, 2]),
    ({"wait": 0, "warmup": 0, "active": 1}, 3, [1, 1, 1, 1]),
    ({"wait": 2, "warmup": 1, "active": 3}, 5, [3]),
    ({"wait": 1, "warmup": 1, "active": 2, "skip_first_wait": 1}, 5, [2, 1]),
    ({"wait": 1, "warmup": 0, "active": 3, "repeat": 1}, 9, [3]),
]


def _traces(lib, kwargs, steps):
    traces = []
    x = lib.ones(3, requires_grad=True)

    def ready(prof):
        traces.append(sum(e.count for e in prof.key_averages() if e.key == "ProfilerStep*"))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lib.profiler.profile(schedule=lib.profiler.schedule(**kwargs), on_trace_ready=ready) as prof:
            for _ in range(steps):
                (x * 2).sum().backward()
                prof.step()
    return traces, prof.step_num


@pytest.mark.parametrize(("kwargs", "steps", "expected"), SCHEDULES)
def test_schedule_hands_over_the_traces_torch_does(kwargs, steps, expected):
    assert _traces(dg, kwargs, steps) == (expected, steps)


@pytest.mark.parametrize(("kwargs", "steps", "expected"), SCHEDULES)
def test_against_live_torch(kwargs, steps, expected):
    torch = pytest.importorskip("torch")
    assert _traces(torch, kwargs, steps) == (expected, steps)


def test_schedule_actions():
    steps = schedule(wait=1, warmup=2, active=2, repeat=2, skip_first=3)
    assert [steps(i).name for i in range(16)] == [
        "NONE", "NONE", "NONE", "NONE", "WARMUP", "WARMUP", "RECORD", "RECORD_AND_SAVE", "NONE", "WARMUP", "WARMUP",
        "RECORD", "RECORD_AND_SAVE", "NONE", "NONE", "NONE"]
    with pytest.raises(AssertionError, match="^Invalid profiler schedule arguments. Got wait=1 \\(need >= 0\\), "
                                             "warmup=1 \\(need >= 0\\), active=0 \\(need > 0\\)"):
        schedule(wait=1, warmup=1, active=0)
    with pytest.warns(UserWarning, match="Profiler won't be using warmup, this can skew profiler results"):
        schedule(wait=1, warmup=0, active=1)
    with pytest.raises(AssertionError, match="Step must be non-negative. Got -1."):
        steps(-1)
    assert ProfilerAction.RECORD_AND_SAVE.value == 3 and ProfilerActivity.CPU.name == "CPU"


def test_only_recorded_steps_hold_events():
    x = dg.ones(2, requires_grad=True)
    seen = []
    with profile(schedule=schedule(wait=2, warmup=1, active=1, repeat=1),
                 on_trace_ready=lambda p: seen.append([e.name for e in p.events()])) as prof:
        for i in range(6):
            with record_function(f"work{i}"):
                x.sum()
            prof.step()
    assert len(seen) == 1 and [n for n in seen[0] if n.startswith("work")] == ["work3"]
    assert seen[0][0] == "ProfilerStep*"


def test_without_schedule_records_everything_and_results_survive_the_block(tmp_path):
    x = dg.ones(2, 2, requires_grad=True)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True, with_stack=True,
                 with_flops=True) as prof:
        with record_function("forward"):
            y = (x @ x).sum()
        y.backward()
    names = {e.key for e in prof.key_averages()}
    assert {"forward", "matmul", "sum", "SumBackward0"} <= names and not any("ProfilerStep" in n for n in names)
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=3)
    assert "Name" in table and "CPU total" in table
    prof.add_metadata("run", "test")
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    assert trace["run"] == "test" and any(e["name"] == "matmul" for e in trace["traceEvents"])
    prof.export_stacks(str(tmp_path / "stacks.txt"))


def test_tensorboard_trace_handler_writes_one_file_per_trace(tmp_path):
    x = dg.ones(2)
    handler = dg.profiler.tensorboard_trace_handler(str(tmp_path / "logs"), worker_name="worker", use_gzip=True)
    with profile(schedule=schedule(wait=0, warmup=1, active=1, repeat=2), on_trace_ready=handler) as prof:
        for _ in range(5):
            x * 2
            prof.step()
    files = sorted(p.name for p in (tmp_path / "logs").iterdir())
    assert len(files) == 2 and all(f.startswith("worker.") and f.endswith(".pt.trace.json.gz") for f in files)
    events = json.loads(gzip.decompress((tmp_path / "logs" / files[0]).read_bytes()))["traceEvents"]
    assert any(e["name"] == "mul" for e in events)


def test_activity_arguments():
    with pytest.raises(AssertionError, match="^No valid profiler activities found$"):
        profile(activities=[])
    with pytest.raises(AssertionError, match="No activities specified for the profiler"):
        with profile(activities=[ProfilerActivity.CUDA]):
            pass
    with pytest.warns(FutureWarning, match="`use_cuda` is deprecated, use `activities` argument instead"):
        profile(use_cuda=False)
    assert dg.profiler.supported_activities() == {ProfilerActivity.CPU}
    with pytest.raises(AssertionError, match="Profiler must be initialized"):
        profile().key_averages()


def test_autograd_profiler_namespace_is_unchanged():
    assert dg.autograd.profiler.profile is not dg.profiler.profile
    with dg.autograd.profiler.profile(enabled=True, use_cpu=True) as prof:
        dg.ones(1) * 2
    assert [e.name for e in prof.function_events] == ["mul"]
    assert dg.autograd.profiler.record_function is dg.profiler.record_function
