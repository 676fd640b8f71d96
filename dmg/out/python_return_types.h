#pragma once

namespace torch {
namespace autograd {
namespace generated {

PyTypeObject* get_minmax_structseq();

}

void initReturnTypes(PyObject* module);

} // namespace autograd
} // namespace torch
