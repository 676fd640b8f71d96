#include <torch/csrc/autograd/generated/ViewFuncs.h>

// @generated from packaged/autograd/templates/ViewFuncs.cpp

using at::Tensor;
using at::Scalar;
using at::IntArrayRef;
using at::TensorList;

namespace torch::autograd::generated {

std::vector<c10::SymInt> ExpandViewFunc::get_symints() const {
  ::std::vector<c10::SymInt> symints;
  symints.reserve(size.size());
  symints.insert(symints.end(), size.begin(), size.end());
  return symints;
}

size_t ExpandViewFunc::num_symints() const {
  return static_cast<size_t>(size.size());
}

void ExpandViewFunc::set_symints(std::vector<c10::SymInt> symints) {
  TORCH_INTERNAL_ASSERT(symints.size() == num_symints());
  auto i = 0;
  std::copy(symints.begin() + i, symints.begin() + i + size.size(), size.begin());
}

std::vector<at::Tensor> ExpandViewFunc::get_tensors() const {
  ::std::vector<at::Tensor> tensors;
  return tensors;
}

size_t ExpandViewFunc::num_tensors() const {
  return static_cast<size_t>(0);
}

void ExpandViewFunc::set_tensors(std::vector<at::Tensor> tensors) {
  TORCH_INTERNAL_ASSERT(tensors.size() == num_tensors());

}

at::Tensor ExpandViewFunc::operator()(const at::Tensor& input_base) const {
  return at::_ops::expand::call(input_base, size, implicit);
}

std::unique_ptr<ViewFunc> ExpandViewFunc::clone_and_set(
    std::optional<std::vector<c10::SymInt>> symints,
    std::optional<std::vector<at::Tensor>> tensors) const {
  auto output = std::make_unique<ExpandViewFunc>(size, implicit);
  if (symints.has_value()) {
    output->set_symints(std::move(*(symints)));
  }
  if (tensors.has_value()) {
    output->set_tensors(std::move(*(tensors)));
  }
  return output;
}

} // namespace torch::autograd::generated
