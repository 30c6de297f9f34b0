"""The autograd profiler: events, tables, Chrome traces, user ranges, emitters, nvprof traces."""

from __future__ import annotations

import json
import math
import sqlite3
import sys
import threading
import types

import pytest

import dualgrad as dg
from dualgrad.autograd import profiler
from dualgrad.base.state import STATE


def _reference_example(n=20):
    x = dg.randn(1, 1, requires_grad=True)
    with profiler.profile() as prof:
        for _ in range(n):
            y = x ** 2
            y.backward()
    return prof


def test_reference_example_records_ops_and_backward_nodes():
    prof = _reference_example(20)
    counts = {e.key: e.count for e in prof.key_averages()}
    assert counts["pow"] >= 20 and counts["PowBackward0"] == 20
    assert counts["torch::autograd::AccumulateGrad"] == 20 and counts["torch::autograd::GraphRoot"] == 20
    assert counts["mul"] >= 20  # the pow rule multiplies
    for avg in prof.key_averages():
        assert 0 <= avg.self_cpu_time_total <= avg.cpu_time_total + 1e-9
    backward = [e for e in prof.events() if e.name == "PowBackward0"]
    assert all(e.is_backward and e.sequence_nr >= 0 for e in backward)
    # The backward rule's ops run inside the node's event.
    assert any(c.name == "mul" for e in backward for c in e.cpu_children)
    assert not STATE.observed


def test_reference_example_table():
    table = _reference_example(5).key_averages().table(sort_by="self_cpu_time_total")
    lines = table.splitlines()
    header = lines[1].split()
    assert header[:2] == ["Name", "Self"]
    for column in ["Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"]:
        assert column in lines[1]
    assert "Input Shapes" not in lines[1] and "CPU Mem" not in lines[1] and "FLOPs" not in lines[1]
    rows = [line for line in lines[3:] if line.strip() and not line.startswith("-")][:-1]
    names = [row.split()[0] for row in rows]
    assert set(names) >= {"mul", "pow", "PowBackward0", "torch::autograd::AccumulateGrad", "torch::autograd::GraphRoot"}
    assert lines[-1].startswith("Self CPU time total: ")


def test_table_sorting_and_row_limit():
    averages = _reference_example(5).key_averages()
    table = averages.table(sort_by="count", row_limit=2)
    rows = [line.split()[0] for line in table.splitlines()[3:5]]
    counts = {a.key: a.count for a in averages}
    assert [counts[r] for r in rows] == sorted(counts.values(), reverse=True)[:2]
    assert table.splitlines()[5].startswith("-")  # only two rows


def test_total_average_and_self_cpu_time_total():
    prof = _reference_example(5)
    total = prof.total_average()
    assert total.key == "Total"
    assert total.count == len(prof.events())
    assert prof.self_cpu_time_total == pytest.approx(sum(e.self_cpu_time_total for e in prof.events()))
    assert total.self_cpu_time_total == pytest.approx(prof.self_cpu_time_total)


def test_record_shapes_and_group_by_input_shape():
    a, b = dg.randn(2, 3), dg.randn(4)
    with profiler.profile(record_shapes=True) as prof:
        a * 2
        b * 2
        b * 3
    muls = [e for e in prof.key_averages(group_by_input_shape=True) if e.key == "mul"]
    assert sorted((e.input_shapes, e.count) for e in muls) == [([[2, 3], []], 1), ([[4], []], 2)]
    table = prof.key_averages(group_by_input_shape=True).table()
    assert "Input Shapes" in table and "[[2, 3], []]" in table


def test_with_flops_for_matmul_and_einsum():
    a, b = dg.randn(3, 4), dg.randn(4, 5)
    batched = dg.randn(2, 3, 4)
    with profiler.profile(with_flops=True) as prof:
        a @ b
        batched @ b
        dg.einsum("ij,jk->ik", a, b)
    flops = [e.flops for e in prof.events() if e.name in ("matmul", "einsum")]
    assert flops == [2 * 3 * 4 * 5, 2 * 2 * 3 * 4 * 5, 2 * 3 * 4 * 5]
    assert "Total FLOPs" in prof.key_averages().table()


