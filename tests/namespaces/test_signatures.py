"""dualgrad's mirror of torch.autograd keeps torch 2.13's signatures: parameter names, kinds, defaults.

The table is torch 2.13's ``inspect.signature`` (annotations and ``self`` left out), written
out; the C-implemented Tensor methods, which have no Python signature in torch, from torch's
documentation. A torch user porting code hits any difference here as a TypeError or a changed
default.
"""

from __future__ import annotations

import inspect

import pytest

import dualgrad as dg

SIGNATURES = [
    ("autograd.backward",
     "(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None, "
     "inputs=None)"),
    ("autograd.grad",
     "(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, "
     "only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False)"),
    ("autograd.set_detect_anomaly", "(mode, check_nan=True)"),
    ("autograd.detect_anomaly", "(check_nan=True)"),
    ("autograd.set_grad_enabled", "(mode)"),
    ("autograd.inference_mode", "(mode=True)"),
    ("autograd.set_multithreading_enabled", "(mode)"),
    ("autograd.gradcheck",
     "(func, inputs, *, eps=1e-06, atol=1e-05, rtol=0.001, raise_exception=True, "
     "nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False, "
     "check_batched_grad=False, check_batched_forward_grad=False, check_forward_ad=False, "
     "check_backward_ad=True, fast_mode=False, masked=None)"),
    ("autograd.gradgradcheck",
     "(func, inputs, grad_outputs=None, *, eps=1e-06, atol=1e-05, rtol=0.001, "
     "gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0, "
     "check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False, "
     "check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False, masked=False)"),
    ("autograd.Function.setup_context", "(ctx, inputs, output)"),
    ("autograd.Function.vmap", "(info, in_dims, *args)"),
    ("autograd.Function.jvp", "(ctx, *grad_inputs)"),
    ("autograd.Function.vjp", "(ctx, *grad_outputs)"),
    ("autograd.functional.vjp", "(func, inputs, v=None, create_graph=False, strict=False)"),
    ("autograd.functional.jvp", "(func, inputs, v=None, create_graph=False, strict=False)"),
    ("autograd.functional.jacobian",
     "(func, inputs, create_graph=False, strict=False, vectorize=False, strategy='reverse-mode')"),
    ("autograd.functional.hessian",
     "(func, inputs, create_graph=False, strict=False, vectorize=False, "
     "outer_jacobian_strategy='reverse-mode')"),
    ("autograd.functional.hvp", "(func, inputs, v=None, create_graph=False, strict=False)"),
    ("autograd.functional.vhp", "(func, inputs, v=None, create_graph=False, strict=False)"),
    ("autograd.forward_ad.make_dual", "(tensor, tangent, *, level=None)"),
    ("autograd.forward_ad.unpack_dual", "(tensor, *, level=None)"),
    ("autograd.forward_ad.enter_dual_level", "()"),
    ("autograd.forward_ad.exit_dual_level", "(*, level=None)"),
    ("autograd.graph.saved_tensors_hooks", "(pack_hook, unpack_hook)"),
    ("autograd.graph.save_on_cpu", "(pin_memory=False, device_type='cuda')"),
    ("autograd.graph.disable_saved_tensors_hooks", "(error_message)"),
    ("autograd.graph.register_multi_grad_hook", "(tensors, fn, *, mode='all')"),
    ("autograd.graph.get_gradient_edge", "(tensor)"),
    ("autograd.graph.increment_version", "(tensor)"),
    ("autograd.graph.Node.name", "()"),
    ("autograd.graph.Node.register_hook", "(fn)"),
    ("autograd.graph.Node.register_prehook", "(fn)"),
    ("autograd.function.FunctionCtx.save_for_backward", "(*tensors)"),
    ("autograd.function.FunctionCtx.save_for_forward", "(*tensors)"),
    ("autograd.function.FunctionCtx.set_materialize_grads", "(value)"),
    ("autograd.function.once_differentiable", "(fn)"),
    ("autograd.profiler.profile",
     "(enabled=True, *, use_cuda=False, use_device=None, record_shapes=False, with_flops=False, "
     "profile_memory=False, with_stack=False, with_modules=False, use_kineto=False, "
     "use_cpu=True, experimental_config=None, acc_events=False, custom_trace_id_callback=None, "
     "post_processing_timeout_s=None, activity_filters=None)"),
    ("autograd.profiler.record_function", "(name, args=None)"),
    ("autograd.profiler.emit_itt", "(enabled=True, record_shapes=False)"),
    ("autograd.profiler.emit_nvtx", "(enabled=True, record_shapes=False)"),
    ("autograd.profiler.load_nvprof", "(path)"),
    ("autograd.profiler.profile.key_averages",
     "(group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False)"),
    ("autograd.profiler.profile.table",
     "(sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55, "
     "max_shapes_column_width=80, header=None, top_level_events_only=False)"),
    ("autograd.profiler.profile.export_chrome_trace", "(path, metadata=None, use_python_export=False)"),
    ("autograd.profiler.profile.export_stacks", "(path, metric='self_cpu_time_total')"),
    ("autograd.profiler.EventList.key_averages",
     "(group_by_input_shapes=False, group_by_stack_n=0, group_by_overload_name=False)"),
    ("autograd.profiler.EventList.table",
     "(sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55, "
     "max_shapes_column_width=80, header=None, top_level_events_only=False, time_unit=None)"),
    ("autograd.profiler.EventList.export_stacks", "(path, metric)"),
    ("Tensor.backward", "(gradient=None, retain_graph=None, create_graph=False, inputs=None)"),
    ("Tensor.register_hook", "(hook)"),
    ("Tensor.register_post_accumulate_grad_hook", "(hook)"),
    ("Tensor.retain_grad", "()"),
    ("Tensor.requires_grad_", "(requires_grad=True)"),
    ("Tensor.detach", "()"),
    ("Tensor.detach_", "()"),
    ("Tensor.is_inference", "()"),
    ("is_inference", "(input)"),
    ("set_printoptions", "(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, "
     "sci_mode=None)"),
]


def _render(obj) -> str:
    signature = inspect.signature(obj)
    params = [p.replace(annotation=inspect.Parameter.empty) for p in signature.parameters.values()
              if p.name not in ("self", "cls")]
    return str(signature.replace(parameters=params, return_annotation=inspect.Signature.empty))


def _lookup(path: str):
    obj = dg
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize(("path", "expected"), SIGNATURES, ids=[path for path, _ in SIGNATURES])
def test_signature_matches_torch(path, expected):
    assert _render(_lookup(path)) == expected


@pytest.mark.parametrize("name", ["grad", "grad_fn", "is_leaf", "data", "requires_grad", "retains_grad",
                                  "output_nr"])
def test_tensor_autograd_attributes(name):
    assert isinstance(inspect.getattr_static(dg.Tensor, name), property)


def test_output_nr_is_the_output_index_and_read_only():
    x = dg.ones(3, requires_grad=True)
    a, b, c = x.split(1)
    assert (x.output_nr, a.output_nr, c.output_nr) == (0, 0, 2)
    assert c.view(1).output_nr == 0  # a view made by an op is that op's only output, as in torch
    with pytest.raises(AttributeError):
        x.output_nr = 1


def test_is_inference_function():
    with dg.inference_mode():
        y = dg.ones(2)
    assert dg.is_inference(y) and not dg.is_inference(dg.ones(2))
    with pytest.raises(TypeError, match="is_inference\\(\\): argument 'input' must be Tensor, not int"):
        dg.is_inference(3)
