"""Parity with torch 2.13 of ``graph``, anomaly mode and the profiler (values pinned from torch runs)."""

import json
import warnings

import pytest
from dualgrad.autograd.profiler import EventList, FunctionEvent

import dualgrad as dg
from dualgrad.autograd import profiler

# -- graph ------------------------------------------------------------------------------


@pytest.mark.parametrize(("argument", "message"), [
    (None, "increment_version expect a Iterable[Tensor] as input"),
    (3, "increment_version expect a Iterable[Tensor] as input"),
    ([3], "increment_version expects each element of the iterable to be a tensor"),
    ("ab", "increment_version expects each element of the iterable to be a tensor"),
])
def test_increment_version_of_non_tensors_raises_torchs_error(argument, message):
    with pytest.raises(RuntimeError, match=message.replace("[", r"\[").replace("]", r"\]")):
        dg.graph.increment_version(argument)


def test_increment_version_takes_a_tensor_or_an_iterable_of_tensors():
    x = dg.zeros(2)
    dg.graph.increment_version(x)
    dg.graph.increment_version([x, x])
    dg.graph.increment_version(t for t in (x,))
    assert x._version == 4


def test_disable_saved_tensors_hooks_needs_a_string_message():
    with pytest.raises(TypeError, match="error_message must be a str, got int"):
        with dg.graph.disable_saved_tensors_hooks(3):
            pass


def test_allow_mutation_on_saved_tensors_is_refused_while_saved_tensor_hooks_are_disabled():
    with dg.graph.disable_saved_tensors_hooks("no hooks here"):
        with pytest.raises(RuntimeError, match="^no hooks here$"):
            with dg.graph.allow_mutation_on_saved_tensors():
                pass
    with dg.graph.allow_mutation_on_saved_tensors():  # nothing was left half-entered
        a = dg.tensor([1.0, 2.0], requires_grad=True)
        b = a.clone()
        out = (b ** 2).sum()
        b.sin_()
        out.backward()
    assert a.grad.tolist() == [2.0, 4.0]


# -- anomaly mode -----------------------------------------------------------------------