def test_profile_memory_records_output_bytes():
    x = dg.randn(10, requires_grad=True)
    with profiler.profile(profile_memory=True) as prof:
        (x * 2).sum().backward()
    mul = next(e for e in prof.events() if e.name == "mul")
    assert mul.cpu_memory_usage == 80 and mul.self_cpu_memory_usage == 80
    backward = next(e for e in prof.events() if e.name == "MulBackward0")
    assert backward.cpu_memory_usage >= 80
    table = prof.key_averages().table(sort_by="cpu_memory_usage")
    assert "CPU Mem" in table and "Self CPU Mem" in table and "80 B" in table


def test_with_stack_records_source_locations():
    with profiler.profile(with_stack=True) as prof:
        dg.ones(2) * 2  # the recorded line
    mul = next(e for e in prof.events() if e.name == "mul")
    assert mul.stack[0].startswith(__file__) and "test_with_stack_records_source_locations" in mul.stack[0]
    grouped = prof.key_averages(group_by_stack_n=1)
    assert grouped[0].stack == mul.stack[:1]
    assert "Source Location" in grouped.table()


def test_nested_record_function_ranges():
    @profiler.record_function("decorated")
    def step(t):
        return t.exp()

    with profiler.profile() as prof:
        with profiler.record_function("outer"):
            with profiler.record_function("inner"):
                y = dg.ones(3) * 2
            step(y)
    events = {e.name: e for e in prof.events()}
    assert events["inner"].cpu_parent is events["outer"]
    assert events["decorated"].cpu_parent is events["outer"]
    assert events["mul"].cpu_parent is events["inner"]
    assert events["exp"].cpu_parent is events["decorated"]
    outer = events["outer"]
    assert outer.start_us <= events["inner"].start_us <= events["inner"].end_us <= outer.end_us
    assert outer.self_cpu_time_total == pytest.approx(
        outer.cpu_time_total - events["inner"].cpu_time_total - events["decorated"].cpu_time_total)
    assert step.__name__ == "step"


def test_record_function_without_profiler_is_a_no_op():
    with profiler.record_function("alone"):
        y = dg.ones(2) * 2
    assert y.tolist() == [2.0, 2.0]


def test_profilers_nest_and_are_thread_local():
    other_thread_ran = []

    def work_in_other_thread():
        dg.ones(2).sin()
        other_thread_ran.append(True)

    with profiler.profile() as outer:
        dg.ones(2).exp()
        with profiler.profile() as inner:
            dg.ones(2).cos()
        thread = threading.Thread(target=work_in_other_thread)
        thread.start()
        thread.join()
    assert other_thread_ran
    assert [e.name for e in outer.events()] == ["exp", "cos"]
    assert [e.name for e in inner.events()] == ["cos"]
    assert not STATE.observed and STATE.observers == ()


def test_disabled_profile_records_nothing():
    with profiler.profile(enabled=False) as prof:
        dg.ones(2) * 2
        assert not STATE.observed
    with pytest.raises(RuntimeError, match="Profiler didn't finish running"):
        prof.key_averages()


def test_gradients_are_unchanged_under_the_profiler():
    x = dg.tensor([0.5, 2.0], requires_grad=True)
    with profiler.profile(record_shapes=True, with_flops=True, profile_memory=True, with_stack=True):
        (x.log() * x).sum().backward()
    assert x.grad.tolist() == pytest.approx([math.log(0.5) + 1, math.log(2.0) + 1])


# -- Chrome trace --------------------------------------------------------------------------
def test_chrome_trace_round_trip(tmp_path):
    x = dg.randn(2, 2, requires_grad=True)
    with profiler.profile(record_shapes=True) as prof:
        with profiler.record_function("step"):
            (x @ x).sum().backward()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    assert len(events) == len(prof.events())
    for exported, event in zip(events, prof.events(), strict=True):
        assert exported["ph"] == "X" and exported["name"] == event.name
        assert exported["ts"] == pytest.approx(event.start_us)
        assert exported["dur"] == pytest.approx(event.cpu_time_total) and exported["dur"] >= 0
        assert isinstance(exported["pid"], int) and isinstance(exported["tid"], int)
    by_name = {e["name"]: e for e in events}
    step, matmul = by_name["step"], by_name["matmul"]
    assert step["ts"] <= matmul["ts"] and matmul["ts"] + matmul["dur"] <= step["ts"] + step["dur"] + 1e-6
    assert matmul["args"]["Input Dims"] == [[2, 2], [2, 2]]
    backward = by_name[(x @ x).grad_fn.name()]
    assert backward["cat"] == "cpu_op" and backward["args"]["Sequence number"] >= 0
    assert step["cat"] == "user_annotation" and matmul["cat"] == "cpu_op"  # torch's categories


