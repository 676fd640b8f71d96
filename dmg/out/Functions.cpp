#include "torch/csrc/autograd/FunctionsManual.h"
#include "torch/csrc/dynamo/compiled_autograd.h"

// @generated from packaged/autograd/templates/Functions.cpp

// The manual function definitions that used to be here are now in torch/csrc/autograd/FunctionsManual.cpp
// This speeds up re-compilation and allow to share these implementations so that they can be
// used for forward mode AD formulas as well.

using namespace torch::autograd::generated::details;
using at::Tensor;
using at::Scalar;
using at::IntArrayRef;
using at::TensorList;

namespace torch::autograd::generated {

static at::IValue compute_output_metadata(const torch::autograd::edge_list& next_edges) {
  auto output_metadata = torch::dynamo::autograd::IValuePacker<
      std::vector<std::optional<InputMetadata>>>::pack(
              torch::dynamo::autograd::get_input_metadata(next_edges));
  return output_metadata;
}

static C10_NOINLINE variable_list compiled_autograd_apply_functional(
    const PackedArgs& packed_args,
    const edge_list& next_edges,
    SwapSavedVariables& saved,
    const variable_list& grads,
    const std::string& name) {
  auto output_metadata = compute_output_metadata(next_edges);
  const auto& pyinterface = torch::dynamo::autograd::getPyCompilerInterface();
  return pyinterface->call_function(
      saved.get_py_compiler(),
      "apply_functional",
      name,
      grads,
      packed_args.vec(),
      output_metadata);
}

static variable_list AddBackward0_apply_functional(
  variable_list&& grads,
  std::array<bool,2> needs_input_grad, at::Scalar& alpha, at::ScalarType& other_scalar_type, at::ScalarType& self_scalar_type)
{
  IndexRangeGenerator gen;
  auto self_ix = gen.range(1);
  auto other_ix = gen.range(1);
  variable_list grad_inputs(gen.size());
  const auto& grad = grads[0];
  bool any_grad_defined = any_variable_defined(grads);
  if (needs_input_grad[/*other*/1]) {
    auto grad_result = any_grad_defined ? (handle_r_to_c(other_scalar_type, maybe_multiply(grad, alpha.conj()))) : Tensor();
    copy_range(grad_inputs, other_ix, grad_result);
  }
  if (needs_input_grad[/*self*/0]) {
    auto grad_result = any_grad_defined ? (handle_r_to_c(self_scalar_type, grad)) : Tensor();
    copy_range(grad_inputs, self_ix, grad_result);
  }
  return grad_inputs;
}
inline variable_list AddBackward0_apply_functional_ivalue(const variable_list& grads, const ivalue_list& args)
{
#ifdef C10_MOBILE
  TORCH_INTERNAL_ASSERT(false, "compiled autograd doesn't work on mobile");
#else
  auto packed_args = PackedArgs(args);
  auto needs_input_grad = packed_args.unpack<std::array<bool, 2>>();
  auto alpha = packed_args.unpack<at::Scalar>();
  auto other_scalar_type = packed_args.unpack<at::ScalarType>();
  auto self_scalar_type = packed_args.unpack<at::ScalarType>();
  return AddBackward0_apply_functional(variable_list(grads), needs_input_grad, alpha, other_scalar_type, self_scalar_type);
#endif
}

variable_list AddBackward0::apply(variable_list&& grads) {



  IndexRangeGenerator gen;
  auto self_ix = gen.range(1);
  auto other_ix = gen.range(1);
  auto needs_input_grad = std::array<bool, 2>{
    task_should_compute_output({ self_ix }),
    task_should_compute_output({ other_ix }),
  };
  return AddBackward0_apply_functional(std::move(grads), needs_input_grad, alpha, other_scalar_type, self_scalar_type);
}

void AddBackward0::compiled_args(CompiledNodeArgs& args) const {
    args.collect(alpha);
    args.collect(other_scalar_type);
    args.collect(self_scalar_type);
}
variable_list AddBackward0::apply_with_saved(const variable_list& grads, SwapSavedVariables& saved) {
#ifdef C10_MOBILE
  TORCH_INTERNAL_ASSERT(false, "compiled autograd doesn't work on mobile");
#else
  saved.before(alpha);
  saved.before(other_scalar_type);
  saved.before(self_scalar_type);

  static bool called = false;
  if (!called) {
    called = true;
    std::vector<at::TypePtr> schema = {
      torch::dynamo::autograd::IValuePacker<std::array<bool, 2>>::packed_type(),
      torch::dynamo::autograd::IValuePacker<at::Scalar>::packed_type(),
      torch::dynamo::autograd::IValuePacker<at::ScalarType>::packed_type(),
      torch::dynamo::autograd::IValuePacker<at::ScalarType>::packed_type(),
    };
    const auto& pyinterface = torch::dynamo::autograd::getPyCompilerInterface();
    pyinterface->bind_function(saved.get_py_compiler(), name(), AddBackward0_apply_functional_ivalue, schema);
  }

  variable_list output_result;

  PackedArgs packed_args;


  IndexRangeGenerator gen;
  auto self_ix = gen.range(1);
  auto other_ix = gen.range(1);
  auto needs_input_grad = std::array<bool, 2>{
    task_should_compute_output({ self_ix }),
    task_should_compute_output({ other_ix }),
  };
  packed_args.pack(needs_input_grad);
  packed_args.pack(alpha);
  packed_args.pack(other_scalar_type);
  packed_args.pack(self_scalar_type);

  output_result = compiled_autograd_apply_functional(packed_args, next_edges(), saved, grads, name());

  saved.after(alpha);
  saved.after(other_scalar_type);
  saved.after(self_scalar_type);
  return output_result;
#endif
}

static variable_list MulBackward0_apply_functional(
  variable_list&& grads,
  std::array<bool,2> needs_input_grad, Tensor& other, at::ScalarType& other_scalar_type, Tensor& self, at::ScalarType& self_scalar_type)
{
  IndexRangeGenerator gen;
  auto self_ix = gen.range(1);
  auto other_ix = gen.range(1);
  variable_list grad_inputs(gen.size());
  const auto& grad = grads[0];
  bool any_grad_defined = any_variable_defined(grads);
  if (needs_input_grad[/*other*/1]) {
    auto grad_result = any_grad_defined ? (mul_tensor_backward(grad, self, other_scalar_type)) : Tensor();
    copy_range(grad_inputs, other_ix, grad_result);
  }
  if (needs_input_grad[/*self*/0]) {
    auto grad_result = any_grad_defined ? (mul_tensor_backward(grad, other, self_scalar_type) * 2) : Tensor();
    copy_range(grad_inputs, self_ix, grad_result);
  }
  return grad_inputs;
}
inline variable_list MulBackward0_apply_functional_ivalue(const variable_list& grads, const ivalue_list& args)
{
#ifdef C10_MOBILE
  TORCH_INTERNAL_ASSERT(false, "compiled autograd doesn't work on mobile");
#else
  auto packed_args = PackedArgs(args);
  auto needs_input_grad = packed_args.unpack<std::array<bool, 2>>();
  auto other = packed_args.unpack<Tensor>();
  auto other_scalar_type = packed_args.unpack<at::ScalarType>();
  auto self = packed_args.unpack<Tensor>();
  auto self_scalar_type = packed_args.unpack<at::ScalarType>();
  return MulBackward0_apply_functional(variable_list(grads), needs_input_grad, other, other_scalar_type, self, self_scalar_type);
#endif
}

variable_list MulBackward0::apply(variable_list&& grads) {
  std::lock_guard<std::mutex> lock(mutex_);

  auto other = other_.unpack();
  auto self = self_.unpack();
  IndexRangeGenerator gen;
  auto self_ix = gen.range(1);
  auto other_ix = gen.range(1);
  auto needs_input_grad = std::array<bool, 2>{
    task_should_compute_output({ self_ix }),
    task_should_compute_output({ other_ix }),
  };
  return MulBackward0_apply_functional(std::move(grads), needs_input_grad, other, other_scalar_type, self, self_scalar_type);
}

void MulBackward0::compiled_args(CompiledNodeArgs& args) const {
    args.collect(other_, false);
    args.collect(other_scalar_type);
    args.collect(self_, false);
    args.collect(self_scalar_type);
}
variable_list MulBackward0::apply_with_saved(const variable_list& grads, SwapSavedVariables& saved) {
#ifdef C10_MOBILE
  TORCH_INTERNAL_ASSERT(false, "compiled autograd doesn't work on mobile");
#else
  saved.before(other_);
  saved.before(other_scalar_type);
  saved.before(self_);
  saved.before(self_scalar_type);

  static bool called = false;
  if (!called) {
    called = true;
    std::vector<at::TypePtr> schema = {
      torch::dynamo::autograd::IValuePacker<std::array<bool, 2>>::packed_type(),
      torch::dynamo::autograd::IValuePacker<Tensor>::packed_type(),
      torch::dynamo::autograd::IValuePacker<at::ScalarType>::packed_type(),
      torch::dynamo::autograd::IValuePacker<Tensor>::packed_type(),
      torch::dynamo::autograd::IValuePacker<at::ScalarType>::packed_type(),
    };
    const auto& pyinterface = torch::dynamo::autograd::getPyCompilerInterface();
    pyinterface->bind_function(saved.get_py_compiler(), name(), MulBackward0_apply_functional_ivalue, schema);
  }

  variable_list output_result;

  PackedArgs packed_args;

  auto other = other_.unpack();
  auto self = self_.unpack();
  IndexRangeGenerator gen;
  auto self_ix = gen.range(1);
  auto other_ix = gen.range(1);
  auto needs_input_grad = std::array<bool, 2>{
    task_should_compute_output({ self_ix }),
    task_should_compute_output({ other_ix }),
  };
  packed_args.pack(needs_input_grad);
  packed_args.pack(other);
  packed_args.pack(other_scalar_type);
  packed_args.pack(self);
  packed_args.pack(self_scalar_type);

  output_result = compiled_autograd_apply_functional(packed_args, next_edges(), saved, grads, name());

  saved.after(other_);
  saved.after(other_scalar_type);
  saved.after(self_);
  saved.after(self_scalar_type);
  return output_result;
#endif
}

static variable_list ExpandBackward0_apply_functional(
  variable_list&& grads,
  std::array<bool,1> needs_input_grad, std::vector<c10::SymInt>& self_sym_sizes)
{
  IndexRangeGenerator gen;
  auto self_ix = gen.range(1);
  variable_list grad_inputs(gen.size());
  const auto& grad = grads[0];
  bool any_grad_defined = any_variable_defined(grads);
  if (needs_input_grad[/*self*/0]) {
    auto grad_result = any_grad_defined ? (at::sum_to(grad, self_sym_sizes)) : Tensor();
    copy_range(grad_inputs, self_ix, grad_result);
  }
  return grad_inputs;
}
inline variable_list ExpandBackward0_apply_functional_ivalue(const variable_list& grads, const ivalue_list& args)
{
#ifdef C10_MOBILE
  TORCH_INTERNAL_ASSERT(false, "compiled autograd doesn't work on mobile");
#else
  auto packed_args = PackedArgs(args);
  auto needs_input_grad = packed_args.unpack<std::array<bool, 1>>();
  auto self_sym_sizes = packed_args.unpack<std::vector<c10::SymInt>>();
  return ExpandBackward0_apply_functional(variable_list(grads), needs_input_grad, self_sym_sizes);
#endif
}

variable_list ExpandBackward0::apply(variable_list&& grads) {



  IndexRangeGenerator gen;
  auto self_ix = gen.range(1);
  auto needs_input_grad = std::array<bool, 1>{
    task_should_compute_output({ self_ix }),
  };
  return ExpandBackward0_apply_functional(std::move(grads), needs_input_grad, self_sym_sizes);
}

void ExpandBackward0::compiled_args(CompiledNodeArgs& args) const {
    args.collect(self_sym_sizes);
}
variable_list ExpandBackward0::apply_with_saved(const variable_list& grads, SwapSavedVariables& saved) {
#ifdef C10_MOBILE
  TORCH_INTERNAL_ASSERT(false, "compiled autograd doesn't work on mobile");
#else
  saved.before(self_sym_sizes);

  static bool called = false;
  if (!called) {
    called = true;
    std::vector<at::TypePtr> schema = {
      torch::dynamo::autograd::IValuePacker<std::array<bool, 1>>::packed_type(),
      torch::dynamo::autograd::IValuePacker<std::vector<c10::SymInt>>::packed_type(),
    };
    const auto& pyinterface = torch::dynamo::autograd::getPyCompilerInterface();
    pyinterface->bind_function(saved.get_py_compiler(), name(), ExpandBackward0_apply_functional_ivalue, schema);
  }

  variable_list output_result;

  PackedArgs packed_args;


  IndexRangeGenerator gen;
  auto self_ix = gen.range(1);
  auto needs_input_grad = std::array<bool, 1>{
    task_should_compute_output({ self_ix }),
  };
  packed_args.pack(needs_input_grad);
  packed_args.pack(self_sym_sizes);

  output_result = compiled_autograd_apply_functional(packed_args, next_edges(), saved, grads, name());

  saved.after(self_sym_sizes);
  return output_result;
#endif
}

static variable_list SumBackward0_apply_functional(
  variable_list&& grads,
  std::array<bool,1> needs_input_grad, std::vector<c10::SymInt>& self_sym_sizes)
{
  IndexRangeGenerator gen;
  auto self_ix = gen.range(1);
  variable_list grad_inputs(gen.size());
  const auto& grad = grads[0];
  bool any_grad_defined = any_variable_defined(grads);
  if (needs_input_grad[/*self*/0]) {
    auto grad_result = any_grad_defined ? (grad.expand_symint(self_sym_sizes)) : Tensor();
    copy_range(grad_inputs, self_ix, grad_result);
  }
  return grad_inputs;
}
inline variable_list SumBackward0_apply_functional_ivalue(const variable_list& grads, const ivalue_list& args)
{
#ifdef C10_MOBILE
  TORCH_INTERNAL_ASSERT(false, "compiled autograd doesn't work on mobile");
#else
  auto packed_args = PackedArgs(args);
  auto needs_input_grad = packed_args.unpack<std::array<bool, 1>>();
  auto self_sym_sizes = packed_args.unpack<std::vector<c10::SymInt>>();
  return SumBackward0_apply_functional(variable_list(grads), needs_input_grad, self_sym_sizes);
#endif
}

variable_list SumBackward0::apply(variable_list&& grads) {



  IndexRangeGenerator gen;
  auto self_ix = gen.range(1);
  auto needs_input_grad = std::array<bool, 1>{
    task_should_compute_output({ self_ix }),
  };
  return SumBackward0_apply_functional(std::move(grads), needs_input_grad, self_sym_sizes);
}

void SumBackward0::compiled_args(CompiledNodeArgs& args) const {
    args.collect(self_sym_sizes);
}
variable_list SumBackward0::apply_with_saved(const variable_list& grads, SwapSavedVariables& saved) {
#ifdef C10_MOBILE
  TORCH_INTERNAL_ASSERT(false, "compiled autograd doesn't work on mobile");
#else
  saved.before(self_sym_sizes);

  static bool called = false;
  if (!called) {
    called = true;
    std::vector<at::TypePtr> schema = {
      torch::dynamo::autograd::IValuePacker<std::array<bool, 1>>::packed_type(),
      torch::dynamo::autograd::IValuePacker<std::vector<c10::SymInt>>::packed_type(),
    };
    const auto& pyinterface = torch::dynamo::autograd::getPyCompilerInterface();
    pyinterface->bind_function(saved.get_py_compiler(), name(), SumBackward0_apply_functional_ivalue, schema);
  }

  variable_list output_result;

  PackedArgs packed_args;


  IndexRangeGenerator gen;
  auto self_ix = gen.range(1);
  auto needs_input_grad = std::array<bool, 1>{
    task_should_compute_output({ self_ix }),
  };
  packed_args.pack(needs_input_grad);
  packed_args.pack(self_sym_sizes);

  output_result = compiled_autograd_apply_functional(packed_args, next_edges(), saved, grads, name());

  saved.after(self_sym_sizes);
  return output_result;
#endif
}

static variable_list SumBackwardAutogradNestedTensor0_apply_functional(
  variable_list&& grads,
  std::array<bool,1> needs_input_grad, Tensor& self)
{
  IndexRangeGenerator gen;
  auto self_ix = gen.range(1);
  variable_list grad_inputs(gen.size());
  const auto& grad = grads[0];
  bool any_grad_defined = any_variable_defined(grads);
  if (needs_input_grad[/*self*/0]) {
    auto grad_result = any_grad_defined ? (grad.expand_as(self)) : Tensor();
    copy_range(grad_inputs, self_ix, grad_result);
  }
  return grad_inputs;
}
inline variable_list SumBackwardAutogradNestedTensor0_apply_functional_ivalue(const variable_list& grads, const ivalue_list& args)
{
#ifdef C10_MOBILE
  TORCH_INTERNAL_ASSERT(false, "compiled autograd doesn't work on mobile");
#else
  auto packed_args = PackedArgs(args);
  auto needs_input_grad = packed_args.unpack<std::array<bool, 1>>();
  auto self = packed_args.unpack<Tensor>();
  return SumBackwardAutogradNestedTensor0_apply_functional(variable_list(grads), needs_input_grad, self);
#endif
}

variable_list SumBackwardAutogradNestedTensor0::apply(variable_list&& grads) {
  std::lock_guard<std::mutex> lock(mutex_);

  auto self = self_.unpack();
  IndexRangeGenerator gen;
  auto self_ix = gen.range(1);
  auto needs_input_grad = std::array<bool, 1>{
    task_should_compute_output({ self_ix }),
  };
  return SumBackwardAutogradNestedTensor0_apply_functional(std::move(grads), needs_input_grad, self);
}

void SumBackwardAutogradNestedTensor0::compiled_args(CompiledNodeArgs& args) const {
    args.collect(self_, false);
}
variable_list SumBackwardAutogradNestedTensor0::apply_with_saved(const variable_list& grads, SwapSavedVariables& saved) {
#ifdef C10_MOBILE
  TORCH_INTERNAL_ASSERT(false, "compiled autograd doesn't work on mobile");
#else
  saved.before(self_);

  static bool called = false;
  if (!called) {
    called = true;
    std::vector<at::TypePtr> schema = {
      torch::dynamo::autograd::IValuePacker<std::array<bool, 1>>::packed_type(),
      torch::dynamo::autograd::IValuePacker<Tensor>::packed_type(),
    };
    const auto& pyinterface = torch::dynamo::autograd::getPyCompilerInterface();
    pyinterface->bind_function(saved.get_py_compiler(), name(), SumBackwardAutogradNestedTensor0_apply_functional_ivalue, schema);
  }

  variable_list output_result;

  PackedArgs packed_args;

  auto self = self_.unpack();
  IndexRangeGenerator gen;
  auto self_ix = gen.range(1);
  auto needs_input_grad = std::array<bool, 1>{
    task_should_compute_output({ self_ix }),
  };
  packed_args.pack(needs_input_grad);
  packed_args.pack(self);

  output_result = compiled_autograd_apply_functional(packed_args, next_edges(), saved, grads, name());

  saved.after(self_);
  return output_result;
#endif
}

static variable_list MinmaxBackward0_apply_functional(
  variable_list&& grads,
  std::array<bool,1> needs_input_grad, std::vector<c10::SymInt>& self_sym_sizes)
{
  IndexRangeGenerator gen;
  auto self_ix = gen.range(1);
  variable_list grad_inputs(gen.size());
  const auto& grad_max = grads[1];
  const auto& grad_min = grads[0];
  bool any_grad_defined = any_variable_defined(grads);
  if (needs_input_grad[/*self*/0]) {
    auto grad_result = any_grad_defined ? (grad_min.expand_symint(self_sym_sizes) + grad_max.expand_symint(self_sym_sizes)) : Tensor();
    copy_range(grad_inputs, self_ix, grad_result);
  }
  return grad_inputs;
}
inline variable_list MinmaxBackward0_apply_functional_ivalue(const variable_list& grads, const ivalue_list& args)
{
#ifdef C10_MOBILE
  TORCH_INTERNAL_ASSERT(false, "compiled autograd doesn't work on mobile");
#else
  auto packed_args = PackedArgs(args);
  auto needs_input_grad = packed_args.unpack<std::array<bool, 1>>();
  auto self_sym_sizes = packed_args.unpack<std::vector<c10::SymInt>>();
  return MinmaxBackward0_apply_functional(variable_list(grads), needs_input_grad, self_sym_sizes);
#endif
}

variable_list MinmaxBackward0::apply(variable_list&& grads) {



  IndexRangeGenerator gen;
  auto self_ix = gen.range(1);
  auto needs_input_grad = std::array<bool, 1>{
    task_should_compute_output({ self_ix }),
  };
  return MinmaxBackward0_apply_functional(std::move(grads), needs_input_grad, self_sym_sizes);
}

void MinmaxBackward0::compiled_args(CompiledNodeArgs& args) const {
    args.collect(self_sym_sizes);
}
variable_list MinmaxBackward0::apply_with_saved(const variable_list& grads, SwapSavedVariables& saved) {
#ifdef C10_MOBILE
  TORCH_INTERNAL_ASSERT(false, "compiled autograd doesn't work on mobile");
#else
  saved.before(self_sym_sizes);

  static bool called = false;
  if (!called) {
    called = true;
    std::vector<at::TypePtr> schema = {
      torch::dynamo::autograd::IValuePacker<std::array<bool, 1>>::packed_type(),
      torch::dynamo::autograd::IValuePacker<std::vector<c10::SymInt>>::packed_type(),
    };
    const auto& pyinterface = torch::dynamo::autograd::getPyCompilerInterface();
    pyinterface->bind_function(saved.get_py_compiler(), name(), MinmaxBackward0_apply_functional_ivalue, schema);
  }

  variable_list output_result;

  PackedArgs packed_args;


  IndexRangeGenerator gen;
  auto self_ix = gen.range(1);
  auto needs_input_grad = std::array<bool, 1>{
    task_should_compute_output({ self_ix }),
  };
  packed_args.pack(needs_input_grad);
  packed_args.pack(self_sym_sizes);

  output_result = compiled_autograd_apply_functional(packed_args, next_edges(), saved, grads, name());

  saved.after(self_sym_sizes);
  return output_result;
#endif
}

static variable_list ExpandBackward0_copy_apply_functional(
  variable_list&& grads,
  std::array<bool,1> needs_input_grad, std::vector<c10::SymInt>& self_sym_sizes)
{
  IndexRangeGenerator gen;
  auto self_ix = gen.range(1);
  variable_list grad_inputs(gen.size());
  const auto& grad = grads[0];
  bool any_grad_defined = any_variable_defined(grads);
  if (needs_input_grad[/*self*/0]) {
    auto grad_result = any_grad_defined ? (at::sum_to(grad, self_sym_sizes)) : Tensor();
    copy_range(grad_inputs, self_ix, grad_result);
  }
  return grad_inputs;
}
inline variable_list ExpandBackward0_copy_apply_functional_ivalue(const variable_list& grads, const ivalue_list& args)
{
#ifdef C10_MOBILE
  TORCH_INTERNAL_ASSERT(false, "compiled autograd doesn't work on mobile");
#else
  auto packed_args = PackedArgs(args);
  auto needs_input_grad = packed_args.unpack<std::array<bool, 1>>();
  auto self_sym_sizes = packed_args.unpack<std::vector<c10::SymInt>>();
  return ExpandBackward0_copy_apply_functional(variable_list(grads), needs_input_grad, self_sym_sizes);
#endif
}

variable_list ExpandBackward0_copy::apply(variable_list&& grads) {



  IndexRangeGenerator gen;
  auto self_ix = gen.range(1);
  auto needs_input_grad = std::array<bool, 1>{
    task_should_compute_output({ self_ix }),
  };
  return ExpandBackward0_copy_apply_functional(std::move(grads), needs_input_grad, self_sym_sizes);
}

void ExpandBackward0_copy::compiled_args(CompiledNodeArgs& args) const {
    args.collect(self_sym_sizes);
}
variable_list ExpandBackward0_copy::apply_with_saved(const variable_list& grads, SwapSavedVariables& saved) {
#ifdef C10_MOBILE
  TORCH_INTERNAL_ASSERT(false, "compiled autograd doesn't work on mobile");
#else
  saved.before(self_sym_sizes);

  static bool called = false;
  if (!called) {
    called = true;
    std::vector<at::TypePtr> schema = {
      torch::dynamo::autograd::IValuePacker<std::array<bool, 1>>::packed_type(),
      torch::dynamo::autograd::IValuePacker<std::vector<c10::SymInt>>::packed_type(),
    };
    const auto& pyinterface = torch::dynamo::autograd::getPyCompilerInterface();
    pyinterface->bind_function(saved.get_py_compiler(), name(), ExpandBackward0_copy_apply_functional_ivalue, schema);
  }

  variable_list output_result;

  PackedArgs packed_args;


  IndexRangeGenerator gen;
  auto self_ix = gen.range(1);
  auto needs_input_grad = std::array<bool, 1>{
    task_should_compute_output({ self_ix }),
  };
  packed_args.pack(needs_input_grad);
  packed_args.pack(self_sym_sizes);

  output_result = compiled_autograd_apply_functional(packed_args, next_edges(), saved, grads, name());

  saved.after(self_sym_sizes);
  return output_result;
#endif
}

static variable_list ForeachAddBackward0List_apply_functional(
  variable_list&& grads,
  std::array<bool,2> needs_input_grad, size_t self_size_, size_t other_size_, at::Scalar& alpha, std::vector<Tensor>& other, std::vector<Tensor>& self)
{
  IndexRangeGenerator gen;
  auto self_ix = gen.range(self_size_);
  auto other_ix = gen.range(other_size_);
  variable_list grad_inputs(gen.size());
  if (needs_input_grad[/*other*/1]) {  // other
    std::vector<Tensor> grad_result;
    grad_result.reserve(grads.size());
    for (const auto & i : c10::irange(grads.size())) {
      if (grads[i].defined()) {
        grad_result.emplace_back(handle_r_to_c(other[i].scalar_type(), maybe_multiply(grads[i], alpha.conj())));
      } else {
        grad_result.emplace_back(Tensor());
      }
    }
    copy_range(grad_inputs, other_ix, grad_result);
  }
  if (needs_input_grad[/*self*/0]) {  // self
    std::vector<Tensor> grad_result;
    grad_result.reserve(grads.size());
    for (const auto & i : c10::irange(grads.size())) {
      if (grads[i].defined()) {
        grad_result.emplace_back(handle_r_to_c(self[i].scalar_type(), grads[i]));
      } else {
        grad_result.emplace_back(Tensor());
      }
    }
    copy_range(grad_inputs, self_ix, grad_result);
  }
  return grad_inputs;
}
inline variable_list ForeachAddBackward0List_apply_functional_ivalue(const variable_list& grads, const ivalue_list& args)
{
#ifdef C10_MOBILE
  TORCH_INTERNAL_ASSERT(false, "compiled autograd doesn't work on mobile");
#else
  auto packed_args = PackedArgs(args);
  auto needs_input_grad = packed_args.unpack<std::array<bool, 2>>();
  auto self_size_ = packed_args.unpack<size_t>();
  auto other_size_ = packed_args.unpack<size_t>();
  auto alpha = packed_args.unpack<at::Scalar>();
  auto other = packed_args.unpack<std::vector<Tensor>>();
  auto self = packed_args.unpack<std::vector<Tensor>>();
  return ForeachAddBackward0List_apply_functional(variable_list(grads), needs_input_grad, self_size_, other_size_, alpha, other, self);
#endif
}

variable_list ForeachAddBackward0List::apply(variable_list&& grads) {
  std::lock_guard<std::mutex> lock(mutex_);
  TORCH_CHECK(!other_released_, ERR_BACKWARD_TWICE);
  TORCH_CHECK(!self_released_, ERR_BACKWARD_TWICE);
  auto other = unpack_list(other_, nullptr);
  auto self = unpack_list(self_, nullptr);
  IndexRangeGenerator gen;
  auto self_ix = gen.range(self_size_);
  auto other_ix = gen.range(other_size_);
  auto needs_input_grad = std::array<bool, 2>{
    task_should_compute_output({ self_ix }),
    task_should_compute_output({ other_ix }),
  };
  return ForeachAddBackward0List_apply_functional(std::move(grads), needs_input_grad, self_size_, other_size_, alpha, other, self);
}

void ForeachAddBackward0List::compiled_args(CompiledNodeArgs& args) const {
    args.collect(alpha);
    args.collect(other_, false);
    args.collect(self_, false);
}
variable_list ForeachAddBackward0List::apply_with_saved(const variable_list& grads, SwapSavedVariables& saved) {
#ifdef C10_MOBILE
  TORCH_INTERNAL_ASSERT(false, "compiled autograd doesn't work on mobile");
#else
  saved.before(alpha);
  saved.before(other_);
  saved.before(self_);

  static bool called = false;
  if (!called) {
    called = true;
    std::vector<at::TypePtr> schema = {
      torch::dynamo::autograd::IValuePacker<std::array<bool, 2>>::packed_type(),
      torch::dynamo::autograd::IValuePacker<size_t>::packed_type(),
      torch::dynamo::autograd::IValuePacker<size_t>::packed_type(),
      torch::dynamo::autograd::IValuePacker<at::Scalar>::packed_type(),
      torch::dynamo::autograd::IValuePacker<std::vector<Tensor>>::packed_type(),
      torch::dynamo::autograd::IValuePacker<std::vector<Tensor>>::packed_type(),
    };
    const auto& pyinterface = torch::dynamo::autograd::getPyCompilerInterface();
    pyinterface->bind_function(saved.get_py_compiler(), name(), ForeachAddBackward0List_apply_functional_ivalue, schema);
  }

  variable_list output_result;

  PackedArgs packed_args;
  TORCH_CHECK(!other_released_, ERR_BACKWARD_TWICE);
  TORCH_CHECK(!self_released_, ERR_BACKWARD_TWICE);
  auto other = unpack_list(other_, nullptr);
  auto self = unpack_list(self_, nullptr);
  IndexRangeGenerator gen;
  auto self_ix = gen.range(self_size_);
  auto other_ix = gen.range(other_size_);
  auto needs_input_grad = std::array<bool, 2>{
    task_should_compute_output({ self_ix }),
    task_should_compute_output({ other_ix }),
  };
  packed_args.pack(needs_input_grad);
  packed_args.pack(self_size_);
  packed_args.pack(other_size_);
  packed_args.pack(alpha);
  packed_args.pack(other);
  packed_args.pack(self);

  output_result = compiled_autograd_apply_functional(packed_args, next_edges(), saved, grads, name());

  saved.after(alpha);
  saved.after(other_);
  saved.after(self_);
  return output_result;
#endif
}

} // namespace torch::autograd::generated