def test_forward_traceback_in_metadata_is_a_list_of_formatted_strings():
    x = dg.ones(2, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with dg.detect_anomaly():
            y = x * 2
    frames = y.grad_fn.metadata["traceback_"]
    assert type(frames) is list and all(type(f) is str for f in frames)
    # torch: '  File "/path/test.py", line N, in fn\n    y = x * 2\n'
    assert frames[-1].startswith('  File "') and frames[-1].endswith("\n    y = x * 2\n")
    assert "test_forward_traceback_in_metadata" in frames[-1]


def test_the_failing_node_warning_shows_the_stored_traceback():
    class Fails(dg.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, g):
            raise ValueError("bad backward")

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with dg.detect_anomaly():
            out = Fails.apply(dg.ones(1, requires_grad=True)).sum()
            with pytest.raises(ValueError, match="bad backward"):
                out.backward()
    message = str(caught[-1].message)
    head, stack = message.split("\n", 1)
    assert head == "Error detected in FailsBackward. Traceback of forward call that caused the error:"
    assert stack == "".join(out.grad_fn.next_functions[0][0].metadata["traceback_"])


# -- profiler tables --------------------------------------------------------------------


def _events(**kwargs) -> EventList:
    """A range ``step`` (0-100 us) around one ``mul`` (10-40 us), with shapes, stacks and memory."""
    step = FunctionEvent(0, "step", 0, 0.0, 100.0, stack=["a.py(1): f", "b.py(2): g"],
                         is_user_annotation=True)
    mul = FunctionEvent(1, "mul", 0, 10.0, 40.0, input_shapes=[[2, 3], []], stack=["a.py(3): h"])
    mul.cpu_parent = step
    step.cpu_children.append(mul)
    mul.cpu_memory_usage = 2048
    return EventList([step, mul], **kwargs)


# torch 2.13: the same two events as torch FunctionEvents, EventList(..., profile_memory=True).table()
TORCH_TABLE = (
    "--------  ------------  ------------  ------------  ------------  ------------  ------------  "
    "------------  ------------  ----------------  --------------  \n"
    "    Name    Self CPU %      Self CPU   CPU total %     CPU total  CPU time avg       CPU Mem  "
    "Self CPU Mem    # of Calls      Input Shapes  Source Location  \n"
    "--------  ------------  ------------  ------------  ------------  ------------  ------------  "
    "------------  ------------  ----------------  --------------  \n"
    "    step        70.00%      70.000us       100.00%     100.000us     100.000us           0 B  "
    "    -2.00 KB             1                []  a.py(1): f      \n"
    + " " * 140 + "b.py(2): g      \n"
    + " " * 156 + "\n"
    "     mul        30.00%      30.000us        30.00%      30.000us      30.000us       2.00 KB  "
    "     2.00 KB             1      [[2, 3], []]  a.py(3): h      \n"
    + " " * 156 + "\n"
    "--------  ------------  ------------  ------------  ------------  ------------  ------------  "
    "------------  ------------  ----------------  --------------  \n"
    "Self CPU time total: 100.000us\n"
)


def test_table_layout_is_torchs():
    assert _events(profile_memory=True).table() == TORCH_TABLE
    assert str(_events(profile_memory=True)) == TORCH_TABLE  # as torch's EventList.__str__


def test_table_of_no_events_is_empty():
    with profiler.profile() as prof:
        pass
    assert prof.table() == "" and prof.key_averages().table() == ""


def test_top_level_table_of_averages_leaves_out_nested_events():
    with profiler.profile() as prof:
        with profiler.record_function("outer"):
            dg.ones(2) * 2
    table = prof.key_averages().table(top_level_events_only=True)
    lines = table.splitlines()
    assert lines[0] == "=" * (len(lines[2]) - 2)
    assert lines[1] == "This report only display top-level ops statistics"
    assert [line.split()[0] for line in lines[5:-2]] == ["outer"]


def test_profile_table_has_one_row_per_call_as_torchs():
    with profiler.profile() as prof:
        x = dg.ones(2)
        for _ in range(3):
            x = x * 2
    rows = [line.split() for line in prof.table().splitlines()[3:-2]]
    assert [(row[0], row[6]) for row in rows] == [("mul", "1")] * 3
    averaged = [line.split() for line in prof.key_averages().table().splitlines()[3:-2]]
    assert [(row[0], row[6]) for row in averaged] == [("mul", "3")]


def test_flops_column_is_scaled_as_torchs():
    # torch 2.13, mm of (64, 32) by (32, 16) under with_flops=True: 'Total KFLOPs' ... '65.536'
    with profiler.profile(with_flops=True) as prof:
        dg.ones(64, 32) @ dg.ones(32, 16)
    lines = prof.key_averages().table().splitlines()
    assert lines[1].rstrip().endswith("Total KFLOPs")
    assert lines[3].rstrip().endswith("  65.536")


def test_memory_columns_use_torchs_units():
    # torch 2.13, the same mm under profile_memory=True: '8.00 KB'
    with profiler.profile(profile_memory=True) as prof:
        dg.ones(64, 32) @ dg.ones(32, 16)
    row = prof.key_averages().table().splitlines()[3]
    assert row.count("8.00 KB") == 2


def test_a_range_and_an_op_of_the_same_name_are_averaged_apart():
    with profiler.profile() as prof:
        with profiler.record_function("mul"):
            dg.ones(2) * 2
    averages = prof.key_averages()
    assert [(a.key, a.is_user_annotation, a.count) for a in averages] == [("mul", True, 1), ("mul", False, 1)]
    assert averages[1].cpu_parent is prof.events()[0]


def test_str_of_an_unfinished_profile_does_not_raise():
    with profiler.profile() as prof:
        assert str(prof) == "<unfinished dualgrad.profiler.profile>"
    assert str(prof) == prof.table()


def test_chrome_trace_categories_are_torchs(tmp_path):
    x = dg.ones(2, requires_grad=True)
    with profiler.profile() as prof:
        with profiler.record_function("step"):
            (x * 2).sum().backward()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    categories = {e["name"]: e["cat"] for e in json.loads(path.read_text())["traceEvents"]}
    assert categories["step"] == "user_annotation"
    assert categories["mul"] == categories["MulBackward0"] == categories["torch::autograd::AccumulateGrad"] == "cpu_op"