def test_export_chrome_trace_to_an_unwritable_path(tmp_path):
    with profiler.profile() as prof:
        dg.ones(1) * 2
    path = tmp_path / "missing-dir" / "trace.json"
    with pytest.raises(OSError, match="export_chrome_trace could not write the trace to .*missing-dir"):
        prof.export_chrome_trace(str(path))


def test_table_with_an_unknown_sort_key_lists_the_valid_keys():
    prof = _reference_example(1)
    with pytest.raises(ValueError, match="unknown key") as info:
        prof.key_averages().table(sort_by="cpu_time_totl")
    for key in ["cpu_time", "cpu_time_total", "self_cpu_time_total", "count"]:
        assert key in str(info.value)


# -- NVTX / ITT -----------------------------------------------------------------------------
@pytest.mark.parametrize("emitter, package", [(profiler.emit_nvtx, "nvtx"), (profiler.emit_itt, "ittapi")])
def test_emitters_name_the_missing_package(emitter, package, monkeypatch):
    monkeypatch.setitem(sys.modules, package, None)  # import fails as if not installed
    with pytest.raises(ModuleNotFoundError, match=f"needs the optional package '{package}'"):
        with emitter():
            pass
    assert not STATE.observed


def _fake_nvtx(messages):
    module = types.ModuleType("nvtx")
    module.push_range = lambda message: messages.append(("push", message))
    module.pop_range = lambda: messages.append(("pop", None))
    return module


def test_emit_nvtx_ranges_with_sequence_numbers(monkeypatch):
    messages = []
    monkeypatch.setitem(sys.modules, "nvtx", _fake_nvtx(messages))
    x = dg.ones(2, requires_grad=True)
    with profiler.emit_nvtx(record_shapes=True):
        y = x.exp()
        y.sum().backward()
    pushes = [m for kind, m in messages if kind == "push"]
    assert len(pushes) == sum(kind == "pop" for kind, _ in messages)
    seq = y.grad_fn.seq
    assert f"exp, seq={seq}, sizes = [[2]]" in pushes
    assert any(m.startswith(f"ExpBackward0, stashed seq={seq}") for m in pushes)
    assert any(m.startswith("torch::autograd::AccumulateGrad") for m in pushes)


def test_emit_itt_ranges(monkeypatch):
    log = []

    class Task:
        def __init__(self, name, domain):
            self.name = name

        def begin(self):
            log.append(("begin", self.name))

        def end(self):
            log.append(("end", self.name))

    module = types.ModuleType("ittapi")
    module.domain = lambda name: name
    module.task = Task
    monkeypatch.setitem(sys.modules, "ittapi", module)
    with profiler.emit_itt():
        with profiler.record_function("user range"):
            dg.ones(2) * 2
    assert [entry[0] for entry in log] == ["begin", "begin", "end", "end"]
    assert log[0] == ("begin", "user range") and log[1][1].startswith("mul, seq=")


# -- nvprof traces --------------------------------------------------------------------------
def _nvprof_trace(path):
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE StringTable (_id_ INTEGER PRIMARY KEY, value TEXT)")
    db.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_MARKER (id INTEGER, name INTEGER, timestamp INTEGER)")
    db.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME "
               "(_id_ INTEGER, cbid INTEGER, start INTEGER, end INTEGER, correlationId INTEGER)")
    db.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL "
               "(name INTEGER, start INTEGER, end INTEGER, correlationId INTEGER)")
    db.executemany("INSERT INTO StringTable VALUES (?, ?)",
                   [(1, "outer"), (2, "mul, seq=3"), (3, "MulBackward0, stashed seq=3"), (4, "gemm_kernel")])
    db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_MARKER VALUES (?, ?, ?)", [
        (10, 1, 1000), (11, 2, 2000), (11, 0, 5000), (10, 0, 9000),
        (12, 3, 10000), (12, 0, 14000),
    ])
    db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1, 211, 2500, 3000, 77)")
    db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL VALUES (4, 3100, 4100, 77)")
    db.commit()
    db.close()


def test_load_nvprof_reads_ranges_kernels_and_sequence_numbers(tmp_path):
    path = str(tmp_path / "trace.prof")
    _nvprof_trace(path)
    events = profiler.load_nvprof(path)
    assert [(e.name, e.sequence_nr, e.is_backward) for e in events] == [
        ("outer", -1, False), ("mul", 3, False), ("MulBackward0", 3, True)]
    outer, mul, backward = events
    assert mul.cpu_parent is outer and backward.cpu_parent is None
    assert outer.cpu_time_total == pytest.approx(8.0) and outer.self_cpu_time_total == pytest.approx(5.0)
    assert mul.kernels == [("gemm_kernel", pytest.approx(1.0))]
    assert {a.key: a.count for a in events.key_averages()} == {"outer": 1, "mul": 1, "MulBackward0": 1}


def test_load_nvprof_on_a_file_that_is_not_a_trace(tmp_path):
    path = tmp_path / "not-a-trace.prof"
    path.write_text("hello")
    with pytest.raises(RuntimeError, match="not a readable nvprof trace"):
        profiler.load_nvprof(str(path))


def test_profiler_and_anomaly_mode_together():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        with dg.detect_anomaly(), profiler.profile() as prof:
            y = x.exp()
            y.sum().backward()
    names = {e.name for e in prof.events()}
    assert {"exp", "ExpBackward0", "torch::autograd::GraphRoot", "torch::autograd::AccumulateGrad"} <= names
    assert "traceback_" in y.grad_fn.metadata
    assert x.grad.tolist() == pytest.approx([math.e, math.e ** 2])
    assert not STATE.observed


class _Cube(dg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return 3 * g * x ** 2


def test_custom_function_forward_and_backward_are_profiled():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    with profiler.profile(record_shapes=True, with_flops=True) as prof:
        _Cube.apply(x).sum().backward()
    table = prof.table()
    assert "_Cube " in table and "_CubeBackward" in table
    forward = next(e for e in prof.events() if e.name == "_Cube")
    backward = next(e for e in prof.events() if e.name == "_CubeBackward")
    assert not forward.is_backward and backward.is_backward
    assert forward.input_shapes == [[2]]
    # The ops of forward and backward run inside their events; forward and backward are linked.
    assert "pow" in {c.name for c in forward.cpu_children}
    assert "mul" in {c.name for c in backward.cpu_children}
    assert forward.sequence_nr == backward.sequence_nr >= 0
    assert x.grad.tolist() == pytest.approx([3.0, 12.0])
    assert not STATE.observed


def test_custom_function_without_grad_is_profiled():
    with profiler.profile() as prof:
        _Cube.apply(dg.tensor([2.0]))
    assert [e.name for e in prof.events()] == ["_Cube", "pow"]


# -- torch's arguments and helpers ----------------------------------------------------

def test_device_arguments_warn_as_a_cpu_only_torch():
    with pytest.warns(FutureWarning, match="`use_cuda` will be deprecated"), \
            pytest.warns(UserWarning, match="CUDA is not available, disabling CUDA profiling"):
        prof = profiler.profile(use_cuda=True)
    with prof:
        dg.ones(2) * 2
    assert [e.name for e in prof.events()] == ["mul"]
    with pytest.warns(UserWarning, match="XPU is not available"):
        profiler.profile(use_device="xpu")
    with pytest.warns(UserWarning, match="The cpu is not a valid device option"):
        profiler.profile(use_device="cpu")


@pytest.mark.parametrize(("kineto", "words"), [(False, "supported only with Kineto"),
                                               (True, "no activities specified")])
def test_use_cpu_false_leaves_nothing_to_record(kineto, words):
    with pytest.raises(ValueError, match=words):
        profiler.profile(use_cpu=False, use_kineto=kineto)
    profiler.profile(enabled=False, use_cpu=False)  # a disabled profiler checks nothing, as torch's


def test_torch_only_arguments_are_accepted():
    with profiler.profile(with_modules=True, use_kineto=True, experimental_config=object(),
                          acc_events=True, custom_trace_id_callback=lambda: "id",
                          post_processing_timeout_s=1.0, activity_filters={}) as prof:
        dg.ones(2) * 2
    assert [e.key for e in prof.key_averages(group_by_overload_name=True)] == ["mul"]


def test_with_flops_records_shapes_as_torch():
    with profiler.profile(with_flops=True) as prof:
        dg.ones(2, 3) @ dg.ones(3, 4)
    assert prof.record_shapes and prof.events()[0].input_shapes == [[2, 3], [3, 4]]


def test_record_function_args_keep_the_name():
    with profiler.profile() as prof:
        with profiler.record_function("step", "batch 3") as rf:
            dg.ones(2) * 2
    assert rf.args == "batch 3"
    step, mul = prof.events()
    assert step.name == "step" and step.is_user_annotation and not mul.is_user_annotation


def test_event_time_range_and_formatted_times():
    prof = _reference_example(2)
    event = prof.events()[0]
    assert event.time_range.start == event.start_us and event.time_range.end == event.end_us
    assert event.time_range.elapsed_us() == event.cpu_time_total
    avg = prof.key_averages()[0]
    for item in (event, avg):
        assert item.cpu_time_total_str.endswith("s") and item.self_cpu_time_total_str.endswith("s")
        assert item.cpu_time_str.endswith("s")
        assert item.device_time_total == item.self_device_time_total == item.device_memory_usage == 0


@pytest.mark.parametrize("key", ["cuda_time_total", "self_cuda_time_total", "device_time_total",
                                 "self_device_memory_usage", "xpu_time_total"])
def test_table_sorts_by_device_keys_as_zeros(key):
    averages = _reference_example(2).key_averages()
    rows = lambda table: [line.split()[0] for line in table.splitlines()[3:-3]]  # noqa: E731
    assert rows(averages.table(sort_by=key)) == rows(averages.table())


def test_table_column_widths_and_time_unit():
    long_name = "a_really_long_range_name_" * 3
    with profiler.profile(record_shapes=True, with_stack=True) as prof:
        with profiler.record_function(long_name):
            dg.ones(2, 3) * 2
    events = profiler.EventList(prof.events())
    table = events.table(max_name_column_width=20, max_shapes_column_width=5,
                         max_src_column_width=12, time_unit="ms")
    assert long_name[:17] + "..." in table and long_name not in table
    assert "[[2, " in table and "[[2, 3]" not in table
    source = next(line for line in table.splitlines() if line.strip().startswith("mul")).split()[-1]
    assert source.startswith("...") and len(source) == 12
    assert table.splitlines()[-1].endswith("ms")
    assert "us" not in table and "CPU time avg" in prof.table(max_name_column_width=20)
    with pytest.raises(ValueError, match="time_unit='min'.*s, ms, us"):
        events.table(time_unit="min")


def test_event_list_key_averages_takes_torch_keyword():
    with profiler.profile(record_shapes=True) as prof:
        dg.ones(2) * 2
        dg.ones(3) * 2
    assert len(prof.events().key_averages(group_by_input_shapes=True)) == 2
    assert len(prof.key_averages(group_by_input_shape=True)) == 2


def test_export_stacks(tmp_path):
    with profiler.profile(with_stack=True) as prof:
        dg.ones(300, 300) * 2
    path = tmp_path / "stacks.txt"
    prof.export_stacks(str(path))
    (line,) = path.read_text().splitlines()
    frames, value = line.rsplit(" ", 1)
    assert int(value) > 0 and " " not in frames and "test_export_stacks" in frames.split(";")[-1]
    prof.export_stacks(str(path), "self_cuda_time_total")  # every device metric is 0: no line
    assert path.read_text() == ""
    with pytest.raises(ValueError, match="metric should be one of"):
        prof.export_stacks(str(path), "cpu_time")
    with profiler.profile() as plain:
        pass
    with pytest.raises(RuntimeError, match="requires with_stack=True"):
        plain.export_stacks(str(path))


def test_export_chrome_trace_metadata(tmp_path):
    with profiler.profile() as prof:
        dg.ones(2) * 2
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path), metadata={"run": "a"}, use_python_export=True)
    trace = json.loads(path.read_text())
    assert trace["run"] == "a" and [e["name"] for e in trace["traceEvents"]] == ["mul"]


@pytest.mark.parametrize(("name", "args", "what", "kind"), [(3, None, "name", "int"), ("r", 4.5, "args", "float")])
def test_record_function_refuses_names_that_are_not_strings(name, args, what, kind):
    """torch 2.13: RuntimeError "Expected a value of type 'str' for argument 'name' but instead found type 'int'"
    on entering the range."""
    with pytest.raises(RuntimeError, match=f"'str' for argument '{what}' but instead found type '{kind}'"):
        with dg.profiler.record_function(name, args):
            pass
